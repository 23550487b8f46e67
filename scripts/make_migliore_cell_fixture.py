"""Write the NEURON fixture of Migliore et al. 2018's CA1 pyramidal cell CA1_PC_cAC_sig6
(tests/models/neuron/fixtures/migliore_ca1/migliore_ca1.npz).

NEURON runs the published files themselves, unedited (ModelDB 244688; see the README
beside them): the cell template ``cell_seed3_0-pyr-08.hoc`` (written by BluePyOpt
1.5.29: Import3d on ``mpg141209_A_idA.asc``, ``nseg = 1 + 2 int(L / 40)``, its own
``replace_axon``: two 30 um sections of five segments with the old axon's segment
diameters, the channels per section list and the distance rules of ``biophys()``) and the
twelve ``.mod`` files of ``tests/models/neuron/nmodl/migliore`` compiled by ``nrnivmodl``.
The template's ``check_simulator`` values are used: ``celsius = 34``, ``v_init = -70``.
An ``IClamp`` step on ``soma[0](0.5)``; backward Euler (``secondorder = 0``),
``dt = 0.025`` ms, 500 ms.

Saved: the voltage at the case's sites and the somatic ``cai`` every ``case["every"]``-th
step (from t = 0), the 0 mV upward crossings of the full-resolution traces (spike
times, linearly interpolated), section names, ``nseg``, each segment's distance from
``soma[0](0.5)``, the stub's segment diameters, and the per-segment values of the
distributed parameters (NaN where the mechanism is absent). Needs ``neuron``
(``pip install neuron==9.0.2``) and a C compiler. Run from the repository root:

    python scripts/make_migliore_cell_fixture.py [--out DIR]
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from _fixture_cli import command_line, nrnivmodl_and_load, run_cases  # scripts/ is on sys.path

ROOT = Path(__file__).resolve().parents[1]
MODS = ROOT / "tests" / "models" / "neuron" / "nmodl" / "migliore"
FILES = ROOT / "tests" / "models" / "neuron" / "fixtures" / "migliore_ca1"
TEMPLATE, MORPHOLOGY = "cell_seed3_0-pyr-08.hoc", "mpg141209_A_idA.asc"
CASES = {
    "migliore_ca1": {"dt": 0.025, "t_max": 500.0, "amp": 0.8, "delay": 100.0, "dur": 350.0,
                     "celsius": 34.0, "v_init": -70.0, "every": 10,
                     "sites": [["soma[0]", 0.5], ["apic[10]", 0.5], ["axon[1]", 0.5]]},
}
#: Per-segment values saved (the distributed ones and two uniform ones).
VALUES = ("ghdbar_hd", "gkabar_kad", "e_pas", "gbar_nax", "Ra")


def crossings(v: np.ndarray, dt: float) -> np.ndarray:
    """Upward crossings of 0 mV (ms), linearly interpolated between steps."""
    k = np.flatnonzero((v[:-1] < 0) & (v[1:] >= 0))
    return (k + v[k] / (v[k] - v[k + 1])) * dt


def _name(section) -> str:
    return section.name().split(".", 1)[-1]


def _value(h, section, segment, name: str) -> float:
    if name == "Ra":
        return section.Ra
    return getattr(segment, name) if hasattr(segment, name) else float("nan")


def run(case: dict) -> dict[str, np.ndarray]:
    """Build the published cell in NEURON, simulate the case, return what the test compares."""
    import neuron
    from neuron import h

    h.load_file("stdrun.hoc")
    h.load_file("import3d.hoc")
    folder = Path(tempfile.mkdtemp(prefix="jaxlean_ca1_"))
    for path in MODS.glob("*.mod"):
        shutil.copy(path, folder / path.name)
    nrnivmodl_and_load(folder)
    h.load_file(str(FILES / TEMPLATE))
    cell = h.CA1_PC_cAC_sig6(str(FILES), MORPHOLOGY)
    h.celsius, h.v_init = case["celsius"], case["v_init"]
    h.check_simulator()                                   # the template's own check
    sections = list(cell.all)
    by_name = {_name(s): s for s in sections}
    soma = cell.soma[0]
    sites = [by_name[name](x) for name, x in case["sites"]]
    clamp = h.IClamp(soma(0.5))
    clamp.delay, clamp.dur, clamp.amp = case["delay"], case["dur"], case["amp"]
    recordings = [h.Vector().record(segment._ref_v) for segment in sites]
    cai = h.Vector().record(soma(0.5)._ref_cai)
    h.dt, h.secondorder = case["dt"], 0
    h.cvode_active(0)
    h.tstop, h.steps_per_ms = case["t_max"], 1.0 / case["dt"]
    start = time.perf_counter()
    h.run()
    seconds = time.perf_counter() - start
    steps = round(case["t_max"] / case["dt"])
    v = np.stack([np.asarray(r)[: steps + 1] for r in recordings], axis=1)
    pairs = [(section, segment) for section in sections for segment in section]
    every = case["every"]
    return {
        "v": v[::every], "cai": np.asarray(cai)[: steps + 1][::every],
        **{f"spikes_{k}": crossings(v[:, k], case["dt"]) for k in range(v.shape[1])},
        "names": np.asarray([_name(s) for s in sections]),
        "nseg": np.asarray([s.nseg for s in sections], dtype=np.int64),
        "distance": np.asarray([h.distance(soma(0.5), seg) for _, seg in pairs]),
        "stub_diam": np.asarray([seg.diam for k in (0, 1) for seg in cell.axon[k]]),
        **{f"value_{name}": np.asarray([_value(h, s, seg, name) for s, seg in pairs])
           for name in VALUES},
        "seconds": np.asarray(seconds), "case": np.asarray(json.dumps(case)),
        "neuron_version": np.asarray(neuron.__version__),
    }


def main(names: list[str], out: Path = FILES) -> None:
    """Write the case to ``out`` in a process of its own."""

    def write_one(name: str, out: Path) -> None:
        result = run(CASES[name])
        np.savez_compressed(out / f"{name}.npz", **result)
        spikes = [result[f"spikes_{k}"].size for k in range(result["v"].shape[1])]
        print(f"{name}: {len(result['names'])} sections, {int(result['nseg'].sum())} "
              f"segments, spikes per site {spikes}, NEURON {float(result['seconds']):.2f} s")

    run_cases(__file__, names, out, CASES, write_one)


if __name__ == "__main__":
    command_line(main, FILES)
