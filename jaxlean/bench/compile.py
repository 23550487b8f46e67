"""Benchmark ``compile``: the whole fit() training function of a PMM chain, vs depth (seed 000).

The model is pyPMM's benchmark chain (:func:`jaxlean.models.pmm.pmm_chain`:
16 of pyPMM's ``AffineObservablePMM``, 25,424 complex entries), which pyPMM
takes ~9.5 s to compile a training loop for, because every module and every
optimizer leaf is traced separately. Both sides here build the same training
function with :func:`jaxlean.train.fit.make_train_fn` (epochs x minibatches in
one ``lax.while_loop``, same data, shuffling and pyPMM's complex Adam):

- baseline: the graph with scanning disabled (modules applied in a Python
  loop, one set of arrays per module) and ``optax.adam`` on the unpacked pytree;
- jaxlean: the chain stored stacked and run as one ``scan_layers``, and the
  optimizer state packed into one buffer per dtype.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import optax

from jaxlean.bench._measure import Timing, compile_alternating, time_alternating
from jaxlean.bench._registry import BenchContext, BenchResult, Plot, register
from jaxlean.models.pmm import complex_adam, pmm_chain
from jaxlean.nn.graph import Graph, chain_edges
from jaxlean.train.fit import make_train_fn

WIDTH = 5
EXAMPLES = 256
BATCH = 32
LEARNING_RATE = 1e-2
LOSS_RTOL = 1e-4  # float32 round-off after a few dozen Adam steps, with headroom


@dataclasses.dataclass(frozen=True)
class Measured:
    """One side at one depth: compile stages and time per step (medians of alternating runs)."""

    trace_lower: Timing
    compile: Timing
    total: Timing
    step: Timing
    fusions: int
    final_graph: Graph


def _data(key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """A smooth regression target R^4 -> R^4 the chain can fit."""
    x = jax.random.normal(jax.random.fold_in(key, 0), (EXAMPLES, WIDTH))
    mixing = jax.random.normal(jax.random.fold_in(key, 1), (WIDTH, WIDTH))
    return x, jnp.sin(x @ mixing) ** 2


def mse(graph: Graph, batch: tuple[jax.Array, jax.Array]) -> jax.Array:
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


def _measure_depth(depth: int, epochs: int, repeats: int, key: jax.Array,
                   ctx: BenchContext) -> dict[str, Measured]:
    """Both sides at one depth; compiles and timed runs alternate between the sides."""
    sides = {"baseline": False, "jaxlean": True}
    builds = {}
    for side, jaxlean in sides.items():
        graph = pmm_chain(depth, WIDTH, key=jax.random.fold_in(key, depth), scan=jaxlean)
        builds[side] = make_train_fn(mse, graph, _data(key), complex_adam(LEARNING_RATE),
                                     epochs=epochs, batch_size=BATCH,
                                     key=jax.random.fold_in(key, 7), pack=jaxlean)
    compiled = compile_alternating(builds, repeats, lambda m: ctx.step(f"depth {depth}: {m}"))
    steps = epochs * (EXAMPLES // BATCH)
    ctx.step(f"depth {depth}: {steps} training steps, the sides in turn")
    runs = time_alternating(*[(compiled[side].executable, args)
                              for side, (_, args) in builds.items()],
                            repeats=repeats + 2, min_seconds=0.05)
    measured = {}
    for (side, (_, args)), run in zip(builds.items(), runs, strict=True):
        c = compiled[side]
        per_step = Timing(tuple(seconds / steps for seconds in run.samples))
        measured[side] = Measured(c.trace_lower, c.compile, c.total, per_step,
                                  c.executable.as_text().count(" fusion("),
                                  c.executable(*args).params)
    return measured


def _as_scanned(graph: Graph) -> Graph:
    """The same chain and parameters, as a scanned graph (to evaluate both sides alike)."""
    return Graph({name: graph.node(name) for name in graph.plan.nodes},
                 chain_edges(graph.plan.nodes))


@register("compile", "fit() of a PMM chain: compile time vs depth, scan+packed vs loop+optax")
def run(ctx: BenchContext) -> BenchResult:
    depths = (4, 16) if ctx.quick else (4, 16, 64)
    epochs = 1 if ctx.quick else 4
    repeats = 1 if ctx.quick else 2
    steps = epochs * (EXAMPLES // BATCH)
    key = jax.random.key(0)
    data = _data(key)
    result = BenchResult("compile", "fit() training function of a PMM chain: compile time "
                         "vs depth")
    evaluate = jax.jit(mse)
    measured: dict[tuple[int, str], Measured] = {}
    names = {"variant": "jaxlean scan+packed", "baseline_name": "loop+optax"}
    if not ctx.quick:
        floor = _measure_floor(epochs, repeats, key, ctx)
        case = f"linear model ({WIDTH * WIDTH + WIDTH} params): the loop's floor"
        for index, metric in enumerate(("trace+lower", "compile", "trace+lower+compile")):
            result.compare(case, metric, "s", floor["baseline"][index], floor["jaxlean"][index],
                           **names)
        result.compare(case, "fusions in the compiled HLO", "", floor["baseline"][3],
                       floor["jaxlean"][3], **names)
    for depth in depths:
        for side, value in _measure_depth(depth, epochs, repeats, key, ctx).items():
            measured[depth, side] = value
        base, ours = measured[depth, "baseline"], measured[depth, "jaxlean"]
        params = sum(leaf.size for leaf in jax.tree.leaves(ours.final_graph))
        case = f"depth {depth} ({params:,} parameters, complex)"
        result.compare(case, "trace+lower", "s", base.trace_lower, ours.trace_lower, **names)
        result.compare(case, "compile", "s", base.compile, ours.compile, **names)
        result.compare(case, "trace+lower+compile", "s", base.total, ours.total, **names)
        result.compare(case, "fusions in the compiled HLO", "", base.fusions, ours.fusions,
                       **names)
        result.compare(case, "time per step", "s", base.step, ours.step, **names)
        ctx.step(f"depth {depth}: loss of the trained params on all data")
        loss_base = float(evaluate(_as_scanned(base.final_graph), data))
        loss_ours = float(evaluate(ours.final_graph, data))
        result.compare(case, f"loss after {steps} steps", "", loss_base, loss_ours, **names)

    mid, deepest = (16, depths[-1]) if 16 in depths else (depths[-1], depths[-1])
    result.target(f"compile at depth {mid}: baseline / jaxlean (trace+lower+compile)",
                  measured[mid, "baseline"].total / measured[mid, "jaxlean"].total, 5.0,
                  op=">=")
    result.target(f"jaxlean compile depth {deepest} / depth {depths[0]}",
                  measured[deepest, "jaxlean"].total / measured[depths[0], "jaxlean"].total,
                  1.5)
    step_ratios = {d: measured[d, "jaxlean"].step / measured[d, "baseline"].step
                   for d in depths}
    worst = max(step_ratios, key=step_ratios.get)
    result.target(f"time per step: jaxlean / baseline (worst depth, {worst})",
                  step_ratios[worst], 1.1)
    loss_gaps = [abs(c.value - c.baseline) / abs(c.baseline)
                 for c in result.comparisons if c.metric.startswith("loss after")]
    result.target(f"loss after {steps} steps: relative difference (worst depth)",
                  max(loss_gaps), LOSS_RTOL)

    for metric, name in (("total", "compile"), ("trace_lower", "trace")):
        series = {side: (list(depths), [getattr(measured[d, side], metric).median
                                        for d in depths])
                  for side in ("baseline", "jaxlean")}
        label = "trace+lower+compile" if name == "compile" else "trace+lower"
        result.plots.append(Plot(f"{name}_vs_depth", f"fit() of a PMM chain: {label}",
                                 "modules in the chain", "seconds", series))
    result.notes.append(
        f"Both sides compile make_train_fn(...) for {epochs} epoch(s) of {EXAMPLES // BATCH} "
        f"minibatches of {BATCH} (pyPMM's complex Adam, lr {LEARNING_RATE}); compile times are "
        f"medians of {repeats} fresh jit(s) per side, the sides in turn; time per step is the "
        f"median of {repeats + 2} alternating timings of a whole run, divided by {steps} steps.")
    result.notes.append(
        "XLA:CPU compiles identical fusions once, so the unrolled baseline's compile grows "
        "slowly at small depth even though its HLO grows linearly (see the fusion counts); "
        "its tracing, HLO passes and compile grow with depth, the scanned chain's do not.")
    if ctx.quick:
        result.notes.append("Quick mode: depths 4 and 16 only (the depth target uses depth 16), "
                            "without the linear model's row.")
    else:
        result.notes.append(
            "The linear model's row is the floor of any model: the training loop itself "
            "(shuffling, minibatch gather, Adam, history, early-stopping bookkeeping) on "
            "XLA:CPU, where compile time grows with the number of kernels.")
    return result
