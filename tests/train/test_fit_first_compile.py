"""fit compiles its loop while packed's probe runs (jaxlean.train._first_compile): the same
run as when the probe had decided before, one compile of the loop where the probe decides the
buffers, the loop built again where it decides per-leaf views, and the probe's refusal."""

import threading

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxlean.errors import ConfigError
from jaxlean.train._layout import PackedLayout
from jaxlean.train._packed_decisions import assumed_on_buffers, confirm, placed
from jaxlean.train.fit import fit

_BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


def _problem(seed: int):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((16, 3)).astype(np.float32)
    data = {"x": x, "y": np.tanh(x @ np.array([0.5, -1.0, 2.0], np.float32))}
    params = {"w": rng.standard_normal((3, 4)).astype(np.float32) / 2,
              "v": rng.standard_normal(4).astype(np.float32) / 2, "b": np.float32(0.1)}

    def loss(p, batch):
        return jnp.mean((jnp.tanh(batch["x"] @ p["w"]) @ p["v"] + p["b"] - batch["y"]) ** 2)
    return loss, params, data


def _fit_logged(*args, **options):
    """fit, and the threads its loop (``jit(run)``) compiled in (JAX's compile events)."""
    threads = []

    def on_duration(event, duration, **kwargs):
        if event == _BACKEND_COMPILE and kwargs.get("fun_name") == "jit(run)":
            threads.append(threading.current_thread().name)

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    try:
        result = fit(*args, **options)
    finally:
        jax.monitoring.unregister_event_duration_listener(on_duration)
    return result, threads


def _assert_same_run(a, b):
    (params_a, history_a), (params_b, history_b) = a, b
    for name in params_a:
        np.testing.assert_array_equal(params_a[name], params_b[name])
    np.testing.assert_array_equal(history_a.train_loss, history_b.train_loss)


def test_the_loop_compiles_once_while_the_probe_runs_and_trains_as_when_decided():
    loss, params, data = _problem(0)
    tx = optax.adam(3e-2)  # a new object: not probed yet in this process
    options = dict(epochs=2, batch_size=8, key=jax.random.key(0), progress=False)
    first, threads = _fit_logged(loss, params, data, tx, **options)
    # The loop's one compile ran in fit's compile thread, and the first call used it.
    assert threads == ["fit compile"], threads
    decided, threads = _fit_logged(loss, params, data, tx, **options)
    assert "fit compile" not in threads  # decided before: nothing assumed, nothing overlapped
    _assert_same_run(first, decided)
    assert not np.allclose(first[0]["w"], params["w"])  # it trained


def test_under_a_thread_local_configuration_the_caller_compiles_the_loop():
    """A JAX context manager configures only its own thread, and JAX reads some compile
    options from the configuration when it compiles: fit's thread then leaves the one
    compile to the caller, who compiles under the configuration it set."""
    loss, params, data = _problem(3)
    with jax.default_matmul_precision("highest"):
        _, threads = _fit_logged(loss, params, data, optax.adam(3e-2), epochs=1, batch_size=8,
                                 key=jax.random.key(3), progress=False)
    assert len(threads) == 1 and threads[0] != "fit compile", threads


def test_a_probe_that_decides_views_builds_the_loop_again_on_them():
    """A global-norm clip mixes elements: it runs on per-leaf views. The loop assumed on the
    buffers is dropped and built on the views: the run of a fit whose probe decided before,
    and optax's per-leaf result up to rounding."""
    loss, params, data = _problem(1)
    tx = optax.chain(optax.clip_by_global_norm(0.05), optax.adam(3e-2))
    options = dict(epochs=2, batch_size=8, key=jax.random.key(1), progress=False)
    first, threads = _fit_logged(loss, params, data, tx, **options)
    # The assumed loop compiled in fit's thread; the loop on the views then in the caller's.
    assert threads[0] == "fit compile" and threads[1:] and "fit compile" not in threads[1:], \
        threads
    decided, _ = _fit_logged(loss, params, data, tx, **options)
    _assert_same_run(first, decided)
    per_leaf, _ = fit(loss, params, data, tx, pack=False, **options)
    for name in params:
        np.testing.assert_allclose(first[0][name], per_leaf[name], rtol=1e-5, atol=1e-6)


def test_a_refused_transformation_is_refused_by_name_as_at_init():
    """A factored second moment (large matrices) is refused by packed's state check: fit,
    having traced its loop on the buffers, raises packed's ConfigError naming it."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((8, 256)).astype(np.float32)
    params = {"w": np.zeros((256, 128), np.float32), "b": np.zeros((8,), np.float32)}
    data = {"x": x, "y": np.zeros((8, 128), np.float32)}
    loss = lambda p, batch: jnp.mean((batch["x"] @ p["w"] - batch["y"]) ** 2) + jnp.sum(p["b"])
    tx = optax.adafactor(1e-2, clipping_threshold=None, multiply_by_parameter_scale=False)
    with pytest.raises(ConfigError, match=r"scale_by_factored_rms|shape \(256,\)"):
        fit(loss, params, data, tx, epochs=1, batch_size=8, key=jax.random.key(2),
            progress=False)


def test_assumed_transformations_are_listed_once_and_confirmed_by_their_probe():
    params = {"w": jnp.zeros((3, 2)), "b": jnp.zeros(2)}
    layout = PackedLayout.plan(params)
    adam, clip = optax.adam(1e-2), optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(0.1))
    with assumed_on_buffers() as assumed:
        assert placed(adam, layout, 0) is adam and placed(adam, layout, 0) is adam
        assert placed(clip, layout, 0) is clip
    assert [tx for tx, _, _ in assumed] == [adam, clip]
    assert confirm(assumed[:1]) and not confirm(assumed)
    assert placed(adam, layout, 0) is adam and placed(clip, layout, 0) is not clip  # decided
    with assumed_on_buffers() as again:  # decided ones are not assumed again
        placed(clip, layout, 0)
    assert again == []
