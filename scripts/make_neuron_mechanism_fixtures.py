"""Write the NEURON parity fixtures of jaxlean's mechanisms (tests/models/neuron/fixtures/).

Needs ``neuron`` (``pip install jaxlean[neuron-parity]``) and, for the user
channel, a C compiler for ``nrnivmodl``. A ball-and-stick cell (a one-segment
soma and a 10-segment dendrite) is built in NEURON with:

* ``ka_ball_stick``: ``hh`` on the soma, ``pas`` and a user-defined A-type K
  channel (:data:`KA_MOD`, compiled with ``nrnivmodl``) on the dendrite, at
  16.3 degC, driven by an ``IClamp``; spikes detected by a ``NetCon``;
* ``synapses``: ``hh`` soma, ``pas`` dendrite, an ``ExpSyn`` and an ``Exp2Syn``
  receiving spike times (``NetCon.event``);
* ``seclamp``: ``hh`` soma held by an ``SEClamp`` at three levels;
* ``defaults``: ``soma.insert("hh")``, ``dend.insert("pas")`` and nothing set: NEURON's
  own defaults of ``hh`` (its leak ``gl_hh``, ``el_hh`` included) and ``pas``.

The other cases set ``hh``'s and ``pas``'s values (:data:`HH`, :data:`PAS`, NEURON's names)
explicitly, ``pas`` to ``hh``'s leak. Every recording starts at ``t = 0`` (``Vector.record``
after ``finitialize``).

Backward Euler (``secondorder = 0``), ``dt = 0.025`` ms, rate tables off. The
traces are saved as ``.npz`` with the case description (JSON), which the test
reads to build the same cell in jaxlean. Run from the repository root:

    python scripts/make_neuron_mechanism_fixtures.py [--out DIR] [CASE ...]
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
from _fixture_cli import command_line, nrnivmodl_and_load, run_cases  # scripts/ is on sys.path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "models" / "neuron" / "fixtures"

KA_MOD = """
NEURON {
    SUFFIX ka
    USEION k READ ek WRITE ik
    RANGE gbar
}
UNITS { (mV) = (millivolt) (mA) = (milliamp) (S) = (siemens) }
PARAMETER { gbar = 0.01 (S/cm2) }
ASSIGNED { v (mV) ek (mV) ik (mA/cm2) ainf binf atau (ms) btau (ms) celsius (degC) }
STATE { a b }
BREAKPOINT {
    SOLVE states METHOD cnexp
    ik = gbar * a * a * a * b * (v - ek)
}
INITIAL { rates(v) a = ainf b = binf }
DERIVATIVE states { rates(v) a' = (ainf - a) / atau  b' = (binf - b) / btau }
PROCEDURE rates(v (mV)) { LOCAL tadj
    tadj = 3 ^ ((celsius - 22) / 10)
    ainf = 1 / (1 + exp(-(v + 60) / 8.5))
    atau = (0.37 + 1 / (exp((v + 46) / 5) + exp(-(v + 238) / 37.5))) / tadj
    binf = 1 / (1 + exp((v + 78) / 6))
    btau = (19 + 1 / (exp((v + 46) / 5) + exp(-(v + 238) / 37.5))) / tadj
}
"""
"""An A-type potassium channel (Connor-Stevens-like kinetics) with a q10 of 3 at 22 degC."""

CELL = {"soma_L": 20.0, "soma_diam": 20.0, "dend_L": 200.0, "dend_diam": 2.0, "dend_nseg": 10,
        "Ra": 100.0, "cm": 1.0, "v_init": -65.0, "dt": 0.025, "t_max": 20.0}
HH = {"gnabar": 0.12, "gkbar": 0.036, "gl": 3e-4, "el": -54.3, "ena": 50.0, "ek": -77.0}
PAS = {"g": 3e-4, "e": -54.3}
SET = {"hh": HH, "pas": PAS}
SITES = [-1, 4, 9]  # the soma, and dendrite segments 4 and 9 (its tip)
CASES = {
    "ka_ball_stick": {**CELL, **SET, "celsius": 16.3, "gbar_ka": 0.02,
                      "iclamp": {"amp": 1.0, "delay": 1.0, "dur": 15.0},
                      "record": ["v", "a_ka", "b_ka", "i_ka", "m", "i_na"],
                      "detect": {"threshold": -20.0, "sites": [-1, 9]}},
    "synapses": {**CELL, **SET, "celsius": 6.3,
                 "expsyn": {"segment": 9, "tau": 2.0, "e": 0.0, "weight": 0.02,
                            "times": [2.01, 2.3, 6.4, 13.33]},
                 "exp2syn": {"segment": 4, "tau1": 0.5, "tau2": 5.0, "e": -10.0, "weight": 0.01,
                             "times": [1.0, 8.71]},
                 "record": ["v", "g_expsyn", "i_expsyn", "a_exp2syn", "b_exp2syn", "i_exp2syn"],
                 "detect": {"threshold": 10.0, "sites": [-1]}},
    "seclamp": {**CELL, **SET, "celsius": 6.3,
                "seclamp": {"amplitudes": [-65.0, -10.0, -40.0], "durations": [2.0, 5.0, 6.0],
                            "rs": 1.0},
                "record": ["v", "i_clamp", "m", "n"],
                "detect": {"threshold": -30.0, "sites": [9]}},
    "defaults": {**CELL, "celsius": 6.3,
                 "iclamp": {"amp": 0.5, "delay": 2.0, "dur": 10.0},
                 "record": ["v", "m", "i_na", "il_hh", "i_pas"],
                 "detect": {"threshold": 0.0, "sites": [-1]}},
}


def _compile_ka(h) -> None:
    """Compile :data:`KA_MOD` with ``nrnivmodl`` and load it."""
    folder = Path(tempfile.mkdtemp(prefix="jaxlean_ka_"))
    (folder / "ka.mod").write_text(KA_MOD)
    nrnivmodl_and_load(folder)
    del h


def ball_and_stick(h, case: dict, suffix: str = ""):
    """A one-segment ``hh`` soma with a ``pas`` dendrite of ``case["dend_nseg"]`` segments
    on its end: the case's geometry, and its ``hh`` and ``pas`` values where it gives them
    (else NEURON's defaults). ``suffix`` tells the sections of several cells apart."""
    soma, dend = h.Section(name=f"soma{suffix}"), h.Section(name=f"dend{suffix}")
    soma.L, soma.diam, soma.nseg = case["soma_L"], case["soma_diam"], 1
    dend.L, dend.diam, dend.nseg = case["dend_L"], case["dend_diam"], case["dend_nseg"]
    dend.connect(soma(1), 0)
    for section in (soma, dend):
        section.Ra, section.cm = case["Ra"], case["cm"]
    soma.insert("hh")
    dend.insert("pas")
    if "hh" in case:
        values = case["hh"]
        soma(0.5).hh.gnabar, soma(0.5).hh.gkbar = values["gnabar"], values["gkbar"]
        soma(0.5).hh.gl, soma(0.5).hh.el = values["gl"], values["el"]
        soma.ena, soma.ek = values["ena"], values["ek"]
    if "pas" in case:
        for segment in dend:
            segment.pas.g, segment.pas.e = case["pas"]["g"], case["pas"]["e"]
    return soma, dend


def _ball_and_stick(h, case: dict):
    soma, dend = ball_and_stick(h, case)
    if "gbar_ka" in case:
        dend.insert("ka")
        for segment in dend:
            segment.ka.gbar = case["gbar_ka"]
        dend.ek = case["hh"]["ek"]
    n = case["dend_nseg"]
    return soma, dend, [soma(0.5) if s < 0 else dend((s + 0.5) / n) for s in SITES]


def run(name: str, case: dict) -> dict[str, np.ndarray]:
    """Simulate one case in NEURON; return its recordings and its description."""
    from neuron import h

    h.load_file("stdrun.hoc")
    h.usetable_hh = 0
    if "gbar_ka" in case:
        _compile_ka(h)
    soma, dend, sites = _ball_and_stick(h, case)
    n = case["dend_nseg"]
    keep, recordings = [soma, dend], {}
    if "iclamp" in case:
        clamp = h.IClamp(soma(0.5))
        clamp.delay, clamp.dur, clamp.amp = (case["iclamp"][k] for k in ("delay", "dur", "amp"))
        keep.append(clamp)
    synapses, events = {}, []
    for kind, make in (("expsyn", h.ExpSyn), ("exp2syn", h.Exp2Syn)):
        if kind not in case:
            continue
        spec = case[kind]
        synapse = make(dend((spec["segment"] + 0.5) / n))
        for key in ("tau", "tau1", "tau2", "e"):
            if key in spec:
                setattr(synapse, key, spec[key])
        source = h.NetCon(None, synapse)
        source.weight[0] = spec["weight"]
        events.extend((source, t) for t in spec["times"])
        synapses[kind] = synapse
        keep.extend([synapse, source])
    if "seclamp" in case:
        spec = case["seclamp"]
        electrode = h.SEClamp(soma(0.5))
        for k in range(3):
            setattr(electrode, f"amp{k + 1}", spec["amplitudes"][k])
            setattr(electrode, f"dur{k + 1}", spec["durations"][k])
        electrode.rs = spec["rs"]
        keep.append(electrode)
        recordings["i_clamp"] = h.Vector().record(electrode._ref_i)
    detectors = []
    for site in case["detect"]["sites"]:
        segment = soma(0.5) if site < 0 else dend((site + 0.5) / n)
        detector = h.NetCon(segment._ref_v, None, sec=segment.sec)
        detector.threshold = case["detect"]["threshold"]
        times = h.Vector()
        detector.record(times)
        detectors.append((detector, times))
    for quantity in case["record"]:
        if quantity == "i_clamp":
            continue
        if quantity.endswith(("_expsyn", "_exp2syn")):
            field, kind = quantity.split("_")
            field = {"a": "A", "b": "B"}.get(field, field)
            recordings[quantity] = h.Vector().record(getattr(synapses[kind], f"_ref_{field}"))
            continue
        reference = {"v": "v", "m": "m_hh", "n": "n_hh", "i_na": "ina", "il_hh": "il_hh",
                     "i_pas": "i_pas", "a_ka": "a_ka", "b_ka": "b_ka", "i_ka": "ik"}[quantity]
        if quantity == "v":
            segments = sites
        elif quantity.endswith("_ka") or quantity == "i_pas":
            segments = [s for s in sites if s.sec == dend]
        else:
            segments = sites[:1]  # hh is on the soma only
        recordings[quantity] = [h.Vector().record(getattr(s, f"_ref_{reference}"))
                                for s in segments]
    handler = h.FInitializeHandler(lambda: [source.event(t) for source, t in events])
    h.celsius, h.dt, h.secondorder = case["celsius"], case["dt"], 0
    h.cvode_active(0)
    h.finitialize(case["v_init"])
    h.continuerun(case["t_max"])
    steps = round(case["t_max"] / case["dt"])
    out = {}
    for quantity, vectors in recordings.items():
        vectors = vectors if isinstance(vectors, list) else [vectors]
        out[quantity] = np.stack([np.asarray(r)[: steps + 1] for r in vectors], axis=1)
    for k, (_, times) in enumerate(detectors):
        out[f"spikes_{k}"] = np.asarray(times)
    del handler, keep
    return {**out, "case": np.asarray(json.dumps(case)),
            "neuron_version": np.asarray(__import__("neuron").__version__)}


def main(names: list[str], out: Path = OUT) -> None:
    """Write every case (or those named) to ``out``, one process per case so cells never mix."""

    def write_one(name: str, out: Path) -> None:
        result = run(name, CASES[name])
        np.savez_compressed(out / f"mechanism_{name}.npz", **result)
        print(f"{name}: {sorted(k for k in result if k not in ('case', 'neuron_version'))}")

    run_cases(__file__, names, out, CASES, write_one)


if __name__ == "__main__":
    command_line(main, OUT)
