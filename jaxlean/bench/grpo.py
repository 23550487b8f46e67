"""Benchmark ``grpo``: the GRPO loss and its gradient, chunked (jaxlean) vs full logits vs Tunix.

All sides get the same final hidden states ``[B, C, H]`` of the completions, head
``[H, V]``, sampled tokens, old and reference log-probs, group advantages and
completion mask, and compute the clipped GRPO objective with the k3 KL
("low_var_kl") to the reference, averaged over completion tokens:

- ``full logits`` (baseline): the objective written on ``[B, C, V]`` logits;
- ``jaxlean``: :func:`~jaxlean.loss.policy.policy_gradient_loss` (chunked, no logits);
- ``tunix`` (peer, only where ``google-tunix`` imports): its own
  ``tunix.rl.algo_core.grpo_loss_fn``, per-token log-probs included, on a Flax NNX
  module whose logits are ``hidden @ head``.

Each side's loss and gradients (hidden states and head) are checked against the
baseline first. Reported: XLA temp bytes of the compiled loss+gradient at Qwen3-4B's
head (8 x 1024 completion tokens, H=2560, V=151936; compiled, never run) and the
wall time of a size that runs here, sides alternating.
"""

from __future__ import annotations

import importlib.util
import types
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.bench._measure import SidesDisagreeError, aot_compile, time_alternating
from jaxlean.bench._registry import BenchContext, BenchResult, register
from jaxlean.loss.policy import kl_estimate, policy_gradient_loss

__all__ = ["check_same", "full_logits_loss", "inputs", "jaxlean_loss", "run", "tunix_available",
           "tunix_loss"]

CLIP, BETA = 0.2, 0.04
MEMORY_SIZE = (8, 1024, 2560, 151936)  # B, C, H, V
WALL_SIZE = (4, 512, 512, 32000)
QUICK_WALL_SIZE = (2, 256, 256, 8192)
SAME_RTOL = 1e-4


def inputs(size: tuple[int, int, int, int], concrete: bool = True) -> tuple:
    """``(hidden, head, tokens, old, ref, advantages, mask)`` (or their shapes)."""
    b, c, h, v = size
    if not concrete:
        f32 = jnp.float32
        return (jax.ShapeDtypeStruct((b, c, h), f32), jax.ShapeDtypeStruct((h, v), f32),
                jax.ShapeDtypeStruct((b, c), jnp.int32), jax.ShapeDtypeStruct((b, c), f32),
                jax.ShapeDtypeStruct((b, c), f32), jax.ShapeDtypeStruct((b,), f32),
                jax.ShapeDtypeStruct((b, c), f32))
    keys = jax.random.split(jax.random.key(0), 6)
    hidden = jax.random.normal(keys[0], (b, c, h))
    head = jax.random.normal(keys[1], (h, v)) / np.sqrt(h)
    tokens = jax.random.randint(keys[2], (b, c), 0, v)
    exact = jax.nn.log_softmax(hidden @ head)
    logp = jnp.take_along_axis(exact, tokens[..., None], -1)[..., 0]
    old = logp + 0.1 * jax.random.normal(keys[3], (b, c))
    ref = logp + 0.1 * jax.random.normal(keys[4], (b, c))
    advantages = jax.random.normal(keys[5], (b,))
    lengths = jnp.linspace(c // 2, c, b).astype(jnp.int32)
    mask = (jnp.arange(c)[None] < lengths[:, None]).astype(jnp.float32)
    return hidden, head, tokens, old, ref, advantages, mask


def full_logits_loss(hidden, head, tokens, old, ref, advantages, mask):
    """The objective on full ``[B, C, V]`` logits (the baseline)."""
    logp = jnp.take_along_axis(jax.nn.log_softmax(hidden @ head), tokens[..., None], -1)[..., 0]
    ratio = jnp.exp(logp - old)
    adv = advantages[:, None]
    surrogate = -jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - CLIP, 1 + CLIP) * adv)
    per_token = surrogate + BETA * kl_estimate(logp, ref, "k3")
    return jnp.sum(per_token * mask) / jnp.sum(mask)


def jaxlean_loss(hidden, head, tokens, old, ref, advantages, mask):
    """jaxlean's GRPO loss (clipped ratio, k3 KL) on hidden states and a head."""
    return policy_gradient_loss(hidden, head, targets=tokens, old_logprobs=old,
                                advantages=advantages, mask=mask, clip_eps=CLIP,
                                ref_logprobs=ref, kl_coef=BETA, kl_estimator="k3").loss


def tunix_available() -> bool:
    """Whether ``google-tunix`` is installed (the ``peers`` extra)."""
    return importlib.util.find_spec("tunix") is not None


def tunix_loss() -> Callable:
    """Tunix's ``grpo_loss_fn`` as ``f(hidden, head, tokens, old, ref, advantages, mask)``.

    Its model sees the prompt (one token) and the completion and returns logits for
    every position; position ``t`` predicts completion token ``t``, so the hidden
    states get one trailing row it drops.
    """
    from flax import nnx
    from tunix.rl import algo_core, common

    class HiddenHead(nnx.Module):
        def __init__(self, hidden, head):
            self.hidden, self.head = nnx.Param(hidden), nnx.Param(head)

        def __call__(self, tokens, positions=None, attention_mask=None, cache=None):
            return self.hidden[...] @ self.head[...], None

    config = types.SimpleNamespace(beta=BETA, epsilon=CLIP, epsilon_high=CLIP, epsilon_c=None,
                                   loss_algo="grpo", loss_agg_mode="token-mean", temperature=1.0,
                                   kl_loss_mode="low_var_kl", kl_clamp_value=None)

    def loss(hidden, head, tokens, old, ref, advantages, mask):
        padded = jnp.concatenate([hidden, jnp.zeros_like(hidden[:, :1])], axis=1)
        prompt = jnp.zeros((tokens.shape[0], 1), tokens.dtype)
        example = common.TrainExample(prompt_ids=prompt, prompt_mask=jnp.ones_like(prompt),
                                      completion_ids=tokens, completion_mask=mask,
                                      advantages=advantages, ref_per_token_logps=ref,
                                      old_per_token_logps=old)
        value, _ = algo_core.grpo_loss_fn(HiddenHead(padded, head), example, config, pad_id=-1,
                                          eos_id=-2)
        return value

    return loss


def _sides() -> dict[str, Callable]:
    sides = {"full logits": full_logits_loss, "jaxlean": jaxlean_loss}
    if tunix_available():
        sides["tunix"] = tunix_loss()
    return sides


def _value_and_grad(loss: Callable) -> Callable:
    return jax.value_and_grad(loss, argnums=(0, 1))


def check_same(sides: dict[str, Callable], args: tuple) -> None:
    """Raise :class:`SidesDisagreeError` unless each side's loss and gradients equal the base."""
    results = {name: jax.jit(_value_and_grad(f))(*args) for name, f in sides.items()}
    want = results["full logits"]
    for name, got in results.items():
        for what, a, b in [("loss", got[0], want[0]), ("d hidden", got[1][0], want[1][0]),
                           ("d head", got[1][1], want[1][1])]:
            scale = float(jnp.max(jnp.abs(b))) or 1.0
            if float(jnp.max(jnp.abs(a - b))) > SAME_RTOL * scale:
                raise SidesDisagreeError(f"grpo: {name}'s {what} differs from the full-logits "
                                         "objective; no comparison is reported")


@register("grpo", "GRPO loss+grad: full logits vs jaxlean's chunked head vs Tunix (peers)")
def run(ctx: BenchContext) -> BenchResult:
    """Run the GRPO benchmark: loss and gradient against full logits and Tunix."""
    sides = _sides()
    result = BenchResult("grpo", "GRPO loss and gradient (clipped ratio, k3 KL to a reference)")
    size = QUICK_WALL_SIZE if ctx.quick else WALL_SIZE
    args = inputs(size)
    ctx.step("sides checked against the full-logits objective")
    check_same(sides, args)
    if not ctx.quick:
        abstract = inputs(MEMORY_SIZE, concrete=False)
        temp = {}
        for name, loss in sides.items():
            ctx.step(f"{name}: compile at B, C, H, V = {MEMORY_SIZE}")
            temp[name] = aot_compile(_value_and_grad(loss), *abstract).temp_bytes
        for name in sides:
            if name != "full logits":
                result.compare(f"B,C,H,V={MEMORY_SIZE}", "temp memory", "bytes",
                               temp["full logits"], temp[name], name, "full logits")
        if "tunix" in temp:
            result.compare(f"B,C,H,V={MEMORY_SIZE}", "temp memory", "bytes", temp["tunix"],
                           temp["jaxlean"], "jaxlean", "tunix")
        result.target("jaxlean temp / full-logits temp at Qwen3-4B's head",
                      temp["jaxlean"] / temp["full logits"], 0.1, quick=False)
    ctx.step("wall time, sides alternating")
    compiled = {name: aot_compile(_value_and_grad(loss), *args).executable
                for name, loss in sides.items()}
    timings = dict(zip(compiled, time_alternating(*[(f, args) for f in compiled.values()],
                                                  repeats=5), strict=True))
    result.target("jaxlean / full-logits loss+grad wall time",
                  timings["jaxlean"] / timings["full logits"], 1.0)
    for name, timing in timings.items():
        if name != "full logits":
            result.compare(f"B,C,H,V={size}", "loss+grad time", "s", timings["full logits"],
                           timing, name, "full logits")
    if "tunix" in sides:
        result.compare(f"B,C,H,V={size}", "loss+grad time", "s", timings["tunix"],
                       timings["jaxlean"], "jaxlean", "tunix")
    else:
        result.notes.append('tunix: google-tunix is not installed (`pip install '
                            '"jaxlean[peers]"`), its side is not measured')
    return result
