"""Benchmark ``optim``: AdamW groups + Muon per leaf (``optax.multi_transform``) vs in ``packed``.

The optimizer step (update + apply, jitted) of a transformer's parameters with
the groups LLM training uses: Muon for every layer projection, AdamW with decay
for the embedding and head, AdamW without decay for the norms. Two layouts of
the same parameters: ``scanned`` (layers stacked ``[L, m, n]``, as
``scan_layers`` trains them) and ``per-layer`` (the layers as L separate
modules, as an unrolled model holds them). For each layout and depth it
records compile time and step time of (a) ``optax.multi_transform`` per leaf
and (b) the same transformations inside ``packed(param_labels=...)``, after checking
both give the same parameters.

The AdamW part measures where users compile: the jitted train step (grad +
update + apply, one device) of an MLP with 32, 64 and 192 unstacked leaves and
of 32 scanned layers, and ``fit``'s whole training loop at 64 leaves, plain
``optax.adamw`` per leaf against ``packed(optax.adamw)`` (``pack=True``), compile
time as ratios and optimizer state arrays.

The sharded part runs in a child process (``python -m jaxlean.bench.optim
[--quick]``) with 8 forced host devices: the scanned parameters split by
``transformer_rules`` (FSDP over 8 devices), the same step per leaf vs packed,
with its step time and the collectives in its compiled HLO.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from jaxlean.bench._child import finish, progress, run_child
from jaxlean.bench._registry import BenchContext, BenchResult, Plot, register

__all__ = ["measure_sharded", "run"]

DEVICES = 8
# (model sizes, depths compiled on one device, timing repeats)
SIZES = {
    False: (dict(vocab_size=1024, hidden_size=128, intermediate_size=256, num_heads=4,
                 num_kv_heads=2), (8, 16, 32), 5),
    True: (dict(vocab_size=256, hidden_size=32, intermediate_size=64, num_heads=2,
                num_kv_heads=1), (4, 8), 3),
}
_COLLECTIVES = ("all-gather", "all-to-all", "all-reduce", "reduce-scatter", "collective-permute")
_VALUE_TOLERANCE = 1e-4
# AdamW settings: (unstacked leaf counts, scanned layers, fit leaves, compile repeats), width
ADAMW_SIZES = {False: ((32, 64, 192), 32, 64, 3), True: ((16, 32), 8, 16, 1)}
WIDTH = 32


def _label(path: tuple) -> str:
    """Muon for layer projections, decayed AdamW for embedding and head, no decay for norms."""
    import jax

    name = jax.tree_util.keystr(path)
    if "_proj" in name and "lm_head" not in name:
        return "muon"
    return "no_decay" if "norm" in name else "embed"


def _labels(params: Any) -> Any:
    import jax

    return jax.tree_util.tree_map_with_path(lambda path, _: _label(path), params)


def _groups() -> dict[str, Any]:
    import optax

    from jaxlean.train.muon import muon

    return {"muon": muon(0.02, weight_decay=0.1),
            "embed": optax.adamw(3e-3, weight_decay=0.1),
            "no_decay": optax.adamw(1e-3, weight_decay=0.0)}


def _optimizers() -> dict[str, Any]:
    """Labels go as a function: a label tree of Equinox modules would be callable itself."""
    import optax

    from jaxlean.train.packed import packed

    return {"per-leaf": optax.multi_transform(_groups(), _labels),
            "packed": packed(_groups(), param_labels=_labels)}


def _step(tx: Any):
    import optax

    def step(params, state, grads):
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    return step


def _params(config: dict[str, Any], depth: int, layout: str) -> Any:
    """The transformer's parameters (arrays only), layers stacked or as a list of modules."""
    import equinox as eqx
    import jax

    from jaxlean.models.lm.transformer import Transformer, TransformerConfig
    from jaxlean.nn.layers import unstack

    model = Transformer(TransformerConfig(**config, num_layers=depth), key=jax.random.key(0))
    if layout == "per-layer":
        model = eqx.tree_at(lambda m: m.layers, model, unstack(model.layers))
    return eqx.filter(model, eqx.is_array)


def _grads(params: Any) -> Any:
    import jax

    from jaxlean._random import normal

    leaves, treedef = jax.tree.flatten(params)
    keys = jax.random.split(jax.random.key(1), len(leaves))
    return jax.tree.unflatten(treedef, [normal(k, x.shape, x.dtype) * 1e-2
                                        for k, x in zip(keys, leaves, strict=True)])


def _max_difference(a: Any, b: Any) -> float:
    import jax
    import numpy as np

    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in
               zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))


def _collectives(hlo: str) -> dict[str, int]:
    return {name: len(re.findall(rf"\b{name}(-start)?\(", hlo)) for name in _COLLECTIVES}


def _measure_case(params: Any, repeats: int) -> dict[str, dict[str, Any]]:
    """Compile, check and time the per-leaf and packed steps on ``params``."""
    import jax

    from jaxlean.bench._measure import aot_compile, wall_times

    grads = _grads(params)
    rows, calls, results = {}, [], {}
    for name, tx in _optimizers().items():
        state = tx.init(params)
        compiled = aot_compile(_step(tx), params, state, grads)
        results[name] = jax.block_until_ready(compiled.executable(params, state, grads))
        rows[name] = {"compile_s": compiled.trace_lower_s + compiled.compile_s,
                      "state_arrays": len(jax.tree.leaves(state)),
                      "collectives": _collectives(compiled.executable.as_text())}
        calls.append((compiled.executable, (params, state, grads)))
    difference = _max_difference(results["per-leaf"][0], results["packed"][0])
    if difference > _VALUE_TOLERANCE:
        raise RuntimeError(f"packed and per-leaf steps disagree by {difference:.2e}")
    for row, seconds in zip(rows.values(), wall_times(*calls, repeats=repeats), strict=True):
        row["step_s"] = seconds
        row["max_difference"] = difference
    return rows


def measure_sharded(quick: bool) -> dict[str, Any]:
    """The scanned parameters FSDP-split over 8 devices: per-leaf vs packed step."""
    import jax
    from jax.sharding import PartitionSpec as P

    from jaxlean.compile.cache import use_compilation_cache
    from jaxlean.models.lm.rules import transformer_rules
    from jaxlean.parallel.mesh import make_mesh, shard_model

    use_compilation_cache(False)  # also after a compile
    if jax.device_count() < DEVICES:
        raise RuntimeError(f"needs {DEVICES} devices, found {jax.device_count()}")
    config, depths, repeats = SIZES[quick]
    depth = depths[-1]
    mesh = make_mesh(1, DEVICES)
    progress(f"{DEVICES} devices, {depth} scanned layers: compile, check, time")
    params = shard_model(_params(config, depth, "scanned"), mesh,
                         (*transformer_rules(), (r".*", P())))
    return {"config": config, "depth": depth, "rows": _measure_case(params, repeats)}


def _one_device(ctx: BenchContext, result: BenchResult) -> None:
    config, depths, repeats = SIZES[ctx.quick]
    compile_s: dict[tuple[str, str], list[float]] = {}
    for layout in ("scanned", "per-layer"):
        for depth in depths:
            ctx.step(f"{layout}, {depth} layers: compile, check, time")
            rows = _measure_case(_params(config, depth, layout), repeats)
            case = f"{layout}, {depth} layers"
            base, ours = rows["per-leaf"], rows["packed"]
            for metric, key, unit in (("compile time", "compile_s", "s"),
                                      ("step time", "step_s", "s"),
                                      ("optimizer state arrays", "state_arrays", "arrays")):
                result.compare(case, metric, unit, base[key], ours[key], variant="packed",
                               baseline_name="per-leaf multi_transform")
            for name, row in rows.items():
                compile_s.setdefault((layout, name), []).append(row["compile_s"])
        deepest = compile_s[layout, "packed"][-1] / compile_s[layout, "per-leaf"][-1]
        result.target(f"{layout}: packed compile / per-leaf compile at {depths[-1]} layers",
                      deepest, 1 / 3, "<=")
        growth = compile_s[layout, "packed"][-1] / compile_s[layout, "packed"][0]
        result.target(f"{layout}: packed compile at {depths[-1]} / at {depths[0]} layers "
                      "(flat in depth)", growth, 1.5, "<=")
    result.plots.append(Plot(
        "compile", "optimizer step compile time vs depth", "layers", "seconds",
        {f"{name} ({layout})": (list(depths), times)
         for (layout, name), times in compile_s.items()}))


def _mlp(leaves: int, scanned: bool) -> tuple[Any, Any]:
    """An MLP of ``leaves // 2`` tanh layers (weight and bias), as a list or stacked."""
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(0)
    layers = leaves // 2
    w = jnp.asarray(rng.standard_normal((layers, WIDTH, WIDTH)) / WIDTH ** 0.5, jnp.float32)
    b = jnp.asarray(rng.standard_normal((layers, WIDTH)) * 0.1, jnp.float32)
    params = {"w": w, "b": b} if scanned else [{"w": w[i], "b": b[i]} for i in range(layers)]
    return params, jnp.asarray(rng.standard_normal((16, WIDTH)), jnp.float32)


def _mlp_loss(params: Any, x: Any) -> Any:
    import jax
    import jax.numpy as jnp

    if isinstance(params, dict):
        x = jax.lax.scan(lambda h, layer: (jnp.tanh(h @ layer["w"] + layer["b"]), None),
                         x, params)[0]
    else:
        for layer in params:
            x = jnp.tanh(x @ layer["w"] + layer["b"])
    return jnp.mean(x ** 2)


def _train_step(tx: Any):
    import jax
    import optax

    def step(params, state, x):
        updates, state = tx.update(jax.grad(_mlp_loss)(params, x), state, params)
        return optax.apply_updates(params, updates), state

    return step


def _adamw_step(ctx: BenchContext, result: BenchResult) -> None:
    """Jitted train step, per-leaf optax.adamw vs packed: same params, compile time, state."""
    import optax

    from jaxlean.bench._measure import compile_alternating
    from jaxlean.train.packed import packed

    unstacked, scanned, _, repeats = ADAMW_SIZES[ctx.quick]
    cases = [(f"train step, {n} unstacked leaves", n, False) for n in unstacked]
    cases.append((f"train step, {scanned} scanned layers", 2 * scanned, True))
    for case, leaves, stacked in cases:
        params, x = _mlp(leaves, stacked)
        builds, states = {}, {}
        for name, tx in (("per-leaf", optax.adamw(1e-3, weight_decay=0.1)),
                         ("packed", packed(optax.adamw(1e-3, weight_decay=0.1)))):
            states[name] = tx.init(params)
            builds[name] = (_train_step(tx), (params, states[name], x))
        timings = compile_alternating(builds, repeats,
                                      lambda m, case=case: ctx.step(f"{case}: {m}"))
        outs = {name: timings[name].executable(*builds[name][1])[0] for name in builds}
        difference = _max_difference(outs["per-leaf"], outs["packed"])
        if difference > _VALUE_TOLERANCE:
            raise RuntimeError(f"{case}: packed and per-leaf steps disagree by {difference:.2e}")
        _compile_and_state_rows(result, case, timings, states, "packed(adamw)",
                                "optax.adamw per leaf", goal=1.0)


def _compile_and_state_rows(result: BenchResult, case: str, timings: dict, states: dict,
                            variant: str, baseline_name: str, goal: float) -> None:
    """Rows comparing the "packed" side with the "per-leaf" one: compile time, optimizer
    state arrays, and the target packed compile / per-leaf compile <= ``goal``."""
    import jax

    base, ours = timings["per-leaf"], timings["packed"]
    result.compare(case, "compile time (trace+lower+compile)", "s", base.total, ours.total,
                   variant=variant, baseline_name=baseline_name)
    result.compare(case, "optimizer state arrays", "arrays",
                   len(jax.tree.leaves(states["per-leaf"])),
                   len(jax.tree.leaves(states["packed"])), variant=variant,
                   baseline_name=baseline_name)
    result.target(f"{case}: packed compile / per-leaf compile",
                  ours.total.median / base.total.median, goal, "<=", quick=False)


def _adamw_fit(ctx: BenchContext, result: BenchResult) -> None:
    """fit's whole training loop (make_train_fn), pack=False vs pack=True: compile time."""
    import jax
    import jax.numpy as jnp
    import optax

    from jaxlean.bench._measure import compile_alternating
    from jaxlean.train.fit import make_train_fn

    _, _, leaves, repeats = ADAMW_SIZES[ctx.quick]
    params, x = _mlp(leaves, False)
    data = {"x": jnp.concatenate([x] * 4)}
    builds, outs = {}, {}
    for name, pack in (("per-leaf", False), ("packed", True)):
        fn, args = make_train_fn(lambda p, batch: _mlp_loss(p, batch["x"]), params, data,
                                 optax.adamw(1e-3, weight_decay=0.1), epochs=2, batch_size=16,
                                 key=jax.random.key(0), pack=pack)
        builds[name] = (fn, args)
    # The floor under both: the loss gradient alone, on one batch.
    builds["gradient"] = (jax.value_and_grad(_mlp_loss), (params, x))
    case = f"fit loop, {leaves} unstacked leaves"
    timings = compile_alternating(builds, repeats, lambda m: ctx.step(f"{case}: {m}"))
    del builds["gradient"]
    for name in builds:
        outs[name] = timings[name].executable(*builds[name][1]).params
    difference = _max_difference(outs["per-leaf"], outs["packed"])
    if difference > _VALUE_TOLERANCE:
        raise RuntimeError(f"{case}: packed and per-leaf runs disagree by {difference:.2e}")
    _compile_and_state_rows(result, case, timings,
                            {name: builds[name][1][2] for name in builds}, "fit(pack=True)",
                            "fit(pack=False)", goal=1 / 3)
    result.compare(case, "compile time (trace+lower+compile)", "s", timings["gradient"].total,
                   timings["packed"].total, variant="fit(pack=True)",
                   baseline_name="loss gradient alone (one batch)")


def _sharded(ctx: BenchContext, result: BenchResult) -> None:
    ctx.step(f"child process with {DEVICES} forced host devices")
    measured = run_child("jaxlean.bench.optim", DEVICES, ctx)
    rows = measured["rows"]
    base, ours = rows["per-leaf"], rows["packed"]
    case = f"{DEVICES} devices FSDP, {measured['depth']} scanned layers"
    result.compare(case, "step time", "s", base["step_s"], ours["step_s"], variant="packed",
                   baseline_name="per-leaf multi_transform")
    for name in _COLLECTIVES:
        result.compare(case, f"{name} ops", "ops", base["collectives"][name],
                       ours["collectives"][name], variant="packed",
                       baseline_name="per-leaf multi_transform")
    result.target(f"batched Muon step time / per-leaf on {DEVICES} devices",
                  ours["step_s"] / base["step_s"], 0.5, "<=")
    result.target(f"all-gather ops in the packed step on {DEVICES} devices",
                  ours["collectives"]["all-gather"], 0, "<=")


@register("optim", "packed vs per-leaf optax: AdamW train step and fit loop compile; AdamW "
                   "groups + Muon compile and step time; batched Muon on 8 devices")
def run(ctx: BenchContext) -> BenchResult:
    """Run the optimizer benchmark: packed optimizer state against per-leaf state."""
    result = BenchResult("optim", "optimizer groups + Muon: per-leaf multi_transform vs packed")
    config, depths, _ = SIZES[ctx.quick]
    _adamw_step(ctx, result)
    _adamw_fit(ctx, result)
    _one_device(ctx, result)
    _sharded(ctx, result)
    unstacked, scanned, fit_leaves, _ = ADAMW_SIZES[ctx.quick]
    result.notes.append(
        f"AdamW: MLP of width {WIDTH} (tanh layers, weight and bias leaves), "
        f"{', '.join(map(str, unstacked))} unstacked leaves and {scanned} scanned layers; the "
        "jitted step is grad + update + apply_updates on one device; the fit loop is "
        f"make_train_fn at {fit_leaves} leaves (2 epochs, batch 16). Both sides are checked "
        "to give the same params before their compile times are compared. XLA:CPU compiles "
        "identical kernels once: per leaf, same-shaped leaves share one update kernel; packed "
        "slices each leaf out of its buffer at a runtime offset, so same-shaped leaves share "
        "one kernel there too (at constant offsets each leaf was a kernel of its own). "
        "fit(pack=True) carries the trainable params packed inside each epoch's loop. The "
        "loss gradient alone is the floor under both fit loops' compile.")
    sizes = ", ".join(f"{key}={value}" for key, value in config.items())
    result.notes.append(
        f"Transformer {sizes}, depths {', '.join(map(str, depths))}. The timed function is the "
        "optimizer step (update + apply_updates, jitted) on random gradients; groups: "
        "muon(0.02, weight_decay=0.1) on every layer projection, adamw(3e-3, weight_decay=0.1) "
        "on embedding and head, adamw(1e-3, weight_decay=0) on the norms. Both sides are checked "
        f"to give the same parameters (max |difference| <= {_VALUE_TOLERANCE}) before timing.")
    result.notes.append(
        "scanned: layers stacked [L, m, n] (per-leaf Muon already vmaps over L inside one leaf); "
        "per-layer: the L layers as separate modules (per leaf, L Newton-Schulz iterations per "
        "projection; packed batches all same-shape matrices into one [B, m, n] buffer). "
        "Packed traces a far smaller program; with the layers stacked there is little left "
        "to remove.")
    result.notes.append(
        f"Sharded: mesh fsdp={DEVICES} over forced host devices sharing {os.cpu_count()} CPU "
        "cores, transformer_rules() (projections [L, in, out] split along `in`). Packed Muon "
        "resplits each stack along L (all-to-all) so every device orthogonalises whole "
        "matrices; per leaf, XLA partitions the Newton-Schulz matmuls over the split axis.")
    return result


if __name__ == "__main__":
    finish(measure_sharded("--quick" in sys.argv[1:]))
