"""Every ``.mod`` file of 27 ModelDB models, loaded by jaxlean and run against NEURON 9.

The files are not committed: set ``JAXLEAN_MODELDB_MIRROR`` to a folder holding
``ModelDBRepository+<id>/repo`` (a git directory of ``github.com/ModelDBRepository/<id>``
at the commit the fixture names; each file's sha256 is checked). The fixture
(``fixtures/modeldb.npz``, ``scripts/make_modeldb_corpus_fixtures.py``) holds NEURON's
voltage of each density mechanism alone with ``pas`` in one compartment (hyperpolarising
then depolarising steps). Here each file is loaded from its folder (INCLUDE files beside
it), and each loaded density mechanism NEURON ran is run the same way by jaxlean.

``python tests/models/neuron/nmodl/test_modeldb_corpus.py`` prints the table: files
loaded, refusals by reason, and the largest voltage difference per file.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.mechanisms.channels import pas
from jaxlean.models.neuron.nmodl import load_mod
from jaxlean.models.neuron.simulation.cable import Cell, Stimulus, simulate, step_current

FIXTURE = Path(__file__).parent / "fixtures" / "modeldb.npz"
MIRROR = os.environ.get("JAXLEAN_MODELDB_MIRROR")
VOLTAGE_TOLERANCE = 1e-6  # mV


def _git(directory: Path, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", str(directory), *args], check=True,
                          capture_output=True).stdout


def _extract(mirror: Path, model: str, commit: str, folder: str, out: Path) -> Path:
    base = mirror / f"ModelDBRepository+{model}" / "repo"
    directory = base / ".git" if (base / ".git").is_dir() else base
    target = out / model / folder
    target.mkdir(parents=True, exist_ok=True)
    for path in _git(directory, "ls-tree", "--name-only", f"{commit}:{folder}"
                     if folder != "." else commit).decode().splitlines():
        full = path if folder == "." else f"{folder}/{path}"
        try:
            data = _git(directory, "show", f"{commit}:{full}")
        except subprocess.CalledProcessError:  # a sub-folder
            continue
        if len(data) < 1_000_000:
            (target / path).write_bytes(data)
    return target


def _run(mechanism, cell_spec: dict) -> np.ndarray:
    cell = Cell.from_parents(np.array([-1]), [cell_spec["L"]], [cell_spec["diam"] / 2],
                             kind=[1]).insert(pas).insert(mechanism)
    params = {**cell.params(), "celsius": cell_spec["celsius"], "v_init": cell_spec["v_init"],
              "cm": cell_spec["cm"], "g_pas": cell_spec["pas"]["g"],
              "e_pas": cell_spec["pas"]["e"]}
    dt, t_max = cell_spec["dt"], cell_spec["t_max"]
    current = sum(step_current(amplitude, delay, duration, dt, t_max)
                  for delay, duration, amplitude in cell_spec["steps"])
    with jax.enable_x64():
        return np.asarray(simulate(cell, params, [Stimulus(0, current)], dt, t_max)["v"][:, 0])


def corpus_results(mirror: Path) -> dict:
    """``{"files": {model/path: outcome}, ...}``: each file's load result and difference."""
    fixture = np.load(FIXTURE)
    corpus = json.loads(str(fixture["corpus"]))
    every, spec = corpus["every"], corpus["cell"]
    out = {}
    with tempfile.TemporaryDirectory() as scratch:
        for model, entry in corpus["models"].items():
            for path, info in entry["files"].items():
                folder = str(Path(path).parent)
                local = _extract(mirror, model, entry["commit"], folder, Path(scratch))
                file = local / Path(path).name
                key = f"{model}/{path}"
                assert hashlib.sha256(file.read_bytes()).hexdigest() == info["sha256"], key
                result = {"neuron": info["neuron"]}
                try:
                    mechanism = load_mod(file)
                except ConfigError as error:
                    problems = getattr(error, "problems", None) or [(0, str(error))]
                    result["refused"] = [message for _, message in problems]
                    out[key] = result
                    continue
                result["loaded"] = type(mechanism).__name__
                if key in fixture.files:
                    try:
                        v = _run(mechanism, spec)[::every]
                        result["error_mV"] = float(np.abs(v - fixture[key]).max())
                    except ConfigError as error:
                        result["run_error"] = str(error)[:200]
                out[key] = result
    return {"models": len(corpus["models"]), "files": out}


def _reason(message: str) -> str:
    message = re.sub(r"\(line \d+: .*\)", "", message)
    return re.sub(r"'[^']*'|\b[A-Za-z_]\w*\[", "'..'", message)[:80]


def summary(results: dict) -> str:
    files = results["files"]
    loaded = [k for k, r in files.items() if "loaded" in r]
    compared = {k: r["error_mV"] for k, r in files.items() if "error_mV" in r}
    matched = [k for k, e in compared.items() if e < VOLTAGE_TOLERANCE]
    reasons = collections.Counter(_reason(m) for r in files.values()
                                  for m in dict.fromkeys(r.get("refused", ())))
    lines = [f"{len(files)} .mod files of {results['models']} ModelDB models; loaded "
             f"{len(loaded)} ({len(loaded) / len(files):.0%}); NEURON ran {len(compared)} "
             f"of the loaded density mechanisms alone; within {VOLTAGE_TOLERANCE} mV: "
             f"{len(matched)}"]
    lines += [f"  differs: {k}: {e:.3g} mV" for k, e in sorted(compared.items())
              if e >= VOLTAGE_TOLERANCE]
    lines += [f"  run error: {k}: {r['run_error']}" for k, r in files.items()
              if "run_error" in r]
    lines += ["refusals (files):"] + [f"  {n:3d} {reason}" for reason, n in
                                      reasons.most_common()]
    return "\n".join(lines)


@pytest.mark.skipif(MIRROR is None, reason="set JAXLEAN_MODELDB_MIRROR to the ModelDB copies")
def test_the_corpus_loads_and_matches_neuron():
    results = corpus_results(Path(MIRROR))
    print(summary(results))
    files = results["files"]
    assert len(files) >= 150 and results["models"] >= 25
    compared = {k: r["error_mV"] for k, r in files.items() if "error_mV" in r}
    assert compared and max(compared.values()) < VOLTAGE_TOLERANCE, summary(results)


if __name__ == "__main__":
    print(summary(corpus_results(Path(sys.argv[1] if len(sys.argv) > 1 else MIRROR))))
