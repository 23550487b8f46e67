"""Networks: the forest of cells, building connections, checks that name the connection."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.mechanisms.channels import hh, pas
from jaxlean.models.neuron.network.network import Network
from jaxlean.models.neuron.network.network_sim import simulate_network
from jaxlean.models.neuron.simulation.cable import Cell, Stimulus, simulate, step_current

DT, T_MAX = 0.025, 10.0


def cells() -> list[Cell]:
    """Three morphologies (a fork with a junction, a dendrite on the soma's centre, a
    single compartment) and two mechanism sets (hh everywhere; pas with hh on the soma)."""
    fork = Cell.from_parents([-1, 0, 1, 1, 3], 10.0, [1.0, 0.8, 0.5, 0.5, 0.4]).insert(hh)
    centred = Cell.from_parents([-1, 0, 1], [20.0, 30.0, 30.0], 1.0, attach=[1.0, 0.5, 1.0])
    centred = centred.insert(pas).insert(hh, compartments=[0])
    return [fork, centred, Cell.from_parents([-1], 10.0, 2.0).insert(hh)]


def test_unconnected_cells_run_as_they_run_alone():
    net = Network(cells())
    current = step_current(0.3, 1.0, 2.0, DT, T_MAX)
    with jax.enable_x64():
        params = net.params()
        params["cells"][1]["gnabar_hh"] = 0.2     # per-cell values stay with their cell
        stimuli = [Stimulus(net.index(c, 0), current) for c in range(3)]
        record = [(c, k) for c, cell in enumerate(net.cells) for k in range(cell.n)]
        together = np.asarray(simulate_network(net, params, stimuli, DT, T_MAX, record=record,
                                               progress=False)["v"])
        column = 0
        for c, cell in enumerate(net.cells):
            alone = simulate(cell, params["cells"][c], [Stimulus(0, current)], DT, T_MAX,
                             record=list(range(cell.n)), progress=False)["v"]
            np.testing.assert_allclose(together[:, column:column + cell.n], alone, rtol=0,
                                       atol=1e-9)
            column += cell.n
    assert together.max() > 0   # the cells spike


def test_a_synapse_drives_its_postsynaptic_cell_only():
    net = Network(cells()).connect((0, 4), (2, 0), gS=0.05)
    stimuli = [Stimulus(0, step_current(0.5, 1.0, 2.0, DT, T_MAX))]
    with jax.enable_x64():
        out = simulate_network(net, net.params(), stimuli, DT, T_MAX, record=[(1, 0), (2, 0)],
                               progress=False)
        quiet = simulate_network(Network(cells()), Network(cells()).params(), stimuli, DT,
                                 T_MAX, record=[(1, 0), (2, 0)], progress=False)
    v, v_quiet = np.asarray(out["v"]), np.asarray(quiet["v"])
    np.testing.assert_allclose(v[:, 0], v_quiet[:, 0], atol=1e-12)
    assert v[:, 1].max() > 0 > v_quiet[:, 1].max()


def test_continuing_from_final_gives_the_whole_run():
    net = Network(cells()).connect((0, 0), (1, 2), gS=0.05).connect((1, 0), (0, 2), gS=0.01)
    stimuli = [Stimulus(0, step_current(0.5, 1.0, 2.0, DT, T_MAX))]
    half = [Stimulus(0, step_current(0.5, 1.0, 2.0, DT, T_MAX)[:200])]
    rest = [Stimulus(0, step_current(0.5, 1.0, 2.0, DT, T_MAX)[200:])]
    with jax.enable_x64():
        params = net.params()
        whole = simulate_network(net, params, stimuli, DT, T_MAX, record=[(1, 2)],
                                 progress=False)
        first = simulate_network(net, params, half, DT, 5.0, record=[(1, 2)], progress=False)
        second = simulate_network(net, params, rest, DT, 5.0, record=[(1, 2)], progress=False,
                                  initial=first["final"])
    np.testing.assert_array_equal(np.asarray(whole["v"])[201:], np.asarray(second["v"]))
    joined = np.concatenate([np.asarray(first["v"]), np.asarray(second["v"])])
    np.testing.assert_array_equal(joined, np.asarray(whole["v"]))   # as NEURON's continuerun


def test_building_by_lists_fully_randomly_and_by_matrix():
    base = Network(cells())
    net = base.connect_many([(0, 0), (1, (1, 0.5))], [(1, 0), (2, 0)], gS=[0.1, 0.2])
    assert [(c.pre_cell, c.pre, c.post_cell, c.post) for c in net.connections] == [
        (0, 0, 1, 0), (1, 2, 2, 0)]
    np.testing.assert_allclose(net.params()["synapses"]["ionotropic"]["gS"], [0.1, 0.2])
    assert len(base.fully_connect([0, 1, 2], [0, 1, 2]).connections) == 6   # no self-loops
    a = base.connect_random([0, 1, 2], [0, 1, 2], p=0.5, seed=3)
    b = base.connect_random([0, 1, 2], [0, 1, 2], p=0.5, seed=3)
    assert a.connections == b.connections
    m = base.connect_matrix([[0, 1, 0], [0, 0, 1], [1, 0, 0]])
    assert [(c.pre_cell, c.post_cell) for c in m.connections] == [(0, 1), (1, 2), (2, 0)]
    assert net.index(1, 0) == 5 and net.index(2, 0) == 8 and net.n == 9


def test_bad_connections_name_the_connection():
    net = Network(cells()).connect((0, 0), (1, 0))
    with pytest.raises(ConfigError, match=r"connection 1 \(post \(7, 0\)\).*cell 7 does not "
                                          r"exist.*0 to 2"):
        net.connect((0, 0), (7, 0))
    with pytest.raises(ConfigError, match=r"connection 1 \(pre \(0, 9\)\).*no compartment 9"):
        net.connect((0, 9), (1, 0))
    with pytest.raises(ConfigError, match=r"connection 1 \(cell 0 compartment 2 -> cell 2 "
                                          r"compartment 0, ionotropic\): gS must be finite"):
        net.connect((0, 2), (2, 0), gS=float("nan"))
    with pytest.raises(ConfigError, match=r"unknown parameter.*weight"):
        net.connect((0, 2), (2, 0), weight=1.0)


def test_the_default_record_is_compartment_0():
    """``record`` left out records the forest's compartment 0 (it was ``(0,)``, read as a
    malformed ``(cell, location)``); traced only."""
    net = Network(cells())
    shape = jax.eval_shape(lambda p: simulate_network(net, p, [], DT, T_MAX, progress=False),
                           net.params())["v"].shape
    assert shape == (round(T_MAX / DT) + 1, 1)


def test_bad_params_name_the_connection_or_cell():
    net = Network(cells()).connect((0, 0), (1, 0)).connect((1, 0), (2, 0))
    params = net.params()
    params["synapses"]["ionotropic"]["gS"] = np.array([0.1, np.nan])
    with pytest.raises(ConfigError, match=r"connection 1 \(cell 1 compartment 0 -> cell 2 "
                                          r"compartment 0, ionotropic\) must be finite"):
        simulate_network(net, params, [], DT, T_MAX)
    params = net.params()
    params["cells"][2]["gnabar_hh"] = np.nan
    with pytest.raises(ConfigError, match=r"params\['cells'\]\[2\].*gnabar_hh"):
        simulate_network(net, params, [], DT, T_MAX)
    params = net.params()
    params["cells"][1]["celsius"] = 20.0
    with pytest.raises(ConfigError, match=r"celsius'\] must be the same"):
        simulate_network(net, params, [], DT, T_MAX)
    with pytest.raises(ConfigError, match=r"record.*not a compartment"):
        simulate_network(net, net.params(), [], DT, T_MAX, record=[99])
    for wrong in ({**net.params(), "extra": {}}, {**net.params(), **net.stacked_params()},
                  {"synapses": net.params()["synapses"]}):
        with pytest.raises(ConfigError, match=r"params must be .*; got \["):
            simulate_network(net, wrong, [], DT, T_MAX)


@pytest.mark.parametrize("first", [True, False])
def test_gradient_inside_a_transformation_follows_x64_both_ways(first):
    """The network's loop traced in place (inside ``jax.grad``) with 64-bit mode on, then off
    (or the other way round): each runs in its own precision instead of failing on arrays
    derived under the other."""
    net = Network(cells()[:2]).connect((0, 0), (1, 0), gS=0.02)
    stimuli = [Stimulus(net.index(0, 0), 0.3)]
    for x64 in (first, not first):
        with jax.enable_x64(x64):
            params = net.params()

            def loss(gS, params=params):
                q = {**params, "synapses": {name: {**values, "gS": gS}
                                            for name, values in params["synapses"].items()}}
                return simulate_network(net, q, stimuli, DT, 2.0, record=[(1, 0)],
                                        progress=False)["v"][-1, 0]

            grad = jax.jit(jax.grad(loss))(jax.numpy.asarray([0.02]))  # one program
            assert grad.dtype == (np.float64 if x64 else np.float32)
            assert np.all(np.isfinite(np.asarray(grad)))


def test_a_stimulus_takes_cell_and_location_as_record_does():
    """``Stimulus((1, 0), I)`` in a network is cell 1's compartment 0 (as ``record=(1, 0)``),
    not the forest's compartments 1 and 0 (both in cell 0)."""
    net = Network(cells()[:2])
    current = step_current(0.5, 1.0, 2.0, DT, 5.0)
    with jax.enable_x64():
        run = [simulate_network(net, net.params(), stimuli, DT, 5.0, record=[(0, 0), (1, 0)],
                                progress=False)["v"]
               for stimuli in ([Stimulus((1, 0), current)], [Stimulus(net.index(1, 0), current)],
                               [Stimulus([(1, 0), (0, 1)], current)],
                               [Stimulus([net.index(1, 0), net.index(0, 1)], current)])]
    v = [np.asarray(r) for r in run]
    np.testing.assert_array_equal(v[0], v[1])
    assert v[0][:, 1].max() > 0 and v[0][:, 0].max() < -60   # cell 1 driven, cell 0 at rest
    np.testing.assert_array_equal(v[2], v[3])
    with pytest.raises(ConfigError, match=r"stimulus 0: .*cell 2 does not exist"):
        simulate_network(net, net.params(), [Stimulus((2, 0), current)], DT, 5.0,
                         progress=False)
