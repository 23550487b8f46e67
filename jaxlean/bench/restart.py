"""Benchmark ``restart``: a requeued training job, from process start to its first step.

Per workload, in one fresh scratch directory, fresh subprocesses
(``python -m jaxlean.bench.restart WORKLOAD MODE DIR START``) run:

1. ``setup``: trains one step, checkpoints it, then trains two more: the
   uninterrupted losses;
2. ``cold``: restores the checkpoint and trains two steps, no cache;
3. ``warmup``: the same with the persistent compilation cache and the executable
   cache on, filling both;
4. ``persistent``: the same with only the persistent compilation cache (warm);
5. ``executable``: the same with both caches (warm): no trace, no lower, no compile;
6. ``restore_only``: imports and restores, no step: the floor a restart cannot beat.

Each child reports seconds from its spawn to the checkpoint restored and to the
first finished step, how often the step was traced, and its losses. Workloads:
``pmm_step`` (the depth-16 PMM chain, packed Adam, :func:`make_train_step`) and,
without ``--quick``, ``transformer_step`` (a 4-layer decoder's Adam step).
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

from jaxlean.bench._registry import BenchContext, BenchResult, register

MODES = ("setup", "cold", "warmup", "persistent", "executable", "restore_only")


def pmm_step_workload() -> tuple[Callable, Any, Any, Callable]:
    """The depth-16 PMM chain: ``(loss, model, tx, batch(key))``."""
    import jax
    import optax

    from jaxlean.models.pmm import pmm_chain
    from jaxlean.train.packed import packed

    model = pmm_chain(16, 4, key=jax.random.key(0))

    def mse(model, x, y):
        return ((model(x) - y) ** 2).mean()

    def batch(key):
        kx, ky = jax.random.split(key)
        return jax.random.normal(kx, (64, 4)), jax.random.normal(ky, (64, 4))

    return mse, model, packed(optax.adam(1e-3)), batch


def transformer_step_workload() -> tuple[Callable, Any, Any, Callable]:
    """A 4-layer decoder on ``[4, 64]`` tokens: ``(loss, model, tx, batch(key))``."""
    import jax
    import optax

    from jaxlean.models.lm.transformer import Transformer, TransformerConfig, loss
    from jaxlean.train.packed import packed

    config = TransformerConfig(vocab_size=512, hidden_size=64, intermediate_size=128,
                               num_layers=4, num_heads=4)
    model = Transformer(config, key=jax.random.key(0))

    def batch(key):
        tokens = jax.random.randint(key, (4, 65), 0, config.vocab_size)
        return tokens[:, :-1], tokens[:, 1:]

    return loss, model, packed(optax.adam(1e-3)), batch


WORKLOADS: dict[str, Callable[[], tuple[Callable, Any, Any, Callable]]] = {
    "pmm_step": pmm_step_workload,
    "transformer_step": transformer_step_workload,
}


def run_child(workload: str, mode: str, directory: Path, spawned_at: float) -> dict[str, Any]:
    """One process of the benchmark (see the module docstring); seconds count from spawn."""
    import equinox as eqx
    import jax

    from jaxlean.compile.cache import cache_stats, enable_compilation_cache
    from jaxlean.compile.cached_step import cached_train_step
    from jaxlean.train.checkpoint import Checkpointer
    from jaxlean.train.step import make_train_step

    if mode in ("warmup", "persistent", "executable"):
        enable_compilation_cache(directory / "xla", min_compile_secs=0)
    else:
        jax.config.update("jax_enable_compilation_cache", False)
    loss_fn, model, tx, batch = WORKLOADS[workload]()
    state = {"model": model, "opt_state": tx.init(eqx.filter(model, eqx.is_array)),
             "data_key": jax.random.key(1), "step": 0}
    step = make_train_step(loss_fn, tx)
    if mode in ("warmup", "executable"):
        step = cached_train_step(step, directory / "executables")
    losses: list[float] = []

    def train(state: dict, steps: int) -> dict:
        model, opt_state, key = state["model"], state["opt_state"], state["data_key"]
        for _ in range(steps):
            key, sub = jax.random.split(key)
            model, opt_state, value = step(model, opt_state, *batch(sub))
            losses.append(float(value))
        return {"model": model, "opt_state": opt_state, "data_key": key,
                "step": state["step"] + steps}

    out: dict[str, Any] = {}
    with Checkpointer(directory / "checkpoints") as checkpoints:
        if mode == "setup":
            state = train(state, 1)
            checkpoints.save(1, state)
            checkpoints.wait()
            losses.clear()
            train(state, 2)
            return {"losses": losses}
        state = checkpoints.restore(state)
    out["restored_s"] = time.time() - spawned_at
    if mode == "restore_only":
        return out
    traces_before = cache_stats().functions.get("jit(step)")
    state = train(state, 1)
    out["first_step_s"] = time.time() - spawned_at
    train(state, 1)
    traced = cache_stats().functions.get("jit(step)")
    out["traces"] = (traced.traces if traced else 0) - (
        traces_before.traces if traces_before else 0)
    out["losses"] = losses
    return out


def _spawn(workload: str, mode: str, directory: Path) -> dict[str, Any]:
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [root, os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", "jaxlean.bench.restart", workload, mode, str(directory),
               repr(time.time())]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode or not lines:
        raise RuntimeError(f"restart benchmark child {workload} {mode} failed:\n"
                           f"{proc.stderr[-3000:]}")
    return json.loads(lines[-1])


@register("restart", "requeued job: process start to first step, cold / compile cache / "
                     "executable cache, and resumed losses")
def run(ctx: BenchContext) -> BenchResult:
    result = BenchResult("restart", "restart in seconds: time from process start to the "
                                    "first step after restoring a checkpoint")
    names = ["pmm_step"] if ctx.quick else list(WORKLOADS)
    for name in names:
        with tempfile.TemporaryDirectory(prefix="jaxlean-bench-restart-") as scratch:
            runs = {}
            for mode in MODES:
                ctx.step(f"{name}: {mode}")
                runs[mode] = _spawn(name, mode, Path(scratch))
        cold, floor = runs["cold"]["first_step_s"], runs["restore_only"]["restored_s"]
        for mode in ("persistent", "executable"):
            label = "compile cache" if mode == "persistent" else "compile + executable cache"
            result.compare(name, "process start to first step", "s", cold,
                           runs[mode]["first_step_s"], label, "cold")
        result.compare(name, "process start to restored (no step)", "s", cold,
                       floor, "import + restore only", "cold")
        result.target(f"{name}: executable cache traces the step 0 times",
                      runs["executable"]["traces"], 0, "<=")
        result.target(f"{name}: executable cache's first step <= 1.3x import + restore "
                      "(ratio)", runs["executable"]["first_step_s"] / floor, 1.3, "<=")
        same = all(runs[m]["losses"] == runs["setup"]["losses"]
                   for m in ("cold", "warmup", "persistent", "executable"))
        result.target(f"{name}: resumed losses equal the uninterrupted run (1 = all equal)",
                      float(same), 1.0, ">=")
        result.notes.append(
            f"{name}: restore finished at {runs['cold']['restored_s']:.2f} s (cold), "
            f"{runs['executable']['restored_s']:.2f} s (executable cache); step traces: cold "
            f"{runs['cold']['traces']}, compile cache {runs['persistent']['traces']}, "
            f"executable cache {runs['executable']['traces']}")
    result.notes.append("Each mode is a fresh subprocess; seconds count from spawning it "
                        "(python, jax and jaxlean imports included). The warmup process fills "
                        "both caches; it is not timed.")
    return result


if __name__ == "__main__":
    print(json.dumps(run_child(sys.argv[1], sys.argv[2], Path(sys.argv[3]),
                               float(sys.argv[4]))), flush=True)
