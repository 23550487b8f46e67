"""Benchmark ``memory``: loss memory without ``[tokens, vocab]`` logits, and (when the
transformer part is present) activation memory of a scanned, remat'd transformer.

The loss part measures SkyRL tx's setting at Qwen3-4B's head (T=8192, H=2560,
V=151936): XLA ``memory_analysis()`` of the compiled loss+gradient for full
logits, for SkyRL tx's token chunks (``lax.map`` over chunks, in its default
setting and with each chunk under ``jax.checkpoint``) and for
:func:`jaxlean.cross_entropy` with default settings. These are compiled, never
run, at that size. Wall time is measured at a size that fits, all four sides
alternating (:func:`jaxlean.bench._measure.time_alternating`).

The heads part does the same for distillation (generalised JSD between a
student with H=2560 and a teacher with H=4096, teacher constant) and for the
GRPO objective (clipped ratios, k3 KL to a reference, entropy bonus), each
against the same loss written on full logits.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean._units import format_bytes
from jaxlean.bench._measure import SidesDisagreeError, aot_compile, time_alternating
from jaxlean.bench._registry import EXACT, BenchContext, BenchResult, Plot, register
from jaxlean.loss.chunked import cross_entropy
from jaxlean.loss.distill import distill_loss
from jaxlean.loss.policy import policy_gradient_loss

__all__ = ["full_logits_grpo", "full_logits_jsd", "full_logits_loss", "jaxlean_grpo",
           "jaxlean_jsd", "jaxlean_loss", "run", "skyrl_checkpointed_loss", "skyrl_default_loss"]

GIB = 2**30
MEMORY_SIZE = (8192, 2560, 151936)  # T, H, V: 8k tokens through Qwen3-4B's head
PLOT_TOKENS = (1024, 2048, 4096, 8192)
WALL_SIZE = (2048, 512, 32000)
QUICK_WALL_SIZE = (512, 256, 8192)
SKYRL_CHUNK = 1024
WALL_REPEATS = 5
SAME_RTOL = 1e-4  # float32 round-off of a [T, V] reduction, with headroom
WALL_NOISE = 0.10
"""Stated noise band of a wall-time ratio of alternating loss+grad runs on a shared 2-core VM
(widened to the per-round spread of the ratio when that is larger)."""
_TRANSFORMER_PART = "jaxlean.bench._memory_transformer"


def full_logits_loss(hidden: jax.Array, head: jax.Array, targets: jax.Array) -> jax.Array:
    """Baseline (a): the whole ``[T, V]`` logits, ``log_softmax``, mean NLL."""
    logprobs = jax.nn.log_softmax((hidden @ head).astype(jnp.float32), axis=-1)
    return -jnp.mean(jnp.take_along_axis(logprobs, targets[:, None], axis=-1))


def _skyrl_chunked_loss(hidden: jax.Array, head: jax.Array, targets: jax.Array,
                        checkpoint: bool) -> jax.Array:
    """SkyRL tx's chunked log-probs: ``lax.map`` over token chunks of ``SKYRL_CHUNK``."""
    tokens, width = hidden.shape

    def chunk_logprobs(args):
        h, t = args
        logprobs = jax.nn.log_softmax((h @ head).astype(jnp.float32), axis=-1)
        return jnp.take_along_axis(logprobs, t[:, None], axis=-1)[:, 0]

    chunk = min(SKYRL_CHUNK, tokens)
    chunks = (hidden.reshape(tokens // chunk, chunk, width),
              targets.reshape(tokens // chunk, chunk))
    body = jax.checkpoint(chunk_logprobs) if checkpoint else chunk_logprobs
    return -jnp.mean(jax.lax.map(body, chunks))


def skyrl_default_loss(hidden: jax.Array, head: jax.Array, targets: jax.Array) -> jax.Array:
    """Baseline (b), SkyRL tx's default: the chunks' logits are stored for the backward pass."""
    return _skyrl_chunked_loss(hidden, head, targets, checkpoint=False)


def skyrl_checkpointed_loss(hidden: jax.Array, head: jax.Array, targets: jax.Array
                            ) -> jax.Array:
    """Baseline (c), SkyRL tx with each chunk under ``jax.checkpoint`` (recomputed)."""
    return _skyrl_chunked_loss(hidden, head, targets, checkpoint=True)


def jaxlean_loss(hidden: jax.Array, head: jax.Array, targets: jax.Array) -> jax.Array:
    """(d) :func:`jaxlean.loss.chunked.cross_entropy` with its default settings."""
    return cross_entropy(hidden, head, targets=targets)


METHODS: dict[str, Callable] = {
    "full logits": full_logits_loss,
    "SkyRL tx: lax.map": skyrl_default_loss,
    "SkyRL tx: lax.map + checkpoint": skyrl_checkpointed_loss,
    "jaxlean": jaxlean_loss,
}


BASELINES = [name for name in METHODS if name != "jaxlean"]


def _loss_and_grad(loss: Callable) -> Callable:
    return jax.value_and_grad(loss, argnums=(0, 1))


def _specs(tokens: int, width: int, vocab: int, dtype) -> tuple[jax.ShapeDtypeStruct, ...]:
    return (jax.ShapeDtypeStruct((tokens, width), dtype),
            jax.ShapeDtypeStruct((width, vocab), dtype),
            jax.ShapeDtypeStruct((tokens,), jnp.int32))


def _compiled_memory(ctx: BenchContext, size: tuple[int, int, int], dtype
                     ) -> dict[str, tuple[int, float]]:
    """Temp bytes and compile seconds of loss+grad for each method (compiled, not run)."""
    out = {}
    for name, loss in METHODS.items():
        ctx.step(f"compile {name}, T={size[0]} {jnp.dtype(dtype).name}")
        compiled = aot_compile(_loss_and_grad(loss), *_specs(*size, dtype))
        out[name] = (compiled.temp_bytes, compiled.compile_s)
    return out


def _record_memory(result: BenchResult, size, dtype, measured) -> None:
    tokens, width, vocab = size
    case = f"loss+grad T={tokens} H={width} V={vocab} {jnp.dtype(dtype).name}"
    ours = measured["jaxlean"][0]
    for name in BASELINES:
        result.compare(case, "temp bytes", "bytes", measured[name][0], ours,
                       variant="jaxlean (defaults)", baseline_name=name)
    seconds = ", ".join(f"{name} {s:.1f} s" for name, (_, s) in measured.items())
    result.notes.append(f"{case}: XLA compile time (compile only, not run): {seconds}.")


def _memory_part(ctx: BenchContext, result: BenchResult) -> str:
    """Temp memory at Qwen3-4B's head; returns the float32 figures, in words."""
    f32 = _compiled_memory(ctx, MEMORY_SIZE, jnp.float32)
    _record_memory(result, MEMORY_SIZE, jnp.float32, f32)
    result.target(f"jaxlean loss+grad temp GiB at T={MEMORY_SIZE[0]}, H={MEMORY_SIZE[1]}, "
                  f"V={MEMORY_SIZE[2]} f32, default settings", f32["jaxlean"][0] / GIB, 0.5,
                  noise=EXACT)
    bf16 = _compiled_memory(ctx, MEMORY_SIZE, jnp.bfloat16)
    _record_memory(result, MEMORY_SIZE, jnp.bfloat16, bf16)
    result.notes.append(
        f"bf16 on {jax.default_backend()}: XLA:CPU computes bf16 dots and slices in float32 and "
        "hoists the conversion of the whole bf16 matrix out of loops (1.45 GiB for this head); "
        "jaxlean moves 16-bit head blocks as uint16 to avoid most of it, but the bf16 figures "
        "here still include a full copy of the head. No GPU was lent to this run, so bf16 was "
        "not measured on one." if jax.default_backend() == "cpu" else
        f"bf16 measured on {jax.default_backend()}.")

    tokens = PLOT_TOKENS[:1] + PLOT_TOKENS[-1:] if ctx.quick else PLOT_TOKENS
    series = {name: ([], []) for name in METHODS}
    for t in tokens:
        measured = f32 if t == MEMORY_SIZE[0] else _compiled_memory(
            ctx, (t, *MEMORY_SIZE[1:]), jnp.float32)
        for name, (temp, _) in measured.items():
            series[name][0].append(t)
            series[name][1].append(temp / GIB)
    result.plots.append(Plot(
        "loss_temp_vs_tokens",
        f"loss+grad temp memory, H={MEMORY_SIZE[1]}, V={MEMORY_SIZE[2]}, f32",
        "tokens T", "XLA temp GiB", series, logx=True, logy=True))
    temp = {name: format_bytes(bytes_) for name, (bytes_, _) in f32.items()}
    less = f32["full logits"][0] / f32["jaxlean"][0]
    return (f"loss+grad at Qwen3-4B's head (T={MEMORY_SIZE[0]}, V={MEMORY_SIZE[2]:,}, f32) "
            f"needs {temp['jaxlean']} of temp memory against {temp['full logits']} with full "
            f"logits ({less:.0f}x less) and {temp['SkyRL tx: lax.map + checkpoint']} with "
            "SkyRL tx's checkpointed chunks")


def _same_result(case: str, name: str, reference: tuple, other: tuple) -> str:
    """The loss+grad differences of ``other`` from full logits, in words; raises if they
    are beyond float32 round-off, since then the sides do not compute the same thing."""
    (loss_a, grads_a), (loss_b, grads_b) = reference, other
    loss_error = abs(float(loss_a - loss_b))
    errors = [float(jnp.max(jnp.abs(a - b)) / (jnp.max(jnp.abs(a)) + 1e-30))
              for a, b in zip(grads_a, grads_b, strict=True)]
    text = (f"{case}: |loss difference| {loss_error:.2e}, max |grad difference| / max |grad| "
            f"hidden {errors[0]:.2e}, head {errors[1]:.2e} ({name} vs full logits).")
    if loss_error > SAME_RTOL * abs(float(loss_a)) or max(errors) > SAME_RTOL:
        raise SidesDisagreeError(f"{text} These differ beyond round-off: no timing is reported.")
    return text


def _wall_part(ctx: BenchContext, result: BenchResult) -> str:
    """Time the four sides alternately; returns the wall-time ratio, in words."""
    tokens, width, vocab = QUICK_WALL_SIZE if ctx.quick else WALL_SIZE
    keys = jax.random.split(jax.random.key(0), 3)
    hidden = jax.random.normal(keys[0], (tokens, width), jnp.float32)
    head = jax.random.normal(keys[1], (width, vocab), jnp.float32) / np.sqrt(width)
    targets = jax.random.randint(keys[2], (tokens,), 0, vocab)
    compiled, values = {}, {}
    for name, loss in METHODS.items():
        ctx.step(f"compile loss+grad, {name}, T={tokens}")
        compiled[name] = aot_compile(_loss_and_grad(loss), hidden, head, targets).executable
        values[name] = compiled[name](hidden, head, targets)
    case = f"loss+grad T={tokens} H={width} V={vocab} f32"
    for name in [*BASELINES[1:], "jaxlean"]:
        result.notes.append(_same_result(case, name, values["full logits"], values[name]))
    ctx.step(f"wall time of loss+grad, {len(METHODS)} sides alternating, T={tokens}")
    timings = dict(zip(METHODS, time_alternating(
        *((compiled[name], (hidden, head, targets)) for name in METHODS),
        repeats=WALL_REPEATS, min_seconds=0.1), strict=True))
    for name in BASELINES:
        result.compare(case, "wall time", "s", timings[name], timings["jaxlean"],
                       variant="jaxlean (defaults)", baseline_name=name)
    for name, label in (("full logits", "full-logits"),
                        ("SkyRL tx: lax.map", "SkyRL tx default (lax.map)")):
        result.target(f"jaxlean / {label} wall time of loss+grad ({case})",
                      timings["jaxlean"] / timings[name], 1.0, noise=WALL_NOISE,
                      spread=timings["jaxlean"].ratio_spread(timings[name]))
    if ctx.quick:
        result.notes.append(f"quick mode: wall time measured at T={tokens}, H={width}, "
                            f"V={vocab}, not the full size T={WALL_SIZE[0]}, H={WALL_SIZE[1]}, "
                            f"V={WALL_SIZE[2]}; the temp-memory plot has 2 points instead of "
                            f"{len(PLOT_TOKENS)}.")
    return (f"{timings['jaxlean'] / timings['full logits']:.2f}x full logits' wall time "
            f"(T={tokens}, V={vocab})")


# ----------------------------------------------------------------------------- RL and distillation

HEADS_SIZE = (8192, 2560, 4096, 151936)  # T, student H, teacher H, V
HEADS_WALL_SIZE = (2048, 512, 1024, 32000)
QUICK_HEADS_WALL_SIZE = (512, 256, 384, 8192)
JSD_BETA = 0.5
GRPO_OPTIONS = dict(clip_eps=0.2, clip_eps_high=0.28, kl_coef=0.05, entropy_coef=0.01)


def full_logits_jsd(hs, ws, ht, wt):
    """Generalised JSD written on the two full ``[T, V]`` logit matrices (teacher constant)."""
    a = jax.nn.log_softmax(hs @ ws, axis=-1)
    b = jax.lax.stop_gradient(jax.nn.log_softmax(ht @ wt, axis=-1))
    mix = jnp.logaddexp(b + np.log(JSD_BETA), a + np.log1p(-JSD_BETA))
    per_token = (JSD_BETA * jnp.sum(jnp.exp(b) * (b - mix), -1)
                 + (1 - JSD_BETA) * jnp.sum(jnp.exp(a) * (a - mix), -1))
    return jnp.mean(per_token)


def jaxlean_jsd(hs, ws, ht, wt):
    """jaxlean's chunked Jensen-Shannon distillation loss."""
    return distill_loss(hs, ws, ht, wt, divergence="jsd", beta=JSD_BETA)


def full_logits_grpo(h, w, tokens, old, adv, ref):
    """The GRPO objective of :func:`policy_gradient_loss` written on full logits."""
    logp_all = jax.nn.log_softmax(h @ w, axis=-1)
    logp = jnp.take_along_axis(logp_all, tokens[..., None], -1)[..., 0]
    entropy = -jnp.sum(jnp.exp(logp_all) * logp_all, -1)
    ratio = jnp.exp(logp - old)
    high = GRPO_OPTIONS["clip_eps_high"]
    clipped = jnp.clip(ratio, 1 - GRPO_OPTIONS["clip_eps"], 1 + high)
    surrogate = -jnp.minimum(ratio * adv[:, None], clipped * adv[:, None])
    kl = jnp.exp(ref - logp) - 1 - (ref - logp)
    return jnp.mean(surrogate + GRPO_OPTIONS["kl_coef"] * kl
                    - GRPO_OPTIONS["entropy_coef"] * entropy)


def jaxlean_grpo(h, w, tokens, old, adv, ref):
    """jaxlean's chunked GRPO loss."""
    return policy_gradient_loss(h, w, targets=tokens, old_logprobs=old, advantages=adv,
                                ref_logprobs=ref, **GRPO_OPTIONS).loss


def _heads_specs(objective: str, tokens: int, hs: int, ht: int, vocab: int):
    f32, s = jnp.float32, jax.ShapeDtypeStruct
    if objective == "JSD":
        return (s((tokens, hs), f32), s((hs, vocab), f32), s((tokens, ht), f32),
                s((ht, vocab), f32))
    return (s((1, tokens, hs), f32), s((hs, vocab), f32), s((1, tokens), jnp.int32),
            s((1, tokens), f32), s((1,), f32), s((1, tokens), f32))


HEAD_OBJECTIVES: dict[str, tuple[Callable, Callable]] = {
    "JSD": (full_logits_jsd, jaxlean_jsd),
    "GRPO": (full_logits_grpo, jaxlean_grpo),
}


def _heads_inputs(objective: str, size) -> tuple[jax.Array, ...]:
    """Random inputs of :func:`_heads_specs`'s shapes; heads scaled to O(1) logits and
    old / reference log-probs spread around ``log(1 / V)``."""
    tokens, hs, ht, vocab = size
    k = jax.random.split(jax.random.key(1), 6)
    head = lambda key, width: jax.random.normal(key, (width, vocab)) / np.sqrt(width)
    if objective == "JSD":
        return (jax.random.normal(k[0], (tokens, hs)), head(k[1], hs),
                jax.random.normal(k[2], (tokens, ht)), head(k[3], ht))
    logprobs = lambda key: -np.log(vocab) + jax.random.normal(key, (1, tokens))
    return (jax.random.normal(k[0], (1, tokens, hs)), head(k[1], hs),
            jax.random.randint(k[2], (1, tokens), 0, vocab), logprobs(k[3]),
            jax.random.normal(k[4], (1,)), logprobs(k[5]))


def _heads_memory_part(ctx: BenchContext, result: BenchResult) -> None:
    tokens, hs, ht, vocab = HEADS_SIZE
    for objective, methods in HEAD_OBJECTIVES.items():
        temps = {}
        for name, fn in zip(("full logits", "jaxlean"), methods, strict=True):
            ctx.step(f"compile {objective} loss+grad, {name}, T={tokens}")
            compiled = aot_compile(_loss_and_grad(fn), *_heads_specs(objective, *HEADS_SIZE))
            temps[name] = compiled.temp_bytes
        shape = f"student H={hs}, teacher H={ht}" if objective == "JSD" else f"H={hs}"
        case = f"{objective} loss+grad T={tokens} {shape} V={vocab} f32"
        result.compare(case, "temp bytes", "bytes", temps["full logits"], temps["jaxlean"],
                       variant="jaxlean (defaults)", baseline_name="full logits")
        result.target(f"jaxlean {case} temp GiB", temps["jaxlean"] / GIB, 0.5,
                      noise=EXACT)


def _heads_wall_part(ctx: BenchContext, result: BenchResult) -> None:
    size = QUICK_HEADS_WALL_SIZE if ctx.quick else HEADS_WALL_SIZE
    for objective, methods in HEAD_OBJECTIVES.items():
        args = _heads_inputs(objective, size)
        compiled, values = {}, {}
        for name, fn in zip(("full logits", "jaxlean"), methods, strict=True):
            ctx.step(f"compile {objective} loss+grad, {name}, T={size[0]}")
            compiled[name] = aot_compile(_loss_and_grad(fn), *args)
            values[name] = compiled[name].executable(*args)
        shape = f"student H={size[1]}, teacher H={size[2]}" if objective == "JSD" \
            else f"H={size[1]}"
        case = f"{objective} loss+grad T={size[0]} {shape} V={size[3]} f32"
        result.notes.append(_same_result(case, "jaxlean", values["full logits"],
                                         values["jaxlean"]))
        ctx.step(f"wall time of {objective} loss+grad, both sides alternating")
        times = dict(zip(compiled, time_alternating(
            *((c.executable, args) for c in compiled.values()),
            repeats=WALL_REPEATS, min_seconds=0.1), strict=True))
        result.compare(case, "wall time", "s", times["full logits"], times["jaxlean"],
                       variant="jaxlean (defaults)", baseline_name="full logits")
        # One-pass losses take the matmuls full logits takes (see the note below). GRPO's
        # chunks win at any size; JSD's (two heads, two softmaxes per chunk) only where
        # [T, V] is large: at quick sizes (T=512, V=8192) its full-logits program is small
        # enough that the chunk loop's fixed cost shows (1.05-1.36x here), so there the
        # ratio is reported but the goal is a full-size one.
        result.target(f"jaxlean / full-logits wall time ({case})",
                      times["jaxlean"] / times["full logits"], 1.0, noise=WALL_NOISE,
                      spread=times["jaxlean"].ratio_spread(times["full logits"]),
                      quick=objective != "JSD")
    result.notes.append(
        "matmul count of loss+grad: jaxlean's scalar losses compute each chunk's gradient in "
        "the forward pass (jaxlean.loss.onepass), so JSD/KL take 3 student and 1 teacher "
        "[T, H] x [H, V] products and GRPO / cross-entropy 3, as full logits do.")
    if ctx.quick:
        full = HEADS_WALL_SIZE
        result.notes.append(f"quick mode: distillation / GRPO wall time measured at "
                            f"T={size[0]}, student H={size[1]}, teacher H={size[2]}, "
                            f"V={size[3]}, not T={full[0]}, H={full[1]}/{full[2]}, V={full[3]}.")


@register("memory", "loss+grad memory without [tokens, vocab] logits; transformer remat memory")
def run(ctx: BenchContext) -> BenchResult:
    """Run the memory benchmark: chunked losses and remat'd layers against baselines."""
    result = BenchResult("memory", "memory-lean LM training: chunked loss, remat'd layers")
    memory = _memory_part(ctx, result)
    wall = _wall_part(ctx, result)
    result.headline = f"LM loss: {memory}, at {wall}."
    _heads_memory_part(ctx, result)
    _heads_wall_part(ctx, result)
    if importlib.util.find_spec(_TRANSFORMER_PART) is not None:
        importlib.import_module(_TRANSFORMER_PART).measure_transformer_memory(ctx, result)
    else:
        result.notes.append("transformer depth part not measured: "
                            f"{_TRANSFORMER_PART} is not available.")
    importlib.import_module("jaxlean.bench._memory_attention").measure_attention_memory(ctx, result)
    return result
