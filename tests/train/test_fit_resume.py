"""fit(checkpoint=...): a resumed run ends bit for bit where an uninterrupted one does.

An interruption is played by running to the end with every epoch kept and then
deleting the checkpoints after epoch ``k``: the directory is then what a job
killed after saving epoch ``k`` leaves behind (saves are atomic).
"""

from __future__ import annotations

import shutil

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxlean._random import normal
from jaxlean.errors import CheckpointError, ConfigError, NonFiniteError
from jaxlean.train.checkpoint import Checkpointer
from jaxlean.train.fit import fit
from jaxlean.train.packed import packed


def _data(n=40, features=3, seed=0):
    x = normal(jax.random.key(seed), (n, features))
    return {"x": x, "y": jnp.sin(x).sum(1)}


def _params(hidden=8):
    k1, k2 = jax.random.split(jax.random.key(1))
    return {"l1": {"w": normal(k1, (3, hidden)) / 2, "b": jnp.zeros(hidden)},
            "l2": {"w": normal(k2, (hidden,)) / 3, "act": jnp.tanh}}


def _loss(params, batch):
    hidden = params["l2"]["act"](batch["x"] @ params["l1"]["w"] + params["l1"]["b"])
    return jnp.mean((hidden @ params["l2"]["w"] - batch["y"]) ** 2)


def _checkpointed(directory, run, epochs_kept: int | None = None):
    """``run`` with a checkpoint every epoch, then the directory cut back to ``epochs_kept``."""
    with Checkpointer(directory, keep=None) as checkpoints:
        result = run(checkpoint=checkpoints)
        steps = checkpoints.all_steps()
    for step in steps:
        if epochs_kept is not None and step > epochs_kept:
            shutil.rmtree(directory / str(step))
    return result, steps


def _assert_same(got, want):
    """Params and History equal bit for bit (resumed_epoch aside)."""
    (got_params, got_history), (want_params, want_history) = got, want
    for a, b in zip(jax.tree.leaves(got_params), jax.tree.leaves(want_params), strict=True):
        if callable(a):
            assert a is b
        else:
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(got_history.train_loss, want_history.train_loss)
    if want_history.val_loss is None:
        assert got_history.val_loss is None
    else:
        np.testing.assert_array_equal(got_history.val_loss, want_history.val_loss)
    assert got_history.best_epoch == want_history.best_epoch
    assert got_history.stopped_early == want_history.stopped_early
    assert got_history.steps_per_epoch == want_history.steps_per_epoch


def test_resumed_fit_equals_uninterrupted_and_plain_fit(tmp_path, capsys):
    params, data = _params(), _data()
    run = lambda **kw: fit(_loss, params, data, optax.adam(1e-2), epochs=5, batch_size=8,
                           key=jax.random.key(2), **{"progress": False, **kw})
    plain = run(quick_compile=False)  # the loop a checkpointed run compiles by default
    assert plain[1].resumed_epoch is None
    full, steps = _checkpointed(tmp_path, run, epochs_kept=2)
    assert steps == [1, 2, 3, 4, 5]
    _assert_same(full, plain)
    resumed = run(checkpoint=tmp_path, checkpoint_every=2, progress=True)
    assert resumed[1].resumed_epoch == 2
    assert f"resumed from {tmp_path} at epoch 2" in capsys.readouterr().err
    _assert_same(resumed, plain)
    with Checkpointer(tmp_path) as checkpoints:  # every 2 epochs, at the end, the last 3
        assert checkpoints.all_steps() == [2, 4, 5]
        assert checkpoints.metadata()["fit"]["batch_size"] == 8
    again = run(checkpoint=tmp_path)  # finished: the stored result, nothing trained
    assert again[1].resumed_epoch == 5
    _assert_same(again, plain)


def test_early_stopping_resumes_before_and_after_the_stop(tmp_path):
    x = jnp.linspace(-1, 1, 32)[:, None]
    train = {"x": x, "y": 2.0 * x[:, 0]}
    val = {"x": x, "y": 1.0 * x[:, 0]}  # the val optimum lies on the way to the train optimum
    loss = lambda p, batch: jnp.mean((batch["x"][:, 0] * p["w"] - batch["y"]) ** 2)
    run = lambda **kw: fit(loss, {"w": jnp.float32(0.0)}, train, optax.adam(0.1), epochs=50,
                           batch_size=8, key=jax.random.key(3), val_data=val, patience=2,
                           progress=False, **kw)
    plain = run()
    stopped_at = len(plain[1].train_loss)
    assert plain[1].stopped_early and plain[1].best_epoch == stopped_at - 3
    _, steps = _checkpointed(tmp_path / "after", run)
    assert steps[-1] == stopped_at
    shutil.copytree(tmp_path / "after", tmp_path / "before")
    for step in steps[plain[1].best_epoch:]:
        shutil.rmtree(tmp_path / "before" / str(step))
    before = run(checkpoint=tmp_path / "before")
    assert before[1].resumed_epoch == plain[1].best_epoch
    _assert_same(before, plain)
    after = run(checkpoint=tmp_path / "after")
    assert after[1].resumed_epoch == stopped_at
    _assert_same(after, plain)


def test_groups_frozen_leaves_and_unpacked_loop_resume(tmp_path):
    params, data = _params(), _data()
    tx = packed({"matrices": optax.adam(1e-2), "vectors": optax.sgd(1e-2)},
                param_labels=lambda p: jax.tree.map(
                    lambda x: "matrices" if x.ndim == 2 else "vectors", p))
    frozen = lambda path: jax.tree_util.keystr(path) != "['l1']['b']"
    run = lambda **kw: fit(_loss, params, data, tx, epochs=4, batch_size=16,
                           key=jax.random.key(4), trainable=frozen, pack=False, progress=False,
                           **kw)
    uninterrupted, _ = _checkpointed(tmp_path, run, epochs_kept=1)
    resumed = run(checkpoint=tmp_path)
    assert resumed[1].resumed_epoch == 1
    _assert_same(resumed, uninterrupted)
    np.testing.assert_array_equal(resumed[0]["l1"]["b"], params["l1"]["b"])


def test_non_finite_loss_is_not_saved_and_raises_again(tmp_path):
    x = jnp.linspace(-1, 1, 16)[:, None]
    data = {"x": x, "y": 2.0 * x[:, 0]}
    # Finite until w passes 1.5 on its way to 2: a run that goes wrong after a few epochs.
    loss = lambda p, b: (jnp.mean((b["x"][:, 0] * p["w"] - b["y"]) ** 2)
                         + jnp.where(p["w"] > 1.5, jnp.nan, 0.0))
    run = lambda **kw: fit(loss, {"w": jnp.float32(0.0)}, data, optax.sgd(0.05), epochs=30,
                           batch_size=4, key=jax.random.key(5), progress=False, **kw)
    with pytest.raises(NonFiniteError) as plain:
        run()
    epoch = int(str(plain.value).split("(epoch ")[1].split(",")[0])
    assert epoch >= 2
    with pytest.raises(NonFiniteError) as first:
        run(checkpoint=tmp_path)
    with Checkpointer(tmp_path) as checkpoints:
        assert checkpoints.latest_step() == epoch  # the epochs before the bad one
    with pytest.raises(NonFiniteError) as again:
        run(checkpoint=tmp_path)
    assert str(plain.value) == str(first.value) == str(again.value)


def test_a_checkpoint_of_another_run_is_refused_naming_what_differs(tmp_path):
    params, data = _params(), _data()

    def run(params=params, data=data, tx=None, **kw):
        options = {"epochs": 2, "batch_size": 8, "key": jax.random.key(2), **kw}
        return fit(_loss, params, data, tx or optax.adam(1e-2), progress=False,
                   checkpoint=tmp_path, **options)

    run()
    where = rf"in the checkpoint at {tmp_path} step 2"
    with pytest.raises(CheckpointError, match=r"data\['x'\] is float32\[32, 3\] hash \w+ here, "
                                              r"float32\[40, 3\] hash \w+ " + where):
        run(data=_data(n=32))
    with pytest.raises(CheckpointError, match=r"val_data\['x'\] is float32\[40, 3\] hash \w+ "
                                              r"here, absent "):
        run(val_data=data)
    with pytest.raises(CheckpointError, match=r"params\['l1'\]\['b'\] is trained "
                                              r"float32\[16\] here, trained float32\[8\]"):
        run(params=_params(hidden=16))
    with pytest.raises(ConfigError, match="checkpoint_every must be a positive integer"):
        run(checkpoint_every=0)
    other = tmp_path / "other"
    with Checkpointer(other) as checkpoints:
        checkpoints.save(1, {"w": jnp.zeros(2), "step": 1})
    with pytest.raises(CheckpointError, match="was not written by fit"):
        fit(_loss, params, data, optax.adam(1e-2), epochs=2, batch_size=8,
            key=jax.random.key(2), progress=False, checkpoint=other)
