"""Fitting transforms: round trips to float64 precision, gradients, pytrees, refusals."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError, StructureError
from jaxlean.models.neuron.cell.transforms import (
    ParamTransform,
    SigmoidTransform,
    SoftplusTransform,
)

TRANSFORMS = [SigmoidTransform(0.05, 0.5), SigmoidTransform(-3.0, 7.0),
              SoftplusTransform(), SoftplusTransform(1e-4), SoftplusTransform(-70.0)]


@pytest.mark.parametrize("transform", TRANSFORMS, ids=repr)
def test_round_trip_to_float64_precision(transform):
    """``inverse(forward(x))`` is ``x`` to the precision ``y = forward(x)`` holds it: within a
    few ulp of ``y`` (and of the bounds it is computed from) divided by ``dy/dx``."""
    eps = np.finfo(np.float64).eps
    with jax.enable_x64():
        x = jnp.linspace(-5.0, 5.0, 2001)
        y = transform.forward(x)
        slope = jax.vmap(jax.grad(transform.forward))(x)
        scale = np.maximum.reduce([np.abs(y), np.abs(np.asarray(transform.lower)) + 0 * y,
                                   np.abs(np.asarray(getattr(transform, "upper", 0.0))) + 0 * y])
        error = np.abs(np.asarray(transform.inverse(y) - x))
        assert np.all(error <= 4 * eps * (scale / slope + np.abs(x)))
        np.testing.assert_array_less(np.abs(np.asarray(transform.forward(transform.inverse(y))
                                                       - y)), 8 * eps * scale)
        if isinstance(transform, SoftplusTransform):     # no loss of x away from the bound
            x = jnp.linspace(5.0, 30.0, 2001)
            np.testing.assert_allclose(transform.inverse(transform.forward(x)), x, rtol=4e-16,
                                       atol=4e-15 if float(transform.lower) == 0 else 4e-14)


@pytest.mark.parametrize("transform", [SigmoidTransform(0.05, 0.5), SoftplusTransform()],
                         ids=repr)
def test_round_trip_of_typical_conductance_bounds(transform):
    with jax.enable_x64():
        x = jnp.linspace(-5.0, 5.0, 2001)
        np.testing.assert_allclose(transform.inverse(transform.forward(x)), x, rtol=0,
                                   atol=1e-13)


def test_ranges_and_values():
    with jax.enable_x64():
        x = jnp.asarray([-40.0, 0.0, 40.0])
        np.testing.assert_allclose(SigmoidTransform(0.05, 0.5).forward(x), [0.05, 0.275, 0.5])
        np.testing.assert_allclose(SoftplusTransform(1.0).forward(x),
                                   [1.0 + np.exp(-40.0), 1.0 + np.log(2.0), 41.0], rtol=1e-15)
        y = SigmoidTransform(0.0, 1.0).forward(jnp.linspace(-10, 10, 101))
        assert bool(jnp.all((y > 0) & (y < 1)))
        bounds = SigmoidTransform(jnp.asarray([0.0, 1.0]), jnp.asarray([1.0, 3.0]))
        np.testing.assert_allclose(bounds.forward(jnp.zeros(2)), [0.5, 2.0])


@pytest.mark.parametrize("transform", TRANSFORMS, ids=repr)
def test_gradients(transform):
    with jax.enable_x64():
        x = jnp.linspace(-4.0, 4.0, 9)
        grad = jax.vmap(jax.grad(transform.forward))(x)
        step = 1e-4
        fd = (transform.forward(x + step) - transform.forward(x - step)) / (2 * step)
        np.testing.assert_allclose(grad, fd, rtol=1e-7)
        inverse = jax.vmap(jax.grad(transform.inverse))(transform.forward(x))
        np.testing.assert_allclose(inverse * grad, 1.0, rtol=1e-10)    # inverse function rule


def test_param_transform_on_a_pytree():
    with jax.enable_x64():
        transform = ParamTransform({"gnabar_hh": SigmoidTransform(0.05, 0.5),
                                    "mech": [SoftplusTransform(), None],
                                    "shared": SoftplusTransform(1e-5)})
        params = {"gnabar_hh": jnp.asarray([0.1, 0.12, 0.3]), "mech": [jnp.asarray(2e-3), -65.0],
                  "shared": {"a": jnp.asarray(1e-4), "b": jnp.asarray([1.0, 2.0])},
                  "untouched": jnp.asarray(35.4)}
        free = transform.inverse(params)
        assert free["mech"][1] == -65.0 and free["untouched"] is params["untouched"]
        back = transform.forward(free)
        for a, b in zip(jax.tree.leaves(back), jax.tree.leaves(params), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-14)

        def loss(free):
            p = transform.forward(free)
            return p["gnabar_hh"].sum() + p["mech"][0] + p["shared"]["b"].sum()

        grad = jax.grad(loss)(free)
        s = jax.nn.sigmoid(free["gnabar_hh"])
        np.testing.assert_allclose(grad["gnabar_hh"], 0.45 * s * (1 - s), rtol=1e-14)
        np.testing.assert_allclose(grad["mech"][0], jax.nn.sigmoid(free["mech"][0]), rtol=1e-14)
        np.testing.assert_allclose(grad["shared"]["a"], 0.0)
        jitted = jax.jit(transform.forward)(free)
        np.testing.assert_allclose(jitted["gnabar_hh"], back["gnabar_hh"], rtol=1e-15)


def test_out_of_range_values_are_refused_with_their_path():
    transform = ParamTransform({"gnabar_hh": SigmoidTransform(0.05, 0.5),
                                "gl_hh": SoftplusTransform()})
    with pytest.raises(ConfigError, match=r"params\['gnabar_hh'\] at index 1: 0.6 is outside"):
        transform.inverse({"gnabar_hh": np.asarray([0.1, 0.6]), "gl_hh": 1e-4})
    with pytest.raises(ConfigError, match=r"params\['gl_hh'\]: 0.0 is not above"):
        transform.inverse({"gnabar_hh": 0.1, "gl_hh": 0.0})


def test_structure_and_bound_refusals():
    with pytest.raises(StructureError, match=r"transforms name \['g_nA'\]"):
        ParamTransform({"g_nA": SoftplusTransform()}).forward({"gnabar_hh": 1.0})
    with pytest.raises(StructureError, match="list or tuple of 2"):
        ParamTransform([None, SoftplusTransform()]).forward([1.0])
    with pytest.raises(StructureError, match="its transforms are a dict"):
        ParamTransform({"a": None}).forward([1.0])
    with pytest.raises(ConfigError, match="must be a Transform"):
        ParamTransform({"a": "softplus"})
    with pytest.raises(ConfigError, match="lower < upper"):
        SigmoidTransform(1.0, 1.0)
    with pytest.raises(ConfigError, match="finite"):
        SoftplusTransform(float("nan"))
