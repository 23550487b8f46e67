"""fit's loop is one cacheable program, progress or not: fresh processes of a default fit
call hit the persistent cache; progress is shown between calls of the same executable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxlean.compile.cache import cache_stats
from jaxlean.train import _progress
from jaxlean.train.fit import fit

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, sys
import jax, jax.numpy as jnp, optax
import jaxlean
jaxlean.enable_compilation_cache(sys.argv[1], min_compile_secs=0)
x = jax.random.normal(jax.random.key(0), (96, 3))
loss = lambda p, b: jnp.mean((jnp.tanh(b[0] @ p["w"]) @ p["v"] - b[1]) ** 2)
params = {"w": jnp.full((3, 8), 0.1), "v": jnp.full(8, 0.1)}  # weakly typed, as users write
trained, history = jaxlean.fit(loss, params, (x, jnp.sin(x).sum(1)), optax.adam(1e-2),
                               epochs=6, batch_size=16, key=jax.random.key(1))
run = jaxlean.cache_stats().functions["jit(run)"]
print(json.dumps({"hits": run.hits, "writes": run.writes, "compiles": run.compiles,
                  "loss": history.train_loss.tolist()}))
"""


def test_default_fit_writes_its_loop_to_the_cache_and_later_processes_hit_it(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    runs = []
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "cache")], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        runs.append((json.loads(done.stdout.splitlines()[-1]), done.stderr))
    (first, _), *later = runs
    assert (first["compiles"], first["writes"], first["hits"]) == (1, 1, 0)
    for counts, _ in later:
        assert (counts["compiles"], counts["writes"], counts["hits"]) == (1, 0, 1)
        assert counts["loss"] == first["loss"]
    for _, stderr in runs:  # progress shown every time
        assert "fit: compiling..." in stderr and "fit: done, epoch 6, 36/36 steps" in stderr


def _problem():
    x = jax.random.normal(jax.random.key(0), (12, 3))
    loss = lambda p, b: jnp.mean((jnp.tanh(b[0] @ p["w"]) @ p["v"] + p["c"] - b[1]) ** 2)
    params = {"w": jnp.full((3, 4), 0.1), "v": jnp.full(4, 0.1), "c": jnp.array(0.5)}
    return loss, params, (x, jnp.sin(x).sum(1)), (x[:4], jnp.cos(x[:4]).sum(1))


@pytest.mark.parametrize(("pack", "committed"), [(True, False), (False, False), (True, True)],
                         ids=["packed", "unpacked", "committed-data"])
def test_progress_runs_the_loop_in_calls_of_one_executable_with_the_same_result(
        monkeypatch, pack, committed):
    """Calls of log_every steps (two per epoch, stopping inside epochs), weakly typed params
    and optimizer state, data committed to a device: one trace and compile, and the result
    of progress=False bit for bit; the progress shown is the steps and epochs the loop's
    host callbacks used to report."""
    monkeypatch.setattr(_progress, "REPORT_SECONDS", 0.0)  # every call: log_every steps
    shown = []
    monkeypatch.setattr(_progress.ProgressBar, "on_step", lambda self, step, epoch, loss:
                        shown.append(("step", int(step), int(epoch), bool(np.isfinite(loss)))))
    monkeypatch.setattr(_progress.ProgressBar, "on_epoch", lambda self, epoch, train, val:
                        shown.append(("epoch", int(epoch), float(train), float(val))))
    loss, params, data, val = _problem()
    if committed:
        data = jax.device_put(data, jax.devices()[0])
    tx = optax.inject_hyperparams(optax.adamw)(learning_rate=1e-2, weight_decay=1e-3)
    options = dict(epochs=3, batch_size=4, key=jax.random.key(1), val_data=val, pack=pack,
                   log_every=2)
    cache_stats()  # start counting
    before = cache_stats().functions.get("jit(run)")
    with_progress, history = fit(loss, params, data, tx, progress=True, **options)
    after = cache_stats().functions["jit(run)"]
    traces, compiles = (before.traces, before.compiles) if before else (0, 0)
    assert (after.traces - traces, after.compiles - compiles) == (1, 1)
    silent, silent_history = fit(loss, params, data, tx, progress=False, **options)
    for name in params:
        np.testing.assert_array_equal(with_progress[name], silent[name])
    np.testing.assert_array_equal(history.train_loss, silent_history.train_loss)
    np.testing.assert_array_equal(history.val_loss, silent_history.val_loss)
    epoch = [("epoch", e, float(history.train_loss[e]), float(history.val_loss[e]))
             for e in range(3)]
    # 3 steps per epoch; calls stop at steps 2, 4, 6, 8 and 9
    assert shown == [("step", 1, 0, True), epoch[0], ("step", 3, 1, True),
                     ("step", 5, 1, True), epoch[1], ("step", 7, 2, True),
                     ("step", 8, 2, True), epoch[2]]


def test_call_sizes_follow_the_measured_speed():
    chunks = _progress.Chunks(log_every=10)
    assert chunks.stop(0) == 10 and chunks.stop(15) == 20  # stops at multiples of log_every
    chunks.ran(10, 5.0)  # the first call compiles: its time says nothing
    assert chunks.count == 1
    chunks.ran(10, _progress.REPORT_SECONDS / 100)  # 100x too short: grows, at most 8x a call
    assert chunks.count == 8
    chunks.ran(80, _progress.REPORT_SECONDS / 4)
    assert chunks.count == 32 and chunks.stop(100) == 420
    chunks.ran(320, 100 * _progress.REPORT_SECONDS)  # slower now: one multiple per call
    assert chunks.count == 1


# run on 4 devices by tests/train/test_four_devices.py, with the other trainers' checks
MESH_SCRIPT = """
import jax, jax.numpy as jnp, numpy as np, optax
from jax.sharding import NamedSharding, PartitionSpec as P
from jaxlean.compile.cache import cache_stats
from jaxlean.train import _progress
from jaxlean.train.fit import fit

cache_stats()
_progress.REPORT_SECONDS = 0.0  # every call: log_every steps
mesh = jax.make_mesh((4,), ("d",), axis_types=(jax.sharding.AxisType.Auto,))
x = jax.random.normal(jax.random.key(0), (64, 8))
params = {"w": jax.device_put(jnp.full((8, 16), 0.1), NamedSharding(mesh, P(None, "d"))),
          "v": jnp.full(16, 0.1)}
loss = lambda p, b: jnp.mean((jnp.tanh(b[0] @ p["w"]) @ p["v"] - b[1]) ** 2)
out = {}
for shown in (True, False):
    before = cache_stats().functions.get("jit(run)")
    out[shown], _ = fit(loss, params, (x, jnp.sin(x).sum(1)), optax.adam(1e-2), epochs=3,
                        batch_size=8, key=jax.random.key(1), progress=shown, log_every=3)
    after = cache_stats().functions["jit(run)"]
    print(shown, after.compiles - (before.compiles if before else 0))
assert all(np.array_equal(out[True][k], out[False][k]) for k in params)
print("ok")
"""
