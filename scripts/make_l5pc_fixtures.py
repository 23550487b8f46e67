"""Write the NEURON fixture of Hay et al.'s L5 pyramidal cell (fixtures/l5pc.npz).

Needs ``neuron``, ``bluepyopt`` (``pip install 'jaxlean[bluepyopt-parity]'``) and a C
compiler (``nrnivmodl``). The cell is Hay et al.'s (2011) layout (``L5PCbiophys3.hoc``;
not BluePyOpt's ``l5pc`` example, a different model: ``make_bluepyopt_fixtures.py``) on
BluePyOpt's morphology loading and axon stub, from the same files jaxlean reads:

* ``fixtures/pyramid.asc`` loaded by BluePyOpt itself (needs ``bluepyopt``; its
  ``NrnFileMorphology``: Import3d, ``nseg = 1 + 2 int(L / 40)`` in every section, then its
  ``replace_axon`` of the installed release: two 30 um sections, one segment each);
* the channels of ``tests/models/neuron/nmodl/mods`` (Hay's ``.mod`` files) compiled by
  ``nrnivmodl``, inserted and set per section list as ``L5PCbiophys3.hoc`` does
  (:data:`BIOPHYS`, HOC run as written); apical Ih ``g (-0.8696 + 2.087 exp(0.0031 d))``,
  apical Ca_HVA / Ca_LVAst ``g`` inside the hot zone ``case["hot_zone"]`` and 0.1 / 0.01
  of it outside, ``d = h.distance(soma[0](0.5), seg)``;
* an ``IClamp`` step on ``soma[0](0.5)``; backward Euler (``secondorder = 0``),
  ``dt = 0.025`` ms, 500 ms, rate tables off (jaxlean computes rates exactly).

Saved: the voltage at ``soma[0](0.5)``, ``dend[2](0.5)`` and ``apic[2](0.5)`` every
``case["every"]``-th step (from t = 0), the somatic ``cai`` likewise, the 0 mV upward
crossings of the full-resolution traces (spike times, linearly interpolated, exact),
``nseg``, section names, each segment's distance and the distributed conductances.
The hot zone is moved to 200-300 um (Hay's 685-885 um lies beyond this small cell)
so that it is exercised. Run from the repository root:

    python scripts/make_l5pc_fixtures.py [--out DIR] [CASE ...]

NEURON's forward run (``h.run``) is timed :data:`TIMED_RUNS` times; the median is printed
and saved (``seconds``; every run in ``seconds_all``).
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from _fixture_cli import command_line, nrnivmodl_and_load, run_cases  # scripts/ is on sys.path
from make_asc_fixtures import _name, bluepyopt_stub_cell

ROOT = Path(__file__).resolve().parents[1]
MODS = ROOT / "tests" / "models" / "neuron" / "nmodl" / "mods"
OUT = ROOT / "tests" / "models" / "neuron" / "fixtures"
TIMED_RUNS = 3
HAY_MODS = ("CaDynamics_E2", "Ca_HVA", "Ca_LVAst", "Ih", "Im", "K_Pst", "K_Tst", "NaTa_t",
            "Nap_Et2", "SK_E2", "SKv3_1")

CASES = {
    "l5pc": {"dt": 0.025, "t_max": 500.0, "amp": 0.5, "delay": 20.0, "dur": 400.0,
             "celsius": 34.0, "v_init": -80.0, "hot_zone": [200.0, 300.0], "every": 10,
             "sites": [["soma[0]", 0.5], ["dend[2]", 0.5], ["apic[2]", 0.5]]},
}

#: ``biophys()`` in the form of Hay et al.'s ``L5PCbiophys3.hoc`` (somatic, apical, basal
#: values Hay's; axonal values BluePyOpt's l5pc release parameters), distributions in Python.
BIOPHYS = """
forsec all_ { insert pas  cm = 1  Ra = 100  e_pas = -90 }
forsec axonal_ {
  insert Ca_LVAst  insert Ca_HVA  insert SKv3_1  insert SK_E2  insert K_Tst  insert K_Pst
  insert Nap_Et2  insert NaTa_t  insert CaDynamics_E2
  ek = -85  ena = 50
  gNaTa_tbar_NaTa_t = 3.137968  gK_Tstbar_K_Tst = 0.089259  gamma_CaDynamics_E2 = 0.002910
  gNap_Et2bar_Nap_Et2 = 0.006827  gSK_E2bar_SK_E2 = 0.007104  gCa_HVAbar_Ca_HVA = 0.000990
  gK_Pstbar_K_Pst = 0.973538  gSKv3_1bar_SKv3_1 = 1.021945  decay_CaDynamics_E2 = 287.198731
  gCa_LVAstbar_Ca_LVAst = 0.008752  g_pas = 0.0000325
}
forsec somatic_ {
  insert Ca_LVAst  insert Ca_HVA  insert SKv3_1  insert SK_E2  insert K_Tst  insert K_Pst
  insert Nap_Et2  insert NaTa_t  insert CaDynamics_E2  insert Ih
  ek = -85  ena = 50
  gIhbar_Ih = 0.0002  g_pas = 0.0000338  decay_CaDynamics_E2 = 460.0
  gamma_CaDynamics_E2 = 0.000501  gCa_LVAstbar_Ca_LVAst = 0.00343  gCa_HVAbar_Ca_HVA = 0.000992
  gSKv3_1bar_SKv3_1 = 0.693  gSK_E2bar_SK_E2 = 0.0441  gK_Tstbar_K_Tst = 0.0812
  gK_Pstbar_K_Pst = 0.00223  gNap_Et2bar_Nap_Et2 = 0.00172  gNaTa_tbar_NaTa_t = 2.04
}
forsec apical_ {
  cm = 2
  insert Ih  insert SK_E2  insert Ca_LVAst  insert Ca_HVA  insert SKv3_1  insert NaTa_t
  insert Im  insert CaDynamics_E2
  ek = -85  ena = 50
  decay_CaDynamics_E2 = 122  gamma_CaDynamics_E2 = 0.000509  gSK_E2bar_SK_E2 = 0.0012
  gSKv3_1bar_SKv3_1 = 0.000261  gNaTa_tbar_NaTa_t = 0.0213  gImbar_Im = 0.0000675
  g_pas = 0.0000589
}
forsec basal_ { cm = 2  insert Ih  gIhbar_Ih = 0.0002  g_pas = 0.0000467 }
"""
#: Apical distributions: ``name: (g, kind, coefficients)``.
DISTRIBUTED = {"gIhbar_Ih": (0.0002, "exp", (-0.8696, 2.087, 0.0031)),
               "gCa_LVAstbar_Ca_LVAst": (0.0187, "zone", (1.0, 0.01)),
               "gCa_HVAbar_Ca_HVA": (0.000555, "zone", (1.0, 0.1))}


def compile_mods(folder: Path) -> None:
    """Compile Hay's ``.mod`` files with ``nrnivmodl`` in ``folder`` and load them."""
    for name in HAY_MODS:
        shutil.copy(MODS / f"{name}.mod", folder / f"{name}.mod")
    nrnivmodl_and_load(folder)


def crossings(v: np.ndarray, dt: float) -> np.ndarray:
    """Upward crossings of 0 mV (ms), linearly interpolated between steps."""
    k = np.flatnonzero((v[:-1] < 0) & (v[1:] >= 0))
    return (k + v[k] / (v[k] - v[k + 1])) * dt


def build(h, case: dict) -> list:
    """Hay's cell on ``pyramid.asc`` in NEURON; its sections in Import3d's order, stub last."""
    sections, _ = bluepyopt_stub_cell(h)
    lists = {name: h.SectionList() for name in ("all_", "somatic_", "axonal_", "apical_",
                                                 "basal_")}
    region = {"soma": "somatic_", "axon": "axonal_", "apic": "apical_", "dend": "basal_"}
    for section in sections:
        lists["all_"].append(sec=section)
        lists[region[_name(section).split("[")[0]]].append(sec=section)
    for name, section_list in lists.items():
        h(f"objref {name}")
        setattr(h, name, section_list)
    h(BIOPHYS.replace("  ", "\n"))  # one HOC statement a line
    for name in HAY_MODS:
        if hasattr(h, f"usetable_{name}"):
            setattr(h, f"usetable_{name}", 0)
    soma = sections[0]
    low, high = case["hot_zone"]
    for section in lists["apical_"]:
        for segment in section:
            d = h.distance(soma(0.5), segment)
            for name, (g, kind, c) in DISTRIBUTED.items():
                value = (g * (c[0] + c[1] * math.exp(c[2] * d)) if kind == "exp"
                         else g * (c[0] if low < d < high else c[1]))
                setattr(segment, name, value)
    return sections


def run(case: dict) -> dict[str, np.ndarray]:
    """Build and simulate the case in NEURON; return what the test compares."""
    from neuron import h

    h.load_file("stdrun.hoc")
    h.load_file("import3d.hoc")
    compile_mods(Path(tempfile.mkdtemp(prefix="jaxlean_l5pc_")))
    sections = build(h, case)
    by_name = {_name(s): s for s in sections}
    soma = sections[0]
    sites = [by_name[name](x) for name, x in case["sites"]]
    clamp = h.IClamp(soma(0.5))
    clamp.delay, clamp.dur, clamp.amp = case["delay"], case["dur"], case["amp"]
    recordings = [h.Vector().record(segment._ref_v) for segment in sites]
    cai = h.Vector().record(soma(0.5)._ref_cai)
    h.celsius, h.dt, h.secondorder = case["celsius"], case["dt"], 0
    h.cvode_active(0)
    h.tstop, h.v_init, h.steps_per_ms = case["t_max"], case["v_init"], 1.0 / case["dt"]
    seconds = []
    for _ in range(TIMED_RUNS):    # deterministic: every run records the same traces
        start = time.perf_counter()
        h.run()
        seconds.append(time.perf_counter() - start)
    steps = round(case["t_max"] / case["dt"])
    v = np.stack([np.asarray(r)[: steps + 1] for r in recordings], axis=1)
    segments = [segment for section in sections for segment in section]
    every = case["every"]
    return {
        "v": v[::every], "cai": np.asarray(cai)[: steps + 1][::every],
        **{f"spikes_{k}": crossings(v[:, k], case["dt"]) for k in range(v.shape[1])},
        "names": np.asarray([_name(s) for s in sections]),
        "nseg": np.asarray([s.nseg for s in sections], dtype=np.int64),
        "distance": np.asarray([h.distance(soma(0.5), seg) for seg in segments]),
        **{f"value_{name}": np.asarray([getattr(seg, name) if hasattr(seg, name) else 0.0
                                        for seg in segments]) for name in DISTRIBUTED},
        "seconds": np.asarray(float(np.median(seconds))), "seconds_all": np.asarray(seconds),
        "case": np.asarray(json.dumps(case)),
        "neuron_version": np.asarray(__import__("neuron").__version__),
    }


def main(names: list[str], out: Path = OUT) -> None:
    """Write every case (or those named) to ``out``, one process per case so cells never mix."""

    def write_one(name: str, out: Path) -> None:
        result = run(CASES[name])
        np.savez_compressed(out / f"{name}.npz", **result)
        spikes = [result[f"spikes_{k}"].size for k in range(result["v"].shape[1])]
        print(f"{name}: {len(result['names'])} sections, spikes per site {spikes}, "
              f"NEURON forward {float(result['seconds']):.3f} s")

    run_cases(__file__, names, out, CASES, write_one)


if __name__ == "__main__":
    command_line(main, OUT)
