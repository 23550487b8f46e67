"""The L5PC gradient's first call against a later one, in a fresh process, wall and CPU time.

The case of ``jaxlean bench l5pc`` (:data:`jaxlean.bench.l5pc.CASE`, the 20 parameters of
``l5pc.FITTED``, float64), with the persistent compilation cache off: trace and lower
``jax.jit(jax.grad(loss))``, compile it, run it once, then time three later calls (the
median). Each stage is timed in wall seconds and in this process's CPU seconds over all
its threads (``time.process_time``): on a machine shared with other jobs the wall-clock
compile carries their load, the CPU time much less. Prints one JSON line; the
figures in BENCHMARKS.md ("l5pc: the gradient's first call") are such lines.

    PYTHONPATH=. python scripts/l5pc_first_call.py [t_max_ms] [--gradient-out FILE.npy]

``--gradient-out`` saves the gradient, to compare two builds or XLA options bit for bit.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np


def _now() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("t_max", nargs="?", type=float, default=500.0)
    parser.add_argument("--gradient-out", default=None)
    args = parser.parse_args()
    jax.config.update("jax_enable_compilation_cache", False)
    from jaxlean.bench import l5pc as bench

    case = {**bench.CASE, "t_max": args.t_max}
    with jax.enable_x64(True):
        cell, trace, n, _ = bench._model(case)
        ones = jnp.ones(n)
        recorded = jnp.asarray(np.asarray(jax.jit(trace)(ones)))

        def loss(scale):
            return jnp.mean((trace(scale) - recorded) ** 2)

        jax.clear_caches()
        w0, c0 = _now()
        lowered = jax.jit(jax.grad(loss)).trace(ones * 1.01).lower()
        w1, c1 = _now()
        executable = lowered.compile()
        w2, c2 = _now()
        gradient = jax.block_until_ready(executable(ones * 1.01))
        w3, c3 = _now()
        later = []
        for _ in range(3):
            a, b = _now()
            jax.block_until_ready(executable(ones * 1.01))
            e, f = _now()
            later.append((e - a, f - b))
        later_wall = sorted(x[0] for x in later)[1]
        later_cpu = sorted(x[1] for x in later)[1]
    print(json.dumps({
        "compartments": cell.n, "t_max_ms": args.t_max,
        "trace_lower_wall": w1 - w0, "trace_lower_cpu": c1 - c0,
        "compile_wall": w2 - w1, "compile_cpu": c2 - c1,
        "first_run_wall": w3 - w2, "first_run_cpu": c3 - c2,
        "later_wall": later_wall, "later_cpu": later_cpu,
        "first_over_later_wall": (w3 - w0) / later_wall,
        "first_over_later_cpu": (c3 - c0) / later_cpu,
        "temp_mb": executable.memory_analysis().temp_size_in_bytes / 1e6,
        "load_average": os.getloadavg()}))
    if args.gradient_out:
        np.save(args.gradient_out, np.asarray(gradient))


if __name__ == "__main__":
    main()
