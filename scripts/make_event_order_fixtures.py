"""Write the NEURON fixture of NET_RECEIVE's event order (tests/models/neuron/nmodl/fixtures/
event_order.npz).

Test synapses (tests/models/neuron/nmodl/events/): two whose result depends on the order of
events due at one time, ``TieSyn`` (an input event adds ``w`` and sends a self-event ``d``
later that halves ``g``) and ``FifoSyn`` (an input event sends two self-events due at one
time), and ``TMSyn`` (Tsodyks-Markram, its per-connection state set by an INITIAL block
inside NET_RECEIVE). Each case: one compartment with ``pas`` (L = diam = 20 um,
``g_pas`` 5e-5 S/cm2, ``e_pas`` -65 mV), the synapse at its centre, a ``NetStim`` (start
20 ms, 2 spikes ``interval`` apart; 5 spikes 4 ms apart for ``TMSyn``) through a
``NetCon`` (delay 1 ms, weight 1e-3), 40 ms at dt 0.025, float64.
With ``interval = d`` the second input event is due with the first one's self-event:
queued before it when ``d`` <= the NetCon delay, after it when ``d`` is longer. Needs
``neuron`` (``pip install neuron==9.0.2``) and a C compiler:

    python scripts/make_event_order_fixtures.py [--out DIR] [CASE ...]
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
from _fixture_cli import command_line, nrnivmodl_and_load, run_cases  # scripts/ is on sys.path

ROOT = Path(__file__).resolve().parents[1]
MODS = ROOT / "tests" / "models" / "neuron" / "nmodl" / "events"
OUT = ROOT / "tests" / "models" / "neuron" / "nmodl" / "fixtures"
CASES = {  # name: (synapse, the NetStim's interval (ms) and spikes, the synapse's globals)
    "input_queued_first": ("TieSyn", 0.3, 2, {"d": 0.3}),
    "self_event_queued_first": ("TieSyn", 1.3, 2, {"d": 1.3}),
    "self_events_in_order_sent": ("FifoSyn", 0.3, 2, {"d": 0.3}),
    "per_connection_initial": ("TMSyn", 4.0, 5, {}),
}
CELL = {"L": 20.0, "diam": 20.0, "dt": 0.025, "t_max": 40.0, "celsius": 34.0, "v_init": -65.0,
        "g_pas": 5e-5, "e_pas": -65.0, "start": 20.0, "delay": 1.0, "weight": 1e-3}


def write_one(name: str, out: Path) -> None:
    """Run case ``name`` in NEURON and add it to ``out/event_order.npz``."""
    from neuron import h

    synapse, interval, number, values = CASES[name]
    with tempfile.TemporaryDirectory() as scratch:
        shutil.copy(MODS / f"{synapse}.mod", scratch)
        nrnivmodl_and_load(Path(scratch))
    h.load_file("stdrun.hoc")
    soma = h.Section(name="soma")
    soma.L, soma.diam, soma.nseg = CELL["L"], CELL["diam"], 1
    soma.insert("pas")
    soma.g_pas, soma.e_pas = CELL["g_pas"], CELL["e_pas"]
    point = getattr(h, synapse)(soma(0.5))
    for key, value in values.items():
        setattr(h, f"{key}_{synapse}", value)
    stim = h.NetStim()
    stim.start, stim.number, stim.interval, stim.noise = CELL["start"], number, interval, 0
    netcon = h.NetCon(stim, point)
    netcon.delay, netcon.weight[0] = CELL["delay"], CELL["weight"]
    spikes, v = h.Vector(), h.Vector().record(soma(0.5)._ref_v)
    netcon.record(spikes)
    h.celsius, h.dt, h.secondorder = CELL["celsius"], CELL["dt"], 0
    h.cvode_active(0)
    h.finitialize(CELL["v_init"])
    h.continuerun(CELL["t_max"])
    path = out / "event_order.npz"
    kept = dict(np.load(path)) if path.exists() else {}
    kept[f"{name}:v"] = np.asarray(v)[: round(CELL["t_max"] / CELL["dt"]) + 1]
    kept[f"{name}:events"] = np.asarray(spikes) + CELL["delay"]
    kept["cell"] = np.asarray(json.dumps({**CELL, "cases": CASES}))
    np.savez_compressed(path, **kept)


if __name__ == "__main__":
    command_line(lambda names, out: run_cases(__file__, names, out, CASES, write_one), OUT)
