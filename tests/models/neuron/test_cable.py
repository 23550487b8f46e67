"""Cable physics against analytic results, and gradients against finite differences."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError, MorphologyError
from jaxlean.models.neuron import swc
from jaxlean.models.neuron.cable import Cell, Stimulus, simulate, step_current


def test_passive_sealed_cable_matches_cosh_steady_state():
    with jax.enable_x64():
        n, dx, radius, current = 100, 8.0, 1.0, 0.05  # um, um, nA
        cell = Cell.from_parents(np.arange(n) - 1, dx, radius)
        params = cell.params("passive")
        dt, t_max = 1.0, 150.0
        stimulus = Stimulus((0,), jnp.full(round(t_max / dt), current))
        v = simulate(cell, params, [stimulus], dt, t_max, record=range(n))["v"][-1]
        rm = 1.0 / params["g_leak"]                                 # ohm cm2
        ra = params["axial_resistivity"]                            # ohm cm
        diameter, length = 2 * radius * 1e-4, n * dx * 1e-4         # cm
        space_constant = np.sqrt(rm * diameter / (4 * ra))
        axial_per_cm = 4 * ra / (np.pi * diameter**2)
        v_end = current * 1e-9 * axial_per_cm * space_constant / np.tanh(length / space_constant)
        x = (np.arange(n) + 0.5) * dx * 1e-4
        expected = params["e_leak"] + 1e3 * v_end * np.cosh((length - x) / space_constant) \
            / np.cosh(length / space_constant)
        np.testing.assert_allclose(v - params["e_leak"], expected - params["e_leak"], rtol=1e-2)
        assert float(v[0] - v[-1]) > 1.0  # the profile is not flat: the test can fail


def test_single_hh_compartment_fires_only_when_driven():
    cell = Cell.from_parents([-1], 20.0, 10.0)
    dt, t_max = 0.025, 40.0
    drive = Stimulus((0,), step_current(0.2, 5.0, 30.0, dt, t_max))
    v = simulate(cell, cell.params(), [drive], dt, t_max)["v"][:, 0]
    upstrokes = np.sum((v[1:] > 0) & (v[:-1] <= 0))
    assert float(v.max()) > 20.0 and upstrokes >= 2
    rest = simulate(cell, cell.params(), [], dt, t_max)["v"][:, 0]
    np.testing.assert_allclose(rest, -65.0, atol=1.0)


def small_cell_loss(cell):
    dt, t_max = 0.05, 6.0
    stimulus = Stimulus((0,), step_current(0.3, 0.5, 4.0, dt, t_max))
    weights = jnp.linspace(0.5, 1.5, round(t_max / dt))[:, None]

    def loss(params):
        trace = simulate(cell, params, [stimulus], dt, t_max, record=(0, cell.n - 1),
                         states=("v", "n"))
        return jnp.mean(weights * trace["v"]) + jnp.mean(trace["n"])

    return loss


def test_gradients_match_finite_differences_float64():
    with jax.enable_x64():
        cell = Cell.from_swc(swc.fixture("y"), ncomp=2)
        loss = jax.jit(small_cell_loss(cell))
        params = cell.params()
        grads = jax.jit(jax.grad(small_cell_loss(cell)))(params)
        rng = np.random.default_rng(0)
        for name in ["g_na", "g_k", "g_leak", "capacitance", "axial_resistivity", "radius",
                     "length", "e_k", "v_init"]:
            direction = jnp.asarray(rng.uniform(0.5, 1.5, jnp.shape(params[name])))
            step = 1e-6 * jnp.maximum(jnp.abs(params[name]), 1e-3) * direction

            def shifted(sign, name=name, step=step):
                return loss({**params, name: params[name] + sign * step})

            numeric = (shifted(1) - shifted(-1)) / 2
            analytic = jnp.sum(grads[name] * step)
            assert abs(float(analytic)) > 0, name
            np.testing.assert_allclose(analytic, numeric, rtol=1e-5, err_msg=name)


def test_vmap_over_parameter_sets():
    cell = Cell.from_swc(swc.fixture("y"), ncomp=1)
    loss = small_cell_loss(cell)
    params = cell.params()
    g_leak = jnp.array([1e-4, 3e-4, 1e-3])
    batched = jax.vmap(lambda g: loss({**params, "g_leak": g}))(g_leak)
    single_loss = jax.jit(loss)
    single = jnp.stack([single_loss({**params, "g_leak": g}) for g in g_leak])
    np.testing.assert_allclose(batched, single, rtol=1e-5)
    assert float(jnp.ptp(single)) > 0


def test_bad_inputs_are_named():
    with pytest.raises(MorphologyError, match="compartment 1: radius"):
        Cell.from_parents([-1, 0], 10.0, [1.0, -1.0])
    cell = Cell.from_parents([-1, 0], 10.0, 1.0)
    with pytest.raises(ConfigError, match="cannot record"):
        simulate(cell, cell.params("passive"), [], 0.1, 1.0, states=("m",))
    with pytest.raises(ConfigError, match="record must name"):
        simulate(cell, cell.params(), [], 0.1, 1.0, record=(5,))
    with pytest.raises(ConfigError, match="need 10 values"):
        simulate(cell, cell.params(), [Stimulus((0,), jnp.zeros(3))], 0.1, 1.0)


def test_one_step_matches_dense_backward_euler():
    """The matrix assembled outside the time loop equals a dense, edge-by-edge build."""
    with jax.enable_x64():
        rng = np.random.default_rng(1)
        parents = np.array([-1, 0, 1, 1, 3, 0, 5, -1, 7])
        n = parents.size
        length, radius = rng.uniform(5, 20, n), rng.uniform(0.5, 2, n)
        cell = Cell.from_parents(parents, length, radius)
        params = {**cell.params("passive"), "v_init": jnp.asarray(rng.uniform(-70, -50, n)),
                  "g_leak": jnp.asarray(rng.uniform(1e-4, 1e-3, n)),
                  "capacitance": jnp.asarray(rng.uniform(0.5, 2, n))}
        dt, current = 0.1, 0.3
        v = simulate(cell, params, [Stimulus((4,), jnp.array([current]))], dt, dt,
                     record=range(n))["v"][0]
        p = {name: np.broadcast_to(np.asarray(value), (n,)) for name, value in params.items()}
        area = 2e-8 * np.pi * radius * length                           # cm2
        half = p["axial_resistivity"] * 0.5e4 * length / (np.pi * radius**2)  # ohm
        matrix = np.diag(p["capacitance"] / dt + 1e3 * p["g_leak"])
        for child, parent in enumerate(parents):
            if parent >= 0:
                g = 1.0 / (half[child] + half[parent])
                for row, col in ((child, parent), (parent, child)):
                    matrix[row, row] += 1e3 * g / area[row]
                    matrix[row, col] -= 1e3 * g / area[row]
        rhs = p["capacitance"] / dt * p["v_init"] + 1e3 * p["g_leak"] * p["e_leak"]
        rhs[4] += 1e-3 * current / area[4]
        expected = np.linalg.solve(matrix, rhs)
        np.testing.assert_allclose(v, expected, rtol=1e-12)
        assert float(np.ptp(expected - p["v_init"])) > 1e-3  # the step moves the voltage


def test_gate_step_derivative_matches_autodiff_of_the_formula():
    """The hand-written derivative of the HH gate step equals autodiff of the plain formula."""
    from jaxlean.models.neuron import channels

    def plain_step(gates, v, dt):
        out = {}
        for gate, (a, b) in channels.rates(v).items():
            out[gate] = a / (a + b) + (gates[gate] - a / (a + b)) * jnp.exp(-dt * (a + b))
        return out

    with jax.enable_x64():
        # include voltages at and near the removable singularities of the rates (-40, -55 mV)
        v = jnp.concatenate([jnp.linspace(-100.0, 60.0, 321),
                             jnp.array([-40.0, -40.0 + 1e-7, -40.3, -39.6, -55.0, -54.8, -55.4])])
        rng = np.random.default_rng(2)
        gates = {g: jnp.asarray(rng.uniform(0.05, 0.95, v.size)) for g in channels.GATES}
        tangents = ({g: jnp.asarray(rng.normal(size=v.size)) for g in channels.GATES},
                    jnp.asarray(rng.normal(size=v.size)))
        new, derivative = jax.jvp(lambda g, u: channels.advance(g, u, 0.025), (gates, v), tangents)
        new_ref, derivative_ref = jax.jvp(lambda g, u: plain_step(g, u, 0.025), (gates, v),
                                          tangents)
        for gate in channels.GATES:
            np.testing.assert_allclose(new[gate], new_ref[gate], rtol=1e-14, atol=1e-15)
            np.testing.assert_allclose(derivative[gate], derivative_ref[gate], rtol=1e-9,
                                       atol=1e-12, err_msg=gate)
