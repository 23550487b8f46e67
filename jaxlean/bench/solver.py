"""Benchmark ``solver``: gradients through tree and tridiagonal solves, and a cable model.

Autodiff through a Hines elimination loop makes the backward pass O(n^2)
(jaxley measured 788x the forward at 10k compartments before its fix, 3.8x
after). Side by side in one process: (a) that loop differentiated by
``jax.grad``, (b) ``tree_solve`` with the implicit rule, (c) on path graphs
``lax.linalg.tridiagonal_solve``; then a 10k-compartment HH cell for 1,000 /
10,000 / 100,000 steps with and without time checkpointing, and jaxley on the
same cell if installed (see ``_cable_case``); and the gradient of a cell with a
user-defined channel and 100 synapses against jaxley (``_cable_synapse_case``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.bench._cable_case import cable_timings
from jaxlean.bench._cable_synapse_case import synapse_cable_timings
from jaxlean.bench._measure import Timing, aot_compile, time_alternating
from jaxlean.bench._registry import BenchContext, BenchResult, Plot, register
from jaxlean.bench._solver_cases import (
    dominant_system,
    gradient_of,
    loop_solve,
    random_branched_tree,
)
from jaxlean.linalg import Tree, tree_solve

__all__ = ["run"]

BASELINE_GRADIENT_MAX_NODES = 10_000  # O(n^2): ~1 s at 10k here, ~100 s at 100k
TIME_NOISE = 0.10
"""Stated noise band of a ratio of alternating timings on a shared 2-core VM (widened to the
per-round spread of the ratio when that is larger)."""


def _forward_and_gradient(args, *solves) -> list[tuple[Timing, Timing]]:
    """Forward and gradient times of each solve on ``args``, all timed in alternation (so
    gradient/forward and one solve over another are ratios of samples under the same load)."""
    weights = jnp.linspace(-1.0, 1.0, args[3].shape[-1], dtype=args[3].dtype)
    calls = [(aot_compile(fn, *args).executable, args)
             for solve in solves for fn in (solve, gradient_of(solve, weights))]
    times = time_alternating(*calls, repeats=7, min_seconds=0.1)
    return [(times[i], times[i + 1]) for i in range(0, len(times), 2)]


def _record(result, case, name, baseline, ours, baseline_name, variant):
    result.compare(case, "forward", "s", baseline[0], ours[0], variant, baseline_name)
    result.compare(case, "gradient", "s", baseline[1], ours[1], variant, baseline_name)


def _tree_cases(ctx, result, sizes, dtypes, timings, baseline_max):
    for dtype in dtypes:
        label = jnp.dtype(dtype).name
        for n in sizes:
            ctx.step(f"random tree, {n} nodes, {label}")
            tree = Tree.from_parents(random_branched_tree(n))
            args = dominant_system(n, dtype)
            ours_solve = lambda *a, tree=tree: tree_solve(tree, *a)
            case = f"tree {n // 1000}k {label}"
            if n <= baseline_max:
                ours, loop = _forward_and_gradient(args, ours_solve, loop_solve(tree))
                timings[("tree", label, n)] = ours
                timings[("loop", label, n)] = loop
                _record(result, case, "", loop, ours, "autodiff loop", "tree_solve")
                result.compare(case, "gradient/forward", "x", loop[1] / loop[0],
                               ours[1] / ours[0], "tree_solve", "autodiff loop")
            else:
                ours = timings[("tree", label, n)] = _forward_and_gradient(args, ours_solve)[0]
                result.compare(case, "forward", "s", float("nan"), ours[0], "tree_solve",
                               "autodiff loop")
                result.compare(case, "gradient", "s", float("nan"), ours[1], "tree_solve",
                               "autodiff loop")
                result.compare(case, "gradient/forward", "x", float("nan"), ours[1] / ours[0],
                               "tree_solve", "autodiff loop")


def _path_cases(ctx, result, sizes, dtypes, timings):
    for dtype in dtypes:
        label = jnp.dtype(dtype).name
        for n in sizes:
            ctx.step(f"path graph, {n} nodes, {label}")
            tree = Tree.from_parents(np.arange(n) - 1)
            args = dominant_system(n, dtype)

            def lax_solve(lower, diag, upper, b):
                dl, du = lower.at[0].set(0), jnp.roll(upper, -1).at[-1].set(0)
                return jax.lax.linalg.tridiagonal_solve(dl, diag, du, b[:, None])[:, 0]

            reference, ours = _forward_and_gradient(
                args, lax_solve, lambda *a, tree=tree: tree_solve(tree, *a))
            timings[("path", label, n)] = (reference, ours)
            _record(result, f"path {n // 1000}k {label}", "", reference, ours,
                    "lax tridiagonal_solve", "tree_solve")


def _targets(result, timings, sizes, dtypes):
    largest, middle = sizes[-1], sizes[-2]
    for dtype in dtypes:
        label = jnp.dtype(dtype).name
        # jaxley's figure is at 10k nodes; below that per-call overhead is most of it.
        for n in [n for n in (middle, largest) if n >= 10_000]:
            forward, gradient = timings[("tree", label, n)]
            result.target(f"tree_solve gradient/forward at {n // 1000}k, {label} "
                          "(jaxley's fix: 3.8)", gradient / forward, 3.0, noise=TIME_NOISE,
                          spread=gradient.ratio_spread(forward))
        for index, what in enumerate(("forward", "gradient")):
            big, small = timings[("tree", label, largest)][index], timings[
                ("tree", label, middle)][index]
            # Linear growth is a statement about large trees: at quick sizes the smaller one
            # (1k nodes) sits in the L1/L2 cache and its call overhead is a fixed cost.
            result.target(f"tree_solve {what} time({largest // 1000}k)/time({middle // 1000}k), "
                          f"{label} (linear: 1.2 x size ratio)", big / small,
                          1.2 * largest / middle, quick=False, noise=TIME_NOISE)
        reference, ours = timings[("path", label, largest)]
        result.target(f"path {largest // 1000}k {label}: tree_solve forward / lax "
                      "tridiagonal_solve", ours[0] / reference[0], 1.5, noise=TIME_NOISE,
                      spread=ours[0].ratio_spread(reference[0]))


def _tree_headline(timings, sizes, baseline_max) -> str:
    """The float64 tree figures of this run, in words."""
    forward, gradient = timings[("tree", "float64", sizes[-1])]
    loop_forward, loop_gradient = timings[("loop", "float64", baseline_max)]
    return (f"tree_solve's gradient costs {gradient / forward:.1f} forward solves at "
            f"{sizes[-1]:,} nodes (autodiff through the elimination loop: "
            f"{loop_gradient / loop_forward:.0f} at {baseline_max:,})")


def _plots(result, timings, sizes, dtypes):
    for dtype in dtypes:
        label = jnp.dtype(dtype).name
        series = {}
        for kind, name in (("tree", "tree_solve"), ("loop", "autodiff loop")):
            xs = [n for n in sizes if (kind, label, n) in timings]
            for index, what in enumerate(("forward", "gradient")):
                series[f"{name} {what}"] = (xs, [timings[(kind, label, n)][index].median
                                                 for n in xs])
        result.plots.append(Plot(f"solver_{label}", f"random branched trees ({label}, CPU)",
                                 "nodes", "seconds per call", series, logx=True, logy=True))


@register("solver", "tree/tridiagonal solve gradients vs autodiff loop; cables vs jaxley")
def run(ctx: BenchContext) -> BenchResult:
    """Run the solver benchmark: the cable simulator against its baselines."""
    result = BenchResult("solver", "implicit-diff tree solves vs autodiff through the loop")
    sizes = [1_000, 10_000] if ctx.quick else [1_000, 10_000, 100_000]
    dtypes = [jnp.float64] if ctx.quick else [jnp.float64, jnp.float32]
    timings: dict = {}
    with jax.enable_x64(True):
        baseline_max = 1_000 if ctx.quick else BASELINE_GRADIENT_MAX_NODES
        _tree_cases(ctx, result, sizes, dtypes, timings, baseline_max)
        _path_cases(ctx, result, sizes, dtypes, timings)
    _targets(result, timings, sizes, dtypes)
    _plots(result, timings, sizes, dtypes)
    result.notes.append(
        f"The autodiff loop is measured up to {baseline_max} nodes only: its gradient grows as "
        "n^2 (about 0.5-1 s per call at 10k here, so minutes per call at 100k).")
    cable = cable_timings(ctx, result, n_compartments=1_000 if ctx.quick else 10_000,
                          step_counts=[100, 1_000] if ctx.quick else [1_000, 10_000, 100_000])
    result.headline = f"Solvers: {_tree_headline(timings, sizes, baseline_max)}; {cable}."
    synapse_cable_timings(ctx, result, n_compartments=1_000 if ctx.quick else 10_000,
                          steps=200 if ctx.quick else 1_000)
    result.notes.append(f"backend {jax.default_backend()}; tree_solve schedule "
                        "'sequential' (Hines) on CPU, 'level' on GPU.")
    return result
