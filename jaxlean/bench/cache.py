"""Benchmark ``cache``: the same program compiled in a cold and in a warm process.

Each workload runs twice as a fresh subprocess (``python -m jaxlean.bench.cache
WORKLOAD DIR``) sharing one new cache directory: the first (cold) compiles and
writes the executable, the second (warm) should load it. A process reports its
trace, lower and compile seconds, the time from process start to the first
result, and the cache hits of its main function. ``jaxlean bench`` turns the
persistent cache off in its own process; the children enable it explicitly.

Workloads: ``chain300`` (a plain-JAX function of ~300 ops;
``chain150`` in ``--quick``),
``pmm_fit`` (pyPMM's depth-16 PMM chain trained by :func:`jaxlean.train.fit.make_train_fn`),
``pmm_fit_unrolled`` (the same, modules one by one with unpacked optimizer
state: pyPMM's layout, the slow compile a cache helps most) and
``transformer_step`` (a small decoder's Adam train step).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jaxlean.bench._registry import BenchContext, BenchResult, Plot, register

__all__ = ["chain_workload", "measure_in_this_process", "pmm_fit_workload", "run",
           "transformer_step_workload"]


def chain_workload(ops: int) -> tuple[Callable, tuple]:
    """A plain-JAX function of about ``ops`` elementwise/matmul ops on a ``[32, 32]`` input."""
    import jax.numpy as jnp

    def chain(x):
        for i in range(ops // 3):
            x = jnp.sin(x @ x.T * 0.01 + i)
        return x.sum()

    return chain, (jnp.ones((32, 32)),)


def pmm_fit_workload(scan: bool = True) -> tuple[Callable, tuple]:
    """pyPMM's 16-module chain: its whole training run (2 epochs, complex Adam) as one function."""
    import jax

    from jaxlean.models.pmm import complex_adam, pmm_chain
    from jaxlean.train.fit import make_train_fn

    key_model, key_x, key_y, key_fit = jax.random.split(jax.random.PRNGKey(0), 4)
    model = pmm_chain(16, 5, key=key_model, scan=scan)
    data = (jax.random.normal(key_x, (256, 5)), jax.random.normal(key_y, (256, 5)))

    def mse(params, batch):
        x, y = batch
        return ((params(x) - y) ** 2).mean()

    return make_train_fn(mse, model, data, complex_adam(1e-3), epochs=2, batch_size=32,
                         key=key_fit, pack=scan)


def transformer_step_workload() -> tuple[Callable, tuple]:
    """One Adam step of a 4-layer decoder on a ``[4, 64]`` token batch."""
    import equinox as eqx
    import jax
    import optax

    from jaxlean.models.lm.transformer import Transformer, TransformerConfig, loss

    config = TransformerConfig(vocab_size=512, hidden_size=64, intermediate_size=128,
                               num_layers=4, num_heads=4)
    model = Transformer(config, key=jax.random.PRNGKey(0))
    tx = optax.adam(1e-3)
    opt_state = tx.init(eqx.filter(model, eqx.is_array))
    tokens = jax.random.randint(jax.random.PRNGKey(1), (4, 65), 0, config.vocab_size)

    def train_step(model, opt_state, tokens):
        value, grads = eqx.filter_value_and_grad(loss)(model, tokens[:, :-1],
                                                         targets=tokens[:, 1:])
        updates, opt_state = tx.update(grads, opt_state, eqx.filter(model, eqx.is_array))
        return eqx.apply_updates(model, updates), opt_state, value

    return train_step, (model, opt_state, tokens)


# The workloads (and its "measured here" 300-op function) carry the 10x target.
_TARGETED = {"chain150", "chain300", "pmm_fit", "transformer_step"}

WORKLOADS: dict[str, Callable[[], tuple[Callable, tuple]]] = {
    "chain150": lambda: chain_workload(150),
    "chain300": lambda: chain_workload(300),
    "pmm_fit": lambda: pmm_fit_workload(scan=True),
    "pmm_fit_unrolled": lambda: pmm_fit_workload(scan=False),
    "transformer_step": transformer_step_workload,
}


def measure_in_this_process(workload: str, cache_dir: str) -> dict[str, Any]:
    """Enable the cache, build, AOT-compile and run ``workload`` once; seconds and hits."""
    import jax

    from jaxlean.compile.cache import cache_stats, enable_compilation_cache

    enable_compilation_cache(cache_dir, min_compile_secs=0)
    fn, args = WORKLOADS[workload]()
    jitted = jax.jit(fn)
    start = time.perf_counter()
    lowered = jitted.trace(*args).lower()
    lowered_at = time.perf_counter()
    before = cache_stats()
    compiled = lowered.compile()
    compiled_at = time.perf_counter()
    after = cache_stats()
    jax.block_until_ready(compiled(*args))
    done = time.perf_counter()
    return {"trace_lower_s": lowered_at - start, "compile_s": compiled_at - lowered_at,
            "run_s": done - compiled_at, "hits": after.hits - before.hits,
            "misses": after.misses - before.misses, "all_hits": after.hits,
            "all_misses": after.misses}


def _measure_in_subprocess(workload: str, cache_dir: Path) -> dict[str, Any]:
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [root, os.environ.get("PYTHONPATH")]))}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "jaxlean.bench.cache", workload,
                             str(cache_dir)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()  # printed right after the first result is ready
    first_result = time.perf_counter() - start
    _, err = proc.communicate()
    if proc.returncode or not line.strip():
        raise RuntimeError(f"cache benchmark child for {workload!r} failed:\n{err[-3000:]}")
    return {**json.loads(line), "first_result_s": first_result}


def _workloads_available(quick: bool) -> tuple[list[str], list[str]]:
    """Quick: a 150-op chain and the PMM fit; full: every workload. Missing modules skip."""
    import importlib.util

    wanted = (["chain150", "pmm_fit"] if quick
              else ["chain300", "pmm_fit", "transformer_step", "pmm_fit_unrolled"])
    needs = {"pmm_fit": ("jaxlean.train.fit", "jaxlean.models.pmm"),
             "pmm_fit_unrolled": ("jaxlean.train.fit", "jaxlean.models.pmm"),
             "transformer_step": ("jaxlean.models.lm.transformer",)}
    names, skipped = [], []
    for name in wanted:
        present = all(importlib.util.find_spec(m) for m in needs.get(name, ()))
        (names if present else skipped).append(name)
    return names, skipped


@register("cache", "persistent compilation cache: cold vs warm process, compile and first result")
def run(ctx: BenchContext) -> BenchResult:
    """Run the cache benchmark: a cold process against a warm one, per workload."""
    result = BenchResult("cache", "compile once across runs (cold process vs warm process)")
    names, skipped = _workloads_available(ctx.quick)
    cold_compile: list[float] = []
    warm_compile: list[float] = []
    cold_first: list[float] = []
    warm_first: list[float] = []
    hits: list[str] = []
    for name in names:
        with tempfile.TemporaryDirectory(prefix="jaxlean-bench-cache-") as directory:
            ctx.step(f"{name}: cold process")
            cold = _measure_in_subprocess(name, Path(directory))
            ctx.step(f"{name}: warm process")
            warm = _measure_in_subprocess(name, Path(directory))
        variant, baseline = "warm process", "cold process"
        result.compare(name, "compile", "s", cold["compile_s"], warm["compile_s"], variant,
                       baseline)
        result.compare(name, "trace + lower", "s", cold["trace_lower_s"], warm["trace_lower_s"],
                       variant, baseline)
        result.compare(name, "time to first result (process start)", "s",
                       cold["first_result_s"], warm["first_result_s"], variant, baseline)
        hits.append(f"{name}: cold {cold['hits']} hits / {cold['misses']} misses, warm "
                    f"{warm['hits']} / {warm['misses']} (main compile); all compiles of the "
                    f"warm process: {warm['all_hits']} hits / {warm['all_misses']} misses")
        speedup = cold["compile_s"] / max(warm["compile_s"], 1e-9)
        if name in _TARGETED:
            result.target(f"{name}: warm compile >= 10x faster than cold (cold/warm)",
                          speedup, 10.0, ">=")
        else:
            result.notes.append(f"{name} (extra workload, no target): warm compile "
                                f"{speedup:.1f}x faster than cold; loading a large unrolled "
                                "executable is itself a noticeable cost")
        result.target(f"{name}: warm process hits the cache (hits of the main function)",
                      warm["hits"], 1, ">=")
        for series, value in ((cold_compile, cold["compile_s"]), (warm_compile, warm["compile_s"]),
                              (cold_first, cold["first_result_s"]),
                              (warm_first, warm["first_result_s"])):
            series.append(value)
    xs, xlabel = list(names), "workload"
    result.plots.append(Plot("cold_vs_warm", "compile seconds, cold vs warm process", xlabel,
                             "compile seconds", {"cold process": (xs, cold_compile),
                                                 "warm process": (xs, warm_compile)}, logy=True))
    result.plots.append(Plot("first_result", "seconds from process start to first result",
                             xlabel, "seconds", {"cold process": (xs, cold_first),
                                                 "warm process": (xs, warm_first)}))
    result.notes.append("Each workload ran as two fresh subprocesses sharing a new cache "
                        "directory (enable_compilation_cache(min_compile_secs=0)); time to "
                        "first result counts from spawning the child (python and jax imports "
                        "included).")
    result.notes.extend(hits)
    if skipped:
        result.notes.append(f"not run (modules missing): {', '.join(skipped)}")
    return result


if __name__ == "__main__":
    print(json.dumps(measure_in_this_process(sys.argv[1], sys.argv[2])), flush=True)
