"""A network's cells split over devices (``simulate_network_sharded``) equals the one-device run.

The multi-device checks run in one child process with 8 forced CPU devices
(:func:`tests.parallel.sections.run_sections`): the ``network`` benchmark's MNIST network,
shrunk (16 inputs, 8 hidden, 5 outputs: 5 outputs over 8 devices leave ghost cells), its
voltages and ``gS`` gradient against ``simulate_network`` in float64 and its per-device
gradient temp memory against one device's; NEURON's ``NetCon`` fixtures
(``test_network_netcon.py``'s ``half5``, ``start_above`` and ``gap2``, a gap junction across
the split) split over 4, 2 and 2 devices against the same recordings; the spike exchange
only inside a ``cond`` taken once per shortest delay (``round5``: every 10 and 50 steps); and
``remat=None`` running what the unsplit run runs on 2 and 4 devices (segments or every state
kept, chosen from the whole network's state).
"""

from __future__ import annotations

import textwrap

import jax
import numpy as np
import pytest
from jax.sharding import Mesh

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.network._event_clock import MARGIN, neuron_times
from jaxlean.models.neuron.network.sharded import exchange_interval, simulate_network_sharded
from tests.parallel.sections import check_sections, run_sections

PRELUDE = textwrap.dedent("""
    import json, time
    import jax, jax.numpy as jnp, numpy as np
    jax.config.update("jax_enable_x64", True)
    from jax.sharding import Mesh
    from jaxlean.models.neuron.network.sharded import simulate_network_sharded
    from jaxlean.models.neuron.network.network_sim import simulate_network
    assert jax.device_count() == 8

    def mesh(devices):
        return Mesh(np.array(jax.devices()[:devices]), ("cells",))
""")

MNIST = textwrap.dedent("""
    from jaxlean.bench._network_case import Architecture
    from jaxlean.bench._network_sharded import losses, memory
    start = time.time()
    arch = Architecture(inputs=16, hidden=8, outputs=5, steps=40, batch=1)
    one, split, gS = losses(arch, mesh(8))
    grad_one = jax.jit(jax.value_and_grad(one, has_aux=True)).lower(gS).compile()
    grad_split = jax.jit(jax.value_and_grad(split, has_aux=True)).lower(gS).compile()
    ((_, a), ga), ((_, b), gb) = grad_one(gS), grad_split(gS)
    a, b, ga, gb = np.asarray(a), np.asarray(b), np.asarray(ga), np.asarray(gb)  # host checks
    assert a.shape == b.shape == (41, 29) and a.max() > 0, (a.shape, b.shape, a.max())
    v_error = float(np.max(np.abs(a - b)) / np.max(np.abs(a)))
    grad_error = float(np.max(np.abs(ga - gb)) / np.max(np.abs(ga)))
    assert v_error <= 1e-6 and grad_error <= 1e-6, (v_error, grad_error)
    assert float(np.max(np.abs(ga))) > 0
    ratio = memory(grad_split)["temp"] / memory(grad_one)["temp"]
    assert ratio <= 0.2, ratio
    print(json.dumps({"v_rel": v_error, "grad_rel": grad_error, "temp_ratio": ratio,
                      "seconds": time.time() - start}))
    print("ok")
""")

NETCON = textwrap.dedent("""
    from tests.models.neuron.test_network_netcon import FIXTURES, build, crossings
    start, report = time.time(), {}
    # half5: delays of odd half steps, cells 0-1 | 2-3 | 4 | none over 4 devices (1 -> 2,
    # 3 -> 4 and 4 -> 0 cross); start_above: a spike at 0 exchanged at rest, delivered at
    # 1 ms by a synapse exchanging every 40 steps
    # gap2: two cells joined by a gap junction, one on each device
    for name, devices, t_max in (("half5", 4, 20.0), ("start_above", 2, 10.0),
                                 ("gap2", 2, 30.0)):
        fixture = np.load(FIXTURES / f"netcon_{name}.npz")
        case = json.loads(str(fixture["case"]))
        dt, every = case["dt"], case["every"]
        net, params, stimuli = build(case, t_max)
        sites = [(k, 0) for k in range(len(net.cells))]
        out = simulate_network_sharded(net, params, stimuli, dt, t_max, mesh(devices),
                                       record=sites, detect=sites[::-1])
        v = np.asarray(out["v"])
        spikes, counts = np.asarray(out["spikes"]), np.asarray(out["spike_count"])  # on the host:
        for row, (cell, _) in enumerate(sites[::-1]):  # no eager slice per count; detectors
            count = int(counts[row])                    # in the order asked
            assert np.allclose(spikes[row, :count], crossings(v[:, cell], 10.0, dt)), (name,
                                                                                       cell)
        assert name != "half5" or int(np.sum(counts)) >= 5
        rows = round(t_max / dt) // every + 1
        assert np.abs(v[::every] - fixture["v"][:rows, :len(sites)]).max() < 1e-3, name
        worst = 0.0
        for k, spec in enumerate(case["connections"]):
            theirs = fixture[f"spikes_{k}"]
            theirs = theirs[theirs <= t_max]
            ours = crossings(v[:, spec["pre"]], spec["threshold"], dt)
            assert ours.size == theirs.size > 0, (name, k, ours, theirs)
            worst = max(worst, float(np.abs(ours - theirs).max()))
        assert worst < 1e-3, (name, worst)
        if name == "gap2":   # the unstimulated cell is driven through the junction
            assert v[:, 1].max() > 0, v[:, 1].max()
        if name in ("start_above", "gap2"):   # and the one-device run (bit for bit with
            alone = simulate_network(net, params, stimuli, dt, t_max, record=sites,  # jax
                                     progress=False)  # 0.10's flags; 0.12 compiles otherwise)
            np.testing.assert_allclose(v, np.asarray(alone["v"]), rtol=0, atol=1e-9,
                                       err_msg=name)
        report[name] = {"devices": devices, "spike_ms": worst}
    report["seconds"] = time.time() - start
    print(json.dumps(report))
    print("ok")
""")

EXCHANGE = textwrap.dedent("""
    from tests.models.neuron.test_network_netcon import FIXTURES, build
    from jaxlean.models.neuron.network import sharded
    case = json.loads(str(np.load(FIXTURES / "netcon_round5.npz")["case"]))
    net, params, stimuli = build(case, 5.0)
    jaxpr = jax.make_jaxpr(lambda p: simulate_network_sharded(
        net, p, stimuli, case["dt"], 5.0, mesh(2), record=[(0, 0)])["v"])(params)
    found = []
    def inner_jaxprs(params):  # the jaxprs an equation holds (jax.core's helper left in 0.12)
        for value in params.values():
            for item in value if isinstance(value, (list, tuple)) else [value]:
                if hasattr(item, "eqns"):
                    yield item
                elif hasattr(getattr(item, "jaxpr", None), "eqns"):
                    yield item.jaxpr
    def walk(jaxpr, path):
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "all_gather":
                found.append(path)
            for sub in inner_jaxprs(eqn.params):
                walk(sub, path + (eqn.primitive.name,))
    walk(jaxpr.jaxpr, ())
    in_loop = [p for p in found if "scan" in p]
    # per synapse type (expsyn, exp2syn): one exchange of spike blocks in the loop, inside
    # the cond; one at rest, outside the loop
    types = len(net.synapse_groups())
    assert types == 2 and len(in_loop) == types, found
    assert all(p[p.index("scan"):].count("cond") == 1 for p in in_loop), found
    assert len(found) == 2 * types, found
    every = {syn.name: sharded.exchange_interval(
        np.asarray([dict(net.connections[int(i)].values)["delay"] for i in ix]), case["dt"])
        for name, (syn, ix) in net.synapse_groups().items()}
    assert every == {"expsyn": 10, "exp2syn": 50}, every   # shortest delays 1 and 5 ms
    print(json.dumps({"all_gathers": [list(p) for p in found]}))
    print("ok")
""")

DEFAULT_REMAT = textwrap.dedent("""
    # remat=None: the split runs what the unsplit run runs, chosen from the whole network's
    # state; with the keep-everything limit just below it (a device's share is below it),
    # segments on 2 and 4 devices, and every state kept at the limit
    import re
    from tests.models.neuron.test_network_netcon import FIXTURES, build
    from jaxlean.models.neuron.network.network_sim import default_remat
    from jaxlean.models.neuron.simulation import _time
    case = json.loads(str(np.load(FIXTURES / "netcon_half5.npz")["case"]))
    dt, t_max = case["dt"], 5.0
    net, params, stimuli = build(case, t_max)
    steps = round(t_max / dt)

    def program(run, **options):  # the jaxpr, without the addresses of Python functions
        text = str(jax.make_jaxpr(lambda p: run(net, p, stimuli, dt, t_max, **options)["v"])(
            params))
        return re.sub(r" at 0x[0-9a-f]+", "", text)

    measure, seen = _time.kept_state_bytes, []
    _time.kept_state_bytes = lambda *a: seen.append(measure(*a)) or seen[-1]
    try:
        program(simulate_network, progress=False)  # the unsplit loop measures its state
    finally:
        _time.kept_state_bytes = measure
    whole, keep, split = seen[0], _time.KEEP_STATES_BYTES, {}
    report = {"state_bytes": whole}
    try:
        for limit, want, counts in ((whole - 1, "segments", (2, 4)), (whole, (steps,), (4,))):
            _time.KEEP_STATES_BYTES = limit
            assert default_remat(net, params, dt, t_max) == want, (limit, want)
            for devices in counts:
                split[limit, devices] = program(simulate_network_sharded, mesh=mesh(devices))
                assert split[limit, devices] == program(
                    simulate_network_sharded, mesh=mesh(devices), remat=want), (devices, want)
    finally:
        _time.KEEP_STATES_BYTES = keep
    assert split[whole - 1, 4] != split[whole, 4]  # the two programs differ
    print(json.dumps(report))
    print("ok")
""")

SECTIONS = {"mnist_voltages_gradient_memory": MNIST,
            "netcon_fixtures": NETCON, "exchange_once_per_delay": EXCHANGE,
            "default_remat_is_the_unsplit_runs": DEFAULT_REMAT}


def test_split_network_equals_one_device_and_neuron(tmp_path):
    stdout = check_sections(run_sections(tmp_path, PRELUDE, SECTIONS, devices=8))
    for name, out in stdout.items():
        assert out.strip().endswith("ok"), (name, out)
        print(name, out.strip().splitlines()[0])


def test_exchange_interval_is_never_after_a_delivery():
    """Every event (float64, NEURON's times: ``_event_clock``'s rule) is due at least
    ``exchange_interval - 1`` steps after its spike, so the exchange at the end of the spike's
    block (``every`` steps) comes no later than its delivery."""
    dt = 0.025
    times = neuron_times(dt, 50_000)
    rng = np.random.default_rng(0)
    for delay in [dt, 0.0375, 1.0, 1.01, 1.2125, 2.0125, 100.0125, *rng.uniform(dt, 20, 40)]:
        every = exchange_interval(np.asarray([delay, delay + 30.0]), dt)
        assert every == max(1, int(np.floor(delay / dt + 1e-9)))
        for k in (0, 17, 9_000, 40_000):
            event = (times[k] + MARGIN) + delay
            j = int(np.argmax(event <= times[k:] + dt / 2))   # NEURON's step of delivery
            assert j >= every - 1, (delay, k, j, every)
    assert exchange_interval(np.zeros(0), dt) == 1


def test_refusals_name_the_problem():
    """A mesh without the axis and a non-finite current are refused before anything runs."""
    from jaxlean.models.neuron.mechanisms.channels import hh
    from jaxlean.models.neuron.network.network import Network
    from jaxlean.models.neuron.simulation.cable import Cell, Stimulus

    cell = Cell.from_parents(np.arange(2) - 1, 10.0, 1.0).insert(hh)
    net = Network([cell, cell]).connect_gap((0, 1), (1, 1), g=1e-3)
    mesh = Mesh(np.array(jax.devices()[:1]), ("cells",))
    with pytest.raises(ConfigError, match=r"1-D jax\.sharding\.Mesh with the axis 'cells'"):
        simulate_network_sharded(net, net.params(), [], 0.025, 1.0,
                                 Mesh(np.array(jax.devices()[:1]), ("data",)))
    plain = Network([cell, cell])
    with pytest.raises(ConfigError, match="stimulus 0: current must be finite"):
        simulate_network_sharded(plain, plain.params(), [Stimulus((1, 0), np.nan)], 0.025,
                                 1.0, mesh)
