"""Benchmark ``scale``: one transformer training step sharded over 1, 2, 4 and 8 devices.

The device count is fixed when JAX starts, so the measuring runs in one child
process (``python -m jaxlean.bench.scale [--quick]``) with 8 forced host
devices; it prints one JSON line on stdout and progress lines on stderr. For
each n it compiles ``make_train_step(loss)`` (config ``remat="full"``) on the
first n devices for a fixed global batch in two layouts: data parallel
(parameters replicated, plain per-leaf ``optax.adamw``) and FSDP (parameters
split by :func:`jaxlean.models.lm.rules.transformer_rules`,
``packed(optax.adamw)``). It records exact per-device parameter +
optimizer-state bytes, XLA's per-device argument, temp and total bytes of the
(donating) step, the median step time and the loss after one step, which must
match the 1-device loss. ``--quick`` checks the code path and the targets, not
the speed: a tiny model on 1, 2 and 4 of 4 forced devices (6 compiles, not 8).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from jaxlean.bench._child import finish, progress, run_child
from jaxlean.bench._registry import BenchContext, BenchResult, Plot, register

__all__ = ["device_counts", "measure_in_this_process", "run"]

LAYOUTS = ("data parallel", "FSDP")
# Per mode (quick or not): (config, global batch, tokens per sequence, device counts, timing
# repeats, least seconds per timing sample); sizes divisible by the largest count. Quick mode
# is the smallest model that still has a stacked layer axis and every weight split: it
# checks the code path and the targets, not the speed.
SIZES = {
    False: (dict(vocab_size=2048, hidden_size=256, intermediate_size=512, num_layers=4,
                 num_heads=8, num_kv_heads=4), 16, 128, (1, 2, 4, 8), 5, 0.2),
    True: (dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_layers=2,
                num_heads=4, num_kv_heads=2), 8, 8, (1, 4), 3, 0.0),
}


def device_counts(quick: bool) -> tuple[int, ...]:
    """The device counts measured in this mode."""
    return SIZES[quick][3]
_BYTES_TOLERANCE = 0.10
_LOSS_TOLERANCE = 1e-5


def _device_bytes(tree: Any) -> int:
    """Bytes the first device holds of every array leaf of ``tree``."""
    import jax

    return sum(leaf.addressable_shards[0].data.nbytes for leaf in jax.tree.leaves(tree)
               if isinstance(leaf, jax.Array))


def _setups(n: int) -> dict[str, tuple]:
    """Per layout: (mesh over the first ``n`` devices, partition rules, optimizer)."""
    import jax
    import optax
    from jax.sharding import PartitionSpec as P

    from jaxlean.models.lm.rules import transformer_rules
    from jaxlean.parallel.mesh import make_mesh
    from jaxlean.train.packed import packed

    devices = jax.devices()[:n]
    return {"data parallel": (make_mesh(n, 1, devices=devices), ((r".*", P()),),
                              optax.adamw(1e-3)),
            "FSDP": (make_mesh(1, n, devices=devices), (*transformer_rules(), (r".*", P())),
                     packed(optax.adamw(1e-3)))}


def _refeeding(step: Any, model: Any, opt_state: Any, tokens: Any,
               targets: Any) -> Callable[[], Any]:
    """A call of the (donating) step that feeds each result's model and state to the next."""
    carry = [model, opt_state]

    def call() -> Any:
        carry[0], carry[1], value = step(carry[0], carry[1], tokens, targets=targets)
        return value

    return call


def _measure_layout(model: Any, data: tuple, mesh: Any, rules: Any,
                    tx: Any) -> tuple[dict[str, Any], Callable[[], Any]]:
    """Bytes, XLA memory and losses of one layout's donating step, and a call to time it."""
    from jaxlean.models.lm.transformer import loss
    from jaxlean.parallel.mesh import shard_batch, shard_model
    from jaxlean.train.step import make_train_step

    sharded = shard_model(model, mesh, rules)
    opt_state = tx.init(sharded)
    batch = shard_batch(data, mesh)
    state_bytes = _device_bytes((sharded, opt_state))
    step = make_train_step(loss, tx, donate="all")
    tokens, targets = batch
    memory = step.lower(sharded, opt_state, tokens, targets=targets).compile().memory_analysis()
    trained, trained_state, first_loss = step(sharded, opt_state, tokens, targets=targets)
    trained, trained_state, after_loss = step(trained, trained_state, tokens, targets=targets)
    argument, temp = int(memory.argument_size_in_bytes), int(memory.temp_size_in_bytes)
    total = argument + int(memory.output_size_in_bytes) - int(memory.alias_size_in_bytes) + temp
    row = {"state_bytes": state_bytes, "argument_bytes": argument, "temp_bytes": temp,
           "total_bytes": total, "loss": float(first_loss),
           "loss_after_step": float(after_loss)}
    return row, _refeeding(step, trained, trained_state, *batch)


def measure_in_this_process(quick: bool) -> dict[str, Any]:
    """Compile, check and time both layouts on each device count; a JSON-ready dict."""
    import jax
    import numpy as np

    from jaxlean.bench._measure import wall_times
    from jaxlean.compile.cache import use_compilation_cache
    from jaxlean.models.lm.data import synthetic_batch
    from jaxlean.models.lm.transformer import Transformer, TransformerConfig

    use_compilation_cache(False)  # also after a compile
    sizes, batch, length, counts, repeats, min_seconds = SIZES[quick]
    if jax.device_count() < max(counts):
        raise RuntimeError(f"needs {max(counts)} devices, found {jax.device_count()}")
    config = TransformerConfig(**sizes, remat="full")
    # Host copies: every layout places its own buffers, which its donating step may consume.
    model = jax.tree.map(np.asarray, Transformer(config, key=jax.random.key(0)))
    data = synthetic_batch(0, batch, length, config.vocab_size)
    rows = []
    for n in counts:
        calls = []
        for name, (mesh, rules, tx) in _setups(n).items():
            progress(f"{n} devices, {name}: compile and check")
            row, call = _measure_layout(model, data, mesh, rules, tx)
            rows.append({"devices": n, "layout": name, **row})
            calls.append((call, ()))
        progress(f"{n} devices: step time")
        seconds = wall_times(*calls, repeats=repeats, min_seconds=min_seconds)
        for row, step_s in zip(rows[-len(calls):], seconds, strict=True):
            row["step_s"] = step_s
    return {"config": sizes, "batch": batch, "length": length, "device_counts": counts,
            "rows": rows}


def _case(n: int) -> str:
    return f"{n} device" + ("s" if n > 1 else "")


def _report(result: BenchResult, measured: dict[str, Any]) -> None:
    rows = {(row["devices"], row["layout"]): row for row in measured["rows"]}
    metrics = (("param+opt bytes/device", "state_bytes", "bytes"),
               ("argument bytes/device", "argument_bytes", "bytes"),
               ("temp bytes/device", "temp_bytes", "bytes"),
               ("total bytes/device", "total_bytes", "bytes"),
               ("step time", "step_s", "s"))
    counts = measured["device_counts"]
    for n in counts:
        base, ours = rows[n, "data parallel"], rows[n, "FSDP"]
        for metric, key, unit in metrics:
            result.compare(_case(n), metric, unit, base[key], ours[key],
                           variant="FSDP + packed", baseline_name="data parallel")
    one = rows[1, "FSDP"]
    ratios = {n: rows[n, "FSDP"]["state_bytes"] * n / one["state_bytes"]
              for n in counts[1:]}
    for n, ratio in ratios.items():
        what = f"FSDP param+opt bytes/device x {n} / the same on 1 device ({_case(n)})"
        result.target(what, ratio, 1 + _BYTES_TOLERANCE, "<=")
        result.target(what, ratio, 1 - _BYTES_TOLERANCE, ">=")
    result.notes.append(
        "FSDP param+opt bytes/device x n / 1-device bytes: " + ", ".join(
            f"n={n} {ratio:.4f}" for n, ratio in ratios.items())
        + " (above 1 by the replicated norm weights, their optimizer state and the step count).")
    reference = one["loss_after_step"]
    worst = {layout: max(abs(rows[n, layout]["loss_after_step"] - reference) / abs(reference)
                         for n in counts[1:]) for layout in LAYOUTS}
    more = ", ".join(str(n) for n in counts[1:])
    result.target("FSDP loss after one step vs 1 device: max relative difference over "
                  f"{more} devices", worst["FSDP"], _LOSS_TOLERANCE, "<=")
    result.notes.append(
        f"Loss after one step (of the updated parameters) on 1 device: {reference:.7f}; max "
        f"relative difference on {more} devices: " + ", ".join(
            f"{layout} {value:.1e}" for layout, value in worst.items()) + ".")
    xs = list(counts)
    result.plots.append(Plot(
        "state_bytes", "parameter + optimizer-state bytes per device", "devices",
        "MiB per device", {layout: (xs, [rows[n, layout]["state_bytes"] / 2**20 for n in xs])
                           for layout in LAYOUTS}, logx=True, logy=True))


@register("scale", "sharded transformer training: per-device memory and step time on 1, 2, 4, "
                   "8 devices")
def run(ctx: BenchContext) -> BenchResult:
    """Run the scale benchmark: per-device state bytes on a mesh."""
    result = BenchResult("scale", "sharded training: data parallel vs FSDP + packed optimizer")
    devices = max(device_counts(ctx.quick))
    ctx.step(f"child process with {devices} forced host devices")
    measured = run_child("jaxlean.bench.scale", devices, ctx)
    sizes = ", ".join(f"{key}={value}" for key, value in measured["config"].items())
    result.notes.append(
        f"Transformer {sizes}; global batch {measured['batch']} x {measured['length']} tokens "
        "at every device count; make_train_step(loss, donate='all'), config remat='full', "
        "donating model and optimizer state, adamw(1e-3). Data parallel: mesh data=n, parameters "
        "replicated, plain optax.adamw; FSDP: mesh fsdp=n, transformer_rules(), "
        "packed(optax.adamw).")
    result.notes.append(
        f"The {devices} devices are forced host devices (XLA_FLAGS=--xla_force_host_"
        f"platform_device_count) sharing this machine's {os.cpu_count()} CPU cores, so step "
        "time cannot fall in proportion to n here: it measures the overhead of partitioning, "
        "not a speed-up. Per-device bytes are what XLA would allocate on each real device: "
        "parameter+optimizer bytes exactly, from each array's first shard; argument, temp and "
        "total (arguments + outputs - donated + temp) from compiled.memory_analysis().")
    _report(result, measured)
    return result


if __name__ == "__main__":
    finish(measure_in_this_process("--quick" in sys.argv[1:]))
