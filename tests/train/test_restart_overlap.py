"""A restart compiles its step (or fit its loop) while the checkpoint is read, from shapes, with the
same result as restoring first and compiling on the first call."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxlean.compile.cache import cache_stats
from jaxlean.errors import CheckpointError
from jaxlean.train.checkpoint import Checkpointer
from jaxlean.train.fit import fit
from jaxlean.train.packed import packed
from jaxlean.train.step import make_train_step

TX = packed(optax.adam(1e-2))


def _loss(model, x):
    return jnp.mean(jax.vmap(model)(x) ** 2)


def _initial_state() -> dict:
    model = eqx.nn.MLP(3, 1, 8, 1, key=jax.random.key(0))
    return {"model": model, "opt_state": TX.init(eqx.filter(model, eqx.is_array)),
            "key": jax.random.key(7), "step": 0}


def _traces() -> int:
    traced = cache_stats().functions.get("jit(step)")
    return traced.traces if traced else 0


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A checkpoint after one step, and the loss of the step after it."""
    directory = tmp_path_factory.mktemp("checkpoints")
    step, state, x = make_train_step(_loss, TX), _initial_state(), jnp.ones((4, 3))
    model, opt_state, _ = step(state["model"], state["opt_state"], x)
    with Checkpointer(directory) as checkpoints:
        checkpoints.save(1, {**state, "model": model, "opt_state": opt_state, "step": 1})
    _, _, loss = step(model, opt_state, x)
    return directory, float(loss)


def test_compile_from_shapes_while_reading_matches_a_plain_restore(saved):
    directory, expected = saved
    shapes = {**eqx.filter_eval_shape(_initial_state), "step": 0}
    step, x = make_train_step(_loss, TX), jnp.ones((4, 3))
    with Checkpointer(directory) as checkpoints:
        pending = checkpoints.restore_in_background(shapes)
        step.compile(shapes["model"], shapes["opt_state"], jax.ShapeDtypeStruct(x.shape, x.dtype))
        state = pending.result()
    before = _traces()
    _, _, loss = step(state["model"], state["opt_state"], x)
    assert _traces() == before  # the first call ran the program compiled from shapes
    assert float(loss) == expected
    assert state["step"] == 1
    np.testing.assert_array_equal(jax.random.key_data(state["key"]),
                                  jax.random.key_data(_initial_state()["key"]))


def test_background_restore_raises_the_restore_error(saved):
    directory, _ = saved
    wrong = {**eqx.filter_eval_shape(_initial_state), "step": 0, "extra": jnp.zeros(2)}
    with Checkpointer(directory) as checkpoints:
        pending = checkpoints.restore_in_background(wrong)
        with pytest.raises(CheckpointError, match=r"\['extra'\] is not in the checkpoint"):
            pending.result()


def test_resumed_fit_compiles_its_loop_once_while_reading(tmp_path):
    cache_stats()  # start counting
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 3)).astype(np.float32)
    data = (x, x @ np.ones((3, 1), np.float32))
    loss = lambda params, batch: jnp.mean((batch[0] @ params["w"] - batch[1]) ** 2)
    options = dict(batch_size=8, key=jax.random.key(0), progress=False,
                   params={"w": jnp.zeros((3, 1))}, data=data, tx=optax.adam(0.1))
    # quick_compile=False: the loop a checkpointed run compiles by default
    whole, whole_history = fit(loss, epochs=4, quick_compile=False, **options)
    fit(loss, epochs=2, checkpoint=tmp_path, **options)
    before = cache_stats().functions["jit(run)"]
    resumed, history = fit(loss, epochs=4, checkpoint=tmp_path, **options)
    after = cache_stats().functions["jit(run)"]
    assert history.resumed_epoch == 2
    assert (after.traces - before.traces, after.compiles - before.compiles) == (1, 1)
    np.testing.assert_array_equal(resumed["w"], whole["w"])
    np.testing.assert_array_equal(history.train_loss, whole_history.train_loss)
