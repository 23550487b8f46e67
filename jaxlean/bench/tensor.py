"""Benchmark ``tensor``: per-device memory of a transformer's loss + gradient, tensor parallel.

Tensor (Megatron) parallelism splits each layer's heads and MLP features over the
``tensor`` mesh axis, so the activations inside attention and the MLP, which dominate
a long sequence's step, are divided by its size. The measuring runs in one child process
(``python -m jaxlean.bench.tensor [--quick]``) with 8 forced host devices: for a fixed
global batch it compiles ``jax.value_and_grad(loss)`` of the model placed by
:func:`~jaxlean.models.lm.rules.transformer_rules` on a mesh ``make_mesh(1, 1, tensor)``
over the first ``tensor`` devices (traced under ``jax.set_mesh``), for tensor = 1, 2, 4, 8,
and reads XLA's per-device temp and argument bytes from ``compiled.memory_analysis()``.
The model runs dense attention without remat, the shape where activations dominate. Each
program is also run once: its loss and gradient norm must equal the 1-device ones.
``--quick``: a smaller model and batch (2 x 128 tokens) on tensor = 1 and 4.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from jaxlean.bench._child import finish, progress, run_child
from jaxlean.bench._registry import BenchContext, BenchResult, Plot, register

__all__ = ["TEMP_RATIO_GOAL", "measure_in_this_process", "run", "tensor_sizes"]

TEMP_RATIO_GOAL = 0.35
"""Goal: temp bytes per device at tensor = 4 over those at tensor = 1 (issue 52)."""
_LOSS_TOLERANCE = 1e-5
# Per mode (quick or not): (config, global batch, tokens per sequence, tensor sizes).
SIZES = {
    False: (dict(vocab_size=256, hidden_size=128, intermediate_size=1024, num_layers=2,
                 num_heads=16, num_kv_heads=8, attention="dense"), 4, 512, (1, 2, 4, 8)),
    True: (dict(vocab_size=64, hidden_size=32, intermediate_size=256, num_layers=2,
                num_heads=8, num_kv_heads=4, attention="dense"), 2, 128, (1, 4)),
}


def tensor_sizes(quick: bool) -> tuple[int, ...]:
    """The tensor axis sizes measured in this mode."""
    return SIZES[quick][3]


def measure_in_this_process(quick: bool) -> dict[str, Any]:
    """Compile, read the memory of and run the loss + gradient per tensor size; a dict."""
    import equinox as eqx
    import jax
    import numpy as np
    import optax
    from jax.sharding import PartitionSpec as P

    from jaxlean.compile.cache import use_compilation_cache
    from jaxlean.models.lm.data import synthetic_batch
    from jaxlean.models.lm.rules import transformer_rules
    from jaxlean.models.lm.transformer import Transformer, TransformerConfig, loss
    from jaxlean.parallel.mesh import make_mesh, shard_batch, shard_model

    use_compilation_cache(False)
    sizes, batch, length, tensors = SIZES[quick]
    if jax.device_count() < max(tensors):
        raise RuntimeError(f"needs {max(tensors)} devices, found {jax.device_count()}")
    config = TransformerConfig(**sizes)
    model = jax.tree.map(np.asarray, Transformer(config, key=jax.random.key(0)))
    data = synthetic_batch(0, batch, length, config.vocab_size)
    rules = (*transformer_rules(), (r".*", P()))
    rows = []
    for tensor in tensors:
        progress(f"tensor={tensor}: compile and run")
        mesh = make_mesh(1, 1, tensor, devices=jax.devices()[:tensor])
        sharded = shard_model(model, mesh, rules)
        tokens, targets = shard_batch(data, mesh)
        arrays, static = eqx.partition(sharded, eqx.is_array)

        def loss_and_grad(arrays, tokens, targets, static=static):
            return jax.value_and_grad(
                lambda a: loss(eqx.combine(a, static), tokens, targets=targets))(arrays)

        with jax.set_mesh(mesh):
            compiled = jax.jit(loss_and_grad).lower(arrays, tokens, targets).compile()
            value, grads = compiled(arrays, tokens, targets)
        memory = compiled.memory_analysis()
        rows.append({"tensor": tensor, "temp_bytes": int(memory.temp_size_in_bytes),
                     "argument_bytes": int(memory.argument_size_in_bytes),
                     "loss": float(value),
                     "grad_norm": float(optax.tree.norm(grads))})
    return {"config": sizes, "batch": batch, "length": length, "tensors": tensors,
            "rows": rows}


@register("tensor", "tensor-parallel transformer: per-device temp memory of loss + gradient "
                    "at tensor = 1, 2, 4, 8")
def run(ctx: BenchContext) -> BenchResult:
    """Run the tensor benchmark: per-device temp bytes against the tensor axis's size."""
    result = BenchResult("tensor", "tensor parallelism: per-device memory of loss + gradient")
    ctx.step("child process with 8 forced host devices")
    measured = run_child("jaxlean.bench.tensor", 8, ctx)
    rows = {row["tensor"]: row for row in measured["rows"]}
    one = rows[1]
    for tensor, row in rows.items():
        case = f"tensor={tensor}"
        for metric, key in (("temp bytes/device", "temp_bytes"),
                            ("argument bytes/device", "argument_bytes")):
            result.compare(case, metric, "bytes", one[key], row[key],
                           variant="tensor parallel", baseline_name="tensor=1")
    if 4 in rows:
        result.target("temp bytes/device at tensor=4 / at tensor=1 (same global batch)",
                      rows[4]["temp_bytes"] / one["temp_bytes"], TEMP_RATIO_GOAL, "<=",
                      noise=0.0)
    worst = max(max(abs(row["loss"] - one["loss"]) / abs(one["loss"]),
                    abs(row["grad_norm"] - one["grad_norm"]) / abs(one["grad_norm"]))
                for row in rows.values())
    result.target("loss and gradient norm vs tensor=1: max relative difference", worst,
                  _LOSS_TOLERANCE, "<=", noise=0.0)
    sizes = ", ".join(f"{key}={value}" for key, value in measured["config"].items())
    result.notes.append(
        f"Transformer {sizes}, no remat; global batch {measured['batch']} x "
        f"{measured['length']} tokens at every tensor size; jax.value_and_grad(loss) compiled "
        "under jax.set_mesh(make_mesh(1, 1, tensor)) on the first `tensor` devices, "
        "parameters placed by transformer_rules(). Temp and argument bytes per device from "
        "compiled.memory_analysis(); each program also ran once and its loss and gradient "
        "norm matched tensor=1's.")
    result.notes.append(
        f"The devices are forced host devices (XLA_FLAGS=--xla_force_host_platform_device_"
        f"count=8) sharing this machine's {os.cpu_count()} CPU cores; memory is what XLA "
        "allocates per device, which does not depend on the cores.")
    xs = list(rows)
    result.plots.append(Plot(
        "tensor_temp_bytes", "temp bytes per device (loss + gradient)", "tensor axis size",
        "MiB per device", {"tensor parallel": (xs, [rows[t]["temp_bytes"] / 2**20 for t in xs])},
        logx=True, logy=True))
    return result


if __name__ == "__main__":
    finish(measure_in_this_process("--quick" in sys.argv[1:]))
