"""fit(checkpoint=...) resumes only the run it recorded, and extends it to more epochs.

One finished 6-epoch run of a linear model is checkpointed once per module;
each identity field changed in turn is refused naming it (the check runs
before anything is compiled), the same call resumes, and more epochs continue
the run to the result of a longer one, bit for bit.
"""

from __future__ import annotations

import shutil

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxlean._random import normal
from jaxlean.errors import CheckpointError
from jaxlean.train._describe import describe
from jaxlean.train.fit import fit

EPOCHS = 6


def _data(seed: int, shift: float = 0.0) -> dict:
    x = normal(jax.random.key(seed), (24, 3))
    return {"x": x, "y": x @ jnp.array([1.0, -2.0, 0.5]) + shift}


TRAIN, VAL = _data(0), _data(1)
PARAMS = {"w": jnp.zeros(3), "b": jnp.float32(0.0), "act": jnp.tanh}


def _loss(params, batch):
    return jnp.mean((params["act"](batch["x"] @ params["w"] + params["b"]) - batch["y"]) ** 2)


def _fit(directory=None, *, params=PARAMS, data=TRAIN, tx=None, **options):
    options = {"epochs": EPOCHS, "batch_size": 8, "key": jax.random.key(2), "val_data": VAL,
               **options}
    return fit(_loss, params, data, tx or optax.adam(1e-2), progress=False,
               checkpoint=directory, **options)


def _assert_same(got, want):
    (got_params, got_history), (want_params, want_history) = got, want
    for name in ("w", "b"):
        np.testing.assert_array_equal(got_params[name], want_params[name])
    np.testing.assert_array_equal(got_history.train_loss, want_history.train_loss)
    np.testing.assert_array_equal(got_history.val_loss, want_history.val_loss)
    assert (got_history.best_epoch, got_history.stopped_early) == (
        want_history.best_epoch, want_history.stopped_early)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A checkpoint directory holding a finished run of ``_fit()``, and its result."""
    directory = tmp_path_factory.mktemp("finished")
    return directory, _fit(directory)


def _copy(finished, tmp_path):
    shutil.copytree(finished[0], tmp_path / "run")
    return tmp_path / "run"


CHANGES = {
    "learning rate": ({"tx": optax.adam(1e-3)},
                      r"tx: scale step_size is -0\.001 here, -0\.01 in the checkpoint"),
    "b1": ({"tx": optax.adam(1e-2, b1=0.8)},
           r"tx: scale_by_adam b1 is 0\.8 here, 0\.9 in the checkpoint"),
    "optimizer": ({"tx": optax.sgd(1e-2)},
                  r"tx: chain init_fns\[0\] is function \S*init_empty_state code \w+ here, "
                  r"function \S*scale_by_adam\S* code \w+ in the checkpoint"),
    "data": ({"data": _data(0, shift=1.0)},
             r"data\['y'\] is float32\[24\] hash \w+ here, float32\[24\] hash \w+ in the"),
    "val_data": ({"val_data": _data(3)},
                 r"val_data\['x'\] is float32\[24, 3\] hash \w+ here, float32\[24, 3\] hash"),
    "batch_size": ({"batch_size": 4}, r"batch_size is 4 here, 8 in the checkpoint"),
    "key": ({"key": jax.random.key(7)},
            r"key is uint32\[2\] \[0, 7\] here, uint32\[2\] \[0, 2\] in the checkpoint"),
    "patience": ({"patience": 3}, r"patience is 3 here, None in the checkpoint"),
    "trainable": ({"trainable": {"w": True, "b": False, "act": False}},
                  r"params\['b'\] is frozen float32\[\] here, trained float32\[\] in the"),
    "static leaf": ({"params": {**PARAMS, "act": jnp.sin}},
                    r"params\['act'\]\.__wrapped__ is function \S*sin .* here, "
                    r"function \S*tanh .* in the checkpoint"),
    "model structure": ({"params": {**PARAMS, "w": jnp.zeros((3, 1))}},
                        r"params\['w'\] is trained float32\[3, 1\] here, trained float32\[3\]"),
}


@pytest.mark.parametrize("change", CHANGES)
def test_a_changed_field_is_refused_naming_it(finished, change):
    options, message = CHANGES[change]
    with pytest.raises(CheckpointError, match=message) as error:
        _fit(finished[0], **options)
    assert f"delete {finished[0]}" in str(error.value)  # the way to start fresh


def test_the_same_call_resumes_the_finished_run(finished):
    again = _fit(finished[0])
    assert again[1].resumed_epoch == EPOCHS
    _assert_same(again, finished[1])


def test_more_epochs_continue_the_run_bit_for_bit(finished, tmp_path):
    extended = _fit(_copy(finished, tmp_path), epochs=10)
    assert extended[1].resumed_epoch == EPOCHS and len(extended[1].train_loss) == 10
    # quick_compile=False: the loop a checkpointed run compiles by default
    _assert_same(extended, _fit(epochs=10, quick_compile=False))


def test_fewer_epochs_than_the_checkpoint_are_refused(finished):
    with pytest.raises(CheckpointError, match=r"epochs is 4 here, 6 in the checkpoint .* "
                                              r"already at epoch 6.* ask for epochs >= 6"):
        _fit(finished[0], epochs=4)


def test_a_schedule_built_from_epochs_is_named(tmp_path):
    schedule = lambda epochs: optax.adam(optax.linear_schedule(1e-2, 0.0, epochs * 3))
    _fit(tmp_path, tx=schedule(EPOCHS))
    with pytest.raises(CheckpointError, match=r"tx: polynomial_schedule transition_steps is 30 "
                                              r"here, 18 in the checkpoint.*schedule built from "
                                              r"epochs changes when epochs changes"):
        _fit(tmp_path, tx=schedule(10), epochs=10)


def test_an_early_stopping_run_extended_stops_where_the_longer_run_does(tmp_path):
    x = jnp.linspace(-1, 1, 32)[:, None]
    train, val = {"x": x, "y": 2.0 * x[:, 0]}, {"x": x, "y": 1.0 * x[:, 0]}
    loss = lambda p, batch: jnp.mean((batch["x"][:, 0] * p["w"] - batch["y"]) ** 2)
    run = lambda epochs, **kw: fit(loss, {"w": jnp.float32(0.0)}, train, optax.adam(0.1),
                                   epochs=epochs, batch_size=8, key=jax.random.key(3),
                                   val_data=val, patience=2, progress=False, **kw)
    longer = run(50)
    stopped_at = len(longer[1].train_loss)
    assert longer[1].stopped_early and stopped_at > 3
    short = run(stopped_at - 2, checkpoint=tmp_path)
    assert not short[1].stopped_early
    extended = run(50, checkpoint=tmp_path)
    assert extended[1].resumed_epoch == stopped_at - 2
    np.testing.assert_array_equal(extended[0]["w"], longer[0]["w"])
    np.testing.assert_array_equal(extended[1].train_loss, longer[1].train_loss)
    np.testing.assert_array_equal(extended[1].val_loss, longer[1].val_loss)
    assert (extended[1].best_epoch, extended[1].stopped_early) == (longer[1].best_epoch, True)
    stopped = run(60, checkpoint=tmp_path)  # already stopped early: more epochs change nothing
    assert stopped[1].resumed_epoch == stopped_at
    np.testing.assert_array_equal(stopped[1].train_loss, longer[1].train_loss)
    np.testing.assert_array_equal(stopped[0]["w"], longer[0]["w"])


def test_describe_sees_constants_of_code_and_attributes_of_objects():
    class Warmup:
        def __init__(self, steps):
            self.steps = steps

        def __call__(self, count):
            return count / self.steps

    first, second = (lambda count: 1e-2 * count), (lambda count: 1e-3 * count)
    assert describe(first, "f") != describe(second, "f")
    assert describe(Warmup(10), "s") == describe(Warmup(10), "s")
    assert describe(Warmup(10), "s")["s.steps"] == "10" != describe(Warmup(20), "s")["s.steps"]
