"""The ModelDB corpus: published ``.mod`` files, unedited, loaded by jaxlean and run against
NEURON 9.0.2.

The files are committed under ``corpus/<ModelDB id>/`` (``scripts/make_modeldb_corpus.py``
copied them; each model's ``SOURCES.md`` names repository, commit, paper and sha256). The
fixture (``fixtures/modeldb.npz``, ``scripts/make_modeldb_corpus_fixtures.py``) holds
NEURON's voltage, every ``every``-th step, of each density mechanism alone with ``pas`` in
one compartment: a hyperpolarising then a depolarising current step, 300 ms at dt 0.025 ms,
float64, rate tables off. Each test item is one model: every file is loaded from its
folder (INCLUDE files beside it); a refusal must name its file and line; each loaded
density mechanism NEURON ran is run the same way by jaxlean and must match within
:data:`VOLTAGE_TOLERANCE` at every kept sample. With NEURON installed, one model is also
checked live (its fixture remade by the script).

``python tests/models/neuron/nmodl/test_modeldb_corpus.py`` prints the whole table: load
rate, match rate, the largest difference of each file and refusals by reason.
"""

from __future__ import annotations

import collections
import hashlib
import importlib.util
import json
import re
import shutil
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.mechanisms.channels import pas
from jaxlean.models.neuron.nmodl import load_mod
from jaxlean.models.neuron.simulation.cable import Cell, Stimulus, simulate, step_current
from tests.models.neuron.neuron_reference import run_fixture_script

HERE = Path(__file__).parent
CORPUS = HERE / "corpus"
FIXTURE = HERE / "fixtures" / "modeldb.npz"
SCRIPT = HERE.parents[3] / "scripts" / "make_modeldb_corpus_fixtures.py"
VOLTAGE_TOLERANCE = 1e-6  # mV
MODELS = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())


def _fixture() -> tuple[dict, np.lib.npyio.NpzFile]:
    fixture = np.load(FIXTURE)
    return json.loads(str(fixture["corpus"])), fixture


def _run(mechanism, spec: dict) -> np.ndarray:
    """jaxlean's voltage (every step), all in float64: the steps' currents too."""
    with jax.enable_x64():
        cell = Cell.from_parents(np.array([-1]), [spec["L"]], [spec["diam"] / 2],
                                 kind=[1]).insert(pas).insert(mechanism)
        params = {**cell.params(), "celsius": spec["celsius"], "v_init": spec["v_init"],
                  "cm": spec["cm"], "g_pas": spec["pas"]["g"], "e_pas": spec["pas"]["e"]}
        dt, t_max = spec["dt"], spec["t_max"]
        current = sum(step_current(amplitude, delay, duration, dt, t_max)
                      for delay, duration, amplitude in spec["steps"])
        assert current.dtype == np.float64
        return np.asarray(simulate(cell, params, [Stimulus(0, current)], dt,
                                   t_max)["v"][:, 0])


def check_file(path: str, info: dict, spec: dict, every: int, traces) -> dict:
    """One file's outcome: ``refused`` (its problems), or ``loaded`` and, where NEURON ran
    it, ``error_mV`` (the largest difference at the kept samples)."""
    file = CORPUS / path
    assert hashlib.sha256(file.read_bytes()).hexdigest() == info["sha256"], path
    result = {"neuron": info["neuron"]}
    try:
        mechanism = load_mod(file)
    except ConfigError as error:
        result["refused"] = str(error)
        return result
    result["loaded"] = type(mechanism).__name__
    if path in traces.files:
        try:
            result["error_mV"] = float(np.abs(_run(mechanism, spec)[::every]
                                              - traces[path]).max())
        except ConfigError as error:
            result["run_error"] = str(error)[:300]
    return result


def model_results(model: str, corpus: dict | None = None, traces=None) -> dict[str, dict]:
    """``{path: outcome}`` of one model's files (``corpus``, ``traces``: a fixture)."""
    if corpus is None:
        corpus, traces = _fixture()
    return {path: check_file(path, info, corpus["cell"], corpus["every"], traces)
            for path, info in corpus["files"].items() if path.split("/")[0] == model}


def test_the_corpus_is_the_committed_files():
    corpus, _ = _fixture()
    on_disk = {str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*.mod")}
    assert set(corpus["files"]) == on_disk
    assert len(on_disk) >= 150 and len(MODELS) >= 25
    for model in MODELS:
        sources = (CORPUS / model / "SOURCES.md").read_text()
        assert "Commit: `" in sources and "Paper: " in sources
        for path in on_disk:
            if path.split("/")[0] == model:
                sha = hashlib.sha256((CORPUS / path).read_bytes()).hexdigest()
                assert f"`{path.split('/', 1)[1]}` | `{sha}`" in sources, path


@pytest.mark.parametrize("model", MODELS)
def test_each_loaded_density_mechanism_matches_neuron(model):
    results = model_results(model)
    for path, result in results.items():
        if "refused" in result:  # the file and the line of each problem
            assert re.search(re.escape(path) + r":\d+:", result["refused"]), result["refused"]
    assert not [r["run_error"] for r in results.values() if "run_error" in r]
    errors = {p: r["error_mV"] for p, r in results.items() if "error_mV" in r}
    print(f"{model}: {sum('loaded' in r for r in results.values())} of {len(results)} "
          f"loaded, {len(errors)} compared, worst {max(errors.values(), default=0):.3g} mV")
    assert all(e < VOLTAGE_TOLERANCE for e in errors.values()), errors


@pytest.mark.skipif(importlib.util.find_spec("neuron") is None or
                    shutil.which("nrnivmodl") is None, reason="needs NEURON (nrnivmodl)")
def test_matches_neuron_live(tmp_path):
    run_fixture_script(SCRIPT, tmp_path, "--models", "2488")
    corpus, traces = json.loads(str(np.load(tmp_path / "modeldb.npz")["corpus"])), \
        np.load(tmp_path / "modeldb.npz")
    errors = [r["error_mV"] for r in model_results("2488", corpus, traces).values()
              if "error_mV" in r]
    assert errors and max(errors) < VOLTAGE_TOLERANCE


def _reason(message: str) -> str:
    message = re.sub(r"\S+\.mod(:\d+)?:?", "", message)
    message = re.sub(r"\(line \d+: .*?\)|'[^']*'|\d+ problems:", "", message)
    return " ".join(message.split())[:70]


def _problems(message: str | None) -> list[str]:
    """The problems of a refusal: one line, or the lines after ``N problems:``."""
    if not message:
        return []
    lines = message.splitlines()
    return lines[1:] if len(lines) > 1 else lines


def summary(results: dict[str, dict]) -> str:
    """The table: load and match rates, differences, refusals by reason."""
    density = {p: r for p, r in results.items() if r["neuron"] == "ran"}
    loaded = [p for p, r in results.items() if "loaded" in r]
    compared = {p: r["error_mV"] for p, r in results.items() if "error_mV" in r}
    matched = [p for p, e in compared.items() if e < VOLTAGE_TOLERANCE]
    reasons = collections.Counter(_reason(problem) for r in results.values()
                                  for problem in dict.fromkeys(_problems(r.get("refused"))))
    models = {p.split("/")[0] for p in results}
    lines = [f"{len(results)} .mod files of {len(models)} ModelDB models; loaded "
             f"{len(loaded)} ({len(loaded) / len(results):.0%}); density mechanisms NEURON "
             f"runs alone: {len(density)}, of which loaded {len(compared)} "
             f"({len(compared) / max(len(density), 1):.0%}) and within {VOLTAGE_TOLERANCE} mV "
             f"{len(matched)} ({len(matched) / max(len(density), 1):.0%} of those NEURON runs); "
             f"worst difference {max(compared.values(), default=0):.3g} mV"]
    lines += [f"  {p}: {e:.3g} mV" for p, e in sorted(compared.items(), key=lambda x: -x[1])[:3]
              if e < VOLTAGE_TOLERANCE]
    lines += [f"  differs: {p}: {e:.3g} mV" for p, e in sorted(compared.items())
              if e >= VOLTAGE_TOLERANCE]
    lines += [f"  run error: {p}: {r['run_error']}" for p, r in results.items()
              if "run_error" in r]
    lines += ["refusals by reason (problems, counted once per file):"]
    lines += [f"  {n:3d} {reason}" for reason, n in reasons.most_common()]
    return "\n".join(lines)


if __name__ == "__main__":
    corpus, traces = _fixture()
    everything = {}
    for name in MODELS:
        everything.update(model_results(name, corpus, traces))
    print(summary(everything))
