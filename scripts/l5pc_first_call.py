"""The L5PC gradient's first call against a later one, in a fresh process, wall and CPU time.

The case of ``jaxlean bench l5pc`` (:data:`jaxlean.bench.l5pc.CASE`, the 20 parameters of
``l5pc.FITTED``, float64; ``--cell bluepyopt``: BluePyOpt's example L5PC of
``tests/models/neuron/fixtures/bluepyopt_l5pc``, 699 compartments, scaling its 20 released
parameters, with the fixture's step current and sites), with the persistent compilation
cache off: trace and lower
``jax.jit(jax.grad(loss))``, compile it, run it once, then time three later calls (the
median). Each stage is timed in wall seconds and in this process's CPU seconds over all
its threads (``time.process_time``): on a machine shared with other jobs the wall-clock
compile carries their load, the CPU time much less. Prints one JSON line; the
figures in BENCHMARKS.md ("l5pc: the gradient's first call") are such lines.

    PYTHONPATH=. python scripts/l5pc_first_call.py [t_max_ms] [--cell bench|bluepyopt]
        [--remat JSON] [--gradient-out FILE.npy] [--cache DIR] [--at SCALE]

``--cache DIR`` runs on jaxlean's persistent compilation cache in ``DIR``
(:func:`jaxlean.compile.enable_compilation_cache` with its defaults) instead of none:
run it twice to time a modeller's rerun, whose first call loads what the first process
compiled; ``--at`` moves the point the gradient is taken at (every parameter scaled by
SCALE, default 1.01: edited values, the same program).

``--gradient-out`` saves the gradient, to compare two builds or XLA options bit for bit.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _now() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _bench_cell(t_max: float, remat: dict):
    from jaxlean.bench import l5pc as bench
    from jaxlean.models.neuron.simulation.cable import Stimulus, simulate, step_current

    case = {**bench.CASE, "t_max": t_max}
    cell, _, n, (model, values, _, sites) = bench._model(case)
    current = step_current(case["amp"], case["delay"], case["dur"], case["dt"], t_max)
    stimuli = [Stimulus(cell.location(0, 0.5), current)]

    def trace(scale):
        return simulate(cell, model.params(values(scale)), stimuli, case["dt"], t_max,
                        record=sites, progress=False, **remat)["v"]
    return cell, trace, n


def _bluepyopt_cell(t_max: float, remat: dict):
    from jaxlean.models.neuron.formats import bluepyopt
    from jaxlean.models.neuron.simulation.cable import Stimulus, simulate, step_current

    folder = ROOT / "tests" / "models" / "neuron" / "fixtures" / "bluepyopt_l5pc"
    model = bluepyopt.load(folder / "C060114A7.asc", folder / "mechanisms.json",
                           folder / "parameters.json", folder / "mechanisms")
    fixture = np.load(folder / "bluepyopt_l5pc.npz")
    case = json.loads(str(fixture["case"]))
    released = json.loads(str(fixture["params"]))
    keys = sorted(released)
    cell = model.cell
    sites = [cell.location(str(name), float(x))
             for name, x in zip(fixture["site_names"], fixture["site_x"], strict=True)]
    current = step_current(case["amp"], case["delay"], case["dur"], case["dt"], t_max)
    stimuli = [Stimulus(cell.location("soma[0]", 0.5), current)]

    def trace(scale):
        params = model.params({k: scale[i] * released[k] for i, k in enumerate(keys)})
        return simulate(cell, params, stimuli, case["dt"], t_max, record=sites,
                        progress=False, **remat)["v"]
    return cell, trace, len(keys)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("t_max", nargs="?", type=float, default=500.0)
    parser.add_argument("--cell", choices=("bench", "bluepyopt"), default="bench")
    parser.add_argument("--remat", default=None,
                        help='simulate\'s remat as JSON: "sqrt", "segments", [20000]')
    parser.add_argument("--gradient-out", default=None)
    parser.add_argument("--cache", default=None, help="persistent compilation cache directory")
    parser.add_argument("--at", type=float, default=1.01, help="scale of every parameter")
    args = parser.parse_args()
    if args.cache is None:
        jax.config.update("jax_enable_compilation_cache", False)
    else:
        from jaxlean.compile import cache_stats, enable_compilation_cache
        enable_compilation_cache(args.cache)
    remat = {} if args.remat is None else {"remat": json.loads(args.remat)}
    with jax.enable_x64(True):
        build = _bench_cell if args.cell == "bench" else _bluepyopt_cell
        cell, trace, n = build(args.t_max, remat)
        ones = jnp.ones(n)
        recorded = jnp.asarray(np.asarray(jax.jit(trace)(ones)))

        def loss(scale):
            return jnp.mean((trace(scale) - recorded) ** 2)

        jax.clear_caches()
        w0, c0 = _now()
        lowered = jax.jit(jax.grad(loss)).trace(ones * args.at).lower()
        w1, c1 = _now()
        executable = lowered.compile()
        w2, c2 = _now()
        gradient = jax.block_until_ready(executable(ones * args.at))
        w3, c3 = _now()
        later = []
        for _ in range(3):
            a, b = _now()
            jax.block_until_ready(executable(ones * args.at))
            e, f = _now()
            later.append((e - a, f - b))
        later_wall = sorted(x[0] for x in later)[1]
        later_cpu = sorted(x[1] for x in later)[1]
    print(json.dumps({
        "cell": args.cell, "compartments": cell.n, "parameters": int(n),
        "t_max_ms": args.t_max, "remat": args.remat,
        "trace_lower_wall": w1 - w0, "trace_lower_cpu": c1 - c0,
        "compile_wall": w2 - w1, "compile_cpu": c2 - c1,
        "first_run_wall": w3 - w2, "first_run_cpu": c3 - c2,
        "later_wall": later_wall, "later_cpu": later_cpu,
        "first_over_later_wall": (w3 - w0) / later_wall,
        "first_over_later_cpu": (c3 - c0) / later_cpu,
        "temp_mb": executable.memory_analysis().temp_size_in_bytes / 1e6,
        "load_average": os.getloadavg(),
        **({} if args.cache is None else
           {"cache_hits": cache_stats().hits, "cache_requests": cache_stats().requests})}))
    if args.gradient_out:
        np.save(args.gradient_out, np.asarray(gradient))


if __name__ == "__main__":
    main()
