"""Benchmark ``rollout_memory``: generation memory at reasoning lengths, dense vs blockwise prefill.

A reasoning rollout reads a long prompt and writes a long completion. The
baseline is generation as it was: the whole prompt in one pass with dense
attention (``attention="dense"``, ``prefill_chunk=None``), whose ``[heads,
prompt, slots]`` scores grow with the square of the prompt. jaxlean's
:func:`~jaxlean.models.lm.generate.generate` by default runs the prompt in chunks
of :data:`~jaxlean.models.lm.kv_cache.PREFILL_CHUNK` tokens with blockwise
attention reading the cache in place, so beyond the KV cache it needs one chunk's
activations. Memory is XLA's ``memory_analysis()`` of the compiled greedy rollout
(:func:`~jaxlean.models.lm.generate.greedy_program`; compiled, never run, at these
sizes), set against the size of the KV cache itself. Before that, both sides
generate from a short prompt on real weights and must return the same tokens.
"""

from __future__ import annotations

import equinox as eqx
import jax
import numpy as np

from jaxlean.bench._measure import SidesDisagreeError, aot_compile, time_alternating
from jaxlean.bench._registry import EXACT, BenchContext, BenchResult, register
from jaxlean.models.lm.generate import bucket, generate, greedy_program
from jaxlean.models.lm.kv_cache import empty_cache
from jaxlean.models.lm.transformer import Transformer, TransformerConfig

__all__ = ["run"]

MIB = 2**20
CONFIG = dict(vocab_size=4096, hidden_size=512, intermediate_size=1408, num_layers=4,
              num_heads=8, num_kv_heads=4)
NEW_TOKENS = 1024
FULL_PROMPTS = (1024, 4096, 16384)
QUICK_PROMPTS = (1024, 4096)
UNBUCKETED = 16400  # padded to 32768 by the power-of-two buckets
SIDES = {"dense prefill, one pass": dict(attention="dense", prefill_chunk=None),
         "jaxlean: blockwise, chunked": dict(attention="auto")}
BASELINE, OURS = SIDES
CHECK_PROMPT, CHECK_NEW = 700, 12
WALL_PROMPT, QUICK_WALL_PROMPT = 2048, 512
SAME_TOL = 1e-4
GOAL_FROM = 4096  # temp <= 1.5x the cache is the goal from this prompt on (below, the one
# layer's weights that the layer scan slices out weigh more than the cache)


def _program(model, prompt: int, options: dict, buckets: str = "pow2"):
    attention = options.get("attention", "auto")
    chunk = options.get("prefill_chunk", "default")
    kwargs = {} if chunk == "default" else {"prefill_chunk": chunk}
    fn, shapes = greedy_program(1, prompt, NEW_TOKENS, prompt_buckets=buckets, **kwargs)
    return aot_compile(fn, model.with_options(attention=attention), *shapes)


def _cache_bytes(model, prompt: int, buckets: str = "pow2") -> int:
    """Bytes of the keys and values of the cache a rollout of ``prompt`` tokens allocates."""
    slots = bucket(prompt, buckets) + bucket(NEW_TOKENS, "pow2")
    cache = jax.eval_shape(lambda m: empty_cache(m, 1, -(-slots // 8) * 8), model)
    return sum(x.size * x.dtype.itemsize for x in (cache.keys, cache.values))


def _check_same(ctx: BenchContext, config: TransformerConfig) -> Transformer:
    ctx.step(f"both sides: greedy tokens from a {CHECK_PROMPT}-token prompt checked equal")
    model = eqx.filter_jit(lambda key: Transformer(config, key=key))(jax.random.key(0))
    prompt = np.random.default_rng(0).integers(0, config.vocab_size, CHECK_PROMPT).tolist()
    out = {}
    for name, options in SIDES.items():
        chunk = options.get("prefill_chunk", "default")
        kwargs = {} if chunk == "default" else {"prefill_chunk": chunk}
        out[name] = generate(model.with_options(attention=options["attention"]), [prompt],
                             max_new_tokens=CHECK_NEW, **kwargs)
    base, ours = out[BASELINE], out[OURS]
    if not np.array_equal(base.tokens, ours.tokens):
        raise SidesDisagreeError("dense and blockwise prefill generate different tokens")
    if not np.allclose(base.logprobs, ours.logprobs, rtol=SAME_TOL, atol=SAME_TOL):
        raise SidesDisagreeError("dense and blockwise prefill give different log-probs")
    return model


def _wall(ctx: BenchContext, result: BenchResult, model: Transformer) -> None:
    length = QUICK_WALL_PROMPT if ctx.quick else WALL_PROMPT
    ctx.step(f"prompt {length}: timing both sides' rollouts (16 new tokens) in alternation")
    prompt = np.random.default_rng(1).integers(0, model.config.vocab_size, length).tolist()
    calls = []
    for options in SIDES.values():
        chunk = options.get("prefill_chunk", "default")
        kwargs = {} if chunk == "default" else {"prefill_chunk": chunk}
        side = model.with_options(attention=options["attention"])

        def call(side=side, kwargs=kwargs):
            return generate(side, [prompt], max_new_tokens=16, **kwargs).tokens

        call()
        calls.append((call, ()))
    base, ours = time_alternating(*calls, repeats=3, min_seconds=0.0)
    result.compare(f"prompt {length} + 16 new tokens", "wall time", "s", base, ours, OURS,
                   BASELINE)


@register("rollout_memory", "generation at reasoning lengths: compiled temp memory of dense "
          "one-pass prefill vs blockwise chunked prefill, against the KV cache's size")
def run(ctx: BenchContext) -> BenchResult:
    """Temp memory of greedy rollouts of 1k-16k-token prompts + 1024 new tokens, both sides."""
    config = TransformerConfig(**CONFIG)
    result = BenchResult("rollout_memory", f"greedy rollout, {NEW_TOKENS} new tokens, batch 1 "
                         f"(hidden {config.hidden_size}, {config.num_layers} layers, "
                         f"{config.num_heads} heads / {config.num_kv_heads} kv, MLP "
                         f"{config.intermediate_size}, vocab {config.vocab_size}, float32)")
    model = _check_same(ctx, config)
    abstract = eqx.filter_eval_shape(lambda: Transformer(config, key=jax.random.key(0)))
    prompts = QUICK_PROMPTS if ctx.quick else FULL_PROMPTS
    layer = sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(abstract.layers)
                ) // config.num_layers
    result.notes.append(f"besides the cache, every rollout's temp holds one layer's weights "
                        f"({layer / MIB:.1f} MiB here), sliced out of the stacked layers by the "
                        "layer scan, whatever the length")
    ours, dense = {}, {}
    for prompt in prompts:
        case = f"prompt {prompt} + {NEW_TOKENS} new tokens"
        temps = {}
        for name, options in SIDES.items():
            ctx.step(f"{case}: compiling {name}")
            temps[name] = _program(abstract, prompt, options).temp_bytes
        cache = _cache_bytes(abstract, prompt)
        ours[prompt], dense[prompt] = temps[OURS], temps[BASELINE]
        result.compare(case, "temp memory", "bytes", temps[BASELINE], temps[OURS], OURS,
                       BASELINE)
        rest = temps[OURS] - cache - layer
        result.notes.append(f"{case}: KV cache {cache / MIB:.1f} MiB; temp / cache: dense "
                            f"{temps[BASELINE] / cache:.2f}, jaxlean {temps[OURS] / cache:.3f} "
                            f"(jaxlean's temp less the cache and one layer's weights: "
                            f"{rest / MIB:.1f} MiB)")
        if prompt >= GOAL_FROM:
            result.target(f"jaxlean temp / KV cache, prompt {prompt}", temps[OURS] / cache,
                          1.5, quick=prompt in QUICK_PROMPTS, noise=EXACT)
    if not ctx.quick:
        result.target(f"jaxlean temp(prompt {prompts[-1]}) / temp(prompt {prompts[-2]})",
                      ours[prompts[-1]] / ours[prompts[-2]], 4.5, quick=False, noise=EXACT)
        ctx.step(f"prompt {UNBUCKETED}: pow2 bucket vs exact length")
        padded, exact = (_program(abstract, UNBUCKETED, SIDES[OURS], buckets).temp_bytes
                         for buckets in ("pow2", "exact"))
        result.target(f"jaxlean temp, prompt {UNBUCKETED} bucketed to "
                      f"{bucket(UNBUCKETED, 'pow2')} / exact", padded / exact, 2.0,
                      quick=False, noise=EXACT)
        result.notes.append(f"prompt {UNBUCKETED}: temp {padded / MIB:.1f} MiB in the pow2 "
                            f"bucket, {exact / MIB:.1f} MiB at the exact length")
    _wall(ctx, result, model)
    result.headline = (f"prompt {prompts[-1]} + {NEW_TOKENS}: jaxlean's rollout temp "
                       f"{ours[prompts[-1]] / MIB:.0f} MiB vs "
                       f"{dense[prompts[-1]] / MIB:.0f} MiB dense one-pass prefill")
    return result
