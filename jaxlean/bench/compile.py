"""Benchmark ``compile``: the whole fit() training function of a PMM chain, vs depth.

The model is pyPMM's benchmark chain (:func:`jaxlean.models.pmm.pmm_chain`:
16 of pyPMM's ``AffineObservablePMM``, 25,424 complex entries), which pyPMM
takes ~9.5 s to compile a training loop for, because every module and every
optimizer leaf is traced separately. Four sides train the same chain from the
same parameters on the same data, shuffling and pyPMM's complex Adam, for
epochs x minibatches in one compiled loop:

- loop+optax: :func:`jaxlean.train.fit.make_train_fn` on the graph with scanning
  disabled (modules applied in a Python loop) and ``optax.adam`` on the
  unpacked pytree (the naive baseline);
- pyPMM branch by hand: pyPMM's scan+packing branch reproduced in plain JAX
  (:mod:`jaxlean.bench._pmm_by_hand`, ``layout="pypmm"``): one buffer per
  dtype, modules restacked inside the loss, ``lax.scan`` over them;
- scan+packed by hand: the leanest hand-written loop (``layout="stacked"``),
  no jaxlean code in its training;
- jaxlean: ``make_train_fn`` on the chain stored stacked and run as one
  ``scan_layers``, the optimizer state packed into one buffer per dtype.

Before any figure is reported, every side's per-epoch losses from the timed
executables must equal jaxlean's (:func:`~jaxlean.bench._pmm_by_hand.check_same_losses`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax

from jaxlean.bench._measure import Timing, compile_alternating, time_alternating
from jaxlean.bench._pmm_by_hand import check_same_losses, make_by_hand_train_fn
from jaxlean.bench._registry import EXACT, BenchContext, BenchResult, Plot, register
from jaxlean.models.pmm import complex_adam, pmm_chain
from jaxlean.nn.graph import Graph, chain_edges
from jaxlean.train.fit import make_train_fn

__all__ = ["Measured", "mse", "run"]

WIDTH = 5
EXAMPLES = 256
BATCH = 32
LEARNING_RATE = 1e-2
LOSS_RTOL = 1e-4  # float32 round-off after a few dozen Adam steps, with headroom
COMPILE_NOISE = 0.10
"""Stated noise band of a ratio of compile times of alternating fresh compiles on a shared
2-core VM (widened to the per-round spread of the ratio when that is larger)."""
STEP_NOISE = 0.10
"""The same for a ratio of per-step times of alternating timed runs."""


SIDES = {"baseline": "loop+optax", "pypmm": "pyPMM branch by hand",
         "by_hand": "scan+packed by hand", "jaxlean": "jaxlean scan+packed"}
QUICK_SIDES = {4: ("baseline", "jaxlean"), 16: ("baseline", "by_hand", "jaxlean")}
"""What ``--quick`` measures at each depth, to stay fast: the hand-written loop where the
targets against it are read (depth 16), pyPMM's branch only in the full run."""


@dataclasses.dataclass(frozen=True)
class Measured:
    """One side at one depth: compile stages and time per step (medians of alternating runs)."""

    trace_lower: Timing
    compile: Timing
    total: Timing
    step: Timing
    fusions: int
    final_loss: float
    params: int


def _data(key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """A smooth regression target R^4 -> R^4 the chain can fit."""
    x = jax.random.normal(jax.random.fold_in(key, 0), (EXAMPLES, WIDTH))
    mixing = jax.random.normal(jax.random.fold_in(key, 1), (WIDTH, WIDTH))
    return x, jnp.sin(x @ mixing) ** 2


def mse(graph: Graph, batch: tuple[jax.Array, jax.Array]) -> jax.Array:
    """Mean squared error of the graph on one ``(x, y)`` batch."""
    x, y = batch
    return jnp.mean((graph(x) - y) ** 2)


def _linear_mse(params: dict, batch: tuple[jax.Array, jax.Array]) -> jax.Array:
    x, y = batch
    return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)


def _measure_floor(epochs: int, repeats: int, key: jax.Array,
                   ctx: BenchContext) -> dict[str, tuple[Timing, Timing, Timing, int]]:
    """The training function of a linear model: what the loop itself costs to compile.

    Returns (trace+lower, compile, total, fusions) per side.
    """
    params = {"w": jnp.zeros((WIDTH, WIDTH)), "b": jnp.zeros((WIDTH,))}
    builds = {side: make_train_fn(_linear_mse, params, _data(key), optax.adam(LEARNING_RATE),
                                  epochs=epochs, batch_size=BATCH,
                                  key=jax.random.fold_in(key, 7), pack=jaxlean)
              for side, jaxlean in (("baseline", False), ("jaxlean", True))}
    compiled = compile_alternating(builds, repeats, lambda m: ctx.step(f"linear model: {m}"))
    return {side: (c.trace_lower, c.compile, c.total,
                   c.executable.as_text().count(" fusion("))
            for side, c in compiled.items()}


def _builds(depth: int, epochs: int, key: jax.Array, data: tuple[jax.Array, jax.Array],
            sides: tuple[str, ...]) -> tuple[dict[str, tuple], dict[str, Callable]]:
    """Each of ``sides``' ``(fn, args)`` and its loss of the trained output on all data."""
    builds, final_loss = {}, {}
    for side, scan in (("baseline", False), ("jaxlean", True)):
        graph = pmm_chain(depth, WIDTH, key=jax.random.fold_in(key, depth), scan=scan)
        builds[side] = make_train_fn(mse, graph, data, complex_adam(LEARNING_RATE),
                                     epochs=epochs, batch_size=BATCH,
                                     key=jax.random.fold_in(key, 7), pack=scan)
        final_loss[side] = lambda out, scanned=scan: mse(
            out.params if scanned else _as_scanned(out.params), data)
    modules = [graph.node(name) for name in graph.plan.nodes]
    for side, layout in (("pypmm", "pypmm"), ("by_hand", "stacked")):
        by_hand = make_by_hand_train_fn(modules, data, epochs=epochs, batch_size=BATCH,
                                        key=jax.random.fold_in(key, 7),
                                        learning_rate=LEARNING_RATE, layout=layout)
        builds[side] = (by_hand.fn, by_hand.args)
        final_loss[side] = lambda out, loss=by_hand.loss: loss(out.buffers, data)
    return {side: builds[side] for side in sides}, final_loss


def _measure_depths(depths: tuple[int, ...], epochs: int, repeats: int, key: jax.Array,
                    ctx: BenchContext, sides: dict[int, tuple[str, ...]]
                    ) -> dict[tuple[int, str], Measured]:
    """``sides[depth]`` at each depth. Every round compiles every side at every depth, so
    each ratio of compile times (between sides, and between depths) compares samples taken
    under the same load; then each depth's timed runs alternate between its sides.

    Raises:
        SidesDisagreeError: a side's per-epoch losses differ from jaxlean's.
    """
    data = _data(key)
    builds, final_loss = {}, {}
    for depth in depths:
        ctx.step(f"depth {depth}: building the sides")
        built, final_loss[depth] = _builds(depth, epochs, key, data, sides[depth])
        builds.update({(depth, side): build for side, build in built.items()})
    compiled = compile_alternating(
        {f"{depth}/{side}": build for (depth, side), build in builds.items()}, repeats,
        lambda m: ctx.step(f"depth {m.replace('/', ': ', 1)}"))
    steps = epochs * (EXAMPLES // BATCH)
    measured = {}
    for depth in depths:
        here = {side: compiled[f"{depth}/{side}"] for side in sides[depth]}
        ctx.step(f"depth {depth}: same losses on every side")
        outputs = {side: here[side].executable(*builds[depth, side][1]) for side in here}
        check_same_losses({side: out.train_loss for side, out in outputs.items()}, "jaxlean",
                          LOSS_RTOL)
        ctx.step(f"depth {depth}: {steps} training steps, the sides in turn")
        runs = time_alternating(*[(here[side].executable, builds[depth, side][1])
                                  for side in here],
                                repeats=repeats + 2, min_seconds=0.2)
        params = sum(leaf.size for leaf in jax.tree.leaves(builds[depth, "jaxlean"][1][0]))
        for side, run in zip(here, runs, strict=True):
            c = here[side]
            per_step = Timing(tuple(seconds / steps for seconds in run.samples))
            measured[depth, side] = Measured(
                c.trace_lower, c.compile, c.total, per_step,
                c.executable.as_text().count(" fusion("),
                float(jax.jit(final_loss[depth][side])(outputs[side])), params)
    return measured


def _as_scanned(graph: Graph) -> Graph:
    """The same chain and parameters, as a scanned graph (to evaluate both sides alike)."""
    return Graph({name: graph.node(name) for name in graph.plan.nodes},
                 chain_edges(graph.plan.nodes))


def _compare_sides(result: BenchResult, case: str, base: Measured, ours: Measured,
                   steps: int, baseline_name: str) -> None:
    names = {"variant": SIDES["jaxlean"], "baseline_name": baseline_name}
    result.compare(case, "trace+lower", "s", base.trace_lower, ours.trace_lower, **names)
    result.compare(case, "compile", "s", base.compile, ours.compile, **names)
    result.compare(case, "trace+lower+compile", "s", base.total, ours.total, **names)
    result.compare(case, "fusions in the compiled HLO", "", base.fusions, ours.fusions, **names)
    result.compare(case, "time per step", "s", base.step, ours.step, **names)
    result.compare(case, f"loss after {steps} steps", "", base.final_loss, ours.final_loss,
                   **names)


@register("compile", "fit() of a PMM chain: compile time vs depth, jaxlean vs loop+optax "
          "and vs hand-written scan+packed loops")
def run(ctx: BenchContext) -> BenchResult:
    """Run the compile benchmark: trace and compile time against depth."""
    depths = (4, 16) if ctx.quick else (4, 16, 64)
    epochs = 1 if ctx.quick else 4
    repeats = 3 if ctx.quick else 2
    steps = epochs * (EXAMPLES // BATCH)
    key = jax.random.key(0)
    result = BenchResult("compile", "fit() training function of a PMM chain: compile time "
                         "vs depth")
    if not ctx.quick:
        names = {"variant": SIDES["jaxlean"], "baseline_name": SIDES["baseline"]}
        floor = _measure_floor(epochs, repeats, key, ctx)
        case = f"linear model ({WIDTH * WIDTH + WIDTH} params): the loop's floor"
        for index, metric in enumerate(("trace+lower", "compile", "trace+lower+compile")):
            result.compare(case, metric, "s", floor["baseline"][index], floor["jaxlean"][index],
                           **names)
        result.compare(case, "fusions in the compiled HLO", "", floor["baseline"][3],
                       floor["jaxlean"][3], **names)
    sides = {depth: QUICK_SIDES[depth] if ctx.quick else tuple(SIDES) for depth in depths}
    measured = _measure_depths(depths, epochs, repeats, key, ctx, sides)
    for depth in depths:
        case = f"depth {depth} ({measured[depth, 'jaxlean'].params:,} parameters, complex)"
        for side in sides[depth][:-1]:
            _compare_sides(result, case, measured[depth, side], measured[depth, "jaxlean"],
                           steps, SIDES[side])
    _targets(result, measured, depths, steps)
    _growth(result, measured, depths)

    for metric, name in (("total", "compile"), ("trace_lower", "trace")):
        series = {SIDES[side]: ([d for d in depths if (d, side) in measured],
                                [getattr(measured[d, side], metric).median
                                 for d in depths if (d, side) in measured])
                  for side in SIDES if any((d, side) in measured for d in depths)}
        label = "trace+lower+compile" if name == "compile" else "trace+lower"
        result.plots.append(Plot(f"{name}_vs_depth", f"fit() of a PMM chain: {label}",
                                 "modules in the chain", "seconds", series))
    _notes(result, ctx.quick, epochs, repeats, steps)
    return result


def _targets(result: BenchResult, measured: dict[tuple[int, str], Measured],
             depths: tuple[int, ...], steps: int) -> None:
    mid, deepest = (16, depths[-1]) if 16 in depths else (depths[-1], depths[-1])
    total = {side: measured[mid, side].total for side in SIDES if (mid, side) in measured}

    def ratio(a: Timing, b: Timing) -> dict:
        return dict(value=a / b, spread=a.ratio_spread(b), noise=COMPILE_NOISE)

    # The loop's compile grows with depth and the gap opens past depth 16 (full run: 8x at
    # 64): at 16 this goal is missed at full size too, a known miss listed in BENCHMARKS.md.
    result.target(f"compile at depth {mid}: {SIDES['baseline']} / jaxlean "
                  "(trace+lower+compile)", limit=5.0, op=">=", quick=False,
                  **ratio(total["baseline"], total["jaxlean"]))
    result.target(f"jaxlean compile depth {deepest} / depth {depths[0]} (flat in depth)",
                  limit=1.5, **ratio(measured[deepest, "jaxlean"].total,
                                     measured[depths[0], "jaxlean"].total))
    for side, limit in (("baseline", 1.1), ("by_hand", 1.15)):
        ratios = {d: measured[d, "jaxlean"].step / measured[d, side].step
                  for d in depths if (d, side) in measured}
        worst = max(ratios, key=ratios.get)
        result.target(f"time per step: jaxlean / {SIDES[side]} (worst depth, {worst}; the same "
                      "computation)", limit=limit, value=ratios[worst], noise=STEP_NOISE,
                      spread=measured[worst, "jaxlean"].step.ratio_spread(
                          measured[worst, side].step))
    result.target(f"compile at depth {mid}: jaxlean / {SIDES['by_hand']} "
                  "(trace+lower+compile; the same layout)", limit=1.15,
                  **ratio(total["jaxlean"], total["by_hand"]))
    if "pypmm" in total:
        result.target(f"compile at depth {mid}: {SIDES['pypmm']} / jaxlean "
                      "(trace+lower+compile)", limit=3.0, op=">=", quick=False,
                      **ratio(total["pypmm"], total["jaxlean"]))
    loss_gaps = [abs(c.value - c.baseline) / abs(c.baseline)
                 for c in result.comparisons if c.metric.startswith("loss after")]
    result.target(f"loss after {steps} steps: relative difference (worst depth and side)",
                  max(loss_gaps), LOSS_RTOL, noise=EXACT)
    result.headline = _headline(measured, depths, mid, total)


def _headline(measured: dict[tuple[int, str], Measured], depths: tuple[int, ...], mid: int,
              total: dict[str, Timing]) -> str:
    """What the run showed, in one sentence of its own figures."""
    first, deepest = depths[0], depths[-1]
    growth = {side: measured[deepest, side].total / measured[first, side].total
              for side in ("jaxlean", "baseline")}
    text = (f"PMM chain, fit(): compile {growth['jaxlean']:.2f}x from depth {first} to "
            f"{deepest} (loop+optax: {growth['baseline']:.2f}x); "
            f"at depth {mid} {total['baseline'] / total['jaxlean']:.1f}x faster than loop+optax")
    if "pypmm" in total:
        text += f", {total['pypmm'] / total['jaxlean']:.2f}x faster than pyPMM's branch by hand"
    return text + f", {total['jaxlean'] / total['by_hand']:.2f}x a hand-written scan+packed loop."


def _growth(result: BenchResult, measured: dict[tuple[int, str], Measured],
            depths: tuple[int, ...]) -> None:
    """Informational: how each hand-written side's compile grows with depth, beside jaxlean's."""
    first, deepest = depths[0], depths[-1]
    case = f"compile growth (trace+lower+compile, depth {deepest} / depth {first})"
    growth = {side: measured[deepest, side].total / measured[first, side].total
              for side in SIDES if (first, side) in measured and (deepest, side) in measured}
    for side in [side for side in growth if side != "jaxlean"]:
        result.compare(case, "ratio of the depths", "", growth[side], growth["jaxlean"],
                       variant=SIDES["jaxlean"], baseline_name=SIDES[side])


def _notes(result: BenchResult, quick: bool, epochs: int, repeats: int, steps: int) -> None:
    result.notes.append(
        f"All sides compile a training run of {epochs} epoch(s) of {EXAMPLES // BATCH} "
        f"minibatches of {BATCH} (pyPMM's complex Adam, lr {LEARNING_RATE}) and their "
        f"per-epoch losses agree within {LOSS_RTOL:g} before any figure is reported; compile "
        f"times are medians of {repeats} fresh jit(s) per side, every side at every depth in "
        f"turn each round; time per "
        f"step is the median of {repeats + 2} alternating timings of a whole run, divided by "
        f"{steps} steps.")
    result.notes.append(
        "The hand-written sides follow pyPMM's branch copilot/reduce-nonsequential-compile-time "
        "(commit 1f5eb52f) in plain JAX: packed buffers per dtype, lax.scan over the modules, "
        "while_loop over epochs, fori_loop over minibatches; they leave out what neither side "
        "runs here (validation, best-state tracking, masks, progress callbacks), so they are "
        "leaner than pyPMM's own train().")
    result.notes.append(
        "XLA:CPU compiles identical fusions once, so the unrolled baseline's compile grows "
        "slowly at small depth even though its HLO grows linearly (see the fusion counts); "
        "its tracing, HLO passes and compile grow with depth, the scanned chain's do not.")
    if quick:
        result.notes.append("Quick mode: depths 4 and 16 only (the depth target uses depth 16), "
                            "the hand-written scan+packed loop at depth 16 only, without "
                            "pyPMM's branch and the linear model's row.")
    else:
        result.notes.append(
            "The linear model's row is the floor of any model: the training loop itself "
            "(shuffling, minibatch gather, Adam, history, early-stopping bookkeeping) on "
            "XLA:CPU, where compile time grows with the number of kernels.")
