"""Benchmark ``rollout``: 64 prompts of mixed lengths through ``generate``, compiles and tokens/s.

An RL loop samples prompts of every length with varying token limits. Here 64
prompts (4 to 120 tokens, ``--quick`` 4 to 60) are completed greedily in 8 calls
of 8, each call with its own ``max_new_tokens`` (8 to 48):

- ``exact shapes`` (the baseline): :func:`~jaxlean.models.lm.generate.generate`
  with ``prompt_buckets="exact", length_buckets="exact"``, i.e. what a
  generate that takes lengths as shapes does: one compile per (longest prompt,
  token limit) of a call;
- ``buckets``: the default power-of-two buckets, lengths and limits as data,
  so one compile per (prompt bucket, new-token bucket).

First both sides' tokens are checked equal (and log-probs close) on every row.
Then, round after round with JAX's caches cleared, each side runs the 64 prompts
cold (compiles included); reported are its compile count, which for the
buckets must equal the number of buckets the calls fall into, the cold
seconds and tokens/s, and the tokens/s once compiled (sampled in alternation).
"""

from __future__ import annotations

import time

import equinox as eqx
import jax
import numpy as np

from jaxlean.bench._measure import SidesDisagreeError, time_alternating
from jaxlean.bench._registry import BenchContext, BenchResult, register
from jaxlean.compile.stats import snapshot
from jaxlean.models.lm.generate import bucket, generate
from jaxlean.models.lm.transformer import Transformer, TransformerConfig

__all__ = ["expected_compiles", "run", "workload"]

PROMPTS, BATCH = 64, 8
CONFIG = dict(vocab_size=2048, hidden_size=256, intermediate_size=704, num_layers=4,
              num_heads=8, num_kv_heads=2)
QUICK_CONFIG = dict(vocab_size=512, hidden_size=128, intermediate_size=352, num_layers=2,
                    num_heads=4, num_kv_heads=2)
SIDES = {"exact shapes": dict(prompt_buckets="exact", length_buckets="exact"),
         "buckets": dict(prompt_buckets="pow2", length_buckets="pow2")}
FUNCTION = "jit(_rollout)"
SAME_TOL = 1e-4


def workload(quick: bool, vocab: int) -> list[tuple[list[list[int]], int]]:
    """8 calls of 8 prompts (mixed lengths) and each call's ``max_new_tokens``."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(4, 61 if quick else 121, size=PROMPTS)
    prompts = [rng.integers(0, vocab, size=n).tolist() for n in lengths]
    limits = rng.integers(8, 49, size=PROMPTS // BATCH)
    return [(prompts[i:i + BATCH], int(limit))
            for i, limit in zip(range(0, PROMPTS, BATCH), limits, strict=True)]


def expected_compiles(calls: list[tuple[list[list[int]], int]], side: str) -> int:
    """Distinct (prompt bucket, new-token bucket) pairs of the calls: the compiles to expect."""
    options = SIDES[side]
    return len({(bucket(max(map(len, prompts)), options["prompt_buckets"]),
                 bucket(limit, options["length_buckets"])) for prompts, limit in calls})


def _run_all(model, calls, options) -> list:
    out = [generate(model, prompts, max_new_tokens=limit, **options) for prompts, limit in calls]
    return jax.block_until_ready(out)


def _check_same(base: list, ours: list) -> None:
    for i, (a, b) in enumerate(zip(base, ours, strict=True)):
        lengths = np.asarray(a.lengths)
        if not np.array_equal(lengths, np.asarray(b.lengths)):
            raise SidesDisagreeError(f"rollout call {i}: lengths differ")
        for row, n in enumerate(lengths):
            tokens_a, tokens_b = np.asarray(a.tokens[row, :n]), np.asarray(b.tokens[row, :n])
            if not np.array_equal(tokens_a, tokens_b):
                raise SidesDisagreeError(f"rollout call {i} row {row}: greedy tokens differ")
            if not np.allclose(a.logprobs[row, :n], b.logprobs[row, :n], rtol=SAME_TOL,
                               atol=SAME_TOL):
                raise SidesDisagreeError(f"rollout call {i} row {row}: log-probs differ")


def _cold(model, calls, options) -> tuple[float, int, int]:
    """Seconds, compiles of ``generate``'s program and tokens of one pass from empty caches."""
    jax.clear_caches()
    snapshot(reset=True)
    start = time.perf_counter()
    out = _run_all(model, calls, options)
    seconds = time.perf_counter() - start
    compiles = snapshot().functions.get(FUNCTION)
    tokens = sum(int(np.sum(r.lengths)) for r in out)
    return seconds, compiles.compiles if compiles else 0, tokens


@register("rollout", "generate on 64 mixed-length prompts: compiles and tokens/s, exact shapes "
          "vs buckets")
def run(ctx: BenchContext) -> BenchResult:
    """Run the rollout benchmark: compiles and tokens/s of mixed-length prompts."""
    config = TransformerConfig(**(QUICK_CONFIG if ctx.quick else CONFIG))
    model = eqx.filter_jit(lambda key: Transformer(config, key=key))(jax.random.key(0))
    calls = workload(ctx.quick, config.vocab_size)
    result = BenchResult("rollout", f"greedy generate of {PROMPTS} prompts of mixed lengths in "
                         f"{len(calls)} calls of {BATCH} (hidden {config.hidden_size}, "
                         f"{config.num_layers} layers, vocab {config.vocab_size})")
    ctx.step("both sides: tokens and log-probs checked equal")
    outputs = {side: _run_all(model, calls, options) for side, options in SIDES.items()}
    _check_same(outputs["exact shapes"], outputs["buckets"])

    rounds = 1 if ctx.quick else 2
    cold: dict[str, list[tuple[float, int, int]]] = {side: [] for side in SIDES}
    for round_ in range(rounds):
        for side, options in SIDES.items():
            ctx.step(f"{side}: cold pass with compiles ({round_ + 1}/{rounds})")
            cold[side].append(_cold(model, calls, options))
    ctx.step("both sides compiled: tokens/s sampled in alternation")
    warm = time_alternating(*[(_run_all, (model, calls, options)) for options in SIDES.values()],
                            repeats=3 if ctx.quick else 5, min_seconds=0.0)

    tokens = cold["buckets"][0][2]
    seconds = {side: float(np.median([s for s, _, _ in runs])) for side, runs in cold.items()}
    compiles = {side: runs[-1][1] for side, runs in cold.items()}
    base, ours = "exact shapes", "buckets"
    result.compare("64 prompts", "compiles", "count", compiles[base], compiles[ours], ours, base)
    result.compare("64 prompts", "cold (with compiles)", "s", seconds[base], seconds[ours], ours,
                   base)
    result.compare("64 prompts", "cold tokens/s", "tokens/s", tokens / seconds[base],
                   tokens / seconds[ours], ours, base)
    result.compare("64 prompts", "compiled tokens/s", "tokens/s", tokens / warm[0].median,
                   tokens / warm[1].median, ours, base)
    buckets = expected_compiles(calls, ours)
    result.target(f"compiles with buckets - number of buckets used ({buckets})",
                  abs(compiles[ours] - buckets), 0)
    result.target("cold seconds, buckets / exact shapes", seconds[ours] / seconds[base], 1.0)
    result.notes.append(
        f"{tokens} tokens generated per pass; exact shapes compiled "
        f"{compiles[base]} times (expected {expected_compiles(calls, base)}); bucketed "
        "programs pad prompts and the cache, so their compiled tokens/s may be lower")
    return result
