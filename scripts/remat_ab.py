"""Gradient time and temp memory of ``simulate``'s ``remat`` options on one cell, side by side.

Each option's gradient is traced, lowered and compiled once (persistent cache off), run
once, then all are timed in alternation in this process (``--rounds`` rounds, the median
reported); every gradient is compared with the first option's (largest relative
difference). One JSON line per option and stage. Cells: ``solver``, the solver bench's
10,000-compartment HH cell (float32, ``jaxlean.bench._cable_case``), ``steps`` steps;
``l5pc``, BluePyOpt's example L5PC (float64, the case of ``scripts/l5pc_first_call.py``),
``steps`` read as t_max in ms. The figures in BENCHMARKS.md ("l5pc: ... round 41") are
such runs.

    PYTHONPATH=. python scripts/remat_ab.py solver|l5pc [steps] [--rounds N]
        [--remat JSON ...]   (default: "segments" "sqrt")
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _solver(steps: int):
    from jaxlean.bench import _cable_case as case

    cell = case._jaxlean_cell(case.branch_parents(10_000 // case.COMPARTMENTS_PER_BRANCH))

    def make(remat):
        loss, start = case._ours(cell, steps, remat)
        return jax.grad(loss), start
    return make


def _l5pc(t_max: float):
    import l5pc_first_call

    def make(remat):
        _, trace, n = l5pc_first_call._bluepyopt_cell(t_max, {"remat": remat})
        ones = jnp.ones(n)
        recorded = jnp.asarray(np.asarray(jax.jit(trace)(ones)))
        return jax.grad(lambda s: jnp.mean((trace(s) - recorded) ** 2)), ones * 1.01
    return make


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cell", choices=("solver", "l5pc"))
    parser.add_argument("steps", nargs="?", type=float, default=None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--remat", nargs="+", default=['"segments"', '"sqrt"'])
    args = parser.parse_args()
    jax.config.update("jax_enable_compilation_cache", False)
    if args.cell == "l5pc":
        jax.config.update("jax_enable_x64", True)
        make = _l5pc(500.0 if args.steps is None else args.steps)
    else:
        make = _solver(10_000 if args.steps is None else int(args.steps))
    compiled = {}
    for text in args.remat:
        remat = json.loads(text)
        gradient, x = make(tuple(remat) if isinstance(remat, list) else remat)
        t0 = time.perf_counter()
        lowered = jax.jit(gradient).trace(x).lower()
        t1 = time.perf_counter()
        executable = lowered.compile()
        t2 = time.perf_counter()
        value = jax.block_until_ready(executable(x))
        t3 = time.perf_counter()
        compiled[text] = (executable, x, value)
        print(json.dumps({"remat": remat, "trace_lower": round(t1 - t0, 2),
                          "compile": round(t2 - t1, 2), "first_run": round(t3 - t2, 2),
                          "temp_mb": round(executable.memory_analysis().temp_size_in_bytes / 1e6,
                                           1)}), flush=True)
    times: dict[str, list[float]] = {text: [] for text in compiled}
    for _ in range(args.rounds):
        for text, (executable, x, _) in compiled.items():
            start = time.perf_counter()
            jax.block_until_ready(executable(x))
            times[text].append(time.perf_counter() - start)
    first = jax.tree.leaves(next(iter(compiled.values()))[2])
    for text, (_, _, value) in compiled.items():
        gap = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b))
                               / (np.abs(np.asarray(b)) + 1e-30)))
                  for a, b in zip(jax.tree.leaves(value), first, strict=True))
        median = round(float(np.median(times[text])), 3)
        print(json.dumps({"remat": json.loads(text), "median_s": median,
                          "all": [round(t, 3) for t in times[text]], "max_rel_vs_first": gap}),
              flush=True)
    print(json.dumps({"load_average": os.getloadavg()}))


if __name__ == "__main__":
    main()
