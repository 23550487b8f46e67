"""Sequence-length part of ``jaxlean bench memory``: flash vs dense attention in a transformer.

Dense attention builds each layer's ``[heads, T, T]`` float32 scores, and the
backward pass needs them again, so its temp memory grows with ``T^2``; flash
attention (:func:`jaxlean.nn.flash.flash_attention`) works in
``[tile, tile]`` blocks and keeps only the output and a log-sum-exp per row,
so its temp memory grows with ``T``. Both sides are the same model's
loss + gradient (remat="full", so the layer inputs are all that is kept
between layers) with ``attention="dense"`` or ``"flash"``; memory comes from
XLA's ``memory_analysis()`` of the compiled step (compiled, never run, at
these sizes). Wall time is measured at ``T=2048``, where both fit, after
checking that the two sides' gradients agree.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp

from jaxlean.bench._measure import SidesDisagreeError, aot_compile, time_alternating
from jaxlean.bench._registry import BenchContext, BenchResult, Plot
from jaxlean.bench._transformer_steps import abstract_model, grad_step
from jaxlean.models.lm.transformer import Transformer, TransformerConfig

__all__ = ["measure_attention_memory"]

MIB = 2**20
CONFIG = dict(vocab_size=4096, hidden_size=1024, intermediate_size=2816, num_layers=4,
              num_heads=16, num_kv_heads=4, remat="full")
FULL_LENGTHS = (2048, 8192, 32768)
QUICK_LENGTHS = (2048, 8192)
WALL_LENGTH = 2048
SIDES = {"dense attention": "dense", "flash attention": "flash"}
BASELINE, FLASH = SIDES
SAME_RTOL = 1e-4  # float32 round-off of two summation orders through four layers


def _temps(ctx: BenchContext, result: BenchResult, config: TransformerConfig,
           lengths: tuple[int, ...]) -> dict[str, dict[int, int]]:
    temps: dict[str, dict[int, int]] = {name: {} for name in SIDES}
    for length in lengths:
        model, tokens = abstract_model(config, (1, length))
        for name, attention in SIDES.items():
            ctx.step(f"attention T={length}: compiling the step with {name}")
            compiled = aot_compile(grad_step, model.with_options(attention=attention),
                                   tokens, tokens)
            temps[name][length] = compiled.temp_bytes
        result.compare(f"4-layer transformer step, T={length}", "temp memory", "bytes",
                       temps[BASELINE][length], temps[FLASH][length], variant=FLASH,
                       baseline_name=BASELINE)
    return temps


def _relative_gap(grads, reference) -> float:
    scale = max(float(jnp.max(jnp.abs(g))) for g in jax.tree.leaves(reference))
    return max(float(jnp.max(jnp.abs(a - b))) / scale
               for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(reference), strict=True))


def _wall(ctx: BenchContext, result: BenchResult, config: TransformerConfig) -> None:
    ctx.step(f"attention T={WALL_LENGTH}: running both steps on real weights")
    model = Transformer(config, key=jax.random.key(0))
    tokens = jax.random.randint(jax.random.key(1), (1, WALL_LENGTH), 0, config.vocab_size)
    targets = jnp.roll(tokens, -1, axis=1)
    steps = {name: (jax.jit(grad_step), (model.with_options(attention=attention), tokens,
                                         targets))
             for name, attention in SIDES.items()}
    grads = {name: fn(*args) for name, (fn, args) in steps.items()}
    gap = _relative_gap(grads[FLASH], grads[BASELINE])
    if not gap <= SAME_RTOL:
        raise SidesDisagreeError(f"flash and dense attention gradients differ: max|diff| / "
                                 f"max|grad| = {gap:.2e} > {SAME_RTOL:.0e}")
    result.target(f"attention: max|grad(flash) - grad(dense)| / max|grad|, T={WALL_LENGTH}",
                  gap, SAME_RTOL, "<=")
    ctx.step(f"attention T={WALL_LENGTH}: timing dense and flash in alternation")
    dense, flash = time_alternating(*steps.values(), repeats=2 if ctx.quick else 5,
                                    min_seconds=0.0)
    case = f"4-layer transformer step, T={WALL_LENGTH}"
    result.compare(case, "wall time", "s", dense, flash, variant=FLASH, baseline_name=BASELINE)
    result.target(f"attention: wall time flash / dense, T={WALL_LENGTH}", flash / dense, 1.1,
                  "<=")


def measure_attention_memory(ctx: BenchContext, result: BenchResult) -> None:
    """Temp bytes of a 4-layer transformer step vs sequence length, flash beside dense."""
    config = TransformerConfig(**CONFIG)
    lengths = QUICK_LENGTHS if ctx.quick else FULL_LENGTHS
    temps = _temps(ctx, result, config, lengths)
    for name, by_length in temps.items():
        for low, high in itertools.pairwise(lengths):
            growth = by_length[high] / by_length[low]
            label = f"attention: {name} temp(T={high}) / temp(T={low})"
            if name == FLASH:  # linear in T: the length ratio (4x) plus headroom
                result.target(label, growth, 4.5, "<=", quick=high in QUICK_LENGTHS)
            else:
                result.notes.append(f"{label} = {growth:.2f} (quadratic: "
                                    f"{(high / low) ** 2:.0f}x)")
    _wall(ctx, result, config)
    result.notes.append(
        "attention config: 4 layers, hidden 1024, 16 heads (4 kv heads, head_dim 64), MLP "
        "2816, vocab 4096, batch 1, float32, remat=\"full\"; flash tile "
        f"{config.attention_tile}; memory compiled with XLA on this backend, not run")
    result.plots.append(Plot("memory_attention_length",
                             "Transformer step temp memory vs sequence length",
                             "tokens", "temp memory (MiB)",
                             {name: ([float(t) for t in lengths],
                                     [by_length[t] / MIB for t in lengths])
                              for name, by_length in temps.items()}, logx=True, logy=True))
