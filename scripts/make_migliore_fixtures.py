"""Write the NEURON fixtures of Migliore et al. 2018's CA1 channels
(tests/models/neuron/nmodl/fixtures/migliore.npz).

The twelve ``.mod`` files of ``tests/models/neuron/nmodl/migliore/`` (ModelDB 244688,
unedited) are compiled with ``nrnivmodl``. Each case of :data:`CASES` is one
compartment (L = diam = 20 um, cm = 1) with ``pas`` and some of the mechanisms at the
given densities, ``celsius = 34``, an ``IClamp`` stepping to a hyperpolarising then a
depolarising current; backward Euler (``secondorder = 0``), ``dt = 0.025`` ms, from
``finitialize(-65)``. Saved per case: the voltage and the recorded variables every
:data:`EVERY` steps from t = 0 (the test compares those samples), and the case (JSON).
All cases run in one process with the mechanisms compiled once; each case builds its
own section and checks that none is left from the case before. Needs ``neuron``
(``pip install neuron==9.0.2``) and a C compiler. Run from the repository root:

    python scripts/make_migliore_fixtures.py [--out DIR]
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
from _fixture_cli import nrnivmodl_and_load  # scripts/ is on sys.path

ROOT = Path(__file__).resolve().parents[1]
MODS = ROOT / "tests" / "models" / "neuron" / "nmodl" / "migliore"
OUT = ROOT / "tests" / "models" / "neuron" / "nmodl" / "fixtures"
EVERY = 20

CELL = {"L": 20.0, "diam": 20.0, "cm": 1.0, "dt": 0.025, "t_max": 160.0, "celsius": 34.0,
        "v_init": -65.0, "pas": {"g": 5e-5, "e": -65.0}, "ions": {"ena": 50.0, "ek": -90.0},
        "steps": [(10.0, 50.0, -0.015), (80.0, 60.0, 0.03)]}
CALCIUM = {"cacum": {"depth": 0.1, "tau": 100.0}}
CASES = {
    "nax": {"mechanisms": {"nax": {"gbar": 0.02}, "kdr": {"gkdrbar": 0.01}},
            "record": ["m_nax", "h_nax", "n_kdr"]},
    "kap": {"mechanisms": {"kap": {"gkabar": 0.02}}, "record": ["n_kap", "l_kap"]},
    "kad": {"mechanisms": {"kad": {"gkabar": 0.02}}, "record": ["n_kad", "l_kad"]},
    "kmb": {"mechanisms": {"kmb": {"gbar": 0.002}}, "record": ["m_kmb"]},
    "hd": {"mechanisms": {"hd": {"ghdbar": 1e-4}}, "record": ["l_hd"]},
    "calcium": {"mechanisms": {**CALCIUM, "can": {"gcanbar": 0.0005},
                               "cal": {"gcalbar": 0.0005}, "cat": {"gcatbar": 0.0005},
                               "kca": {"gbar": 0.001}, "cagk": {"gbar": 0.001}},
                "record": ["cai", "ica", "cmax_cacum", "m_kca", "o_cagk", "m_cal", "h_can",
                           "h_cat", "tau_m_kca", "ggk_cal"]},
    "all": {"mechanisms": {"nax": {"gbar": 0.03}, "kdr": {"gkdrbar": 0.01},
                           "kap": {"gkabar": 0.005}, "kmb": {"gbar": 0.001},
                           "hd": {"ghdbar": 5e-5}, **CALCIUM, "can": {"gcanbar": 1e-4},
                           "cal": {"gcalbar": 1e-4}, "cat": {"gcatbar": 1e-4},
                           "kca": {"gbar": 0.001}, "cagk": {"gbar": 0.001}},
            "record": ["cai", "m_nax", "n_kdr", "m_kca"]},
}


def run(name: str, case: dict) -> dict[str, np.ndarray]:
    """Simulate one case in NEURON; ``{"v": (samples,), state: (samples,)}``."""
    from neuron import h

    if list(h.allsec()):
        raise SystemExit(f"{name}: a section of the case before is still alive")
    soma = h.Section(name=f"soma_{name}")
    soma.L, soma.diam, soma.nseg, soma.cm = case["L"], case["diam"], 1, case["cm"]
    soma.insert("pas")
    soma.g_pas, soma.e_pas = case["pas"]["g"], case["pas"]["e"]
    for mechanism, values in case["mechanisms"].items():
        soma.insert(mechanism)
        for key, value in values.items():
            setattr(soma(0.5), f"{key}_{mechanism}", value)
    for ion, value in case["ions"].items():
        if hasattr(soma(0.5), ion):
            setattr(soma(0.5), ion, value)
    clamps = []
    for delay, duration, amplitude in case["steps"]:
        clamp = h.IClamp(soma(0.5))
        clamp.delay, clamp.dur, clamp.amp = delay, duration, amplitude
        clamps.append(clamp)
    recordings = {"v": h.Vector().record(soma(0.5)._ref_v)}
    for state in case["record"]:
        recordings[state] = h.Vector().record(getattr(soma(0.5), f"_ref_{state}"))
    h.celsius, h.dt, h.secondorder = case["celsius"], case["dt"], 0
    h.cvode_active(0)
    h.finitialize(case["v_init"])
    h.continuerun(case["t_max"])
    steps = round(case["t_max"] / case["dt"])
    out = {key: np.asarray(vector)[: steps + 1] for key, vector in recordings.items()}
    del clamps, recordings, soma
    return out


def main(out: Path, mods: Path = MODS, specs: dict = CASES,
         file: str = "migliore.npz") -> None:
    """Compile the files of ``mods`` (INCLUDE files beside them), run every case of
    ``specs`` and save ``out/file``."""
    import neuron
    from neuron import h

    h.load_file("stdrun.hoc")
    folder = Path(tempfile.mkdtemp(prefix="jaxlean_nmodl_"))
    for path in mods.iterdir():
        shutil.copy(path, folder / path.name)
    nrnivmodl_and_load(folder)
    arrays = {"neuron_version": np.asarray(neuron.__version__), "every": np.asarray(EVERY)}
    cases = {}
    for name, spec in specs.items():
        case = {**CELL, **spec}
        traces = run(name, case)
        cases[name] = case
        for key, trace in traces.items():
            arrays[f"{name}/{key}"] = trace[::EVERY]
        print(f"{name}: v in [{traces['v'].min():.1f}, {traces['v'].max():.1f}] mV")
    arrays["cases"] = np.asarray(json.dumps(cases))
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / file, **arrays)


if __name__ == "__main__":
    arguments = sys.argv[1:]
    main(Path(arguments[1]) if arguments[:1] == ["--out"] else OUT)
