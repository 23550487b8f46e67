"""Benchmark ``restart``: a requeued training job, from process start to its first step.

Per workload, in one fresh scratch directory, fresh subprocesses
(``python -m jaxlean.bench.restart WORKLOAD MODE DIR START``) run:

1. ``setup``: trains one step, checkpoints it, then trains two more: the
   uninterrupted losses;
2. ``cold``: builds the initial state, restores the checkpoint into it and trains
   two steps, no cache;
3. ``warmup``: the ``persistent`` and ``overlapped`` paths one after the other
   with the persistent compilation cache on, filling it (not timed);
4. ``persistent``: as ``cold`` with the persistent compilation cache (warm);
5. ``overlapped``: the initial state as shapes only (``jax.eval_shape``: nothing
   computed), the checkpoint read in a background thread
   (``Checkpointer.restore_in_background``) while the step is traced, lowered and
   loaded from the warm cache (``TrainStep.compile``), then two steps;
6. ``restore_only``: imports and restores into the shapes, no step: the floor a
   restart cannot beat.

The timed modes run in alternating rounds; each child reports seconds from its
spawn to its imports done, to the checkpoint restored and to the first finished
step, how often its first call traced the step, and its losses. Workloads:
``pmm_step`` (the depth-16 PMM chain, packed Adam, :func:`make_train_step`) and,
without ``--quick``, ``transformer_step`` (a 4-layer decoder's Adam step).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from jaxlean.bench._measure import Timing
from jaxlean.bench._registry import BenchContext, BenchResult, register

__all__ = ["pmm_step_workload", "run", "run_child", "transformer_step_workload"]

TIMED = ("cold", "persistent", "overlapped", "restore_only")


def pmm_step_workload() -> tuple[Callable, Callable, Any, Callable]:
    """The depth-16 PMM chain: ``(loss, make_model(), tx, batch(step))``; the batches
    come from NumPy, as from a data loader, so the job runs no eager JAX op."""
    import jax
    import optax

    from jaxlean.models.pmm import pmm_chain
    from jaxlean.train.packed import packed

    def mse(model, x, y):
        return ((model(x) - y) ** 2).mean()

    def batch(step):
        data = np.random.default_rng(step).standard_normal((2, 64, 4), dtype=np.float32)
        return data[0], data[1]

    return mse, lambda: pmm_chain(16, 4, key=jax.random.key(0)), packed(optax.adam(1e-3)), batch


def transformer_step_workload() -> tuple[Callable, Callable, Any, Callable]:
    """A 4-layer decoder on ``[4, 64]`` tokens: ``(loss, make_model(), tx, batch(step))``."""
    import jax
    import optax

    from jaxlean.models.lm.transformer import Transformer, TransformerConfig, loss
    from jaxlean.train.packed import packed

    config = TransformerConfig(vocab_size=512, hidden_size=64, intermediate_size=128,
                               num_layers=4, num_heads=4)

    def batch(step):
        tokens = np.random.default_rng(step).integers(0, config.vocab_size, (4, 65), np.int32)
        return tokens[:, :-1], tokens[:, 1:]

    def next_token_loss(model, tokens, targets):  # the batch's (inputs, shifted targets)
        return loss(model, tokens, targets=targets)

    return (next_token_loss, lambda: Transformer(config, key=jax.random.key(0)),
            packed(optax.adam(1e-3)), batch)


WORKLOADS: dict[str, Callable[[], tuple[Callable, Callable, Any, Callable]]] = {
    "pmm_step": pmm_step_workload,
    "transformer_step": transformer_step_workload,
}


def _initial_state(make_model: Callable, tx: Any) -> dict:
    """The state a job starts from: model, optimizer state, step."""
    import equinox as eqx

    model = make_model()
    return {"model": model, "opt_state": tx.init(eqx.filter(model, eqx.is_array)), "step": 0}


def _initial_shapes(make_model: Callable, tx: Any) -> dict:
    """:func:`_initial_state` as shapes, computing nothing (the step stays a Python value)."""
    import equinox as eqx

    return {**eqx.filter_eval_shape(lambda: {**_initial_state(make_model, tx), "step": None}),
            "step": 0}


def run_child(workload: str, mode: str, directory: Path, spawned_at: float) -> dict[str, Any]:
    """One process of the benchmark (see the module docstring); seconds count from spawn."""

    from jaxlean.compile.cache import cache_stats, enable_compilation_cache
    from jaxlean.train.checkpoint import Checkpointer
    from jaxlean.train.step import make_train_step

    out: dict[str, Any] = {"imported_s": time.time() - spawned_at}
    if mode == "cold" or mode == "setup":
        from jaxlean.compile.cache import use_compilation_cache

        use_compilation_cache(False)  # also after a compile
    else:
        enable_compilation_cache(directory / "xla", min_compile_secs=0)
    loss_fn, make_model, tx, batch = WORKLOADS[workload]()
    losses: list[float] = []

    def train(step: Callable, state: dict, steps: int) -> dict:
        model, opt_state = state["model"], state["opt_state"]
        for i in range(state["step"], state["step"] + steps):
            model, opt_state, value = step(model, opt_state, *batch(i))
            losses.append(float(value))
        return {"model": model, "opt_state": opt_state, "step": state["step"] + steps}

    def traces() -> int:
        traced = cache_stats().functions.get("jit(step)")
        return traced.traces if traced else 0

    def resume(overlap: bool) -> None:
        step = make_train_step(loss_fn, tx)
        with Checkpointer(directory / "checkpoints") as checkpoints:
            if overlap:
                shapes = _initial_shapes(make_model, tx)
                pending = checkpoints.restore_in_background(shapes)
                step.compile(shapes["model"], shapes["opt_state"], *batch(0))
                state = pending.result()
            else:
                state = checkpoints.restore(_initial_state(make_model, tx))
        out["restored_s"] = time.time() - spawned_at
        before = traces()
        state = train(step, state, 1)
        out["first_step_s"] = time.time() - spawned_at
        out["first_call_traces"] = traces() - before
        train(step, state, 1)

    if mode == "setup":
        step = make_train_step(loss_fn, tx)
        with Checkpointer(directory / "checkpoints") as checkpoints:
            state = train(step, _initial_state(make_model, tx), 1)
            checkpoints.save(1, state)
            checkpoints.wait()
        losses.clear()
        train(step, state, 2)
    elif mode == "warmup":
        resume(overlap=False)
        resume(overlap=True)
    elif mode == "restore_only":
        with Checkpointer(directory / "checkpoints") as checkpoints:
            checkpoints.restore(_initial_shapes(make_model, tx))
        out["restored_s"] = time.time() - spawned_at
    else:
        resume(overlap=mode == "overlapped")
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
                     "compile overlapped with the restore, and resumed losses")
def run(ctx: BenchContext) -> BenchResult:
    """Run the restart benchmark: process start to the first step after a restore."""
    result = BenchResult("restart", "restart in seconds: time from process start to the "
                                    "first step after restoring a checkpoint")
    names = ["pmm_step"] if ctx.quick else list(WORKLOADS)
    rounds = 2 if ctx.quick else 3
    for name in names:
        runs: dict[str, list[dict]] = {mode: [] for mode in TIMED}
        with tempfile.TemporaryDirectory(prefix="jaxlean-bench-restart-") as scratch:
            for mode in ("setup", "warmup"):
                ctx.step(f"{name}: {mode}")
                runs[mode] = [_spawn(name, mode, Path(scratch))]
            for i in range(rounds):
                for mode in TIMED:
                    ctx.step(f"{name}: {mode} (round {i + 1} of {rounds})")
                    runs[mode].append(_spawn(name, mode, Path(scratch)))

        timing = lambda mode, field, runs=runs: Timing(tuple(run[field] for run in runs[mode]))
        cold = timing("cold", "first_step_s")
        floor = timing("restore_only", "restored_s")
        for mode, label in (("persistent", "compile cache"),
                            ("overlapped", "compile overlapped with restore")):
            result.compare(name, "process start to first step", "s", cold,
                           timing(mode, "first_step_s"), label, "cold")
        result.compare(name, "process start to restored (no step)", "s", cold, floor,
                       "import + restore only", "cold")
        result.compare(name, "process start to imports done", "s", timing("cold", "imported_s"),
                       timing("restore_only", "imported_s"), "import + restore only", "cold")
        overlapped = timing("overlapped", "first_step_s")
        result.target(f"{name}: first step with the compile overlapped <= 1.0x import + "
                      "restore (ratio)", overlapped / floor, 1.0, "<=")
        result.target(f"{name}: overlapped compile: the first step traces 0 times",
                      max(run["first_call_traces"] for run in runs["overlapped"]), 0, "<=")
        expected = runs["setup"][0]["losses"]
        same = all(run["losses"] == expected * (2 if mode == "warmup" else 1)  # warmup: 2 paths
                   for mode in ("warmup", "cold", "persistent", "overlapped")
                   for run in runs[mode])
        result.target(f"{name}: resumed losses equal the uninterrupted run (1 = all equal)",
                      float(same), 1.0, ">=")
        restored = {mode: statistics.median(run["restored_s"] for run in runs[mode])
                    for mode in ("cold", "persistent", "overlapped")}
        result.notes.append(
            f"{name}: checkpoint restored at {restored['cold']:.2f} s (cold), "
            f"{restored['persistent']:.2f} s (compile cache), {restored['overlapped']:.2f} s "
            "(overlapped: the step is compiled by then)")
    result.notes.append(
        f"Each mode is a fresh subprocess, {rounds} rounds in alternation after an untimed "
        "warmup that fills the compile cache; seconds count from spawning it (python, jax "
        "and jaxlean imports included). 'import + restore only' restores into the state's "
        "shapes (jax.eval_shape), with no step.")
    return result


if __name__ == "__main__":
    print(json.dumps(run_child(sys.argv[1], sys.argv[2], Path(sys.argv[3]),
                               float(sys.argv[4]))), flush=True)
