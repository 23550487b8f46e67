"""Write the NEURON fixture of the ModelDB corpus's point processes
(tests/models/neuron/nmodl/fixtures/modeldb_points.npz).

Each ``POINT_PROCESS`` file of the corpus (tests/models/neuron/nmodl/corpus/, see
``scripts/make_modeldb_corpus_fixtures.py``) is compiled with its folder (``nrnivmodl``;
alone, with the folder's other files, when the folder does not compile) and run in a fresh
NEURON process: one compartment (L = diam = 20 um, ``cm`` 1, ``pas`` with ``g_pas`` 5e-5
S/cm2 and ``e_pas`` -65 mV), the point process at its centre with the parameters of
:data:`POINTS` (its defaults otherwise) and its POINTERs set to constant values
(``setpointer`` to a Vector's element), ``celsius = 34``, ``finitialize(-65)``, backward
Euler at ``dt = 0.025`` ms for :data:`PROTOCOL` ``t_max``, float64, rate tables off. A file
with a ``NET_RECEIVE`` block is driven by a ``NetStim`` (``start``, ``interval``,
``number``, ``noise = 0``) through a ``NetCon`` (``delay``, ``weight[0]`` of
:data:`POINTS`); the times its events are delivered (NetStim spike + delay) are kept. The
voltage (and the variables a file lists under ``record``) is kept every :data:`EVERY`
steps. A file NEURON cannot run alone (an unset POINTER, say) is recorded with NEURON's
message. Needs ``neuron`` (``pip install neuron==9.0.2``) and a C compiler:

    python scripts/make_modeldb_point_fixtures.py [--out DIR] [PATH ...]

(``PATH`` as ``37819/AMPA.mod``, relative to the corpus; all of :data:`POINTS` if none.)
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "models" / "neuron" / "nmodl" / "corpus"
OUT = ROOT / "tests" / "models" / "neuron" / "nmodl" / "fixtures"
CELL = {"L": 20.0, "diam": 20.0, "cm": 1.0, "dt": 0.025, "t_max": 300.0, "celsius": 34.0,
        "v_init": -65.0, "pas": {"g": 5e-5, "e": -65.0}}
PROTOCOL = {"start": 20.0, "interval": 20.005, "number": 6, "delay": 1.0}
"""The events fall at 21, 41.005, 61.01, 81.015, 101.02, 121.025 ms: at a step's start, and
within a step before and after its middle (``t + dt/2``, where NEURON's fixed step stops
delivering)."""
EVERY = 10

# per file: the parameters set (defaults otherwise), the values its POINTERs point to (a
# Vector element each, which the run does not change; NEURON refuses a run with a POINTER
# never set), the Random its setRNG takes (``random``: ``new Random(seed)`` in the
# distribution named, as the published model's hoc makes it: ``negexp(1)``), the NetCon
# weight (files with NET_RECEIVE; chosen so that an event moves v by a few mV) and extra
# variables recorded. The two Blue Brain synapses run with the parameters their model
# (ModelDB 249463, ``almog/model_withsyns.hoc``) gives them; with seed 3, some events
# release and some do not (their rising conductance state, which each release moves,
# is recorded).
POINTS: dict[str, dict] = {
    "116096/ampacin.mod": {"params": {"gmax": 1e-4}},
    "123815/ANsyn.mod": {"params": {"onset": 30.0, "gmax": 2e-4}},
    "2015953/ampa13.mod": {"params": {"gmax": 1000.0}, "pointers": {"C": 0.05}},
    "2015953/diff3D.mod": {"weight": 1.0, "record": ["T"]},
    "2015953/ipulse1.mod": {"params": {"del": 30.0, "ton": 10.0, "toff": 20.0, "num": 4,
                                       "amp": 0.005}, "weight": 1.0},
    "249463/almog/ProbAMPANMDA2.mod": {
        "weight": 1.0, "params": {"tau_r_AMPA": 0.3, "tau_d_AMPA": 3.0, "tau_r_NMDA": 2.0,
                                  "tau_d_NMDA": 65.0, "e": 0.0, "Dep": 800.0, "Fac": 0.0,
                                  "Use": 0.6, "u0": 0.0},
        "random": {"pointer": "rng", "seed": 3, "distribution": ["negexp", 1.0]},
        "record": ["B_AMPA"]},
    "249463/almog/ProbUDFsyn2.mod": {
        "weight": 1.0, "params": {"tau_r": 1.0, "tau_d": 20.0, "e": -80.0, "Dep": 800.0,
                                  "Fac": 0.0, "Use": 0.25, "u0": 0.0},
        "random": {"pointer": "rng", "seed": 3, "distribution": ["negexp", 1.0]},
        "record": ["B"]},
    "266850/Capsaicin_Puff.mod": {},
    "267499/LinClamp.mod": {"params": {"del": 50.0, "tf": 250.0, "amp0": 0.005,
                                       "ampf": -0.005}},
    "267599/CurrentClamp.mod": {"params": {"Delay": 50.0, "Duration": 100.0,
                                           "Amplitude": 0.005}},
    "37819/AMPA.mod": {"weight": 1e-3},
    "37819/GABAA.mod": {"weight": 5e-3},
    "37819/GABAB2.mod": {"weight": 5e-4},
}


def point_name(text: str) -> str:
    """The POINT_PROCESS name in a file's NEURON block."""
    text = re.sub(r"COMMENT.*?ENDCOMMENT", "", text, flags=re.S)
    return re.search(r"\bPOINT_PROCESS\s+(\w+)", re.sub(r":[^\n]*", "", text))[1]


def run_one(folder: Path, name: str, spec: dict) -> dict:
    """In this process: compile ``folder``, run point process ``name``; its traces or error."""
    import neuron
    from neuron import h

    nrnivmodl = Path(sys.executable).parent / "nrnivmodl"
    done = subprocess.run([str(nrnivmodl), *sorted(p.name for p in folder.glob("*.mod"))],
                          cwd=folder, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": "nrnivmodl failed: " + (done.stdout + done.stderr)[-300:]}
    neuron.load_mechanisms(str(folder))
    h.load_file("stdrun.hoc")
    try:
        soma = h.Section(name="soma")
        soma.L, soma.diam, soma.nseg, soma.cm = CELL["L"], CELL["diam"], 1, CELL["cm"]
        soma.insert("pas")
        soma.g_pas, soma.e_pas = CELL["pas"]["g"], CELL["pas"]["e"]
        point = getattr(h, name)(soma(0.5))
        for key, value in spec.get("params", {}).items():
            setattr(point, key, value)
        held = []  # each POINTER points to a value the run does not change
        for key, value in spec.get("pointers", {}).items():
            held.append(h.Vector([value]))
            h.setpointer(held[-1]._ref_x[0], key, point)
        if "random" in spec:  # a Random in its distribution, through the file's setRNG
            held.append(h.Random(spec["random"]["seed"]))
            kind, *arguments = spec["random"]["distribution"]
            getattr(held[-1], kind)(*arguments)
            point.setRNG(held[-1])
        if hasattr(h, f"usetable_{name}"):
            setattr(h, f"usetable_{name}", 0)
        kept = {"v": h.Vector().record(soma(0.5)._ref_v)}
        for variable in spec.get("record", []):
            kept[variable] = h.Vector().record(getattr(point, f"_ref_{variable}"))
        stim = netcon = None
        spikes = h.Vector()
        if "weight" in spec:
            stim = h.NetStim()
            stim.start, stim.interval = PROTOCOL["start"], PROTOCOL["interval"]
            stim.number, stim.noise = PROTOCOL["number"], 0
            netcon = h.NetCon(stim, point)
            netcon.delay, netcon.weight[0] = PROTOCOL["delay"], spec["weight"]
            netcon.record(spikes)
        h.celsius, h.dt, h.secondorder = CELL["celsius"], CELL["dt"], 0
        h.cvode_active(0)
        h.finitialize(CELL["v_init"])
        h.continuerun(CELL["t_max"])
        steps = round(CELL["t_max"] / CELL["dt"]) + 1
        out = {key: np.asarray(vector)[:steps] for key, vector in kept.items()}
        if not all(np.isfinite(trace).all() for trace in out.values()):
            return {"error": "NEURON gives a non-finite value"}
        result = {key: trace[::EVERY].tolist() for key, trace in out.items()}
        result["events"] = (np.asarray(spikes) + PROTOCOL["delay"]).tolist()
        del stim, netcon, point, soma, held
        return result
    except Exception as error:  # recorded per file
        return {"error": f"NEURON fails: {error}"[:300]}


def neuron_run(work: Path, name: str, spec: dict) -> dict:
    """NEURON's result in a fresh process for point process ``name`` compiled in ``work``."""
    done = subprocess.run([sys.executable, __file__, "--folder", str(work), name,
                           json.dumps(spec)], capture_output=True, text=True)
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        said = [line for line in (done.stdout + done.stderr).splitlines()
                if line.strip() and "DISPLAY" not in line and "graphics" not in line]
        return {"error": f"NEURON process failed (exit code {done.returncode}): "
                         + " ".join(said)[-300:]}


def run_file(path: str) -> dict:
    """``path``'s sha256, name, protocol and NEURON result (traces or ``error``)."""
    file = CORPUS / path
    data = file.read_bytes()
    name, spec = point_name(data.decode("latin-1")), POINTS[path]
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch) / "all"
        shutil.copytree(file.parent, work)
        result = neuron_run(work, name, spec)
        if "nrnivmodl failed" in result.get("error", ""):  # alone, with the non-.mod files
            alone = Path(scratch) / "alone"
            alone.mkdir()
            for other in file.parent.iterdir():
                if other.is_file() and (other.suffix.lower() != ".mod" or other == file):
                    shutil.copy(other, alone / other.name)
            result = neuron_run(alone, name, spec)
    print(f"{path}: {result.get('error', 'ran')}", flush=True)
    return {"sha256": hashlib.sha256(data).hexdigest(), "name": name, **spec,
            "result": result}


def main(out: Path, paths: list[str]) -> None:
    import neuron

    unknown = sorted(set(paths) - set(POINTS))
    if unknown:
        raise SystemExit(f"unknown file(s) {unknown}; have {sorted(POINTS)}")
    fixture = {"cell": CELL, "protocol": PROTOCOL, "every": EVERY,
               "neuron_version": neuron.__version__, "files": {}}
    traces = {}
    for path in paths or POINTS:
        info = run_file(path)
        result = info.pop("result")
        if "error" in result:
            info["neuron"] = result["error"]
        else:
            info["neuron"] = "ran"
            info["events"] = result.pop("events")
            for key, trace in result.items():
                traces[f"{path}:{key}"] = np.asarray(trace)
        fixture["files"][path] = info
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / "modeldb_points.npz", fixture=np.asarray(json.dumps(fixture)),
                        **traces)


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if arguments[:1] == ["--folder"]:
        print(json.dumps(run_one(Path(arguments[1]), arguments[2], json.loads(arguments[3]))))
    else:
        destination = OUT
        if arguments[:1] == ["--out"]:
            destination, arguments = Path(arguments[1]), arguments[2:]
        main(destination, arguments)
