"""``jaxlean bench layers``: deep layer stacks as a Python loop vs ``scan_layers``.

For each depth, the gradient step of a residual MLP-block stack is compiled
ahead of time as (a) a Python loop over the layers (the baseline: N traced
copies) and (b) ``scan_layers`` with remat None, ``"full"`` and nested
(``"auto"`` blocks). Reported: trace+lower seconds, compile seconds, XLA temp
bytes, and step time at one depth. The same compile comparison is then made
for the reference transformer's decoder block.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from jaxlean.bench._measure import aot_compile, wall_times
from jaxlean.bench._registry import BenchContext, BenchResult, Plot, register
from jaxlean.bench._transformer_steps import UNROLLED, abstract_model, grad_step
from jaxlean.models.lm.transformer import TransformerConfig
from jaxlean.nn.layers import auto_nested, scan_layers, stack

__all__ = ["block", "init_block", "loop_loss", "run", "scan_loss", "variants"]

TRANSFORMER = dict(vocab_size=512, hidden_size=128, intermediate_size=352, num_heads=4,
                   num_kv_heads=2)
TRANSFORMER_TOKENS = (1, 128)

WIDTH, HIDDEN, TOKENS = 128, 512, 256


def init_block(key: jax.Array) -> dict:
    """Parameters of one MLP block (RMS-norm scale, in and out weights)."""
    k1, k2 = jax.random.split(key)
    return {
        "scale": jnp.ones(WIDTH),
        "w_in": jax.random.normal(k1, (WIDTH, HIDDEN)) / math.sqrt(WIDTH),
        "w_out": jax.random.normal(k2, (HIDDEN, WIDTH)) / math.sqrt(HIDDEN) * 0.5,
    }


def block(params: dict, h: jax.Array) -> jax.Array:
    """One residual MLP block applied to ``h``."""
    normed = h * jax.lax.rsqrt(jnp.mean(h**2, axis=-1, keepdims=True) + 1e-6) * params["scale"]
    return h + jax.nn.gelu(normed @ params["w_in"]) @ params["w_out"]


def loop_loss(layers: list, x: jax.Array) -> jax.Array:
    """The stack's loss with a Python loop over the layers (one trace each)."""
    h = x
    for layer in layers:
        h = block(layer, h)
    return jnp.mean(h**2)


def scan_loss(remat, nested):
    """The stack's loss through ``scan_layers`` with the given remat options."""
    def loss(stacked: dict, x: jax.Array) -> jax.Array:
        h, _ = scan_layers(lambda layer, h, _: (block(layer, h), None), stacked, x,
                           remat=remat, nested=nested)
        return jnp.mean(h**2)

    return loss


def variants(stacked: dict, x: jax.Array) -> list[tuple[str, str, object]]:
    """``(series, label, loss)`` for each jaxlean variant; nested picks its block size."""
    nested = auto_nested(stacked, x)
    return [
        ("scan", "scan", scan_loss(None, None)),
        ("scan remat=full", "scan remat=full", scan_loss("full", None)),
        ("scan nested", f"scan nested=auto ({nested}) remat=full", scan_loss("full", "auto")),
    ]


@register("layers", "deep MLP-block stack: Python loop vs scan_layers (compile s, temp bytes)")
def run(ctx: BenchContext) -> BenchResult:
    """Run the layers benchmark: compile time and memory against depth."""
    depths = [4, 16, 64] if ctx.quick else [4, 16, 64, 256]
    result = BenchResult("layers", f"gradient step of an MLP-block stack ({TOKENS}x{WIDTH}, "
                         f"hidden {HIDDEN}) vs depth")
    x = jax.random.normal(jax.random.key(0), (TOKENS, WIDTH))
    compile_s: dict[str, dict[int, float]] = {}
    temp: dict[str, dict[int, float]] = {}
    step_calls: dict[str, tuple] = {}
    for depth in depths:
        layers = [init_block(k) for k in jax.random.split(jax.random.key(depth), depth)]
        stacked = stack(layers)
        ctx.step(f"depth {depth}: Python loop")
        loop = aot_compile(jax.grad(loop_loss), layers, x)
        compile_s.setdefault("loop", {})[depth] = loop.compile_s
        temp.setdefault("loop", {})[depth] = loop.temp_bytes
        if depth == 16:
            step_calls["loop"] = (loop.executable, (layers, x))
        for series, name, loss in variants(stacked, x):
            ctx.step(f"depth {depth}: {name}")
            scanned = aot_compile(jax.grad(loss), stacked, x)
            compile_s.setdefault(series, {})[depth] = scanned.compile_s
            temp.setdefault(series, {})[depth] = scanned.temp_bytes
            case = f"depth={depth}"
            result.compare(case, "trace+lower", "s", loop.trace_lower_s, scanned.trace_lower_s,
                           name, "python loop")
            result.compare(case, "compile", "s", loop.compile_s, scanned.compile_s, name,
                           "python loop")
            result.compare(case, "temp memory", "bytes", loop.temp_bytes, scanned.temp_bytes, name,
                           "python loop")
            if depth == 16 and series in ("scan", "scan remat=full"):
                step_calls[series] = (scanned.executable, (stacked, x))
    ctx.step("depth 16: step times, sampled in alternation")
    loop_step, *scan_steps = wall_times(*step_calls.values())
    step_s = dict(zip(list(step_calls)[1:], scan_steps, strict=True))
    for series, seconds in step_s.items():
        result.compare("depth=16", "step time", "s", loop_step, seconds, series, "python loop")

    deep = max(d for d in depths if d <= 64)
    result.target(f"scan compile(depth {deep}) / compile(depth 4)",
                  compile_s["scan"][deep] / compile_s["scan"][4], 1.5)
    result.target(f"loop compile / scan compile at depth {deep}",
                  compile_s["loop"][deep] / compile_s["scan"][deep], 5, ">=")
    result.target(f"temp bytes remat=full / no remat at depth {deep}",
                  temp["scan remat=full"][deep] / temp["scan"][deep], 0.25)
    result.target(f"temp bytes nested / remat=full at depth {deep}",
                  temp["scan nested"][deep] / temp["scan remat=full"][deep], 1.0)
    for series, seconds in step_s.items():
        result.target(f"step time {series} / loop at depth 16", seconds / loop_step, 1.2)
    result.notes.append(
        "step time: a scan without remat writes each layer's residuals into stacked buffers "
        "and reads them back in the backward pass; remat='full' recomputes them instead "
        "(compare the two step-time rows)")

    transformer_s = _transformer_block(ctx, result, [4, 16] if ctx.quick else [4, 16, 64])
    result.plots.append(Plot("compile", "compile seconds of the gradient step", "depth",
                             "compile s", {k: (list(v), list(v.values()))
                                           for k, v in {**compile_s, **transformer_s}.items()},
                             logx=True, logy=True))
    result.plots.append(Plot("memory", "XLA temp bytes of the gradient step", "depth",
                             "temp MiB", {k: (list(v), [b / 2**20 for b in v.values()])
                                          for k, v in temp.items()}, logx=True, logy=True))
    return result


def _transformer_block(ctx: BenchContext, result: BenchResult, depths: list[int]) -> dict:
    """Compile seconds of a transformer's loss+gradient, unrolled loop vs scan (remat full)."""
    seconds: dict[str, dict[int, float]] = {"transformer loop": {}, "transformer scan": {}}
    for depth in depths:
        model, tokens = abstract_model(TransformerConfig(num_layers=depth, **TRANSFORMER),
                                       TRANSFORMER_TOKENS)
        ctx.step(f"transformer depth {depth}: Python loop")
        loop = aot_compile(grad_step, model.with_options(**UNROLLED), tokens, tokens)
        ctx.step(f"transformer depth {depth}: scan")
        scanned = aot_compile(grad_step, model.with_options(remat="full"), tokens, tokens)
        case = f"transformer depth={depth}"
        for metric, base, value in [("trace+lower", loop.trace_lower_s, scanned.trace_lower_s),
                                    ("compile", loop.compile_s, scanned.compile_s)]:
            result.compare(case, metric, "s", base, value, "scan remat=full", "python loop")
        seconds["transformer loop"][depth] = loop.trace_lower_s + loop.compile_s
        seconds["transformer scan"][depth] = scanned.trace_lower_s + scanned.compile_s
    deep, scan = depths[-1], seconds["transformer scan"]
    result.target(f"transformer: scan trace+compile(depth {deep}) / (depth 4)",
                  scan[deep] / scan[4], 1.5)
    result.target(f"transformer: loop / scan trace+compile at depth {deep}",
                  seconds["transformer loop"][deep] / scan[deep], 5, ">=", quick=False)
    result.notes.append(
        f"transformer block: hidden {TRANSFORMER['hidden_size']}, {TRANSFORMER['num_heads']} "
        f"heads ({TRANSFORMER['num_kv_heads']} kv), MLP {TRANSFORMER['intermediate_size']}, "
        f"{TRANSFORMER_TOKENS[0]}x{TRANSFORMER_TOKENS[1]} tokens; compiled, not run")
    return seconds
