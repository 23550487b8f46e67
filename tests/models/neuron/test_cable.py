"""Cable physics against analytic results, and gradients against finite differences."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.neuron import swc
from jaxlean.models.neuron.mechanisms.channels import hh, pas
from jaxlean.models.neuron.simulation.cable import (
    Cell,
    Stimulus,
    VoltageClamp,
    simulate,
    step_current,
)

HH_LEAK = {"g_pas": hh.parameters["gl_hh"][0], "e_pas": hh.parameters["el_hh"][0]}
"""``pas`` set to ``hh``'s leak: the passive cell these tests were written for."""


def test_passive_sealed_cable_matches_cosh_steady_state():
    with jax.enable_x64():
        n, dx, radius, current = 100, 8.0, 1.0, 0.05  # um, um, nA
        cell = Cell.from_parents(np.arange(n) - 1, dx, radius)
        params = {**cell.params("passive"), **HH_LEAK}
        dt, t_max = 1.0, 150.0
        stimulus = Stimulus((0,), jnp.full(round(t_max / dt), current))
        v = np.asarray(simulate(cell, params, [stimulus], dt, t_max, record=range(n))["v"])[-1]
        rm = 1.0 / params["g_pas"]                                 # ohm cm2
        ra = params["Ra"]                            # ohm cm
        diameter, length = 2 * radius * 1e-4, n * dx * 1e-4         # cm
        space_constant = np.sqrt(rm * diameter / (4 * ra))
        axial_per_cm = 4 * ra / (np.pi * diameter**2)
        v_end = current * 1e-9 * axial_per_cm * space_constant / np.tanh(length / space_constant)
        x = (np.arange(n) + 0.5) * dx * 1e-4
        expected = params["e_pas"] + 1e3 * v_end * np.cosh((length - x) / space_constant) \
            / np.cosh(length / space_constant)
        np.testing.assert_allclose(v - params["e_pas"], expected - params["e_pas"], rtol=1e-2)
        assert float(v[0] - v[-1]) > 1.0  # the profile is not flat: the test can fail


def test_single_hh_compartment_fires_only_when_driven():
    cell = Cell.from_parents([-1], 20.0, 10.0)
    dt, t_max = 0.025, 40.0
    drive = Stimulus((0,), step_current(0.2, 5.0, 30.0, dt, t_max))
    v = np.asarray(simulate(cell, cell.params(), [drive], dt, t_max)["v"])[:, 0]
    upstrokes = np.sum((v[1:] > 0) & (v[:-1] <= 0))
    assert float(v.max()) > 20.0 and upstrokes >= 2
    rest = np.asarray(simulate(cell, cell.params(), [], dt, t_max)["v"])[:, 0]
    np.testing.assert_allclose(rest, -65.0, atol=1.0)


def small_cell_loss(cell):
    dt, t_max = 0.05, 6.0
    stimulus = Stimulus(0, step_current(0.3, 0.5, 4.0, dt, t_max))
    weights = np.linspace(0.5, 1.5, round(t_max / dt) + 1)[:, None]  # samples from t = 0

    def loss(params):
        trace = simulate(cell, params, [stimulus], dt, t_max, record=(0, cell.n - 1),
                         states=("v", "n"))
        return jnp.mean(weights * trace["v"]) + jnp.mean(trace["n"])

    return loss


def test_gradients_match_finite_differences_float64():
    with jax.enable_x64():
        cell = Cell.from_swc(swc.fixture("y"), ncomp=2)
        # one compiled program for the gradient and every shifted loss
        value_and_grad = jax.jit(jax.value_and_grad(small_cell_loss(cell)))
        params = cell.params()  # strongly typed: every shifted set reuses the compiled program
        assert not any(x.weak_type for x in params.values())
        grads = value_and_grad(params)[1]

        def loss(params):
            return float(value_and_grad(params)[0])

        rng = np.random.default_rng(0)  # NumPy steps and shifts: no eager operation to compile
        for name in ["gnabar_hh", "gkbar_hh", "gl_hh", "cm", "Ra", "radius",
                     "length", "ek", "v_init", "celsius"]:
            value = np.asarray(params[name])
            direction = rng.uniform(0.5, 1.5, value.shape)
            step = 1e-6 * np.maximum(np.abs(value), 1e-3) * direction

            def shifted(sign, name=name, value=value, step=step):
                return loss({**params, name: value + sign * step})

            numeric = (shifted(1) - shifted(-1)) / 2
            analytic = np.sum(np.asarray(grads[name]) * step)
            assert abs(float(analytic)) > 0, name
            np.testing.assert_allclose(analytic, numeric, rtol=1e-5, err_msg=name)


def test_vmap_over_parameter_sets():
    cell = Cell.from_swc(swc.fixture("y"), ncomp=1)
    loss = small_cell_loss(cell)
    params = cell.params()
    gl = np.array([1e-4, 3e-4, 1e-3], np.float32)
    batched = jax.jit(jax.vmap(lambda g: loss({**params, "gl_hh": g})))(gl)
    single_loss = jax.jit(loss)
    single = np.stack([np.asarray(single_loss({**params, "gl_hh": g})) for g in gl])
    np.testing.assert_allclose(batched, single, rtol=1e-5)
    assert float(np.ptp(single)) > 0


def test_gradient_of_a_vmap_over_stimuli_equals_the_sum_of_single_gradients():
    """The gradient of a ``vmap`` over stimuli (a batch of inputs) traces and equals the
    per-input gradients summed (under JAX 0.10 it failed to trace through the cached
    jitted loop; ``simulate`` now traces the loop in place inside a transformation)."""
    cell = Cell.from_parents([-1, 0, 1], 10.0, 1.0)
    params = cell.params()

    def run(g, amplitude):
        return simulate(cell, {**params, "gnabar_hh": g}, [Stimulus(0, amplitude * jnp.ones(40))],
                        0.05, 2.0, record=[0, 2], progress=False)["v"]

    amplitudes = np.asarray([0.1, 0.2], np.float32)
    batched = jax.jit(jax.grad(lambda g: jax.vmap(lambda a: run(g, a))(amplitudes).sum()))(
        params["gnabar_hh"])
    single_grad = jax.jit(jax.grad(lambda g, a: run(g, a).sum()))  # one program for each a
    single = sum(np.asarray(single_grad(params["gnabar_hh"], a)) for a in amplitudes)
    np.testing.assert_allclose(batched, single, rtol=1e-5)
    assert float(np.abs(single).max()) > 0


def test_bad_inputs_are_named():
    cell = Cell.from_parents([-1, 0], 10.0, 1.0)
    with pytest.raises(ConfigError, match="cannot record"):
        simulate(cell, cell.params("passive"), [], 0.1, 1.0, states=("m",))
    with pytest.raises(ConfigError, match="record must name"):
        simulate(cell, cell.params(), [], 0.1, 1.0, record=(5,))
    with pytest.raises(ConfigError, match="stimulus 0: current must be a scalar or have 10"):
        simulate(cell, cell.params(), [Stimulus(0, jnp.zeros(3))], 0.1, 1.0)
    with pytest.raises(ConfigError, match=r"stimulus 1: compartments must be in \[0, 1\]"):
        simulate(cell, cell.params(), [Stimulus(0, 0.1), Stimulus((1, 2), 0.1)], 0.1, 1.0)


@pytest.mark.parametrize("change,match", [
    ({"gnabar": 0.1}, r"unknown parameter\(s\) \['gnabar'\]"),
    ({"celsius": None}, r"missing parameter\(s\) \['celsius'\]"),
    ({"ek": None}, r"missing parameter\(s\) \['ek'\] \(of hh: this cell has no inserted "
                    r"mechanism, and the preset 'hh' is simulated because"),
    ({"gnabar_hh": None}, r"missing parameter\(s\) \['gnabar_hh'\] \(of hh: this cell has no "
                          r"inserted"),
    ({"gl_hh": jnp.ones(5)}, r"'gl_hh' must be a scalar, one value per branch \(4,\) or per "
                              r"compartment \(7,\); got shape \(5,\)"),
    ({"celsius": jnp.ones(7)}, r"'celsius' must be a scalar; got shape \(7,\)"),
])
def test_parameters_are_checked_by_name(change, match):
    cell = Cell.from_swc(swc.fixture("y"), ncomp=2)
    params = {**cell.params(), **change}
    params = {name: value for name, value in params.items() if value is not None}
    with pytest.raises(ConfigError, match=match):
        simulate(cell, params, [], 0.1, 1.0)


def test_per_branch_parameters_and_stimulus_forms_agree():
    with jax.enable_x64():
        cell = Cell.from_swc(swc.fixture("y"), ncomp=2)
        dt, t_max = 0.05, 3.0
        per_branch = np.array([1e-4, 2e-4, 3e-4, 4e-4])
        expanded = per_branch[np.asarray(cell.branch)]
        current = step_current(0.3, 0.5, 1.0, dt, t_max)
        record = range(cell.n)
        a = simulate(cell, {**cell.params(), "gl_hh": per_branch},
                     [Stimulus(2, current), Stimulus(0, 0.05)], dt, t_max, record=record)["v"]
        b = simulate(cell, {**cell.params(), "gl_hh": expanded},
                     [Stimulus((2,), current), Stimulus([0], np.full(60, 0.05))], dt, t_max,
                     record=record)["v"]
        np.testing.assert_allclose(a, b, rtol=1e-13)
        c = simulate(cell, cell.params(), [Stimulus(2, current)], dt, t_max, record=record)["v"]
        assert float(np.max(np.abs(np.asarray(a) - np.asarray(c)))) > 1e-3


def _dense_neuron_matrix(cell, p, dt):
    """NEURON's matrix, edge by edge: a centre node per compartment, a zero-area node at every
    compartment's distal end and one at the root's start; children join where they attach."""
    n = cell.n
    area = 2e-8 * np.pi * p["radius"] * p["length"]
    half = p["Ra"] * 0.5e4 * p["length"] / (np.pi * p["radius"] ** 2)
    proximal, distal = half * cell.taper[:, 0], half * cell.taper[:, 1]
    size = 2 * n + 1
    matrix = np.zeros((size, size))
    start_node = 2 * n

    def join(a, b, resistance):
        g = 1e3 / resistance
        matrix[[a, b], [a, b]] += g
        matrix[a, b] -= g
        matrix[b, a] -= g

    for c in range(n):
        join(c, n + c, distal[c])
        parent = cell.parents[c]
        if parent < 0:
            join(c, start_node, proximal[c])
        else:
            at = {1.0: n + parent, 0.5: parent, 0.0: start_node}[float(cell.attach[c])]
            join(c, at, proximal[c])
    matrix[:n] /= area[:, None]
    matrix[np.arange(n), np.arange(n)] += p["cm"] / dt + 1e3 * p["g_pas"]
    return matrix, area


@pytest.mark.parametrize("parents,attach", [
    ([-1, 0, 1, 1, 3, 0, 5, 0, 7, 7, 7], [1, 1, 1, 1, 1, 0.5, 1, 0, 1, 1, 1]),
    ("y", None),
])
def test_one_step_matches_dense_backward_euler(parents, attach):
    """The tree matrix (junctions only at forks) equals NEURON's full node-by-node matrix."""
    with jax.enable_x64():
        rng = np.random.default_rng(1)
        if parents == "y":
            cell = Cell.from_swc(swc.fixture("y"), ncomp=3)
        else:
            n = len(parents)
            cell = Cell.from_parents(parents, rng.uniform(5, 20, n), rng.uniform(0.5, 2, n),
                                     attach)
        n = cell.n
        params = {**cell.params("passive"), **HH_LEAK,
                  "v_init": jnp.asarray(rng.uniform(-70, -50, n)),
                  "g_pas": jnp.asarray(rng.uniform(1e-4, 1e-3, n)),
                  "cm": jnp.asarray(rng.uniform(0.5, 2, n))}
        dt, current = 0.1, 0.3
        v = np.asarray(simulate(cell, params, [Stimulus(4, current)], dt, dt,
                                record=range(n))["v"])[1]
        p = {name: np.broadcast_to(np.asarray(value), (n,)) for name, value in params.items()}
        matrix, area = _dense_neuron_matrix(cell, p, dt)
        rhs = np.zeros(matrix.shape[0])
        rhs[:n] = p["cm"] / dt * p["v_init"] + 1e3 * p["g_pas"] * p["e_pas"]
        rhs[4] += 1e-3 * current / area[4]
        expected = np.linalg.solve(matrix, rhs)[:n]
        np.testing.assert_allclose(v, expected, rtol=1e-12)
        assert float(np.ptp(expected - p["v_init"])) > 1e-3  # the step moves the voltage


class _Checkpointing:
    """A Y cell's loss with and without time checkpointing; the plain one is run once."""

    def __init__(self):
        self.cell = Cell.from_swc(swc.fixture("y"), ncomp=2)
        self.params = self.cell.params()
        self.value_and_grad = jax.jit(jax.value_and_grad(self.loss, has_aux=True),
                                      static_argnums=1)
        self.plain = self.value_and_grad(self.params, None)

    def loss(self, params, checkpoint):
        dt, t_max = 0.05, 3.0
        stimulus = Stimulus(0, step_current(0.5, 0.5, 2.0, dt, t_max))
        v = simulate(self.cell, params, [stimulus], dt, t_max, record=(0, 6),
                     remat=checkpoint)["v"]
        return jnp.mean(jnp.linspace(0.5, 1.5, v.shape[0])[:, None] * v), v


@pytest.fixture(scope="module")
def checkpointing():
    with jax.enable_x64():
        return _Checkpointing()


@pytest.mark.parametrize("checkpoint", ["sqrt", (3, 4, 5), (7, 9)])
def test_time_checkpointing_gives_the_same_values_and_gradients(checkpointing, checkpoint):
    with jax.enable_x64():
        (_, v), grads = checkpointing.plain
        (_, v_checked), grads_checked = checkpointing.value_and_grad(checkpointing.params,
                                                                     checkpoint)
        # round-off on the voltage's scale (~65 mV), also where v crosses 0 mV
        np.testing.assert_allclose(v_checked, v, rtol=1e-13, atol=1e-12)
        for name in grads:
            np.testing.assert_allclose(grads_checked[name], grads[name], rtol=1e-10, atol=1e-14,
                                       err_msg=name)


def test_bad_checkpoint_options():
    cell = Cell.from_parents([-1, 0], 10.0, 1.0)
    for option, match in (((2, 3), "product of at least 10"),
                          ("log", "must be None, 'segments', 'sqrt'"),
                          ((0, 20), "product of at least")):
        with pytest.raises(ConfigError, match=match):
            simulate(cell, cell.params(), [], 0.1, 1.0, remat=option)
    with pytest.raises(ConfigError, match="simulate: the argument 'checkpoint' is now called "
                                          "'remat'"):
        simulate(cell, cell.params(), [], 0.1, 1.0, checkpoint="sqrt")


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_gate_step_derivative_matches_autodiff_of_the_formula(dtype):
    """The hand-written derivative of the HH gate step equals autodiff of the plain formula."""
    from jaxlean.models.neuron import channels

    def plain_step(gates, v, dt):
        out = {}
        for gate, (a, b) in channels.rates(v).items():
            out[gate] = a / (a + b) + (gates[gate] - a / (a + b)) * jnp.exp(-dt * (a + b))
        return out

    values, slopes = ((1e-14, 1e-15), (1e-9, 1e-12)) if dtype == jnp.float64 else \
        ((1e-6, 1e-7), (1e-5, 1e-6))
    with jax.enable_x64(dtype == jnp.float64):
        # include voltages at and near the removable singularities of the rates (-40, -55 mV)
        v = np.concatenate([np.linspace(-100.0, 60.0, 321),
                            [-40.0, -40.0 + 1e-7, -40.3, -39.6, -55.0, -54.8, -55.4]])
        v = jnp.asarray(v.astype(dtype))
        rng = np.random.default_rng(2)
        gates = {g: jnp.asarray(rng.uniform(0.05, 0.95, v.size), dtype) for g in channels.GATES}
        tangents = ({g: jnp.asarray(rng.normal(size=v.size), dtype) for g in channels.GATES},
                    jnp.asarray(rng.normal(size=v.size), dtype))
        # each jitted: one program, not one eager operation after another
        new, derivative = jax.jit(lambda *a: jax.jvp(
            lambda g, u: channels.advance(g, u, 0.025), *a))((gates, v), tangents)
        new_ref, derivative_ref = jax.jit(lambda *a: jax.jvp(
            lambda g, u: plain_step(g, u, 0.025), *a))((gates, v), tangents)
        for gate in channels.GATES:
            assert new[gate].dtype == derivative[gate].dtype == dtype
            np.testing.assert_allclose(new[gate], new_ref[gate], *values)
            np.testing.assert_allclose(derivative[gate], derivative_ref[gate], *slopes,
                                       err_msg=gate)


@pytest.mark.parametrize("change,match", [
    ({"gnabar_hh": jnp.asarray([0.12, jnp.nan])},
     r"parameter 'gnabar_hh' must be finite; got nan at compartment 1"),
    ({"gl_hh": jnp.inf}, r"parameter 'gl_hh' must be finite; got inf"),
    ({"radius": jnp.asarray([1.0, 0.0])}, r"'radius' must be finite and positive; got 0.0 at "
                                          r"compartment 1"),
    ({"length": jnp.asarray([jnp.nan, 1.0])}, r"'length' must be finite and positive; got nan "
                                              r"at compartment 0"),
    ({"Ra": -1.0}, r"'Ra' must be finite and positive"),
    ({"celsius": jnp.nan}, r"parameter 'celsius' must be finite; got nan$"),
])
def test_non_finite_and_non_positive_values_are_named(change, match):
    cell = Cell.from_parents([-1, 0], 10.0, 1.0)
    with pytest.raises(ConfigError, match=match):
        simulate(cell, {**cell.params(), **change}, [], 0.1, 1.0)


@pytest.mark.parametrize("dt,t_max,match", [
    (0.0, 1.0, "dt must be a positive finite number of ms; got 0.0"),
    (-0.1, 1.0, "dt must be a positive finite number"),
    (float("nan"), 1.0, "dt must be a positive finite number"),
    (0.1, 1.05, r"t_max \(1.05 ms\) must be a whole number of steps of dt \(0.1 ms\)"),
    (0.1, 0.0, "t_max must be a positive finite number"),
    (jnp.asarray(0.1), 1.0, None),
])
def test_bad_time_steps_are_named(dt, t_max, match):
    cell = Cell.from_parents([-1, 0], 10.0, 1.0)
    if match is None:  # a concrete array is a number; a traced one is not
        with pytest.raises(ConfigError, match="dt must be a Python number"):
            jax.jit(lambda d: simulate(cell, cell.params(), [], d, t_max))(dt)
        return
    with pytest.raises(ConfigError, match=match):
        simulate(cell, cell.params(), [], dt, t_max)


def test_bad_stimulus_clamp_and_initial_state_values_are_named():
    cell = Cell.from_parents([-1, 0], 10.0, 1.0)
    params = cell.params("passive")
    current = jnp.zeros(10).at[3].set(jnp.nan)
    with pytest.raises(ConfigError, match=r"stimulus 1 \(compartment 1\): current must be finite;"
                                          r" got nan at step 3"):
        simulate(cell, params, [Stimulus(0, 0.1), Stimulus(1, current)], 0.1, 1.0)
    with pytest.raises(ConfigError, match=r"clamp 0 \(compartment 1\): rs must be finite and "
                                          r"positive"):
        simulate(cell, params, [], 0.1, 1.0, clamps=[VoltageClamp(1, [-60.0], [1.0], rs=0.0)])
    with pytest.raises(ConfigError, match="clamp 0: give one to three amplitudes"):
        simulate(cell, params, [], 0.1, 1.0, clamps=[VoltageClamp(1, [-60.0], [1.0, 2.0])])
    with pytest.raises(ConfigError, match="every must be an int in"):
        simulate(cell, params, [], 0.1, 1.0, every=11)
    with pytest.raises(ConfigError, match=r"detect must name compartments in \[0, 1\]"):
        simulate(cell, params, [], 0.1, 1.0, detect=[2])
    state = {"v": jnp.zeros(2), "states": {"pas": {}}, "step": jnp.zeros((), jnp.int32)}
    for bad, match in (({**state, "v": jnp.zeros(3)}, r"initial state \['v'\] has shape \(3,\)"),
                       ({**state, "v": jnp.asarray([0.0, jnp.inf])},
                        r"initial state \['v'\] is not finite at index 1"),
                       ({"v": state["v"], "step": state["step"]},
                        r"initial state must have keys \['states', 'step', 'v'\]")):
        with pytest.raises(ConfigError, match=match):
            simulate(cell, params, [], 0.1, 1.0, initial=bad)


def test_padded_loop_vectors_give_the_same_values_and_gradients(monkeypatch):
    """Large cells run with their loop vectors padded (``_layout.Layout``); padding a small
    cell the same way changes no recorded value, final state, spike time or gradient."""
    from jaxlean.models.neuron.simulation import _layout, cable

    cell = Cell.from_swc(swc.fixture("y"), ncomp=2)
    dt, t_max = 0.05, 3.0

    def run(params):
        out = simulate(cell, params, [Stimulus(0, step_current(0.5, 0.5, 2.0, dt, t_max))], dt,
                       t_max, record=(0, 6), states=("v", "m", "i_na"), detect=[0, 6])
        loss = jnp.mean(out["v"]) + jnp.mean(out["i_na"])
        return loss, (out["v"], out["m"], out["final"]["v"], out["spikes"])

    def value_and_grad():
        monkeypatch.setattr(cable, "_PROGRAMS", type(cable._PROGRAMS)())
        return jax.jit(jax.value_and_grad(run, has_aux=True))(cell.params())

    with jax.enable_x64():
        (_, plain), grads = value_and_grad()
        monkeypatch.setattr(_layout, "PAD_FROM", 1)
        assert _layout.Layout.of(cell).order.size % _layout.PAD_TO == 0
        (_, padded), padded_grads = value_and_grad()
    assert np.isfinite(plain[3]).any()  # the soma spiked
    for mine, want in zip(padded, plain, strict=True):
        np.testing.assert_allclose(mine, want, rtol=1e-13, atol=1e-13)
    for name in grads:
        np.testing.assert_allclose(padded_grads[name], grads[name], rtol=1e-12, atol=1e-15,
                                   err_msg=name)


def test_recordings_start_at_t_zero_with_v_init():
    """As NEURON's ``Vector.record``: the first sample is ``t = 0`` and the initial state."""
    cell = Cell.from_parents([-1, 0], 20.0, [5.0, 1.0])
    params = {**cell.params(), "v_init": -70.0}
    out = simulate(cell, params, [Stimulus(0, 0.5)], 0.1, 1.0, record=(0, 1),
                   states=("v", "m"), every=2)
    np.testing.assert_allclose(out["t"], [0.0, 0.2, 0.4, 0.6, 0.8, 1.0], atol=1e-6)
    v = np.asarray(out["v"])
    np.testing.assert_array_equal(v[0], [-70.0, -70.0])
    assert out["m"].shape == (6, 2) and float(v[1, 0]) > -70.0


def test_one_name_is_one_name():
    cell = Cell.from_parents([-1, 0], 20.0, 1.0)
    out = simulate(cell, cell.params(), [], 0.1, 1.0, states="i_na")
    assert set(out) >= {"i_na"} and out["i_na"].shape == (11, 1)
    with pytest.raises(ConfigError, match=r"cannot record \['i_nav'\]"):
        simulate(cell, cell.params(), [], 0.1, 1.0, states="i_nav")


def test_unclear_inputs_are_named():
    cell = Cell.from_parents([-1, 0], 20.0, 1.0, kind=[1, 3]).insert(hh)
    params = {name: value for name, value in cell.params().items() if name != "gl_hh"}
    with pytest.raises(ConfigError, match=r"missing parameter\(s\) \['gl_hh'\] \(of hh, "
                                          r"inserted in this cell\); start from "
                                          r"cell.params\(\)") as error:
        simulate(cell, params, [], 0.1, 1.0)
    assert "because" not in str(error.value)
    for ncomp in (4.0, True, "4"):
        with pytest.raises(ConfigError, match="ncomp must be an integer, got"):
            Cell.from_swc(swc.fixture("y"), ncomp=ncomp)


@pytest.mark.parametrize("old,new", [("g_leak", "g_pas"), ("e_leak", "e_pas"),
                                     ("capacitance", "cm"), ("axial_resistivity", "Ra")])
def test_neurons_names_for_pas_and_the_section_properties(old, new):
    """A NEURON parameter file's names (``g_pas``, ``e_pas``, ``cm``, ``Ra``) are the
    parameters; jaxlean's former names are refused, naming NEURON's."""
    cell = Cell.from_parents([-1, 0], 20.0, 2.0).insert(pas)
    params = cell.params()
    assert {"g_pas", "e_pas", "cm", "Ra"} <= set(params)
    renamed = {**{k: v for k, v in params.items() if k != new}, old: params[new]}
    with pytest.raises(ConfigError, match=rf"parameter '{old}' is now called '{new}'"):
        simulate(cell, renamed, [], 0.1, 1.0, progress=False)
