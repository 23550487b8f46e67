"""Write the NEURON fixture of the ModelDB corpus (tests/models/neuron/nmodl/fixtures/modeldb.npz).

The corpus is every ``.mod`` file of the ModelDB models in :data:`MODELS`, each read
from a local copy of ``github.com/ModelDBRepository/<id>`` at the listed commit
(``--mirror DIR``: ``DIR/ModelDBRepository+<id>/repo`` holds its git directory). The
files are not committed to jaxlean; the fixture keeps each file's path and sha256.

Each folder of a model that holds ``.mod`` files is compiled with ``nrnivmodl`` (the
folder's other files too, for INCLUDE) and loaded in a fresh NEURON process. Every
density mechanism it defines then runs alone with ``pas`` in one compartment (L = diam
= 20 um, ``g_pas`` 5e-5 S/cm2, ``e_pas`` -65 mV), its parameters at their defaults,
``celsius = 34``, ``finitialize(-65)``, an ``IClamp`` of -0.015 nA from 5 to 25 ms then
+0.03 nA from 30 to 50 ms, backward Euler, ``dt = 0.025`` ms, rate tables off; the
voltage is kept every :data:`EVERY` steps. A folder that does not compile, or a
mechanism that fails or gives a non-finite voltage in NEURON, is recorded as such.
Needs ``neuron`` (``pip install neuron==9.0.2``) and a C compiler:

    python scripts/make_modeldb_corpus_fixtures.py --mirror DIR [--out DIR] [--jobs N]

Each folder's NEURON result is kept in ``DIR/modeldb_cache`` (a rerun skips it).
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "models" / "neuron" / "nmodl" / "fixtures"
CELL = {"L": 20.0, "diam": 20.0, "cm": 1.0, "dt": 0.025, "t_max": 60.0, "celsius": 34.0,
        "v_init": -65.0, "pas": {"g": 5e-5, "e": -65.0},
        "steps": [(5.0, 20.0, -0.015), (30.0, 20.0, 0.03)]}
EVERY = 40
MODELS = {
    "2488": "Mainen & Sejnowski 1996", "3263": "", "37819": "", "53451": "",
    "84589": "", "98017": "", "113435": "", "113732": "", "115356": "", "116096": "",
    "123815": "", "139653": "Hay et al. 2011", "144007": "", "148094": "", "168148": "",
    "181967": "", "231862": "", "244416": "", "244688": "Migliore et al. 2018",
    "249463": "", "266850": "", "266900": "", "267221": "", "267355": "", "267499": "",
    "267599": "", "2015953": "",
}
"""ModelDB ids (the second field: a note, where known)."""


def git_dir(mirror: Path, model: str) -> Path:
    base = mirror / f"ModelDBRepository+{model}" / "repo"
    return base / ".git" if (base / ".git").is_dir() else base


def git(directory: Path, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", str(directory), *args], check=True,
                          capture_output=True).stdout


def folders(mirror: Path, model: str) -> tuple[str, dict[str, list[str]]]:
    """The commit and ``{folder: [paths of its files]}`` of the folders holding .mod files."""
    directory = git_dir(mirror, model)
    commit = git(directory, "rev-parse", "HEAD").decode().strip()
    paths = git(directory, "ls-tree", "-r", "--name-only", commit).decode().splitlines()
    out: dict[str, list[str]] = {}
    for path in paths:
        folder = str(Path(path).parent)
        out.setdefault(folder, []).append(path)
    return commit, {k: v for k, v in out.items() if any(p.lower().endswith(".mod") for p in v)}


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
    done = subprocess.run([str(nrnivmodl)], cwd=folder, capture_output=True, text=True)
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


def run_model(mirror: Path, model: str, note: str, cache: Path) -> tuple[dict, dict]:
    """``(entry, traces)`` of one model, each folder in its own NEURON process; a folder's
    result is kept in ``cache`` (a rerun skips it)."""
    commit, groups = folders(mirror, model)
    entry, traces = {"commit": commit, "note": note, "files": {}}, {}
    for folder, paths in groups.items():
        work = Path(tempfile.mkdtemp(prefix=f"modeldb_{model}_"))
        suffixes, files = [], {}
        for path in paths:
            try:
                data = git(git_dir(mirror, model), "show", f"{commit}:{path}")
            except subprocess.CalledProcessError:  # listed, not stored (a large file)
                continue
            if len(data) > 1_000_000:
                continue
            (work / Path(path).name).write_bytes(data)
            if path.lower().endswith(".mod"):
                found = header(data.decode("latin-1"))
                files[path] = {"sha256": hashlib.sha256(data).hexdigest(),
                               "suffix": found[0] if found else None,
                               "kind": found[1] if found else None}
                if found and found[1] == "density":
                    suffixes.append(found[0])
        kept = cache / f"{model}_{hashlib.sha256(folder.encode()).hexdigest()[:12]}.json"
        if kept.is_file():
            result = json.loads(kept.read_text())
        else:
            done = subprocess.run([sys.executable, __file__, "--folder", str(work),
                                   *suffixes], capture_output=True, text=True)
            try:
                result = json.loads(done.stdout.strip().splitlines()[-1])
            except (IndexError, json.JSONDecodeError):
                result = {"error": "NEURON process failed: " + done.stderr[-300:]}
            kept.write_text(json.dumps(result))
        for path, info in files.items():
            outcome = result.get("error") or result.get(info["suffix"])
            if info["kind"] != "density":
                info["neuron"] = f"not run ({info['kind'] or 'no SUFFIX'})"
            elif isinstance(outcome, list):
                info["neuron"] = "ran"
                traces[f"{model}/{path}"] = np.asarray(outcome)
            else:
                info["neuron"] = str(outcome)
        entry["files"].update(files)
        ran = sum(f"{model}/{p}" in traces for p in files)
        print(f"{model} {folder}: {len(files)} files, {ran} run in NEURON", flush=True)
    return entry, traces


def main(mirror: Path, out: Path, jobs: int = 1) -> None:
    import neuron

    corpus = {"cell": CELL, "every": EVERY, "neuron_version": neuron.__version__, "models": {}}
    cache = out / "modeldb_cache"
    cache.mkdir(parents=True, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda item: run_model(mirror, *item, cache), MODELS.items()))
    traces = {}
    for model, (entry, model_traces) in zip(MODELS, results, strict=True):
        corpus["models"][model] = entry
        traces.update(model_traces)
    np.savez_compressed(out / "modeldb.npz", corpus=np.asarray(json.dumps(corpus)), **traces)


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if arguments[:1] == ["--folder"]:
        print(json.dumps(run_folder(Path(arguments[1]), arguments[2:])))
    else:
        options = dict(zip(arguments[::2], arguments[1::2], strict=False))
        main(Path(options["--mirror"]), Path(options.get("--out", OUT)),
             int(options.get("--jobs", 1)))
