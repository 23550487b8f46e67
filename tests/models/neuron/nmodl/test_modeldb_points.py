"""The ModelDB corpus's point processes, unedited, loaded by jaxlean and run against NEURON
9.0.2 under the same events.

The fixture (``fixtures/modeldb_points.npz``, ``scripts/make_modeldb_point_fixtures.py``)
holds NEURON's voltage, every ``every``-th step, of each ``POINT_PROCESS`` file of the
corpus alone with ``pas`` in one compartment, 300 ms at dt 0.025 ms, float64: a file with a
NET_RECEIVE block receives the events of a ``NetStim`` through a ``NetCon`` with a weight
(their delivery times are in the fixture), the others run on their own with the
parameters the fixture names. Each test item is one file: it loads or is refused with its
file and line; a loaded one NEURON ran must match within :data:`VOLTAGE_TOLERANCE` at
every kept sample, and a variable the fixture records (``diff3D.mod``'s transmitter ``T``)
within :data:`RELATIVE_TOLERANCE` of its largest value. With NEURON installed, one file is
also checked live (its fixture remade by the script).

``python tests/models/neuron/nmodl/test_modeldb_points.py`` prints the table: load and
match counts, the largest difference of each file and refusals by reason.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import importlib.util
import json
import re
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.mechanisms.channels import pas
from jaxlean.models.neuron.nmodl import Random, load_mod, random_parameters
from jaxlean.models.neuron.simulation.cable import Cell, simulate
from tests.models.neuron.neuron_reference import run_fixture_script

HERE = Path(__file__).parent
CORPUS = HERE / "corpus"
FIXTURE = HERE / "fixtures" / "modeldb_points.npz"
SCRIPT = HERE.parents[3] / "scripts" / "make_modeldb_point_fixtures.py"
VOLTAGE_TOLERANCE = 1e-6  # mV
RELATIVE_TOLERANCE = 1e-9  # of a recorded variable, relative to its largest magnitude


def _fixture() -> tuple[dict, np.lib.npyio.NpzFile]:
    fixture = np.load(FIXTURE)
    return json.loads(str(fixture["fixture"])), fixture


FILES = sorted(_fixture()[0]["files"])


@functools.cache
def _load(path: str):
    """The mechanism of ``path`` (loaded once per session), or the refusal's message."""
    try:
        return load_mod(CORPUS / path)
    except ConfigError as error:
        return str(error)


def _setup(mechanism, info: dict, spec: dict, weight=None):
    """The cell, its parameters and the input spikes of one file's protocol."""
    cell = Cell.from_parents(np.array([-1]), [spec["L"]], [spec["diam"] / 2],
                             kind=[1]).insert(pas).insert(mechanism, compartments=[0])
    params = {**cell.params(), "celsius": spec["celsius"], "v_init": spec["v_init"],
              "cm": spec["cm"], "g_pas": spec["pas"]["g"], "e_pas": spec["pas"]["e"]}
    for key, value in {**info.get("params", {}), **info.get("pointers", {})}.items():
        params[f"{key}_{mechanism.name}"] = jnp.asarray([float(value)])
    if "random" in info:  # the Random the hoc gives setRNG: new Random(seed).negexp(1)
        random = info["random"]
        kind, *arguments = random["distribution"]
        made = getattr(Random(random["seed"]), kind)(*arguments)
        params.update(random_parameters(mechanism, random["pointer"], [made]))
    spikes = {}
    if "weight" in info:
        params[mechanism.weight] = jnp.asarray([info["weight"] if weight is None else weight])
        spikes[mechanism.name] = np.asarray([info["events"]])
    return cell, params, spikes


def _run(mechanism, info: dict, spec: dict) -> dict[str, np.ndarray]:
    """jaxlean's voltage and the variables ``info`` records (every step), in float64; no
    event was late or dropped."""
    with jax.enable_x64():
        cell, params, spikes = _setup(mechanism, info, spec)
        names = {"v": "v", **{key: f"{key}_{mechanism.name}" for key in info.get("record", [])}}
        out = simulate(cell, params, [], spec["dt"], spec["t_max"], spikes=spikes,
                       states=list(names.values()))
        for events in out["final"].get("events", {}).values():
            assert not np.asarray(events["lost"]).any()
        return {key: np.asarray(out[name][:, 0]) for key, name in names.items()}


def check_file(path: str, fixture: dict, traces) -> dict:
    """One file's outcome: ``refused`` (its problems), or ``loaded`` and, where NEURON ran
    it, ``error_mV`` (the largest difference at the kept samples)."""
    info = fixture["files"][path]
    assert hashlib.sha256((CORPUS / path).read_bytes()).hexdigest() == info["sha256"], path
    result = {"neuron": info["neuron"]}
    mechanism = _load(path)
    if isinstance(mechanism, str):
        result["refused"] = mechanism
        return result
    result["loaded"] = type(mechanism).__name__
    if info["neuron"] == "ran":
        run = {k: x[::fixture["every"]] for k, x in _run(mechanism, info, fixture["cell"]).items()}
        result["error_mV"] = float(np.abs(run.pop("v") - traces[f"{path}:v"]).max())
        result["relative"] = {key: float(np.abs(x - traces[f"{path}:{key}"]).max()
                                         / np.abs(traces[f"{path}:{key}"]).max())
                              for key, x in run.items()}
    return result


def test_the_fixture_covers_every_point_process_of_the_corpus():
    fixture, _ = _fixture()
    points = set()
    for file in CORPUS.rglob("*.mod"):
        text = re.sub(r"COMMENT.*?ENDCOMMENT", "", file.read_text(errors="replace"), flags=re.S)
        if re.search(r"\bPOINT_PROCESS\s+\w+", re.sub(r":[^\n]*", "", text)):
            points.add(str(file.relative_to(CORPUS)))
    assert set(fixture["files"]) == points and len(points) >= 13


@pytest.mark.parametrize("path", FILES)
def test_each_loaded_point_process_matches_neuron(path):
    fixture, traces = _fixture()
    result = check_file(path, fixture, traces)
    if "refused" in result:  # the file and the line of each problem
        assert re.search(re.escape(path) + r":\d+:", result["refused"]), result["refused"]
    else:
        print(f"{path}: {result.get('error_mV', 'not run by NEURON')}")
        assert result.get("error_mV", 0.0) < VOLTAGE_TOLERANCE, result
        for value in result.get("relative", {}).values():  # the variables it records
            assert value < RELATIVE_TOLERANCE, result


def test_the_events_move_the_voltage():
    """The comparison means something: each loaded file with events moves v by > 0.5 mV, or,
    writing no current (``diff3D.mod``), moves each variable it records."""
    fixture, traces = _fixture()
    moved = [path for path, info in fixture["files"].items()
             if "weight" in info and info["neuron"] == "ran"
             and not isinstance(_load(path), str)]
    assert moved
    for path in moved:
        if _load(path).currents:
            v = traces[f"{path}:v"]
            assert v.max() - v.min() > 0.5, path
        else:
            for key in fixture["files"][path]["record"]:
                x = traces[f"{path}:{key}"]
                assert x.max() - x.min() > 1e-3 * np.abs(x).max() > 0, (path, key)


def test_the_random_synapses_draws_decide_their_traces():
    """The Blue Brain synapses' comparison covers their draws: in NEURON's run (its rising
    conductance state, which the fixture records and the matching test compares) some
    events release and some do not, and another seed (other draws) moves jaxlean's trace
    away from NEURON's."""
    fixture, traces = _fixture()
    cell, every = fixture["cell"], fixture["every"]
    for path, info in fixture["files"].items():
        if "random" not in info:
            continue
        (state,) = info["record"]
        b = traces[f"{path}:{state}"]
        # the kept sample before each event's step, and the one after it
        before = [int(np.ceil(t / cell["dt"] - 0.5)) // every for t in info["events"]]
        released = [bool(b[k + 1] > b[k]) for k in before]
        assert 0 < sum(released) < len(released), (path, released)
        other = {**info, "random": {**info["random"], "seed": info["random"]["seed"] + 1}}
        v_other = _run(_load(path), other, cell)["v"][::every]
        assert np.abs(v_other - traces[f"{path}:v"]).max() > 0.1, path


def test_gradient_of_the_weight_matches_central_differences():
    """d(mean v)/d(weight) through NET_RECEIVE (net_send, flag, per-connection state) of
    ``37819/AMPA.mod``, against central differences, in float64 (30 ms: the first event
    and its self-event)."""
    fixture, _ = _fixture()
    path = "37819/AMPA.mod"
    info, mechanism = fixture["files"][path], _load(path)
    spec = {**fixture["cell"], "t_max": 30.0}
    with jax.enable_x64():
        cell, params, spikes = _setup(mechanism, info, spec)

        def mean_v(weight):
            given = {**params, mechanism.weight: weight}
            return simulate(cell, given, [], spec["dt"], spec["t_max"],
                            spikes=spikes)["v"].mean()

        # one program for the gradient and the values of the central differences
        value_and_grad = jax.jit(jax.value_and_grad(lambda x: mean_v(x).sum()))
        w = np.asarray(params[mechanism.weight])  # NumPy inputs: no eager operation
        grad = value_and_grad(w)[1]
        h = 1e-3 * w
        numeric = (value_and_grad(w + h)[0] - value_and_grad(w - h)[0]) / (2 * h)
        assert float(grad[0]) != 0.0
        np.testing.assert_allclose(np.asarray(grad), np.asarray(numeric), rtol=1e-4)


def test_more_events_in_a_step_than_it_delivers_are_counted():
    fixture, _ = _fixture()
    path = "37819/GABAA.mod"
    info, mechanism = fixture["files"][path], _load(path)
    lost = []
    for times in ([21.0] * 4 + [np.inf] * 2, [21.0] * 6):  # one shape: one program
        with jax.enable_x64():
            cell, params, spikes = _setup(mechanism, {**info, "events": times},
                                          {**fixture["cell"], "t_max": 22.0})
            out = simulate(cell, params, [], 0.025, 22.0, spikes=spikes)
        lost.append(int(out["final"]["events"][mechanism.name]["lost"][0]))
    assert lost[0] == 0 and lost[1] >= 1, lost


@pytest.mark.skipif(importlib.util.find_spec("neuron") is None or
                    shutil.which("nrnivmodl") is None, reason="needs NEURON (nrnivmodl)")
def test_matches_neuron_live(tmp_path):
    path = "37819/GABAA.mod"
    run_fixture_script(SCRIPT, tmp_path, path)
    live = np.load(tmp_path / "modeldb_points.npz")
    result = check_file(path, json.loads(str(live["fixture"])), live)
    assert result["error_mV"] < VOLTAGE_TOLERANCE


def _reason(message: str) -> str:
    message = re.sub(r"\S+\.mod(:\d+)?:?", "", message)
    message = re.sub(r"\(line \d+: .*?\)|'[^']*'|\d+ problems:", "", message)
    return " ".join(message.split())[:70]


def summary(results: dict[str, dict]) -> str:
    """The table: load and match counts, differences, refusals by reason."""
    ran = [p for p, r in results.items() if r["neuron"] == "ran"]
    loaded = [p for p, r in results.items() if "loaded" in r]
    compared = {p: r["error_mV"] for p, r in results.items() if "error_mV" in r}
    matched = [p for p, e in compared.items() if e < VOLTAGE_TOLERANCE]
    reasons = collections.Counter(
        reason for r in results.values() if "refused" in r
        for reason in dict.fromkeys(_reason(problem) for problem in (
            r["refused"].splitlines()[1:] or r["refused"].splitlines())))
    lines = [f"{len(results)} point processes; NEURON runs {len(ran)} alone; jaxlean loads "
             f"{len(loaded)}, of which {len(compared)} NEURON runs, {len(matched)} within "
             f"{VOLTAGE_TOLERANCE} mV; worst {max(compared.values(), default=0):.3g} mV"]
    lines += [f"  {p}: {e:.3g} mV" + "".join(
        f" ({key} within {x:.2g} of its largest value)"
        for key, x in results[p].get("relative", {}).items()) for p, e in sorted(compared.items())]
    lines += [f"  NEURON fails: {p}: {r['neuron']}" for p, r in results.items()
              if r["neuron"] != "ran"]
    lines += ["refusals by reason (problems, counted once per file):"]
    lines += [f"  {n:3d} {reason}" for reason, n in reasons.most_common()]
    return "\n".join(lines)


if __name__ == "__main__":
    fixture, traces = _fixture()
    print(summary({path: check_file(path, fixture, traces) for path in FILES}))
