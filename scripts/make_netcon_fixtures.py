"""Write the NEURON fixtures of small networks: NetCons, gap junctions (tests/models/neuron/).

Needs ``neuron`` (``pip install jaxlean[neuron-parity]``; ``gap2`` compiles
:data:`HALF_GAP_MOD` with ``nrnivmodl``).

* ``loop3``: three ball-and-stick cells (``hh`` soma, ``pas`` dendrite of :data:`CELL`'s
  segments) in a recurrent loop (:data:`CONNECTIONS`): cell 0 excites cell 1's dendrite
  through an ``ExpSyn``, cell 1 excites cell 2's soma through another, cell 2 inhibits cell
  0's soma through an ``Exp2Syn`` (reversal -80 mV); each ``NetCon`` watches its
  presynaptic soma's voltage with its own threshold and delay. An ``IClamp`` step drives
  cell 0; 1 s.
* ``start_above``: two such cells, a ``NetCon`` whose threshold is below ``v_init``: NEURON
  counts a spike at ``t = 0`` (its flag starts down), delivered after the delay; 10 ms.
* ``half5``: five such cells, each connection's ``delay`` an odd number of half steps
  (1.2125 ms at dt 0.025: NEURON delivers it at the later step, its spike time being ``t +
  1e-10``), in a ring of excitation closed by inhibition (:data:`HALF_STEP`); 1 s.
* ``round5``: the same network at ``dt = 0.1`` ms with delays in round milliseconds and one
  of 1.05 ms (10.5 steps) (:data:`ROUND_MS`); 1 s.
* ``gap2``: two such cells joined by a gap junction (cell 0's dendrite tip to cell 1's soma),
  written as NEURON's usual pair of half-gaps (:data:`HALF_GAP_MOD`, a point process with a
  ``POINTER`` to the other side's voltage), cell 0 driven; 100 ms.

Backward Euler (``secondorder = 0``), ``dt = 0.025`` ms, ``hh`` rate tables off. Saved: the
somas' voltages and a dendrite segment's (``loop3``: cell 1's synaptic one; ``gap2``: cell
0's junction) every :data:`EVERY` steps from ``t = 0``, every spike time each ``NetCon``
saw (``spikes_<k>``, exact, as NEURON records them), and the case (JSON), from which the
test builds the same network. Run from the repository root:

    python scripts/make_netcon_fixtures.py [--out DIR] [CASE ...]
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
from _fixture_cli import command_line, nrnivmodl_and_load, run_cases  # scripts/ is on sys.path
from make_neuron_mechanism_fixtures import ball_and_stick

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "models" / "neuron" / "fixtures"

CELL = {"soma_L": 20.0, "soma_diam": 20.0, "dend_L": 200.0, "dend_diam": 2.0, "dend_nseg": 5,
        "Ra": 100.0, "cm": 1.0}
HH = {"gnabar": 0.12, "gkbar": 0.036, "gl": 3e-4, "el": -54.3, "ena": 50.0, "ek": -77.0}
PAS = {"g": 3e-4, "e": -54.3}
CONNECTIONS = [  # pre cell (soma), post cell, post segment (-1: soma), synapse, NetCon, synapse
    {"pre": 0, "post": 1, "segment": 2, "kind": "expsyn", "weight": 0.02, "delay": 2.0,
     "threshold": -20.0, "tau": 2.0, "e": 0.0},
    {"pre": 1, "post": 2, "segment": -1, "kind": "expsyn", "weight": 0.015, "delay": 3.3,
     "threshold": 0.0, "tau": 3.0, "e": 0.0},
    {"pre": 2, "post": 0, "segment": -1, "kind": "exp2syn", "weight": 0.03, "delay": 1.01,
     "threshold": -10.0, "tau1": 1.0, "tau2": 8.0, "e": -80.0},
]


def _five(delays: list[float]) -> list[dict]:
    """Five cells in a ring, 0 -> 1 -> 2 -> 3 -> 4 exciting, 4 inhibiting 0; one delay per
    connection. One connection per presynaptic cell: NEURON's ``NetCon`` s on one source
    share its threshold and its recorded spikes."""
    ends = [(0, 1, 2, "expsyn", 0.02, -20.0), (1, 2, -1, "expsyn", 0.015, 0.0),
            (2, 3, 1, "expsyn", 0.02, -10.0), (3, 4, -1, "expsyn", 0.015, 0.0),
            (4, 0, -1, "exp2syn", 0.03, -30.0)]
    out = []
    for (pre, post, segment, kind, weight, threshold), delay in zip(ends, delays, strict=True):
        synapse = ({"tau": 2.0, "e": 0.0} if kind == "expsyn"
                   else {"tau1": 1.0, "tau2": 8.0, "e": -80.0})
        out.append({"pre": pre, "post": post, "segment": segment, "kind": kind,
                    "weight": weight, "delay": delay, "threshold": threshold, **synapse})
    return out


HALF_STEP = _five([1.2125, 2.0125, 0.5125, 3.3125, 0.0375])
""":func:`_five` with every delay an odd number of half steps of 0.025 ms."""
ROUND_MS = _five([1.0, 2.0, 1.05, 3.0, 5.0])
""":func:`_five` with round delays at dt 0.1 ms, one of them (1.05 ms) 10.5 steps."""
HALF_GAP_MOD = """
NEURON {
    POINT_PROCESS HalfGap
    NONSPECIFIC_CURRENT i
    RANGE g, i
    POINTER vgap
}
PARAMETER { g = 0.001 (microsiemens) }
ASSIGNED { v (millivolt) vgap (millivolt) i (nanoamp) }
BREAKPOINT { i = g * (v - vgap) }
"""
"""One side of a gap junction: ``g (v - v_other)`` out of this side, ``v_other`` read through a
pointer (at the start of each step, when NEURON computes the currents)."""
EVERY = 20
"""Voltages are saved every this many steps (0.5 ms)."""
CASES = {
    "loop3": {**CELL, "hh": HH, "pas": PAS, "celsius": 6.3, "v_init": -65.0, "dt": 0.025,
              "t_max": 1000.0, "every": EVERY, "connections": CONNECTIONS,
              "iclamp": {"cell": 0, "amp": 0.3, "delay": 5.0, "dur": 990.0}},
    "half5": {**CELL, "hh": HH, "pas": PAS, "celsius": 6.3, "v_init": -65.0, "dt": 0.025,
              "t_max": 1000.0, "every": EVERY, "cells": 5, "connections": HALF_STEP,
              "iclamp": {"cell": 0, "amp": 0.3, "delay": 5.0, "dur": 990.0}},
    "round5": {**CELL, "hh": HH, "pas": PAS, "celsius": 6.3, "v_init": -65.0, "dt": 0.1,
               "t_max": 1000.0, "every": 5, "cells": 5, "connections": ROUND_MS,
               "iclamp": {"cell": 0, "amp": 0.3, "delay": 5.0, "dur": 990.0}},
    "gap2": {**CELL, "hh": HH, "pas": PAS, "celsius": 6.3, "v_init": -65.0, "dt": 0.025,
             "t_max": 100.0, "every": EVERY, "cells": 2, "connections": [],
             "gaps": [{"a": [0, 4], "b": [1, -1], "g": 0.02}],
             "iclamp": {"cell": 0, "amp": 0.5, "delay": 5.0, "dur": 80.0}},
    "start_above": {**CELL, "hh": HH, "pas": PAS, "celsius": 6.3, "v_init": -65.0,
                    "dt": 0.025, "t_max": 10.0, "every": 1, "cells": 2,
                    "connections": [{"pre": 0, "post": 1, "segment": -1, "kind": "expsyn",
                                     "weight": 0.05, "delay": 1.0, "threshold": -70.0,
                                     "tau": 2.0, "e": 0.0}],
                    "iclamp": {"cell": 0, "amp": 0.0, "delay": 0.0, "dur": 0.0}},
}


def _compile_half_gap() -> None:
    """Compile :data:`HALF_GAP_MOD` with ``nrnivmodl`` and load it."""
    folder = Path(tempfile.mkdtemp(prefix="jaxlean_halfgap_"))
    (folder / "halfgap.mod").write_text(HALF_GAP_MOD)
    nrnivmodl_and_load(folder)


def dendrite(case: dict) -> tuple[int, int]:
    """The dendrite segment recorded besides the somas: ``(cell, segment)``."""
    if case.get("gaps"):
        return tuple(case["gaps"][0]["a"])
    return 1, case["connections"][0]["segment"]


def run(case: dict) -> dict[str, np.ndarray]:
    """Simulate the case in NEURON; return its recordings and its description."""
    from neuron import h

    h.load_file("stdrun.hoc")
    h.usetable_hh = 0
    if case.get("gaps"):
        _compile_half_gap()
    cells = [ball_and_stick(h, case, str(k)) for k in range(case.get("cells", 3))]
    n = case["dend_nseg"]

    def segment(cell: int, where: int):
        soma, dend = cells[cell]
        return soma(0.5) if where < 0 else dend((where + 0.5) / n)

    keep, spikes = [], []
    for spec in case["connections"]:
        make = {"expsyn": h.ExpSyn, "exp2syn": h.Exp2Syn}[spec["kind"]]
        synapse = make(segment(spec["post"], spec["segment"]))
        for key in ("tau", "tau1", "tau2", "e"):
            if key in spec:
                setattr(synapse, key, spec[key])
        source = cells[spec["pre"]][0]
        netcon = h.NetCon(source(0.5)._ref_v, synapse, sec=source)
        netcon.weight[0], netcon.delay, netcon.threshold = (spec["weight"], spec["delay"],
                                                            spec["threshold"])
        times = h.Vector()
        netcon.record(times)
        keep += [synapse, netcon]
        spikes.append(times)
    for spec in case.get("gaps", []):
        sides = [h.HalfGap(segment(*spec["a"])), h.HalfGap(segment(*spec["b"]))]
        for side, other in zip(sides, (spec["b"], spec["a"]), strict=True):
            side.g = spec["g"]
            h.setpointer(segment(*other)._ref_v, "vgap", side)
        keep += sides
    spec = case["iclamp"]
    clamp = h.IClamp(segment(spec["cell"], -1))
    clamp.delay, clamp.dur, clamp.amp = spec["delay"], spec["dur"], spec["amp"]
    sites = [segment(k, -1) for k in range(len(cells))] + [segment(*dendrite(case))]
    voltages = [h.Vector().record(s._ref_v) for s in sites]
    h.celsius, h.dt, h.secondorder = case["celsius"], case["dt"], 0
    h.cvode_active(0)
    h.finitialize(case["v_init"])
    h.continuerun(case["t_max"])
    steps = round(case["t_max"] / case["dt"])
    v = np.stack([np.asarray(r)[: steps + 1] for r in voltages], axis=1)[::case["every"]]
    out = {"v": v, **{f"spikes_{k}": np.asarray(t) for k, t in enumerate(spikes)}}
    del keep, clamp
    return {**out, "case": np.asarray(json.dumps(case)),
            "neuron_version": np.asarray(__import__("neuron").__version__)}


def main(names: list[str], out: Path = OUT) -> None:
    """Write every case (or those named) to ``out``, one process per case."""

    def write_one(name: str, out: Path) -> None:
        result = run(CASES[name])
        np.savez_compressed(out / f"netcon_{name}.npz", **result)
        print(f"{name}: spikes {[result[k].size for k in result if k.startswith('spikes_')]}")

    run_cases(__file__, names, out, CASES, write_one)


if __name__ == "__main__":
    command_line(main, OUT)
