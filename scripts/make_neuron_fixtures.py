"""Write the NEURON parity fixtures of the cable simulator (tests/models/neuron/fixtures/).

Needs ``neuron`` (``pip install jaxlean[neuron-parity]``), not jaxlean's own
dependencies: the cells are built the way a NEURON user builds them (Import3d
for SWC files, ``hh`` and ``pas`` from NEURON's library, backward Euler, rate
tables off), and the traces are saved as ``.npz`` files that the test suite
compares against without NEURON. Run from the repository root:

    python scripts/make_neuron_fixtures.py [--out DIR] [CASE ...]

Each case is described once in :data:`CASES`; the test reads the same
description from the fixture file, so the two cannot drift apart.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "jaxlean" / "models" / "neuron" / "data"
OUT = ROOT / "tests" / "models" / "neuron" / "fixtures"

MAX_TIPS = 6
HH = {"gnabar_hh": 0.12, "gkbar_hh": 0.036, "gl_hh": 3e-4, "el_hh": -54.3}
CASES = {
    "passive_cable": {"kind": "cable", "n": 25, "length": 500.0, "diam": 2.0, "dt": 0.025,
                      "t_max": 10.0, "amp": 0.1, "delay": 1.0, "dur": 5.0, "celsius": 6.3},
    "y_hh": {"kind": "swc", "swc": "y", "ncomp": 2, "dt": 0.025, "t_max": 20.0, "amp": 0.4,
             "delay": 1.0, "dur": 15.0, "celsius": 6.3},
    "y_hh_16c": {"kind": "swc", "swc": "y", "ncomp": 2, "dt": 0.025, "t_max": 20.0,
                 "amp": 0.4, "delay": 1.0, "dur": 15.0, "celsius": 16.3},
    "pyramidal_hh": {"kind": "swc", "swc": "pyramidal", "ncomp": 2, "dt": 0.025, "t_max": 20.0,
                     "amp": 1.0, "delay": 1.0, "dur": 15.0, "celsius": 6.3},
}


def _swc_ids(path: Path) -> tuple[np.ndarray, np.ndarray, int]:
    rows = np.array([line.split() for line in path.read_text().splitlines()
                     if line.strip() and not line.lstrip().startswith("#")], dtype=float)
    root = int(rows[rows[:, 6] == -1][0, 0])
    return rows[:, 0].astype(int), rows[:, 2:5], root


def _swc_cell(h, case: dict):
    """Load the SWC file with Import3d; sites: the soma and the last segment of every tip."""
    path = DATA / f"{case['swc']}.swc"
    reader = h.Import3d_SWC_read()
    reader.input(str(path))
    h.Import3d_GUI(reader, False).instantiate(None)
    ids, xyz, root = _swc_ids(path)
    sections = list(h.allsec())
    sites, keep = [], []
    for section in sections:
        section.nseg = 1 if "soma" in section.name() else case["ncomp"]
        section.Ra, section.cm = 100.0, 1.0
        section.insert("hh")
        for segment in section:
            for name, value in HH.items():
                setattr(segment, name, value)
        section.ena, section.ek = 50.0, -77.0
        if "soma" in section.name():
            sites.append((root, 0))
            keep.append(section(0.5))
        elif len(section.children()) == 0:
            last = np.array([section.x3d(section.n3d() - 1), section.y3d(section.n3d() - 1),
                             section.z3d(section.n3d() - 1)])
            ident = int(ids[np.argmin(np.linalg.norm(xyz - last, axis=1))])
            sites.append((ident, section.nseg - 1))
            keep.append(section((section.nseg - 0.5) / section.nseg))
    soma = next(s for s in sections if "soma" in s.name())
    chosen = [0, *np.linspace(1, len(sites) - 1, min(MAX_TIPS, len(sites) - 1)).astype(int)]
    return sections, soma(0.5), [sites[k] for k in chosen], [keep[k] for k in chosen]


def _cable(h, case: dict):
    cable = h.Section(name="cable")
    cable.L, cable.diam, cable.nseg = case["length"], case["diam"], case["n"]
    cable.Ra, cable.cm = 100.0, 1.0
    cable.insert("pas")
    for segment in cable:
        segment.g_pas, segment.e_pas = 3e-4, -54.3
    n = case["n"]
    chosen = [0, n // 2, n - 1]
    keep = [cable((k + 0.5) / n) for k in chosen]
    return [cable], keep[0], [(-1, k) for k in chosen], keep


def run(name: str, case: dict) -> dict[str, np.ndarray]:
    """Simulate one case in NEURON; return its traces and its description."""
    from neuron import h

    h.load_file("stdrun.hoc")
    h.load_file("import3d.hoc")
    if case["kind"] == "swc":
        h.usetable_hh = 0
    build = _swc_cell if case["kind"] == "swc" else _cable
    sections, stimulated, sites, segments = build(h, case)
    clamp = h.IClamp(stimulated)
    clamp.delay, clamp.dur, clamp.amp = case["delay"], case["dur"], case["amp"]
    h.celsius, h.dt, h.secondorder = case["celsius"], case["dt"], 0
    h.cvode_active(0)
    recordings = [h.Vector().record(segment._ref_v) for segment in segments]
    h.finitialize(-65.0)
    h.continuerun(case["t_max"])
    steps = round(case["t_max"] / case["dt"])
    v = np.stack([np.asarray(r)[1: steps + 1] for r in recordings], axis=1)
    del clamp, sections
    return {"v": v, "sites": np.asarray(sites, dtype=np.int64),
            "case": np.asarray(json.dumps(case)),
            "neuron_version": np.asarray(__import__("neuron").__version__)}


def main(names: list[str], out: Path = OUT) -> None:
    """Write every case (or those named) to ``out``, one process per case so cells never mix."""
    import subprocess

    out.mkdir(parents=True, exist_ok=True)
    if len(names) == 1 and names[0] in CASES:
        result = run(names[0], CASES[names[0]])
        np.savez_compressed(out / f"{names[0]}.npz", **result)
        print(f"{names[0]}: {result['v'].shape[0]} steps at {len(result['sites'])} sites")
        return
    unknown = sorted(set(names) - set(CASES))
    if unknown:
        raise SystemExit(f"unknown case(s) {unknown}; have {sorted(CASES)}")
    for name in names or CASES:
        subprocess.run([sys.executable, __file__, "--out", str(out), name], check=True)


if __name__ == "__main__":
    arguments = sys.argv[1:]
    destination = OUT
    if arguments[:1] == ["--out"]:
        destination, arguments = Path(arguments[1]), arguments[2:]
    main(arguments, destination)
