"""Parameters by region and by path distance: NEURON's values, hand-worked paths, gradients."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.neuron import discretize, distribution, morphology_io
from jaxlean.models.neuron.cell.distribution import Exponential, Linear, Sigmoid, by_region
from jaxlean.models.neuron.morphology.swc import fixture
from jaxlean.models.neuron.simulation.cable import Cell, Stimulus, simulate, step_current

FIXTURES = Path(__file__).parent / "fixtures"


def _rule(rule: list):
    kind, *c = rule
    return {"constant": lambda: c[0], "linear": lambda: Linear(*c),
            "exponential": lambda: Exponential(*c), "sigmoid": lambda: Sigmoid(*c)}[kind]()


@pytest.mark.skipif(importlib.util.find_spec("morphio") is None,
                    reason="morphio not installed (jaxlean[morphology])")
def test_values_equal_neurons_h_distance_assignment():
    """``h.distance(soma(0.5), seg)`` and the values NEURON set from it, per region."""
    fx = np.load(FIXTURES / "asc_pyramid.npz")
    case = json.loads(str(fx["case"]))
    cell = Cell.from_morphology(FIXTURES / "pyramid.asc", nseg=discretize.DLambda(case["Ra"]))
    np.testing.assert_allclose(distribution.path_distance(cell), fx["distance"], rtol=1e-12,
                               atol=1e-10)
    with jax.enable_x64():
        for name, rules in case["rules"].items():
            values = by_region(cell, {region: _rule(r) for region, r in rules.items()})
            np.testing.assert_allclose(np.asarray(values), fx[f"value_{name}"], rtol=1e-12,
                                       atol=1e-18)


def test_paths_meet_at_junctions_not_at_centres():
    # two children at the end of a 10 um root: 15 and 20 um from its centre, 25 um apart
    cell = Cell.from_parents([-1, 0, 0], [10.0, 20.0, 30.0], 1.0)
    np.testing.assert_allclose(distribution.path_distance(cell), [0, 15, 20])
    np.testing.assert_allclose(distribution.path_distance(cell, origin=1), [15, 0, 25])
    # a child at the centre of a three-segment soma, measured from that centre
    cell = Cell.from_parents([-1, 0, 1, 1], [6.0, 6.0, 6.0, 40.0], 1.0,
                             attach=[1, 1, 1, 0.5])
    np.testing.assert_allclose(distribution.path_distance(cell, origin=1), [6, 0, 6, 20])


def test_default_origin_is_soma_middle():
    cell = Cell.from_swc(fixture("y"), nseg=discretize.Fixed(3))
    middle = cell.location("soma[0]", 0.5)
    distance = distribution.path_distance(cell)
    assert distance[middle] == 0
    np.testing.assert_allclose(distance[cell.compartments_of("soma[0]")],
                               np.abs(np.arange(3) - 1) * cell.length[middle])
    # with a one-segment soma, the root's centre: Cell.path_distance
    cell = Cell.from_swc(fixture("pyramidal"), ncomp=3)
    np.testing.assert_allclose(distribution.path_distance(cell), cell.path_distance, rtol=1e-12)


def test_regions_all_fill_and_swc_types():
    cell = Cell.from_swc(fixture("pyramidal"), ncomp=2)
    kind = cell.kind
    values = np.asarray(by_region(cell, {"all": 1.0, "apical": 4.0, "somatic": 2.0}))
    np.testing.assert_array_equal(values, np.select([kind == 4, kind == 1], [4.0, 2.0], 1.0))
    values = np.asarray(by_region(cell, {2: 7.0, "basal": 3.0}, fill=0.5))
    np.testing.assert_array_equal(values, np.select([kind == 2, kind == 3], [7.0, 3.0], 0.5))
    distance = distribution.path_distance(cell)
    values = np.asarray(by_region(cell, {"all": 0.0, "apic": lambda d: 1e-3 * d}))
    np.testing.assert_allclose(values, np.where(kind == 4, 1e-3 * distance, 0.0), rtol=1e-6)
    spec = distribution.distribute(cell, {"g_pas": {"all": 1e-4}, "e_pas": {"all": -65.0}})
    assert set(spec) == {"g_pas", "e_pas"} and spec["g_pas"].shape == (cell.n,)


@pytest.mark.parametrize(("values", "kwargs", "match"), [
    ({"dendrites": 1.0}, {}, "unknown region 'dendrites'"),
    ({1.5: 1.0}, {}, "a region is a name"),
    ({"soma": 1.0}, {}, r"no value for .*SWC type\(s\) \[2, 3, 4\]"),
    ({}, {}, "non-empty"),
    ({"all": lambda d: jnp.ones(3)}, {}, "region 'all' must be a scalar"),
])
def test_refusals_name_the_region(values, kwargs, match):
    cell = Cell.from_swc(fixture("pyramidal"), ncomp=1)
    with pytest.raises(ConfigError, match=match):
        by_region(cell, values, **kwargs)


def test_a_region_absent_from_the_cell_is_refused():
    cell = Cell.from_swc(fixture("y"), ncomp=1)
    with pytest.raises(ConfigError, match=r"region 'apical' has no compartment.*\[1, 3\]"):
        by_region(cell, {"all": 1.0, "apical": 2.0})


def test_gradient_through_the_coefficients():
    cell = Cell.from_swc(fixture("pyramidal"), ncomp=2)
    apical = cell.kind == 4
    d = distribution.path_distance(cell)[apical]
    with jax.enable_x64():
        def total(c):
            return by_region(cell, {"all": c["base"], "apical": Exponential(*c["exp"])}).sum()

        coefficients = {"base": jnp.asarray(1e-4), "exp": (jnp.asarray(-0.8696e-4),
                                                           jnp.asarray(2.087e-4),
                                                           jnp.asarray(0.0031))}
        grad = jax.jit(jax.grad(total))(coefficients)  # one program, not eager operations
        _, scale, rate = (float(v) for v in coefficients["exp"])
        np.testing.assert_allclose(float(grad["base"]), np.count_nonzero(~apical))
        np.testing.assert_allclose([float(g) for g in grad["exp"]],
                                   [apical.sum(), np.exp(rate * d).sum(),
                                    (scale * d * np.exp(rate * d)).sum()], rtol=1e-12)
        jitted = jax.jit(total)(coefficients)
        np.testing.assert_allclose(float(jitted), float(total(coefficients)), rtol=1e-14)


def test_gradient_of_a_simulation_matches_finite_differences():
    cell = Cell.from_swc(fixture("y"), ncomp=2)
    current = step_current(0.2, 0.5, 3.0, 0.025, 4.0)

    def soma_voltage(c):
        g = by_region(cell, {"soma": c["soma"], "dend": Sigmoid(*c["dend"])})
        params = {**cell.params("passive"), "g_pas": g}
        trace = simulate(cell, params, [Stimulus(0, current)], 0.025, 4.0)
        return trace["v"][-1, 0]

    with jax.enable_x64():
        c = {"soma": jnp.asarray(1e-3), "dend": (jnp.asarray(2e-4), jnp.asarray(2e-3),
                                                 jnp.asarray(60.0), jnp.asarray(15.0))}
        value_and_grad = jax.jit(jax.value_and_grad(soma_voltage))  # one program for all three
        grad = value_and_grad(c)[1]
        # along a direction that moves every coefficient by its own scale (signs mixed)
        leaves, treedef = jax.tree.flatten(c)
        signs = [1.0, -1.0, 1.0, 1.0, -1.0]
        direction = jax.tree.unflatten(treedef, [s * v for s, v in zip(signs, leaves,
                                                                        strict=True)])
        step = 1e-6
        up = jax.tree.map(lambda v, d: v + step * d, c, direction)
        down = jax.tree.map(lambda v, d: v - step * d, c, direction)
        fd = (float(value_and_grad(up)[0]) - float(value_and_grad(down)[0])) / (2 * step)
        along = sum(float(g * d) for g, d in zip(jax.tree.leaves(grad),
                                                  jax.tree.leaves(direction), strict=True))
        assert all(float(g) != 0 for g in jax.tree.leaves(grad))
        np.testing.assert_allclose(along, fd, rtol=1e-6)


def test_sigmoid_and_linear_forms():
    d = jnp.asarray([0.0, 30.0, 60.0])
    np.testing.assert_allclose(Linear(1.0, 0.5)(d), [1.0, 16.0, 31.0])
    np.testing.assert_allclose(Sigmoid(0.0, 2.0, 30.0, 10.0)(d),
                               2 / (1 + np.exp((30 - np.asarray(d)) / 10)), rtol=1e-6)
    np.testing.assert_allclose(Exponential(1.0, 2.0, 0.01)(d), 1 + 2 * np.exp(0.01 * d),
                               rtol=1e-6)
    assert morphology_io.SUFFIXES   # the module imports without MorphIO


@pytest.mark.parametrize("distance", [5.0, 60.0, 150.0, 333.3])
def test_at_distance_is_bluepyopts_soma_distance_location(distance):
    """BluePyOpt's ``NrnSomaDistanceCompLocation``: the last section of the region (in
    NEURON's order) spanning the distance; checked against each compartment's own span."""
    cell = Cell.from_swc(fixture("pyramidal"), ncomp=3)
    d, half = distribution.path_distance(cell), 0.5 * cell.length
    spanning = np.flatnonzero((cell.kind == 4) & (d - half <= distance) & (distance <= d + half))
    if spanning.size == 0:
        with pytest.raises(ConfigError, match="no section of region 'apical' spans"):
            distribution.at_distance(cell, distance, "apical")
        return
    section, x = distribution.at_distance(cell, distance, "apical")
    compartment = cell.location(section, x)
    assert cell.branch[compartment] == cell.branch[spanning].max()
    assert compartment in spanning
