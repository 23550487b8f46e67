"""Write the NEURON fixture of the ModelDB corpus (tests/models/neuron/nmodl/fixtures/modeldb.npz).

The corpus is the committed copy of ModelDB models' ``.mod`` files under
tests/models/neuron/nmodl/corpus/<id>/ (``scripts/make_modeldb_corpus.py`` copies them;
each model's ``SOURCES.md`` names repository, commit and paper). Each folder is compiled
with ``nrnivmodl`` (its INCLUDEd files beside it; a folder that does not compile as a whole
is compiled one file at a time) and loaded in a fresh NEURON process. Every density
mechanism then runs alone with ``pas`` in one compartment (L = diam = 20 um, ``g_pas``
5e-5 S/cm2, ``e_pas`` -65 mV), its parameters at their defaults, ``celsius = 34``,
``finitialize(-65)``, an ``IClamp`` of -0.015 nA from 20 to 120 ms then +0.03 nA from 150
to 250 ms, backward Euler, ``dt = 0.025`` ms for 300 ms, float64, rate tables off
(``usetable_<suffix> = 0``); the voltage is kept every :data:`EVERY` steps. A mechanism
that fails or gives a non-finite voltage in NEURON is recorded as such. Needs ``neuron``
(``pip install neuron==9.0.2``) and a C compiler:

    python scripts/make_modeldb_corpus_fixtures.py [--out DIR] [--jobs N] [--models ID,ID]

Each folder's NEURON result is kept in ``DIR/modeldb_cache`` (a rerun skips it; delete
it after changing the protocol).
"""

from __future__ import annotations

import concurrent.futures
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
        "v_init": -65.0, "pas": {"g": 5e-5, "e": -65.0},
        "steps": [(20.0, 100.0, -0.015), (150.0, 100.0, 0.03)]}
EVERY = 20


def header(text: str) -> tuple[str, str] | None:
    """``(suffix, "density" | "point" | "artificial")`` from a file's NEURON block."""
    text = re.sub(r"COMMENT.*?ENDCOMMENT", "", text, flags=re.S)
    text = re.sub(r":[^\n]*", "", text)
    match = re.search(r"\b(SUFFIX|POINT_PROCESS|ARTIFICIAL_CELL)\s+(\w+)", text)
    if match is None:
        return None
    kind = {"SUFFIX": "density", "POINT_PROCESS": "point"}.get(match[1], "artificial")
    return match[2], kind


def run_folder(folder: Path, suffixes: list[str]) -> dict:
    """In this process: compile ``folder``, run each density mechanism; ``{suffix: trace or
    error}``."""
    import neuron
    from neuron import h

    nrnivmodl = Path(sys.executable).parent / "nrnivmodl"
    done = subprocess.run([str(nrnivmodl), *sorted(p.name for p in folder.glob("*.mod"))],
                          cwd=folder, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": "nrnivmodl failed: " + (done.stdout + done.stderr)[-300:]}
    neuron.load_mechanisms(str(folder))
    h.load_file("stdrun.hoc")
    out = {}
    for suffix in suffixes:
        try:
            soma = h.Section(name=f"soma_{suffix}")
            soma.L, soma.diam, soma.nseg, soma.cm = CELL["L"], CELL["diam"], 1, CELL["cm"]
            soma.insert("pas")
            soma.g_pas, soma.e_pas = CELL["pas"]["g"], CELL["pas"]["e"]
            soma.insert(suffix)
            if hasattr(h, f"usetable_{suffix}"):
                setattr(h, f"usetable_{suffix}", 0)
            clamps = []
            for delay, duration, amplitude in CELL["steps"]:
                clamp = h.IClamp(soma(0.5))
                clamp.delay, clamp.dur, clamp.amp = delay, duration, amplitude
                clamps.append(clamp)
            v = h.Vector().record(soma(0.5)._ref_v)
            h.celsius, h.dt, h.secondorder = CELL["celsius"], CELL["dt"], 0
            h.cvode_active(0)
            h.finitialize(CELL["v_init"])
            h.continuerun(CELL["t_max"])
            trace = np.asarray(v)[: round(CELL["t_max"] / CELL["dt"]) + 1]
            out[suffix] = (trace[::EVERY].tolist() if np.isfinite(trace).all()
                           else "NEURON gives a non-finite voltage")
            del clamps, v, soma
        except Exception as error:  # recorded per mechanism
            out[suffix] = f"NEURON fails: {error}"[:300]
    return out


def neuron_runs(work: Path, suffixes: list[str]) -> dict:
    """NEURON's result for ``suffixes`` compiled from the .mod files in ``work``."""
    done = subprocess.run([sys.executable, __file__, "--folder", str(work), *suffixes],
                          capture_output=True, text=True)
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"error": "NEURON process failed: " + done.stderr[-300:]}


def run_folder_files(folder: Path, cache: Path) -> dict[str, dict]:
    """``{path: info}`` of the .mod files in one corpus folder, NEURON's trace in
    ``info["trace"]`` where it ran."""
    files = {}
    for file in sorted(folder.glob("*.mod")):
        data = file.read_bytes()
        found = header(data.decode("latin-1"))
        files[file] = {"sha256": hashlib.sha256(data).hexdigest(),
                       "suffix": found[0] if found else None,
                       "kind": found[1] if found else None}
    key = hashlib.sha256("".join(i["sha256"] for i in files.values()).encode()).hexdigest()
    kept = cache / f"{key[:16]}.json"
    if kept.is_file():
        results = json.loads(kept.read_text())
    else:
        results = {}
        with tempfile.TemporaryDirectory() as scratch:
            work = Path(scratch) / "all"
            shutil.copytree(folder, work)
            suffixes = [i["suffix"] for i in files.values() if i["kind"] == "density"]
            result = neuron_runs(work, suffixes)
            for file, info in files.items():
                if info["kind"] != "density":
                    continue
                outcome = result.get("error") or result.get(info["suffix"])
                if "error" in result:  # alone, in case another file broke the folder
                    alone = Path(scratch) / file.stem
                    alone.mkdir()
                    for other in folder.iterdir():
                        if other.suffix.lower() != ".mod" or other == file:
                            shutil.copy(other, alone / other.name)
                    outcome = neuron_runs(alone, [info["suffix"]])
                    outcome = outcome.get("error") or outcome.get(info["suffix"])
                results[file.name] = outcome
        kept.write_text(json.dumps(results))
    for file, info in files.items():
        outcome = results.get(file.name)
        if info["kind"] != "density":
            info["neuron"] = f"not run ({info['kind'] or 'no SUFFIX'})"
        elif isinstance(outcome, list):
            info["neuron"] = "ran"
            info["trace"] = np.asarray(outcome)
        else:
            info["neuron"] = str(outcome)
    ran = sum("trace" in i for i in files.values())
    print(f"{folder.relative_to(CORPUS)}: {len(files)} files, {ran} run in NEURON", flush=True)
    return {str(file.relative_to(CORPUS)): info for file, info in files.items()}


def main(out: Path, jobs: int = 1, models: list[str] | None = None) -> None:
    import neuron

    corpus = {"cell": CELL, "every": EVERY, "neuron_version": neuron.__version__, "files": {}}
    cache = out / "modeldb_cache"
    cache.mkdir(parents=True, exist_ok=True)
    folders = sorted({file.parent for file in CORPUS.rglob("*.mod")
                      if models is None or file.relative_to(CORPUS).parts[0] in models})
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda folder: run_folder_files(folder, cache), folders))
    traces = {}
    for result in results:
        for path, info in result.items():
            trace = info.pop("trace", None)
            if trace is not None:
                traces[path] = trace
            corpus["files"][path] = info
    np.savez_compressed(out / "modeldb.npz", corpus=np.asarray(json.dumps(corpus)), **traces)


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if arguments[:1] == ["--folder"]:
        print(json.dumps(run_folder(Path(arguments[1]), arguments[2:])))
    else:
        options = dict(zip(arguments[::2], arguments[1::2], strict=False))
        main(Path(options.get("--out", OUT)), int(options.get("--jobs", 1)),
             options["--models"].split(",") if "--models" in options else None)
