"""What fit compiles: the packing probe, the optimizer's init and the loop, nothing eager;
``quick_compile`` trains the same run, is on by default for short runs without a checkpoint
and is part of a checkpointed run's identity."""

import gc
import logging
import re

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxlean.compile import quick
from jaxlean.errors import CheckpointError, ConfigError
from jaxlean.train.fit import QUICK_COMPILE_MAX_STEPS, fit, resolve_quick_compile

_COMPILING = re.compile(r"Compiling (\S+) with")


def _problem(features: int, examples: int):
    rng = np.random.default_rng(features)
    x = rng.standard_normal((examples, features)).astype(np.float32)
    data = {"x": jnp.asarray(x), "y": jnp.asarray(np.tanh(x @ np.linspace(-1, 1, features)))}
    params = {"w": jnp.zeros(features), "b": jnp.zeros(())}
    loss = lambda p, batch: jnp.mean((jnp.tanh(batch["x"] @ p["w"] + p["b"]) - batch["y"]) ** 2)
    return loss, params, data


def test_fit_compiles_no_eager_operation(caplog):
    # Shapes no other test uses, so no eager operation of them is already compiled.
    loss, params, data = _problem(features=11, examples=13)
    key = jax.random.key(0)
    with caplog.at_level(logging.WARNING, logger="jax"), jax.log_compiles():
        fit(loss, params, data, optax.adam(1e-2), epochs=2, batch_size=13, key=key,
            progress=False)
    compiled = [m.group(1) for r in caplog.records if (m := _COMPILING.match(r.getMessage()))]
    # The probe's program may be reused from an earlier call on the same probe shapes; the
    # quick options are checked once per process on a trivial program of their own, all at
    # once (again once more per option this XLA refuses).
    assert set(compiled) <= {"jit(probe)", "jit(init_fn)", "jit(run)",
                             "jit(xla_option_check)"}, compiled
    refused = len({**quick.WANTED, **quick.ONE_PART}) - len(quick.probe_compile_options())
    assert compiled.count("jit(xla_option_check)") <= 1 + refused, compiled
    assert (compiled.count("jit(init_fn)"), compiled.count("jit(run)")) == (1, 1), compiled
    assert compiled.count("jit(probe)") <= 1, compiled


def test_quick_compile_trains_the_same_run(tmp_path):
    loss, params, data = _problem(features=3, examples=24)
    options = dict(epochs=3, batch_size=8, key=jax.random.key(1), progress=False)
    default, default_history = fit(loss, params, data, optax.adam(0.1), quick_compile=False,
                                   **options)
    quick, quick_history = fit(loss, params, data, optax.adam(0.1), quick_compile=True,
                               checkpoint=tmp_path, **options)
    for name in ("w", "b"):
        np.testing.assert_allclose(quick[name], default[name], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(quick_history.train_loss, default_history.train_loss, rtol=1e-5)
    assert not np.allclose(quick["w"], params["w"])  # it trained
    with pytest.raises(CheckpointError, match="quick_compile is absent here, True"):
        fit(loss, params, data, optax.adam(0.1), checkpoint=tmp_path, **options)
    with pytest.raises(ConfigError, match="quick_compile"):
        fit(loss, params, data, optax.adam(0.1), quick_compile=1, **options)


def test_quick_compile_by_default_only_for_short_runs_on_cpu_without_checkpoint():
    short, long = QUICK_COMPILE_MAX_STEPS, QUICK_COMPILE_MAX_STEPS + 1
    assert resolve_quick_compile(None, short, checkpointed=False, platform="cpu")
    assert not resolve_quick_compile(None, long, checkpointed=False, platform="cpu")
    assert not resolve_quick_compile(None, short, checkpointed=True, platform="cpu")
    assert not resolve_quick_compile(None, short, checkpointed=False, platform="gpu")
    assert resolve_quick_compile(True, long, checkpointed=True, platform="gpu")
    assert not resolve_quick_compile(False, short, checkpointed=False, platform="cpu")


def test_fit_traces_and_compiles_without_automatic_garbage_collection():
    loss, params, data = _problem(features=3, examples=24)
    options = dict(epochs=1, batch_size=8, key=jax.random.key(2), progress=False)
    enabled_while_traced = []

    def watched(p, batch):
        enabled_while_traced.append(gc.isenabled())
        return loss(p, batch)

    fit(watched, params, data, optax.adam(0.1), **options)
    assert enabled_while_traced and not any(enabled_while_traced)
    assert gc.isenabled()  # on again after the call

    def broken(p, batch):
        raise ValueError("a loss that cannot be traced")

    with pytest.raises(ValueError, match="cannot be traced"):
        fit(broken, params, data, optax.adam(0.1), **options)
    assert gc.isenabled()  # on again after an error too
    gc.disable()  # a collector the caller stopped stays stopped
    try:
        fit(loss, params, data, optax.adam(0.1), **options)
        assert not gc.isenabled()
    finally:
        gc.enable()
