"""Transformer part of ``jaxlean bench memory``: activation memory of a training step vs depth.

The baseline runs the layers in a Python loop without remat, so XLA
keeps every layer's activations for the backward pass and temp memory grows
with depth. jaxlean stacks the layers and runs them with ``scan_layers``:
with ``remat="full"`` only each layer's input (the residual stream) is kept,
with ``nested`` (sqrt-N blocks) only the block inputs. Memory comes from XLA's
``memory_analysis()`` of the compiled loss + gradient (compiled, not run).
Gradients of the remat and non-remat steps are compared at a small depth.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxlean.bench._measure import aot_compile
from jaxlean.bench._registry import EXACT, BenchContext, BenchResult, Plot
from jaxlean.bench._transformer_steps import UNROLLED, abstract_model, grad_step
from jaxlean.models.lm.transformer import Transformer, TransformerConfig

MIB = 2**20
FULL = dict(config=dict(vocab_size=4096, hidden_size=256, intermediate_size=704, num_heads=8,
                        num_kv_heads=4), tokens=(1, 512), depths=(4, 8, 16, 32))
QUICK = dict(config=dict(vocab_size=512, hidden_size=64, intermediate_size=176, num_heads=4,
                         num_kv_heads=2), tokens=(1, 256), depths=(4, 16))
BASELINE = "unrolled loop, no remat"


def _variants() -> dict[str, dict]:
    """name -> structure options of the model's step; nested picks its own block size."""
    return {BASELINE: UNROLLED,
            'jaxlean scan, remat="full"': dict(remat="full"),
            'jaxlean scan, remat="full", nested="auto"': dict(remat="full", nested="auto")}


def _max_relative_gap(grads, reference) -> float:
    scale = max(float(jnp.max(jnp.abs(g))) for g in jax.tree.leaves(reference))
    return max(float(jnp.max(jnp.abs(a - b))) / scale
               for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(reference), strict=True))


def _gradient_gap(ctx: BenchContext, config: TransformerConfig, shape: tuple[int, int],
                  compiled: dict) -> float:
    """Run the steps compiled at the smallest depth on real weights: the largest
    ``max|grad - grad(no remat)| / max|grad|`` of the remat'd and nested scans against
    both non-remat steps (the unrolled baseline and a scan without remat)."""
    ctx.step(f"transformer: gradients of remat vs no-remat steps (depth {config.num_layers})")
    model = Transformer(config, key=jax.random.key(0))
    tokens = jax.random.randint(jax.random.key(1), shape, 0, config.vocab_size)
    targets = jnp.roll(tokens, -1, axis=1)
    grads = {name: step(model.with_options(**_variants()[name]), tokens, targets)
             for name, step in compiled.items()}
    unrolled = grads.pop(BASELINE)
    scanned = jax.jit(grad_step)(model, tokens, targets)
    return max(_max_relative_gap(g, reference)
               for g in grads.values() for reference in (unrolled, scanned))


def measure_transformer_memory(ctx: BenchContext, result: BenchResult) -> None:
    """Temp bytes of a transformer loss + gradient at several depths, baseline vs jaxlean."""
    setting = QUICK if ctx.quick else FULL
    sizes, shape, depths = setting["config"], setting["tokens"], setting["depths"]
    series: dict[str, list[float]] = {}
    temps: dict[str, dict[int, int]] = {}
    smallest: dict = {}
    for depth in depths:
        config = TransformerConfig(num_layers=depth, **sizes)
        model, tokens = abstract_model(config, shape)
        base = None
        for name, options in _variants().items():
            ctx.step(f"transformer depth {depth}: compiling {name}")
            compiled = aot_compile(grad_step, model.with_options(**options), tokens, tokens)
            temps.setdefault(name, {})[depth] = compiled.temp_bytes
            if depth == depths[0]:
                smallest[name] = compiled.executable
            if name == BASELINE:
                base = compiled
                continue
            case = f"transformer step, depth {depth}"
            result.compare(case, "temp memory", "bytes", base.temp_bytes, compiled.temp_bytes,
                           variant=name, baseline_name=BASELINE)
            result.compare(case, "trace+compile time", "s",
                           base.trace_lower_s + base.compile_s,
                           compiled.trace_lower_s + compiled.compile_s,
                           variant=name, baseline_name=BASELINE)
    low, high = depths[0], depths[-1]
    for name, by_depth in temps.items():
        series[name] = [by_depth[d] / MIB for d in depths]
        growth = by_depth[high] / by_depth[low]
        if name == BASELINE:
            result.notes.append(f"transformer: without remat temp({high})/temp({low}) = "
                                f"{growth:.2f} (grows with depth)")
        else:
            result.target(f"transformer {name}: temp({high})/temp({low})", growth, 2.0, "<=",
                          noise=EXACT)
    gap = _gradient_gap(ctx, TransformerConfig(num_layers=low, **sizes), shape, smallest)
    result.target(f"transformer: max|grad(remat, nested) - grad(no remat)| / max|grad|, "
                  f"depth {low}", gap, 1e-6, "<=", noise=EXACT)
    batch, length = shape
    result.notes.append(
        f"transformer config: hidden {sizes['hidden_size']}, {sizes['num_heads']} heads "
        f"({sizes['num_kv_heads']} kv), MLP {sizes['intermediate_size']}, vocab "
        f"{sizes['vocab_size']}, batch {batch} x {length} tokens, float32; loss + gradient "
        "compiled with XLA on this backend, never run at these sizes")
    result.plots.append(Plot("memory_transformer_depth", "Transformer step temp memory vs depth",
                             "layers", "temp memory (MiB)",
                             {name: ([float(d) for d in depths], ys)
                              for name, ys in series.items()}, logx=True, logy=True))
