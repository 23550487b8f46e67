"""Checkpoints: a resumed run continues bit for bit; mismatches and damage are named."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxlean._random import normal
from jaxlean.errors import CheckpointError
from jaxlean.train.checkpoint import Checkpointer
from jaxlean.train.packed import packed
from jaxlean.train.step import make_train_step

TX = packed(optax.adam(1e-2))


def _mse(model, x, y):
    return jnp.mean((jax.vmap(model)(x) - y) ** 2)


def _fresh(seed: int = 0, width: int = 8) -> dict:
    """A newly initialised training state: model, packed Adam state, step, data-order key."""
    model = eqx.nn.MLP(4, 1, width, 2, key=jax.random.key(seed))
    return {"model": model, "opt_state": TX.init(eqx.filter(model, eqx.is_array)),
            "step": 0, "data_key": jax.random.key(seed + 1)}


def _run(state: dict, steps: int, history: list[float]) -> dict:
    """``steps`` training steps, each on a batch drawn with the state's data-order key."""
    step_fn = make_train_step(_mse, TX)
    model, opt_state, key = state["model"], state["opt_state"], state["data_key"]
    for _ in range(steps):
        key, sub = jax.random.split(key)
        x = normal(sub, (8, 4))
        y = jnp.sin(x).sum(axis=1, keepdims=True)
        model, opt_state, loss = step_fn(model, opt_state, x, y)
        history.append(float(loss))
    return {"model": model, "opt_state": opt_state, "step": state["step"] + steps,
            "data_key": key}


def _values(state: dict) -> list[np.ndarray]:
    """Every array of the state (keys as their data), for exact comparison."""
    return [np.asarray(jax.random.key_data(x) if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)
                       else x) for x in jax.tree.leaves(eqx.filter(state, eqx.is_array))]


def test_resumed_run_equals_uninterrupted_bit_for_bit(tmp_path):
    straight: list[float] = []
    final = _run(_fresh(), 6, straight)

    history: list[float] = []
    with Checkpointer(tmp_path) as checkpoints:
        checkpoints.save(3, _run(_fresh(), 3, history), metadata={"history": history})
    with Checkpointer(tmp_path) as checkpoints:  # a new job: restore into a fresh state
        state = checkpoints.restore(_fresh(seed=7))
        history = checkpoints.metadata()["history"]
    assert state["step"] == 3 and history == straight[:3]
    resumed = _run(state, 3, history)
    assert history == straight  # exact float equality
    for a, b in zip(_values(resumed), _values(final), strict=True):
        np.testing.assert_array_equal(a, b)


def test_keep_last_n_and_latest(tmp_path):
    state = _fresh()
    with Checkpointer(tmp_path, keep=2) as checkpoints:
        for step in range(1, 6):
            checkpoints.save(step, {**state, "step": step})
        checkpoints.wait()
        assert checkpoints.all_steps() == [4, 5] and checkpoints.latest_step() == 5
        assert checkpoints.restore(state)["step"] == 5
        assert checkpoints.restore(state, step=4)["step"] == 4
        with pytest.raises(CheckpointError, match=r"no checkpoint step 2 .*\[4, 5\]"):
            checkpoints.restore(state, step=2)


@pytest.mark.parametrize(("like", "message"), [
    (_fresh(width=16), r"\['model'\]\.layers\[0\]\.weight is array float32\[8, 4\] in the "
                       r"checkpoint, array float32\[16, 4\] in the state"),
    ({**_fresh(), "step": 0.0}, r"\['step'\] is value int in the checkpoint, value float"),
    ({k: v for k, v in _fresh().items() if k != "data_key"}, r"leaves the state lacks: "
                                                             r"\['data_key'\]"),
    ({**_fresh(), "extra": jnp.zeros(2)}, r"\['extra'\] is not in the checkpoint"),
], ids=["shape", "kind", "missing", "extra"])
def test_mismatched_state_names_the_difference(tmp_path, like, message):
    with Checkpointer(tmp_path) as checkpoints:
        checkpoints.save(1, _fresh())
        with pytest.raises(CheckpointError, match=message):
            checkpoints.restore(like)


def test_dtype_mismatch_is_named(tmp_path):
    state = {"w": jnp.ones(3, jnp.float32)}
    with Checkpointer(tmp_path) as checkpoints:
        checkpoints.save(1, state)
        with pytest.raises(CheckpointError, match=r"\['w'\] is array float32\[3\] .* "
                                                  r"array bfloat16\[3\]"):
            checkpoints.restore({"w": jnp.ones(3, jnp.bfloat16)})


def test_damaged_or_missing_checkpoint_raises(tmp_path):
    with Checkpointer(tmp_path) as checkpoints:
        with pytest.raises(CheckpointError, match="no checkpoint in"):
            checkpoints.restore(_fresh())
        checkpoints.save(1, _fresh())
    shutil.rmtree(tmp_path / "1" / "arrays")
    with Checkpointer(tmp_path) as checkpoints, pytest.raises(CheckpointError,
                                                              match="cannot read the arrays"):
        checkpoints.restore(_fresh())


def test_an_interrupted_save_is_cleaned_at_the_next_start(tmp_path):
    with Checkpointer(tmp_path) as checkpoints:
        checkpoints.save(1, {"w": jnp.arange(3.0)})
    interrupted = tmp_path / "2.orbax-checkpoint-tmp-1700000000"  # a save killed mid-write
    (interrupted / "arrays").mkdir(parents=True)
    with Checkpointer(tmp_path) as checkpoints:
        assert not interrupted.exists()
        assert checkpoints.all_steps() == [1]
        np.testing.assert_array_equal(checkpoints.restore({"w": jnp.zeros(3)})["w"],
                                      jnp.arange(3.0))


def test_restored_arrays_take_the_template_placement(tmp_path):
    mesh = jax.sharding.Mesh(jax.devices()[:1], ("data",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
    state = {"w": jax.device_put(jnp.arange(4.0), sharding), "n": 3, "name": "run"}
    with Checkpointer(tmp_path) as checkpoints:
        checkpoints.save(1, state)
        restored = checkpoints.restore({"w": jax.device_put(jnp.zeros(4), sharding), "n": 0,
                                        "name": ""})
    assert restored["w"].sharding == sharding and restored["w"].tolist() == [0, 1, 2, 3]
    assert (restored["n"], restored["name"]) == (3, "run")


def test_metadata_must_be_json(tmp_path):
    with Checkpointer(tmp_path) as checkpoints, pytest.raises(CheckpointError, match="JSON"):
        checkpoints.save(1, {"w": jnp.ones(2)}, metadata={"bad": object()})


# run on 4 devices by tests/train/test_four_devices.py, with the other trainers' checks
_SHARDED = textwrap.dedent("""
    import tempfile
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    from jaxlean.train.checkpoint import Checkpointer

    def placed(devices, spec, value):
        mesh = Mesh(np.array(jax.devices()[:devices]), ("data",))
        return jax.device_put(value, NamedSharding(mesh, P(*spec)))

    w = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    with Checkpointer(tempfile.mkdtemp()) as checkpoints:
        checkpoints.save(1, {"w": placed(4, ("data",), w)})
        like = {"w": placed(2, (None, "data"), np.zeros_like(w))}
        restored = checkpoints.restore(like)["w"]
    assert restored.sharding == like["w"].sharding, restored.sharding
    np.testing.assert_array_equal(np.asarray(restored), w)
    print("ok")
""")


def test_newly_saved_reports_a_step_only_once_it_is_committed(tmp_path, monkeypatch):
    state = _fresh()
    with Checkpointer(tmp_path) as checkpoints:
        assert checkpoints.newly_saved() == []
        checkpoints.save(1, state)
        real = checkpoints._manager.is_saving_in_progress
        monkeypatch.setattr(checkpoints._manager, "is_saving_in_progress", lambda: True)
        assert checkpoints.newly_saved() == []  # the only save is still being written
        monkeypatch.setattr(checkpoints._manager, "is_saving_in_progress", real)
        checkpoints.save(2, state)  # waits for step 1 first
        monkeypatch.setattr(checkpoints._manager, "is_saving_in_progress", lambda: True)
        assert checkpoints.newly_saved() == [1]
        monkeypatch.setattr(checkpoints._manager, "is_saving_in_progress", real)
        checkpoints.wait()
        assert checkpoints.newly_saved() == [2]
        assert checkpoints.newly_saved() == []
        assert checkpoints.all_steps() == [1, 2]


@pytest.mark.slow
def test_restart_example_killed_after_saved_resumes_at_that_step(tmp_path):
    """examples/restart_training.py kills itself right after its first "saved" line; the
    requeued run resumes at that step."""
    repo = Path(__file__).resolve().parents[2]
    script = repo / "examples" / "restart_training.py"
    env = dict(os.environ, JAXLEAN_EXAMPLE_SIZE="small", JAX_PLATFORMS="cpu", PYTHONPATH=str(repo))
    command = [sys.executable, str(script), "--workdir", str(tmp_path), "--steps", "30"]
    first = subprocess.run([*command, "--die-after-save"], capture_output=True, text=True,
                           timeout=600, env=env)
    assert first.returncode == -signal.SIGKILL, first.stdout + first.stderr[-3000:]
    said = re.findall(r"checkpoint of step (\d+) saved", first.stdout)
    assert len(said) == 1, first.stdout
    assert first.stdout.rstrip().splitlines()[-1].endswith("killed")
    second = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"resumed at step {said[0]} " in second.stdout, (first.stdout, second.stdout)
