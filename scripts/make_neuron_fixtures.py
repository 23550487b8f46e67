"""Write the NEURON parity fixtures of the cable simulator (tests/models/neuron/fixtures/).

Needs ``neuron`` (``pip install jaxlean[neuron-parity]``), not jaxlean's own
dependencies: the cells are built the way a NEURON user builds them (Import3d
for SWC files, ``hh`` and ``pas`` from NEURON's library, backward Euler, rate
tables off), and the traces are saved as ``.npz`` files that the test suite
compares against without NEURON. Run from the repository root:

    python scripts/make_neuron_fixtures.py [--out DIR] [CASE ...]

Each case is described once in :data:`CASES`; the test reads the same
description from the fixture file, so the two cannot drift apart. The SWC corpus
(:data:`CORPUS`: the shapes of real reconstructions that Import3d reads in its
own way) is written to ``fixtures/corpus/*.swc`` and simulated like the others;
for every SWC case the fixture also holds NEURON's section names (Import3d's order), ``nseg``
and segment areas, and each recorded site as the ``(section name, x)`` a NEURON user writes.
Recordings start at ``t = 0`` (``Vector.record`` after ``finitialize``).

``pyramidal_soma_hh`` is the NEURON habit: ``hh`` on the soma, ``pas`` on every other section,
nothing set (NEURON's defaults of both, ``hh``'s leak included, and of ``Ra`` and ``cm``; the
case's ``Ra`` is NEURON's default, which its d_lambda rule reads).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from _fixture_cli import command_line, run_cases  # scripts/ is on sys.path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "jaxlean" / "models" / "neuron" / "data"
OUT = ROOT / "tests" / "models" / "neuron" / "fixtures"

MAX_TIPS = 6
HH = {"gnabar_hh": 0.12, "gkbar_hh": 0.036, "gl_hh": 3e-4, "el_hh": -54.3}
TYPES = {1: "soma", 2: "axon", 3: "dend", 4: "apic"}

# SWC files with the shapes Import3d treats specially (ids, types, um); see _import3d.py.
CORPUS = {
    # dendrite A forks at its first point on line 2 (NEURON keeps a stub from the soma
    # centre), dendrite B at its first point further down (the branch joins B at x = 0)
    "fork_first_point": """\
1 1 0 0 0 6 -1
2 3 8 0 0 1.0 1
3 3 60 0 0 0.9 2
4 3 120 5 0 0.8 3
5 3 -8 0 0 1.2 1
6 3 -60 10 0 1.0 5
7 3 -130 20 0 0.8 6
8 3 -60 -10 0 1.0 5
9 3 -140 -25 0 0.7 8
10 3 50 -30 0 0.8 2
11 3 100 -60 0 0.6 10
""",
    # repeated points with radius steps: inside a section, at a fork, at a tip (where the
    # last segment boundary falls just before the point: NEURON leaves its ring out); a
    # one-point branch on the fork point (a zero-length section Import3d removes)
    "repeated_points": """\
1 1 0 0 0 7 -1
2 3 9 0 0 1.5 1
3 3 60 0 0 1.4 2
4 3 60 0 0 0.9 3
5 3 120 10 0 0.8 4
6 3 170 40 0 0.7 5
7 3 170 40 0 0.5 6
8 3 220 70 0 0.45 7
9 3 170 40 0 0.55 6
10 3 230 20 0 0.4 9
11 3 170 40 0 0.6 6
12 3 200 80 0 0.4 11
13 3 210 60 5 0.35 11
14 3 -9 0 0 1.1 1
15 3 -9 -73.44 32.64 0.9 14
16 3 -9 -73.44 32.64 0.6 15
""",
    # children on later lines (not the next one) and gaps in the ids
    "line_order": """\
1 1 0 0 0 6 -1
2 3 8 0 0 1 1
3 3 50 0 0 0.9 2
5 3 -8 0 0 1 1
6 3 -50 5 0 0.9 5
7 3 100 5 0 0.8 3
8 3 150 10 0 0.7 7
20 3 -100 10 0 0.8 6
21 3 -150 20 0 0.6 20
""",
    # a soma of several points: dendrites at its end, at its first point, at interior points
    "soma_multi_point": """\
1 1 0 0 0 5 -1
2 1 6 0 0 6 1
3 1 12 0 0 6.5 2
4 1 18 0 0 5 3
5 1 24 0 0 3 4
6 3 30 0 0 1.2 5
7 3 150 0 0 0.8 6
8 3 -6 0 0 1 1
9 3 -120 0 0 0.7 8
10 4 12 8 0 1.5 3
11 4 12 150 0 1 10
12 2 18 -6 0 0.6 4
""",
    # a soma that branches at its root and at a later point: several soma sections
    "soma_branched": """\
1 1 0 0 0 5 -1
2 1 5 0 0 5 1
3 1 10 0 0 4 2
4 1 14 4 0 3 3
5 1 18 8 0 2 4
6 1 14 -4 0 3 3
7 1 18 -8 0 2 6
8 1 -5 3 0 4 1
9 1 -9 6 0 3 8
10 3 20 10 0 1 5
11 3 100 60 0 0.7 10
12 3 16 0 0 1 3
13 3 150 0 0 0.6 12
14 3 -12 8 0 0.9 9
15 3 -100 80 0 0.6 14
""",
    # NeuroMorpho's three-point soma; a dendrite forking at its first point
    "soma_three_point": """\
1 1 0 0 0 6 -1
2 1 0 -6 0 6 1
3 1 0 6 0 6 1
4 3 8 0 0 1.2 1
5 3 80 0 0 1 4
6 3 150 10 0 0.8 5
7 3 80 -40 0 0.8 4
8 3 140 -80 0 0.6 7
9 2 -8 0 0 0.8 1
10 2 -200 0 0 0.6 9
""",
    # a soma outline (contour) written as a chain of type-1 points
    "soma_contour": "".join(
        f"{k + 1} 1 {8 * math.cos(2 * math.pi * k / 12):.3f} "
        f"{8 * math.sin(2 * math.pi * k / 12):.3f} 0 {2 + (k % 3) * 0.5} {k if k else -1}\n"
        for k in range(12)) + """\
13 3 10 0 0 1.0 1
14 3 150 0 0 0.7 13
15 4 0 10 0 1.2 4
16 4 0 160 0 0.8 15
17 3 -10 -10 0 1.0 12
18 3 -120 -90 0 0.6 17
""",
    # no soma: the root is a dendrite point with two children
    "no_soma": """\
1 3 0 0 0 1.5 -1
2 3 20 0 0 1.4 1
3 3 40 0 0 1.3 2
4 3 -20 0 0 1.2 1
5 3 -60 0 0 1.0 4
6 3 -90 20 0 0.8 5
7 3 -90 -20 0 0.8 5
""",
}

_SWC = {"kind": "swc", "dt": 0.025, "t_max": 20.0, "delay": 1.0, "dur": 15.0,
        "celsius": 6.3, "Ra": 100.0}
_CORPUS = {"kind": "swc", "dt": 0.025, "t_max": 10.0, "amp": 1.0, "delay": 1.0, "dur": 5.0,
           "celsius": 6.3, "Ra": 35.4}
CASES = {
    "passive_cable": {"kind": "cable", "n": 25, "length": 500.0, "diam": 2.0, "dt": 0.025,
                      "t_max": 10.0, "amp": 0.1, "delay": 1.0, "dur": 5.0, "celsius": 6.3,
                      "g_pas": 3e-4, "e_pas": -54.3, "Ra": 100.0},
    "y_hh": {**_SWC, "swc": "y", "nseg": ["ncomp", 2], "amp": 0.4},
    "y_hh_16c": {**_SWC, "swc": "y", "nseg": ["ncomp", 2], "amp": 0.4, "celsius": 16.3},
    "pyramidal_hh": {**_SWC, "swc": "pyramidal", "nseg": ["ncomp", 2], "amp": 1.0},
    "pyramidal_soma_hh": {**_CORPUS, "swc": "pyramidal", "nseg": ["d_lambda", 0.1, 100.0],
                          "amp": 4.0, "dur": 6.0, "channels": "soma_hh"},
    **{f"corpus_{name}": {**_CORPUS, "swc": f"corpus/{name}", "nseg": ["d_lambda", 0.1, 100.0]}
       for name in CORPUS},
}
CASES["corpus_soma_contour"]["nseg"] = ["max_length", 15.0]
CASES["corpus_soma_branched"]["nseg"] = ["fixed", 2]


def swc_path(case: dict) -> Path:
    """Where a case's SWC file lies: the bundled data, or the corpus next to the fixtures."""
    name = case["swc"]
    return OUT / f"{name}.swc" if name.startswith("corpus/") else DATA / f"{name}.swc"


def _nseg(h, section, rule: list, is_soma: bool) -> int:
    """``nseg`` as a NEURON user sets it; ``d_lambda`` is the CellBuilder's rule."""
    if rule[0] == "ncomp":
        return 1 if is_soma else rule[1]
    if rule[0] == "fixed":
        return rule[1]
    if rule[0] == "max_length":
        return max(1, math.ceil(section.L / rule[1]))
    d_lambda, frequency = rule[1], rule[2]
    return int((section.L / (d_lambda * h.lambda_f(frequency, sec=section)) + 0.9) / 2) * 2 + 1


def _swc_cell(h, case: dict):
    """Load the SWC file with Import3d; sections in Import3d's order; sites: the root's
    middle segment and the last segment of up to MAX_TIPS tip sections."""
    path = swc_path(case)
    reader = h.Import3d_SWC_read()
    reader.quiet = 1
    reader.input(str(path))
    h.Import3d_GUI(reader, False).instantiate(None)
    by_name = {section.name(): section for section in h.allsec()}
    sections = []
    for record in reader.sections:
        kind = int(record.type)
        sections.append(by_name[f"{TYPES.get(kind, f'dend_{kind}')}[{int(record.nameindex)}]"])
    for section in sections:
        if case.get("channels") == "soma_hh":  # the NEURON habit, every value NEURON's default
            section.nseg = _nseg(h, section, case["nseg"], section.name().startswith("soma"))
            section.insert("hh" if section.name().startswith("soma") else "pas")
            continue
        section.Ra, section.cm = case["Ra"], 1.0
        section.nseg = _nseg(h, section, case["nseg"], section.name().startswith("soma"))
        section.insert("hh")
        for segment in section:
            for name, value in HH.items():
                setattr(segment, name, value)
        section.ena, section.ek = 50.0, -77.0
    root = sections[0]
    sites = [(0, min(int(root.nseg * 0.5), root.nseg - 1))]
    tips = [k for k, section in enumerate(sections) if len(section.children()) == 0]
    chosen = np.unique(np.linspace(0, len(tips) - 1, min(MAX_TIPS, len(tips))).astype(int))
    sites += [(tips[k], sections[tips[k]].nseg - 1) for k in chosen.tolist()]
    segments = [sections[k]((j + 0.5) / sections[k].nseg) for k, j in sites]
    return sections, root(0.5), sites, segments


def _cable(h, case: dict):
    cable = h.Section(name="cable")
    cable.L, cable.diam, cable.nseg = case["length"], case["diam"], case["n"]
    cable.Ra, cable.cm = case["Ra"], 1.0
    cable.insert("pas")
    for segment in cable:
        segment.g_pas, segment.e_pas = case["g_pas"], case["e_pas"]
    n = case["n"]
    chosen = [0, n // 2, n - 1]
    keep = [cable((k + 0.5) / n) for k in chosen]
    return [cable], keep[0], [(0, k) for k in chosen], keep


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
    time = h.Vector().record(h._ref_t)
    h.finitialize(-65.0)
    h.continuerun(case["t_max"])
    steps = round(case["t_max"] / case["dt"])
    v = np.stack([np.asarray(r)[: steps + 1] for r in recordings], axis=1)
    result = {"v": v, "t": np.asarray(time)[: steps + 1],
              "sites": np.asarray(sites, dtype=np.int64),
              "site_names": np.asarray([segment.sec.name() for segment in segments]),
              "site_x": np.asarray([segment.x for segment in segments]),
              "names": np.asarray([s.name() for s in sections]),
              "nseg": np.asarray([s.nseg for s in sections], dtype=np.int64),
              "area": np.asarray([segment.area() for s in sections for segment in s]),
              "case": np.asarray(json.dumps(case)),
              "neuron_version": np.asarray(__import__("neuron").__version__)}
    del clamp, sections
    return result


def write_corpus() -> None:
    """Write the corpus's SWC files next to the fixtures (only those whose text changed)."""
    (OUT / "corpus").mkdir(exist_ok=True)
    for name, text in CORPUS.items():
        path = OUT / "corpus" / f"{name}.swc"
        text = f"# jaxlean's SWC corpus: {name} (written by {Path(__file__).name})\n{text}"
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)


def main(names: list[str], out: Path = OUT) -> None:
    """Write every case (or those named) to ``out``, one process per case so cells never mix."""
    out.mkdir(parents=True, exist_ok=True)
    write_corpus()

    def write_one(name: str, out: Path) -> None:
        result = run(name, CASES[name])
        np.savez_compressed(out / f"{name}.npz", **result)
        print(f"{name}: {result['v'].shape[0]} steps at {len(result['sites'])} sites")

    run_cases(__file__, names, out, CASES, write_one)


if __name__ == "__main__":
    command_line(main, OUT)
