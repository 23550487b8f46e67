"""Networks at scale: cells of one type batched (stacked parameters), a program that does not
grow with the number of cells, vmap over stimuli, flat gradient memory, progress."""

from __future__ import annotations

import collections
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.mechanisms.channels import hh, pas
from jaxlean.models.neuron.mechanisms.synapses import expsyn
from jaxlean.models.neuron.network.network import Network
from jaxlean.models.neuron.network.network_sim import _prepare, simulate_network
from jaxlean.models.neuron.simulation.cable import Cell, Stimulus, step_current

DT, T_MAX = 0.025, 5.0


def mixed(synapse: bool = False) -> Network:
    """Three types (a fork with hh, a passive cell with hh on its soma (and an ExpSyn), a
    single compartment), interleaved: [fork, centred, fork, single, centred, fork]."""
    fork = Cell.from_parents([-1, 0, 1, 1, 3], 10.0, [1.0, 0.8, 0.5, 0.5, 0.4]).insert(hh)
    centred = Cell.from_parents([-1, 0, 1], [20.0, 30.0, 30.0], 1.0, attach=[1.0, 0.5, 1.0])
    centred = centred.insert(pas).insert(hh, compartments=[0])
    if synapse:
        centred = centred.insert(expsyn, compartments=[2])
    single = Cell.from_parents([-1], 10.0, 2.0).insert(hh)
    net = Network([fork, centred, fork, single, centred, fork])
    return net.fully_connect([0, 2], [1, 3, 4], gS=0.02).connect((3, 0), (5, 2), gS=0.05)


def stimuli(net: Network, amplitude: float = 0.4) -> list[Stimulus]:
    current = step_current(amplitude, 0.5, 2.0, DT, T_MAX)
    return [Stimulus(net.index(c, 0), current) for c in (0, 2)]


def test_stacked_params_simulate_exactly_as_the_per_cell_list():
    net = mixed()
    record = [(c, k) for c, cell in enumerate(net.cells) for k in range(cell.n)]
    with jax.enable_x64():
        per_cell = net.params()
        per_cell["cells"][2]["gnabar_hh"] = 0.15          # one cell of a type differs
        stacked = net.stacked_params()
        assert [len(t["length"]) for t in stacked["types"]] == [3, 2, 1]
        stacked["types"][0]["gnabar_hh"] = stacked["types"][0]["gnabar_hh"].at[1].set(0.15)
        a = simulate_network(net, per_cell, stimuli(net), DT, T_MAX, record=record,
                             progress=False)["v"]
        b = simulate_network(net, stacked, stimuli(net), DT, T_MAX, record=record,
                             progress=False)["v"]
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert np.asarray(a).max() > 0


def test_stacked_params_are_laid_out_as_the_per_cell_list():
    net = mixed(synapse=True)
    per_cell, stacked = net.params(), net.stacked_params()
    per_cell["cells"][4]["tau_expsyn"] = 3.0     # an ExpSyn instance parameter
    per_cell["cells"][5]["gl_hh"] = np.linspace(1e-4, 5e-4, 5)
    stacked["types"][1]["tau_expsyn"] = stacked["types"][1]["tau_expsyn"].at[1].set(3.0)
    gl = np.repeat(np.asarray(stacked["types"][0]["gl_hh"])[:, None], 5, axis=1)
    gl[2] = np.linspace(1e-4, 5e-4, 5)                     # the fork type, per compartment
    stacked["types"][0]["gl_hh"] = gl
    laid_out = [_prepare(net, p)[1] for p in (per_cell, stacked)]
    assert laid_out[0].keys() == laid_out[1].keys()
    for name, value in laid_out[0].items():                  # every parameter, laid out alike
        np.testing.assert_array_equal(np.asarray(value), np.asarray(laid_out[1][name]), name)
    np.testing.assert_allclose(laid_out[0]["tau_expsyn"], [0.1, 3.0], rtol=1e-6)


def _program_ops(n_hidden: int, stacked: bool) -> tuple[int, int]:
    """Operations of the lowered gradient of a loss of ``n_hidden`` hidden cells, and the
    number of leaves of its parameters."""
    hidden = Cell.from_parents([-1, 0, 1, 1], 10.0, 1.0).insert(hh)
    source = Cell.from_parents([-1, 0], 10.0, 1.0).insert(hh)
    net = Network([source] * 2 + [hidden] * n_hidden).fully_connect(
        [0, 1], list(range(2, 2 + n_hidden)), gS=0.01)
    params = net.stacked_params() if stacked else net.params()
    stim = [Stimulus(net.index(0, 0), step_current(0.3, 0.1, 0.5, DT, 1.0))]

    def loss(p):
        return simulate_network(net, p, stim, DT, 1.0, record=[(2 + k, 0) for k in
                                                                range(n_hidden)],
                                progress=False)["v"].mean()

    text = jax.jit(jax.grad(loss)).lower(params).as_text()
    return sum(collections.Counter(re.findall(r"stablehlo\.[a-z_]+", text)).values()), len(
        jax.tree.leaves(params))


def test_the_stacked_program_does_not_grow_with_the_number_of_cells():
    small, large = _program_ops(4, True), _program_ops(8, True)
    assert small == large                            # the same operations, the same leaves
    assert _program_ops(8, False)[0] > _program_ops(4, False)[0]   # the per-cell list grows


def test_bad_stacked_params_name_the_type_and_cell():
    net = mixed()
    params = net.stacked_params()
    params["types"][0]["gnabar_hh"] = jnp.ones(2)
    with pytest.raises(ConfigError, match=r"params\['types'\]\[0\]\['gnabar_hh'\].*leading axis "
                                          r"of the type's 3 cells.*\(2,\)"):
        simulate_network(net, params, [], DT, T_MAX)
    params = net.stacked_params()
    params["types"][0]["gnabar_hh"] = params["types"][0]["gnabar_hh"].at[2].set(jnp.nan)
    with pytest.raises(ConfigError, match=r"params\['types'\]\[0\] \(cell 5\).*gnabar_hh.*finite"):
        simulate_network(net, params, [], DT, T_MAX)
    params = net.stacked_params()
    params["types"] = params["types"][:2]
    with pytest.raises(ConfigError, match=r"one dict per cell type \(3"):
        simulate_network(net, params, [], DT, T_MAX)
    params = net.stacked_params()
    params["cells"] = net.params()["cells"]
    with pytest.raises(ConfigError, match=r"'types' in place of 'cells'"):
        simulate_network(net, params, [], DT, T_MAX)


def _small() -> Network:
    cell = Cell.from_parents([-1, 0, 1, 1], 10.0, 1.0).insert(hh)
    return Network([cell] * 6).fully_connect([0, 1], [2, 3, 4, 5], gS=0.02)


def test_vmap_over_stimuli_runs_each_stimulus_as_alone():
    net = _small()
    base = np.asarray(step_current(1.0, 0.5, 2.0, DT, T_MAX))

    def run(amplitude):
        stim = [Stimulus(net.index(0, 0), amplitude * base)]
        return simulate_network(net, params, stim, DT, T_MAX, record=[(0, 0), (3, 0)],
                                progress=False)["v"]

    with jax.enable_x64():
        params = net.stacked_params()
        amplitudes = np.asarray([0.0, 0.2, 0.5])  # NumPy: no eager operation to compile
        batched = np.asarray(jax.jit(jax.vmap(run))(amplitudes))
        alone = [np.asarray(run(amplitude)) for amplitude in amplitudes]
    for k in range(3):
        np.testing.assert_allclose(batched[k], alone[k], rtol=0, atol=1e-9)
    assert batched[2, :, 0].max() > 0 > batched[0, :, 0].max()   # only the driven one spikes


def _temp_bytes(t_max: float, remat) -> int:
    net = _small()
    params = net.stacked_params()
    stim = [Stimulus(net.index(0, 0), step_current(0.3, 0.1, 0.5, DT, t_max))]

    def loss(p):
        return simulate_network(net, p, stim, DT, t_max, record=[(5, 0)], remat=remat,
                                progress=False)["v"].mean()

    return jax.jit(jax.grad(loss)).lower(params).compile().memory_analysis().temp_size_in_bytes


def test_gradient_memory_grows_as_the_root_of_the_steps_with_sqrt_remat():
    short, long = _temp_bytes(5.0, "sqrt"), _temp_bytes(20.0, "sqrt")
    assert long < 2.2 * short                 # 4x the steps: about 2x (sqrt), not 4x
    assert long < _temp_bytes(20.0, None)     # below the default's one vector per step


def test_a_long_network_run_reports_its_progress_once_per_segment(monkeypatch, capsys):
    monkeypatch.setenv("JAXLEAN_PROGRESS_INTERVAL", "1e-9")  # every segment is "long"
    net = _small()
    params = net.stacked_params()

    def loss(amplitude):
        stim = [Stimulus(net.index(0, 0), amplitude * jnp.ones(40))]
        return simulate_network(net, params, stim, 0.05, 2.0, record=[(5, 0)],
                                remat=(4, 10))["v"].mean()

    jax.jit(jax.vmap(jax.grad(loss)))(jnp.asarray([0.1, 0.2, 0.3]))
    lines = capsys.readouterr().err.splitlines()
    forward = [line for line in lines if "forward pass," in line]
    assert [line.split(" (")[0] for line in forward] == [
        f"simulate: forward pass, {k}/40 steps" for k in (20, 30, 40)]  # not one per stimulus
    assert lines[-1].startswith("simulate: backward pass done, 40 steps (")


def test_the_gradient_of_a_batch_is_the_mean_of_each_stimulus_gradient():
    net = _small()
    params = net.stacked_params()
    g0 = params["synapses"]["ionotropic"]["gS"]

    def run(gS, amplitude):
        p = {**params, "synapses": {"ionotropic": {**params["synapses"]["ionotropic"],
                                                   "gS": gS}}}
        stim = [Stimulus(net.index(0, 0), amplitude * jnp.ones(40))]
        return simulate_network(net, p, stim, 0.05, 2.0, record=[(2, 0), (5, 3)],
                                progress=False)["v"].mean()

    amplitudes = np.asarray([0.1, 0.3], np.float32)  # NumPy: no eager operation to compile
    batch = jax.jit(jax.grad(lambda g: jax.vmap(lambda a: run(g, a))(amplitudes).mean()))(g0)
    each_grad = jax.jit(jax.grad(run))  # one program for every amplitude
    each = [np.asarray(each_grad(g0, a)) for a in amplitudes]
    np.testing.assert_allclose(batch, (each[0] + each[1]) / 2, rtol=1e-4, atol=1e-6)
