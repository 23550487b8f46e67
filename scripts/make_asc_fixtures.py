"""Write the NEURON fixtures of Neurolucida (ASC) morphologies (tests/models/neuron/fixtures/).

Needs ``neuron`` (``pip install jaxlean[neuron-parity]``; ``asc_pyramid_stub`` also
``bluepyopt``: ``jaxlean[bluepyopt-parity]``): the cell is built as
a NEURON user builds it from ``fixtures/pyramid.asc`` (``Import3d_Neurolucida3``,
``Import3d_GUI.instantiate``), and what jaxlean must reproduce is saved as ``.npz``
files that the tests compare against without NEURON. Run from the repository root:

    python scripts/make_asc_fixtures.py [--out DIR] [CASE ...]

Cases (:data:`CASES`):

* ``asc_pyramid``: the file as read; ``nseg`` by the d_lambda rule; ``hh`` everywhere
  with ``gnabar_hh`` and ``gl_hh`` set per region and by path distance from ``soma(0.5)``
  (``h.distance``, to each segment's centre) by the rules of :data:`RULES`.
* ``asc_pyramid_stub``: BluePyOpt's flow, run by BluePyOpt itself (needs ``bluepyopt``;
  ``scripts/_bluepyopt_cell.py``): its ``NrnFileMorphology`` with ``nseg = 1 + 2 int(L /
  40)`` everywhere, then its ``replace_axon`` (two sections of 30 um, diameters read from
  the old axon by the installed release's rule), then d_lambda, ``hh`` everywhere with
  NEURON's defaults.

Each fixture holds the sections (Import3d's order, new sections last), their parents,
``nseg`` and length, every segment's ``diam``, area and distance from ``soma(0.5)``,
the soma's 3-D points, the voltage at ``soma(0.5)`` and at the tips' last segments,
and the case itself (JSON) so the test reads the same description.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from _fixture_cli import command_line, run_cases  # scripts/ is on sys.path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "models" / "neuron" / "fixtures"
ASC = OUT / "pyramid.asc"
TYPES = {1: "soma", 2: "axon", 3: "dend", 4: "apic"}

#: Region and distance rules of ``asc_pyramid`` (also read by the test): per region,
#: ``["constant", c]``, ``["linear", a, b]`` (a + b d), ``["exponential", a, b, k]``
#: (a + b exp(k d)) or ``["sigmoid", low, high, mid, width]``, with ``d`` the path
#: distance (um) from soma(0.5) to the segment's centre.
RULES = {
    "gnabar_hh": {"soma": ["constant", 0.12], "axon": ["sigmoid", 0.12, 0.3, 30.0, 10.0],
                  "dend": ["linear", 0.12, -2e-4], "apic": ["linear", 0.1, -1e-4]},
    "gl_hh": {"soma": ["constant", 3e-4], "axon": ["constant", 3e-4],
              "dend": ["linear", 3e-4, 1e-6],
              "apic": ["exponential", 3e-4 * -0.8696, 3e-4 * 2.087, 0.0031]},
}

CASES = {
    "asc_pyramid": {"dt": 0.025, "t_max": 20.0, "amp": 1.5, "delay": 1.0, "dur": 15.0,
                    "celsius": 6.3, "Ra": 100.0, "d_lambda": 0.1, "frequency": 100.0,
                    "rules": RULES},
    "asc_pyramid_stub": {"dt": 0.025, "t_max": 20.0, "amp": 1.5, "delay": 1.0, "dur": 15.0,
                         "celsius": 6.3, "Ra": 100.0, "d_lambda": 0.1, "frequency": 100.0,
                         "replace_axon": True},
}


def rule_value(rule: list, d: float) -> float:
    """One rule of :data:`RULES` at distance ``d``."""
    kind, *c = rule
    if kind == "constant":
        return c[0]
    if kind == "linear":
        return c[0] + c[1] * d
    if kind == "exponential":
        return c[0] + c[1] * math.exp(c[2] * d)
    low, high, mid, width = c
    return low + (high - low) / (1.0 + math.exp((mid - d) / width))


def _load(h):
    reader = h.Import3d_Neurolucida3()
    reader.quiet = 1
    reader.input(str(ASC))
    h.Import3d_GUI(reader, False).instantiate(None)
    by_name = {section.name(): section for section in h.allsec()}
    return [by_name[f"{TYPES[int(r.type)]}[{int(r.nameindex)}]"] for r in reader.sections]


def bluepyopt_stub_cell(h) -> tuple[list, list[float]]:
    """BluePyOpt itself (its ``NrnFileMorphology``: Import3d, ``nseg = 1 + 2 int(L / 40)``,
    its ``replace_axon`` of the installed release) on ``pyramid.asc``; the sections in
    the cell's ``all`` list (Import3d's order, the stub last) and the stub's diameters."""
    from _bluepyopt_cell import cell_model, simulator

    model = cell_model("ascstub", ASC, None, None)
    model.instantiate(sim=simulator())
    sections = list(model.icell.all)
    return sections, [model.icell.axon[0].diam, model.icell.axon[1].diam]


def _name(section) -> str:
    """NEURON's name without a template's prefix (``soma[0]`` for ``ascstub[0].soma[0]``)."""
    return section.name().split(".", 1)[-1]


def _d_lambda(h, section, case: dict) -> int:
    lam = h.lambda_f(case["frequency"], sec=section)
    return int((section.L / (case["d_lambda"] * lam) + 0.9) / 2) * 2 + 1


def run(name: str, case: dict) -> dict[str, np.ndarray]:
    """Build and simulate one case in NEURON; return what the test compares."""
    from neuron import h

    h.load_file("stdrun.hoc")
    h.load_file("import3d.hoc")
    h.usetable_hh = 0
    extra = {}
    if case.get("replace_axon"):
        sections, diams = bluepyopt_stub_cell(h)
        extra["stub_diameters"] = np.asarray(diams)
        extra["bluepyopt_version"] = np.asarray(__import__("bluepyopt").__version__)
    else:
        sections = _load(h)
    for section in sections:
        section.Ra, section.cm = case["Ra"], 1.0
    for section in sections:
        section.nseg = _d_lambda(h, section, case)
        section.insert("hh")
        section.ena, section.ek = 50.0, -77.0
    soma = sections[0]
    h.distance(0, soma(0.5))
    segments = [segment for section in sections for segment in section]
    distance = np.asarray([h.distance(soma(0.5), segment) for segment in segments])
    for name_, rules in case.get("rules", {}).items():
        values = []
        for segment, d in zip(segments, distance.tolist(), strict=True):
            region = _name(segment.sec).split("[")[0]
            setattr(segment, name_, rule_value(rules[region], d))
            values.append(getattr(segment, name_))
        extra[f"value_{name_}"] = np.asarray(values)
    tips = [k for k, section in enumerate(sections) if len(section.children()) == 0]
    sites = [soma(0.5)] + [sections[k]((sections[k].nseg - 0.5) / sections[k].nseg)
                           for k in tips]
    clamp = h.IClamp(soma(0.5))
    clamp.delay, clamp.dur, clamp.amp = case["delay"], case["dur"], case["amp"]
    h.celsius, h.dt, h.secondorder = case["celsius"], case["dt"], 0
    h.cvode_active(0)
    recordings = [h.Vector().record(segment._ref_v) for segment in sites]
    time = h.Vector().record(h._ref_t)
    h.finitialize(-65.0)
    h.continuerun(case["t_max"])
    steps = round(case["t_max"] / case["dt"])
    parents = [s.parentseg() for s in sections]
    result = {
        "v": np.stack([np.asarray(r)[: steps + 1] for r in recordings], axis=1),
        "t": np.asarray(time)[: steps + 1],
        "site_names": np.asarray([_name(segment.sec) for segment in sites]),
        "site_x": np.asarray([segment.x for segment in sites]),
        "names": np.asarray([_name(s) for s in sections]),
        "parent_names": np.asarray([_name(p.sec) if p else "" for p in parents]),
        "parent_x": np.asarray([p.x if p else -1.0 for p in parents]),
        "nseg": np.asarray([s.nseg for s in sections], dtype=np.int64),
        "length": np.asarray([s.L for s in sections]),
        "diam": np.asarray([segment.diam for segment in segments]),
        "area": np.asarray([segment.area() for segment in segments]),
        "distance": distance,
        "soma_3d": np.asarray([[soma.x3d(i), soma.y3d(i), soma.z3d(i), soma.diam3d(i)]
                               for i in range(soma.n3d())]),
        "case": np.asarray(json.dumps(case)),
        "neuron_version": np.asarray(__import__("neuron").__version__),
        **extra,
    }
    del clamp
    return result


def main(names: list[str], out: Path = OUT) -> None:
    """Write every case (or those named) to ``out``, one process per case so cells never mix."""

    def write_one(name: str, out: Path) -> None:
        result = run(name, CASES[name])
        np.savez_compressed(out / f"{name}.npz", **result)
        print(f"{name}: {len(result['names'])} sections, {result['v'].shape[0]} steps at "
              f"{result['v'].shape[1]} sites")

    run_cases(__file__, names, out, CASES, write_one)


if __name__ == "__main__":
    command_line(main, OUT)
