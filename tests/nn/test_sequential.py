"""Sequential plans runs of identical layers and applies them like a plain loop."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean import Sequential
from jaxlean._random import normal
from jaxlean.nn._runs import Run, plan_runs


def linear(key, n_in=4, n_out=4):
    return eqx.nn.Linear(n_in, n_out, key=key)


def mlp(key):
    return eqx.nn.MLP(4, 4, 8, 1, key=key)


def loop(layers, x):
    for layer in layers:
        x = layer(x)
    return x


KEYS = jax.random.split(jax.random.key(0), 12)


@pytest.mark.parametrize(
    ("layers", "runs"),
    [
        ([linear(k) for k in KEYS[:6]], [Run(0, 1, 6)]),
        ([linear(KEYS[0], 3, 4), *[linear(k) for k in KEYS[1:7]], linear(KEYS[7], 4, 2)],
         [Run(0, 1, 1), Run(1, 1, 6), Run(7, 1, 1)]),
        ([linear(KEYS[0], 3, 4), *[f(k) for k, f in zip(KEYS[1:9], [linear, mlp] * 4,
                                                       strict=True)]],
         [Run(0, 1, 1), Run(1, 2, 4)]),
        ([linear(KEYS[0], 3, 4), mlp(KEYS[1]), linear(KEYS[2], 4, 2)],
         [Run(0, 1, 1), Run(1, 1, 1), Run(2, 1, 1)]),
    ],
    ids=["identical", "first-last-differ", "period-2", "all-different"],
)
def test_plans_and_values(layers, runs):
    model = Sequential(layers, remat="full")
    assert list(model.runs) == runs
    x = normal(KEYS[11], (layers[0].in_features if hasattr(layers[0], "in_features")
                                     else 4,))
    np.testing.assert_allclose(eqx.filter_jit(model)(x), loop(layers, x), rtol=1e-5, atol=1e-6)
    grads = eqx.filter_grad(lambda m: jnp.sum(m(x) ** 2))(model)
    ref = eqx.filter_grad(lambda ls: jnp.sum(loop(ls, x) ** 2))(layers)
    for got, want in zip(jax.tree.leaves(grads.layers), jax.tree.leaves(ref), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert all(
        np.array_equal(a, b) for a, b in
        zip(jax.tree.leaves(model.layers), jax.tree.leaves(layers), strict=True)
    )


def test_repr_shows_plan():
    layers = [linear(KEYS[0], 3, 4), *[linear(k) for k in KEYS[1:5]], linear(KEYS[5], 4, 2)]
    text = repr(Sequential(layers, nested=2))
    assert "layer 0: Linear (alone)" in text
    assert "layers 1..4: scan 4 x [Linear]" in text
    assert "layer 5: Linear (alone)" in text


def test_planner_prefers_longest_coverage_then_shortest_period():
    assert plan_runs([0, 0, 0, 0]) == [Run(0, 1, 4)]
    assert plan_runs([0, 1, 0, 1, 0, 1, 2]) == [Run(0, 2, 3), Run(6, 1, 1)]
    assert plan_runs([3, 0, 1, 2, 0, 1, 2]) == [Run(0, 1, 1), Run(1, 3, 2)]
    assert plan_runs([]) == []
