"""GRPO with LoRA on a Hugging Face checkpoint, end to end, on a toy arithmetic task.

A tiny model is written with ``save_pretrained`` (standing in for a downloaded
checkpoint) and loaded back; LoRA adapters are attached and trained while the
loaded model stays frozen as the KL reference. Each step samples a group of
completions per prompt ``"a+b="`` with ``generate`` (bucketed: it compiles once),
scores them (full reward for the right digit followed by end-of-sequence, less
the further the digit is off), turns the rewards into group-relative advantages
and takes clipped policy-gradient updates with a KL penalty to the reference.
The rollout's own log-probs are the "old" log-probs: no second forward pass.
The adapter is saved in PEFT's layout at the end.

    python examples/grpo.py [--steps 60]

``JAXLEAN_EXAMPLE_SIZE=small`` (what the test suite sets) runs fewer steps.
Prints one line per step and ``result: {json}`` (the rewards per step) at the end.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxlean import cache_stats, packed
from jaxlean.models.lm.generate import Rollout, generate
from jaxlean.models.lm.heads import policy_loss
from jaxlean.models.lm.hf import load_pretrained, save_pretrained
from jaxlean.models.lm.lora import add_lora, is_lora_path
from jaxlean.models.lm.peft import save_lora
from jaxlean.models.lm.transformer import Transformer, TransformerConfig, logprobs
from jaxlean.train.step import make_train_step

PLUS, EQUALS, EOS = 10, 11, 12  # ids 0-9 are the digits
VOCAB = 16
SMALL = os.environ.get("JAXLEAN_EXAMPLE_SIZE") == "small"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10 if SMALL else 60)
    parser.add_argument("--prompts", type=int, default=8, help="prompts per step")
    parser.add_argument("--group", type=int, default=8, help="completions per prompt")
    parser.add_argument("--max-new-tokens", type=int, default=4)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--kl-coef", type=float, default=0.04)
    parser.add_argument("--updates", type=int, default=2, help="optimizer steps per rollout")
    parser.add_argument("--out", help="where to write the checkpoint and adapter (default: temp)")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def make_prompts(rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` prompts ``a + b =`` with a one-digit answer, and the answers."""
    a = rng.integers(0, 10, size=count)
    b = rng.integers(0, 10 - a)
    return np.stack([a, np.full(count, PLUS), b, np.full(count, EQUALS)], axis=1), a + b


def reward(completion: np.ndarray, length: int, answer: int) -> float:
    """1 for the right digit then end-of-sequence; less the further off; half without the end."""
    first = int(completion[0])
    if first > 9:
        return 0.0
    closeness = 1.0 - abs(first - answer) / 9
    ended = length == 2 and int(completion[1]) == EOS
    return closeness if ended else 0.5 * closeness


def grpo_loss(model, inputs, targets, old_logprobs, advantages, *, kl_coef, **batch):
    """The GRPO objective and its statistics (``batch``: attention and loss masks, the
    reference's log-probs)."""
    out = policy_loss(model, inputs, targets, old_logprobs, advantages, kl_coef=kl_coef,
                      clip_eps=0.2, **batch)
    return out.loss, out


@jax.jit
def training_batch(rollout: Rollout) -> tuple[jax.Array, ...]:
    """Next-token layout of prompt + completion (position t predicts token t + 1): inputs,
    targets, attention mask, loss mask (completion tokens only) and the rollout's log-probs."""
    ids, attention = rollout.sequences()
    before = jnp.zeros((ids.shape[0], rollout.prompt.shape[1] - 1))
    mask = jnp.concatenate([before, rollout.completion_mask], axis=1)
    old = jnp.concatenate([before, rollout.logprobs], axis=1)
    return ids[:, :-1], ids[:, 1:], attention[:, :-1], mask, old


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    cache_stats(reset=True)  # count compiles from here on
    out = Path(args.out or tempfile.mkdtemp(prefix="grpo-"))
    config = TransformerConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                               num_layers=2, num_heads=4, num_kv_heads=2, qk_norm=True)
    random_model = eqx.filter_jit(lambda key: Transformer(config, key=key))
    save_pretrained(random_model(jax.random.key(args.seed)), out / "base")

    reference, config, _ = load_pretrained(out / "base", progress=False)
    policy = add_lora(reference, rank=8, key=jax.random.key(args.seed + 1),
                      targets=("q_proj", "v_proj", "up_proj", "down_proj"))
    # Put both models on the device explicitly: the train step returns the policy's
    # adapters placed there, and generate compiles once per placement of its inputs, so a
    # policy left unplaced would make the first rollout's compilation wasted (the base
    # arrays stay shared with the reference; nothing is copied).
    reference, policy = jax.device_put((reference, policy), jax.devices()[0])
    tx = packed(optax.adam(args.lr), trainable=is_lora_path)
    state = tx.init(policy)
    # The policy shares its frozen base arrays with the reference: the step leaves them be.
    step = make_train_step(functools.partial(grpo_loss, kl_coef=args.kl_coef), tx,
                           has_aux=True, metrics=True)
    reference_logprobs = eqx.filter_jit(
        lambda model, inputs, targets, attention: logprobs(model, inputs, targets,
                                                           attention_mask=attention))

    rng = np.random.default_rng(args.seed)
    key = jax.random.key(args.seed + 2)
    history = []
    for i in range(args.steps):
        prompts, answers = make_prompts(rng, args.prompts)
        prompts, answers = np.repeat(prompts, args.group, 0), np.repeat(answers, args.group)
        key, sample_key = jax.random.split(key)
        start = time.perf_counter()
        rollout = generate(policy, prompts, max_new_tokens=args.max_new_tokens, temperature=1.0,
                           key=sample_key, eos_id=EOS)
        lengths = np.asarray(rollout.lengths)
        seconds = time.perf_counter() - start
        tokens = np.asarray(rollout.tokens)
        rewards = np.array([reward(t, n, a) for t, n, a in zip(tokens, lengths, answers,
                                                                  strict=True)])
        grouped = rewards.reshape(args.prompts, args.group)
        advantages = ((grouped - grouped.mean(1, keepdims=True))
                      / (grouped.std(1, keepdims=True) + 1e-4)).reshape(-1)

        inputs, targets, attention, mask, old = training_batch(rollout)
        ref = reference_logprobs(reference, inputs, targets, attention)
        for _ in range(args.updates):
            policy, state, (metrics, stats) = step(
                policy, state, inputs, targets, old, jnp.asarray(advantages, jnp.float32),
                attention_mask=attention, mask=mask, ref_logprobs=ref)
        history.append(float(rewards.mean()))
        print(f"step {i:3d}  reward {rewards.mean():.3f}  kl {float(stats.kl):.4f}  "
              f"clip {float(stats.clip_fraction):.3f}  grad norm {float(metrics.grad_norm):.3f}"
              f"  {lengths.sum() / seconds:8.0f} tokens/s", flush=True)

    save_lora(policy, out / "adapter", base_model=str(out / "base"))
    result = {"rewards": history, "adapter": sorted(p.name for p in (out / "adapter").iterdir()),
              "compiles": {name: f.compiles for name, f in cache_stats().functions.items()
                           if f.compiles}}
    print("result:", json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
