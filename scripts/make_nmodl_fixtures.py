"""Write the NEURON fixtures of jaxlean's NMODL translation (tests/models/neuron/nmodl/fixtures/).

Needs ``neuron`` (``pip install jaxlean[neuron-parity]``) and a C compiler: the
``.mod`` files of ``tests/models/neuron/nmodl/mods/`` are compiled with
``nrnivmodl`` (``hh.mod`` is NEURON's own ``hh``, already built in). A
ball-and-stick cell (a one-segment soma, a 5-segment dendrite) runs each case of
:data:`CASES`: the mechanisms on the soma and on the dendrite, their parameters,
an ``IClamp`` on the soma, input spikes for point processes. Backward Euler
(``secondorder = 0``), ``dt = 0.025`` ms, every rate table off
(``usetable_<suffix> = 0``: jaxlean computes rates exactly). The traces
(soma and two dendrite segments) are saved as ``.npz`` with the case (JSON),
from which the test builds the same cell in jaxlean. The hay case has calcium: Ca_HVA and
Ca_LVAst writing ica, a CaDynamics_E2 shell writing cai and SK_E2 reading it on the soma
(cai, ica, eca recorded there), NEURON's mechanism order saved as "order". Run from the repository
root:

    python scripts/make_nmodl_fixtures.py [--out DIR] [CASE ...]
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
from _fixture_cli import command_line, nrnivmodl_and_load, run_cases  # scripts/ is on sys.path

ROOT = Path(__file__).resolve().parents[1]
MODS = ROOT / "tests" / "models" / "neuron" / "nmodl" / "mods"
OUT = ROOT / "tests" / "models" / "neuron" / "nmodl" / "fixtures"

CELL = {"soma_L": 20.0, "soma_diam": 20.0, "dend_L": 200.0, "dend_diam": 2.0, "dend_nseg": 5,
        "Ra": 100.0, "cm": 1.0, "dt": 0.025}
LEAK = {"g": 1e-4, "e": -70.0}
CASES = {
    "hh": {**CELL, "celsius": 16.3, "v_init": -65.0, "t_max": 30.0,
           "soma": {"hh": {}}, "dend": {"hh": {"gnabar": 0.06, "gkbar": 0.02}, "lk": LEAK},
           "ions": {"ena": 50.0, "ek": -77.0},
           "iclamp": {"amp": 0.3, "delay": 1.0, "dur": 15.0},
           "record": {"m_hh": "soma", "n_hh": "dend"}},
    "hay": {**CELL, "celsius": 34.0, "v_init": -80.0, "t_max": 60.0,
            "soma": {"NaTa_t": {"gNaTa_tbar": 2.04}, "Nap_Et2": {"gNap_Et2bar": 0.002},
                     "K_Pst": {"gK_Pstbar": 0.02}, "K_Tst": {"gK_Tstbar": 0.03},
                     "SKv3_1": {"gSKv3_1bar": 0.7}, "Ca_HVA": {"gCa_HVAbar": 0.001},
                     "Ca_LVAst": {"gCa_LVAstbar": 0.003}, "Im": {"gImbar": 0.0005},
                     "Ih": {"gIhbar": 0.0002}, "lk": {"g": 3e-5, "e": -90.0},
                     "SK_E2": {"gSK_E2bar": 0.01},
                     "CaDynamics_E2": {"gamma": 0.02, "decay": 80.0}},
            "dend": {"NaTa_t": {"gNaTa_tbar": 0.02}, "SKv3_1": {"gSKv3_1bar": 0.04},
                     "Ca_HVA": {"gCa_HVAbar": 1e-5},
                     "Im": {"gImbar": 0.0002}, "Ih": {"gIhbar": 0.001},
                     "lk": {"g": 3e-5, "e": -90.0}},
            "ions": {"ena": 50.0, "ek": -85.0},
            "iclamp": {"amp": 0.4, "delay": 5.0, "dur": 40.0},
            "record": {"m_NaTa_t": "soma", "h_Ca_HVA": "soma", "m_Ih": "dend", "cai": "soma",
                       "z_SK_E2": "soma", "ica": "soma", "eca": "soma"}},
    "custom": {**CELL, "celsius": 30.0, "v_init": -70.0, "t_max": 40.0,
               "soma": {"NaTa_t": {"gNaTa_tbar": 1.0}, "kdrq": {"gbar": 400.0},
                        "kslow": {"gbar": 0.004}, "lk": LEAK},
               "dend": {"kdrq": {"gbar": 50.0}, "lk": LEAK},
               "ions": {"ena": 50.0, "ek": -80.0},
               "iclamp": {"amp": 0.2, "delay": 2.0, "dur": 30.0},
               "expsyn": {"segment": 4, "tau": 2.0, "e": 0.0, "weight": 0.02,
                          "times": [3.0, 10.01, 10.3, 25.5]},
               "record": {"n_kdrq": "soma", "s_kslow": "soma", "g_ExpSynM": "synapse"}},
}
SITES = [-1, 2, 4]  # the soma, dendrite segments 2 and 4 (its tip)
BUILT_IN = ("hh",)


def compile_mods(folder: Path) -> None:
    """Compile every ``.mod`` of :data:`MODS` except NEURON's built-in ones, then load them."""

    for path in MODS.glob("*.mod"):
        if path.stem not in BUILT_IN:
            shutil.copy(path, folder / path.name)
    nrnivmodl_and_load(folder)


def run(case: dict) -> dict[str, np.ndarray]:
    """Simulate one case in NEURON; return its recordings and its description."""
    from neuron import h

    h.load_file("stdrun.hoc")
    compile_mods(Path(tempfile.mkdtemp(prefix="jaxlean_nmodl_")))
    soma, dend = h.Section(name="soma"), h.Section(name="dend")
    soma.L, soma.diam, soma.nseg = case["soma_L"], case["soma_diam"], 1
    dend.L, dend.diam, dend.nseg = case["dend_L"], case["dend_diam"], case["dend_nseg"]
    dend.connect(soma(1), 0)
    for section, where in ((soma, "soma"), (dend, "dend")):
        section.Ra, section.cm = case["Ra"], case["cm"]
        for name, values in case[where].items():
            section.insert(name)
            if hasattr(h, f"usetable_{name}"):
                setattr(h, f"usetable_{name}", 0)
            for key, value in values.items():
                for segment in section:
                    setattr(getattr(segment, name), key, value)
        for ion, value in case["ions"].items():
            if hasattr(section(0.5), ion):
                setattr(section, ion, value)
    n = case["dend_nseg"]
    sites = [soma(0.5) if s < 0 else dend((s + 0.5) / n) for s in SITES]
    keep = [soma, dend]
    clamp = h.IClamp(soma(0.5))
    clamp.delay, clamp.dur, clamp.amp = (case["iclamp"][k] for k in ("delay", "dur", "amp"))
    events = []
    synapse = None
    if "expsyn" in case:
        spec = case["expsyn"]
        synapse = h.ExpSynM(dend((spec["segment"] + 0.5) / n))
        synapse.tau, synapse.e = spec["tau"], spec["e"]
        source = h.NetCon(None, synapse)
        source.weight[0] = spec["weight"]
        events = [(source, t) for t in spec["times"]]
        keep += [synapse, source]
    recordings = {"v": [h.Vector().record(s._ref_v) for s in sites]}
    for state, where in case["record"].items():
        if where == "synapse":
            recordings[state] = [h.Vector().record(getattr(synapse, "_ref_" +
                                                           state.split("_")[0]))]
        else:
            segment = sites[0] if where == "soma" else sites[1]
            recordings[state] = [h.Vector().record(getattr(segment, f"_ref_{state}"))]
    handler = h.FInitializeHandler(lambda: [source.event(t) for source, t in events])
    h.celsius, h.dt, h.secondorder = case["celsius"], case["dt"], 0
    h.cvode_active(0)
    h.finitialize(case["v_init"])
    h.continuerun(case["t_max"])
    steps = round(case["t_max"] / case["dt"])
    # From t=0 (v_init, the initial states), as jaxlean records.
    out = {name: np.stack([np.asarray(r)[: steps + 1] for r in vectors], axis=1)
           for name, vectors in recordings.items()}
    reversals = {ion: float(getattr(soma(0.5), ion)) for ion in ("ena", "ek", "eca")
                 if hasattr(soma(0.5), ion)}
    # where no mechanism uses a concentration, eca is NEURON's default parameter
    dend_reversals = {ion: float(getattr(sites[1], ion)) for ion in ("ena", "ek", "eca")
                      if hasattr(sites[1], ion)}
    del handler, keep
    return {**out, "case": np.asarray(json.dumps(case)),
            "reversals": np.asarray(json.dumps(reversals)),
            "dend_reversals": np.asarray(json.dumps(dend_reversals)),
            "order": np.asarray(json.dumps(mechanism_order())),
            "neuron_version": np.asarray(__import__("neuron").__version__)}


def mechanism_order() -> list[str]:
    """NEURON's density mechanism types in registration order (the order of each
    compartment's state updates)."""
    from neuron import h

    types = h.MechanismType(0)
    name = h.ref("")
    out = []
    for k in range(int(types.count())):
        types.select(k)
        types.selected(name)
        out.append(name[0])
    return out


def main(names: list[str], out: Path = OUT) -> None:
    """Write every case (or those named) to ``out``, one process per case so cells never mix."""

    def write_one(name: str, out: Path) -> None:
        result = run(CASES[name])
        np.savez_compressed(out / f"nmodl_{name}.npz", **result)
        print(f"{name}: {sorted(k for k in result if k not in ('case', 'neuron_version'))}")

    run_cases(__file__, names, out, CASES, write_one)


if __name__ == "__main__":
    command_line(main, OUT)
