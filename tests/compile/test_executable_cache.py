"""The executable cache: a hit skips tracing, every key ingredient misses when it changes."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxlean._random import normal
from jaxlean.compile import _jax_private
from jaxlean.compile.cache import cache_stats
from jaxlean.compile.cached_step import cached_train_step
from jaxlean.compile.executable_cache import SUFFIX, ExecutableCache, cached_jit
from jaxlean.compile.stats import FunctionCacheStats
from jaxlean.errors import ConfigError
from jaxlean.train.step import make_train_step

REPO = Path(__file__).resolve().parents[2]
SCALE = 3.0


def scaled(x):
    return jnp.sin(x) * SCALE


def _traces(name: str) -> int:
    """How often ``jax.jit`` traced the function ``name`` in this process so far."""
    return cache_stats().functions.get(f"jit({name})", FunctionCacheStats()).traces


def _run(fn, directory: Path, *args, **jit_options) -> tuple[ExecutableCache, np.ndarray]:
    """Call ``fn`` through a fresh cache (what a new process sees) after clearing jax's
    in-memory caches; returns the cache (for its stats) and the result."""
    jax.clear_caches()
    cache = ExecutableCache(directory)
    out = cached_jit(fn, cache, **jit_options)(*args)
    return cache, np.asarray(out)


def _outcome(cache: ExecutableCache) -> str:
    stats = cache.stats
    return "hit" if (stats.hits, stats.misses) == (1, 0) else (
        "miss" if (stats.hits, stats.misses) == (0, 1) else repr(stats))


def test_hit_skips_tracing_and_gives_the_same_result(tmp_path):
    x = jnp.linspace(0, 1, 5)
    before = _traces("scaled")
    cold, first = _run(scaled, tmp_path, x)
    assert (_outcome(cold), cold.stats.writes, _traces("scaled") - before) == ("miss", 1, 1)
    assert cold.stats.miss_reasons == [f"scaled: first compile of this function in {tmp_path}"]
    assert len(list(tmp_path.glob(f"*{SUFFIX}"))) == 1
    warm, second = _run(scaled, tmp_path, x)
    assert (_outcome(warm), _traces("scaled") - before) == ("hit", 1)  # no second trace
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(second, np.sin(np.linspace(0, 1, 5)) * 3, rtol=1e-6)


def _baseline(tmp_path):
    return _run(scaled, tmp_path, jnp.ones(4))


def test_changed_global_value_misses(tmp_path, monkeypatch):
    _baseline(tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 4.0)
    cache, out = _run(scaled, tmp_path, jnp.ones(4))
    assert _outcome(cache) == "miss" and cache.stats.miss_reasons[0].endswith(": function")
    np.testing.assert_allclose(out, np.sin(1.0) * 4, rtol=1e-6)


def test_changed_closure_constant_and_code_miss(tmp_path):
    def make(c, power):
        return lambda x: x * c + x ** power

    ones = jnp.ones(3)
    assert _outcome(_run(make(jnp.arange(3.0), 2), tmp_path, ones)[0]) == "miss"
    assert _outcome(_run(make(jnp.arange(3.0), 2), tmp_path, ones)[0]) == "hit"
    cache, out = _run(make(jnp.arange(3.0) + 1, 2), tmp_path, ones)  # constant's values
    assert _outcome(cache) == "miss" and out.tolist() == [2.0, 3.0, 4.0]
    assert _outcome(_run(make(jnp.arange(3.0), 3), tmp_path, ones)[0]) == "miss"  # a default
    assert _outcome(_run(lambda x: x * jnp.arange(3.0) - x ** 2, tmp_path, ones)[0]) == "miss"


@pytest.mark.parametrize("changed", [
    jnp.ones(5),  # shape
    jnp.ones(4, jnp.int32),  # dtype
    np.ones(4, np.float32),  # a host array
    jax.device_put(jnp.ones(4), NamedSharding(Mesh(jax.devices()[:1], ("data",)), P("data"))),
    jax.device_put(jnp.ones(4), NamedSharding(Mesh(jax.devices()[:1], ("model",)), P())),
], ids=["shape", "dtype", "host", "sharding", "mesh"])
def test_changed_input_misses(tmp_path, changed):
    _baseline(tmp_path)
    cache, out = _run(scaled, tmp_path, changed)
    assert _outcome(cache) == "miss"
    assert cache.stats.miss_reasons == [
        "scaled: changed since the nearest stored entry: argument shapes, dtypes and shardings"]
    np.testing.assert_allclose(out, np.sin(np.ones(changed.shape)) * SCALE, rtol=1e-6)


def test_weak_typed_scalar_argument_misses(tmp_path):
    _run(scaled, tmp_path, jnp.float32(1.0))
    assert _outcome(_run(scaled, tmp_path, 1.0)[0]) == "miss"


def test_changed_jit_options_miss(tmp_path):
    _baseline(tmp_path)
    assert _outcome(_run(scaled, tmp_path, jnp.ones(4), donate_argnums=0)[0]) == "miss"


@pytest.mark.parametrize("change", ["jax_version", "xla_flags"])
def test_changed_environment_misses(tmp_path, monkeypatch, change):
    _baseline(tmp_path)
    if change == "jax_version":
        monkeypatch.setattr(jax, "__version__", jax.__version__ + ".dev")
        reason = "jax, jaxlib and python versions"
    else:
        flags = os.environ.get("XLA_FLAGS", "") + " --xla_cpu_enable_fast_math=false"
        monkeypatch.setenv("XLA_FLAGS", flags)
        reason = "XLA_FLAGS / LIBTPU_INIT_ARGS"
    cache, _ = _run(scaled, tmp_path, jnp.ones(4))
    assert _outcome(cache) == "miss" and cache.stats.miss_reasons[0].endswith(f": {reason}")


def test_changed_jax_config_misses(tmp_path):
    _baseline(tmp_path)
    previous = jax.config.jax_default_matmul_precision
    jax.config.update("jax_default_matmul_precision", "highest")
    try:
        cache, _ = _run(scaled, tmp_path, jnp.ones(4))
        assert _outcome(cache) == "miss" and cache.stats.miss_reasons[0].endswith(": jax config")
    finally:
        jax.config.update("jax_default_matmul_precision", previous)


def test_unkeyable_function_falls_back_and_says_why(tmp_path):
    lock = threading.Lock()

    def locked(x):
        with lock:
            return x + 1

    with pytest.warns(UserWarning, match=r"cannot key the function safely: .*closure lock.*"
                                         r"lock"):
        cache, out = _run(locked, tmp_path, jnp.ones(2))
    assert out.tolist() == [2.0, 2.0] and len(cache.stats.fallbacks) == 1
    assert not list(tmp_path.glob(f"*{SUFFIX}"))


def test_damaged_entry_is_recompiled_and_replaced(tmp_path):
    _baseline(tmp_path)
    (entry,) = tmp_path.glob(f"*{SUFFIX}")
    entry.write_bytes(entry.read_bytes()[:100])
    with pytest.warns(UserWarning, match="cannot load"):
        cache, _ = _run(scaled, tmp_path, jnp.ones(4))
    assert (_outcome(cache), cache.stats.writes) == ("miss", 1)
    assert _outcome(_run(scaled, tmp_path, jnp.ones(4))[0]) == "hit"


def test_static_arguments_are_refused():
    with pytest.raises(ConfigError, match=r"functools\.partial"):
        cached_jit(scaled, static_argnums=0)


def test_partial_arguments_are_in_the_key(tmp_path):
    def power(p, x):
        return x ** p

    assert _outcome(_run(functools.partial(power, 2), tmp_path, jnp.full(2, 3.0))[0]) == "miss"
    cache, out = _run(functools.partial(power, 3), tmp_path, jnp.full(2, 3.0))
    assert _outcome(cache) == "miss" and out.tolist() == [27.0, 27.0]


def _mse(model, x, y):
    return jnp.mean((jax.vmap(model)(x) - y) ** 2)


def _train(step, steps: int = 3) -> list[float]:
    model = eqx.nn.MLP(4, 1, 8, 2, key=jax.random.key(0))
    tx = optax.adam(1e-2)
    opt_state = tx.init(eqx.filter(model, eqx.is_array))
    x = normal(jax.random.key(1), (6, 4))
    y = jnp.sum(x, axis=1, keepdims=True)
    losses = []
    for _ in range(steps):
        model, opt_state, loss = step(model, opt_state, x, y)
        losses.append(float(loss))
    return losses


def test_cached_train_step_matches_and_skips_tracing(tmp_path):
    tx = optax.adam(1e-2)
    reference = _train(make_train_step(_mse, tx))
    jax.clear_caches()
    before = _traces("step")
    cold = cached_train_step(make_train_step(_mse, tx), tmp_path)
    assert _train(cold) == reference and _traces("step") - before == 1
    jax.clear_caches()
    warm = cached_train_step(make_train_step(_mse, tx), tmp_path)
    assert _train(warm) == reference and _traces("step") - before == 1
    assert (warm.cache.stats.hits, warm.cache.stats.misses) == (1, 0)
    other = cached_train_step(make_train_step(_mse, optax.adam(2e-2)), tmp_path)
    _train(other, steps=1)
    assert (other.cache.stats.hits, other.cache.stats.misses) == (0, 1)  # a hyperparameter


_CHILD = textwrap.dedent("""
    import json, sys
    import jax, jax.numpy as jnp
    from jaxlean.compile.executable_cache import ExecutableCache, cached_jit

    traces = []

    def chain(x):
        traces.append(1)
        for i in range(8):
            x = jnp.tanh(x @ x.T + i)
        return x.sum() + jnp.linalg.eigvalsh(x + x.T).sum()  # a LAPACK kernel on CPU

    cache = ExecutableCache(sys.argv[1])
    value = float(cached_jit(chain, cache)(jnp.arange(16.0).reshape(4, 4) / 16))
    print(json.dumps({"value": value, "traces": len(traces), "hits": cache.stats.hits}))
""")


def test_new_process_runs_without_tracing(tmp_path):
    """Also checks that a loaded CPU executable finds JAX's lazily registered LAPACK kernels."""
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu"}
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, str(script), str(tmp_path / "cache")], env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert [(r["traces"], r["hits"]) for r in runs] == [(1, 0), (0, 1)]
    assert runs[0]["value"] == runs[1]["value"]


def test_without_cpu_kernel_hook_loading_is_refused(tmp_path, monkeypatch):
    _baseline(tmp_path)
    monkeypatch.delattr("jax._src.lax.linalg.initialize_lapack")
    _jax_private.refresh()
    try:
        with pytest.warns(UserWarning, match="cannot register its CPU kernels"):
            cache, out = _run(scaled, tmp_path, jnp.ones(4))
    finally:
        monkeypatch.undo()
        _jax_private.refresh()
    assert cache.stats.hits == 0 and len(cache.stats.fallbacks) == 1
    np.testing.assert_allclose(out, np.sin(np.ones(4)) * SCALE, rtol=1e-6)


def test_fresh_and_restored_arrays_share_an_entry(tmp_path):
    fresh = jnp.ones(4)
    assert not fresh.committed
    _run(scaled, tmp_path, fresh)
    restored = jax.device_put(jnp.ones(4), jax.devices()[0])  # as a checkpoint restores it
    assert restored.committed and _outcome(_run(scaled, tmp_path, restored)[0]) == "hit"


_SHARDED = textwrap.dedent("""
    import sys, tempfile
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    from jaxlean.compile.executable_cache import ExecutableCache, cached_jit

    def f(x):
        return jnp.tanh(x @ x.T).sum(axis=1)

    directory = tempfile.mkdtemp()
    x = np.arange(32.0).reshape(8, 4) / 32
    outcomes = []
    for shape in [(4,), (4,), (2,)]:  # the same mesh twice, then another mesh
        jax.clear_caches()
        mesh = Mesh(np.array(jax.devices()[:shape[0]]), ("data",))
        placed = jax.device_put(x, NamedSharding(mesh, P("data")))
        cache = ExecutableCache(directory)
        out = cached_jit(f, cache)(placed)
        np.testing.assert_allclose(np.asarray(out), np.tanh(x @ x.T).sum(1), rtol=1e-5)
        assert out.sharding.mesh.shape == mesh.shape, out.sharding
        outcomes.append((cache.stats.hits, cache.stats.misses))
    assert outcomes == [(0, 1), (1, 0), (0, 1)], outcomes
    print("ok")
""")


def test_sharded_inputs_hit_on_the_same_mesh_and_miss_on_another(run_on_devices):
    run_on_devices(_SHARDED, devices=4, timeout=300)
