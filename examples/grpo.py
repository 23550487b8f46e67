"""GRPO on text: chat prompts, rollouts decoded to text, a reward function of the text.

What a TRL ``GRPOTrainer`` user starts from, built here so nothing is downloaded: a model
directory with a real tokenizer (a byte-level BPE trained with the ``tokenizers`` library)
and a ChatML chat template, prompts as chat messages (``[{"role": "user", "content":
"What is 3 + 4?"}]``), and a reward that is a Python function of each completion's text.
Each step renders the prompts with the chat template (``add_generation_prompt=True``),
samples a group of completions per prompt with ``generate`` (bucketed: it compiles once),
decodes them with the tokenizer, scores the text, turns the rewards into group-relative
advantages and takes clipped policy-gradient updates of LoRA adapters with a KL penalty to
the frozen loaded model. The rollout's own log-probs are the "old" log-probs; the
reference's are computed in micro-batches, and each update accumulates its gradient over
micro-batches (``make_train_step(micro_batches=...)``), as a batch too large for memory
would be. Metrics go to TensorBoard event files and ``metrics.jsonl``; the adapter is
saved in PEFT's layout.

    pip install "jaxlean[text,tensorboard]"
    python examples/grpo.py [--steps 60]

``JAXLEAN_EXAMPLE_SIZE=small`` (what the test suite sets) runs fewer steps.
Prints one line per step and ``result: {json}`` (the rewards per step) at the end; the
metrics of every step (reward, loss, KL, clip fraction, grad norm, tokens/s) go to
TensorBoard event files and ``metrics.jsonl`` under ``<out>/metrics``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys
import tempfile
import time
from importlib.util import find_spec
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxlean import cache_stats, packed
from jaxlean.loss import group_advantages
from jaxlean.models.lm.data import load_tokenizer
from jaxlean.models.lm.data.toy_tokenizer import write_toy_tokenizer
from jaxlean.models.lm.generate import generate
from jaxlean.models.lm.heads import policy_loss
from jaxlean.models.lm.hf import load_pretrained, save_pretrained
from jaxlean.models.lm.lora import add_lora, is_lora_path
from jaxlean.models.lm.peft import save_lora
from jaxlean.models.lm.rollout_batch import rollout_batch
from jaxlean.models.lm.tokens import count_tokens
from jaxlean.models.lm.transformer import Transformer, TransformerConfig, logprobs
from jaxlean.train.metrics_log import MetricsLogger
from jaxlean.train.step import make_train_step

SMALL = os.environ.get("JAXLEAN_EXAMPLE_SIZE") == "small"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10 if SMALL else 60)
    parser.add_argument("--prompts", type=int, default=8, help="prompts per step")
    parser.add_argument("--group", type=int, default=8, help="completions per prompt")
    parser.add_argument("--max-new-tokens", type=int, default=4)
    parser.add_argument("--micro-batches", type=int, default=2,
                        help="micro-batches per update (gradient accumulation)")
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--kl-coef", type=float, default=0.04)
    parser.add_argument("--updates", type=int, default=2, help="optimizer steps per rollout")
    parser.add_argument("--out", help="where to write the checkpoint, adapter and metrics "
                        "(default: temp)")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def question(a: int, b: int) -> list[dict]:
    """The prompt as chat messages, as a GRPO dataset's ``prompt`` column holds them."""
    return [{"role": "user", "content": f"What is {a} + {b}?"}]


def reward(completion: str, answer: int) -> float:
    """1 for exactly the answer (the model then ended its turn); for a reply that starts
    with a number, half of how close that number is; 0 otherwise."""
    if completion.strip() == str(answer):
        return 1.0
    number = re.match(r"\s*(\d+)", completion)
    if number is None:
        return 0.0
    return 0.5 * max(0.0, 1.0 - abs(int(number.group(1)) - answer) / 9)


def grpo_loss(model, *, kl_coef, **batch):
    """The GRPO objective and its statistics (``batch``: ``rollout_batch``'s arrays, the
    advantages and the reference's log-probs)."""
    out = policy_loss(model, kl_coef=kl_coef, clip_eps=0.2, **batch)
    return out.loss, out


def completion_tokens(*, mask, **_):
    """What ``grpo_loss``'s mean divides by (it averages over completion tokens): the
    weight of a micro-batch when gradients are accumulated."""
    return jnp.sum(mask)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    cache_stats(reset=True)  # count compiles from here on
    out = Path(args.out or tempfile.mkdtemp(prefix="grpo-"))
    questions = [(a, b) for a in range(10) for b in range(10 - a)]  # one-digit answers

    # The model directory: a tokenizer with a chat template, and random weights beside it.
    # (all_bytes=False: only the corpus's characters, a small vocabulary for a tiny model)
    corpus = [f"What is {a} + {b}?" for a, b in questions] + [
        "user\n", "assistant\n", "system\n", "0123456789"]
    write_toy_tokenizer(out / "tokenizer", corpus, vocab_size=64, all_bytes=False)
    tokenizer = load_tokenizer(out / "tokenizer")
    config = TransformerConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                               num_layers=2, num_heads=4, num_kv_heads=2, qk_norm=True)
    random_model = eqx.filter_jit(lambda key: Transformer(config, key=key))
    save_pretrained(random_model(jax.random.key(args.seed)), out / "base",
                    tokenizer_from=out / "tokenizer")

    reference, config, _ = load_pretrained(out / "base", progress=False)
    tokenizer = load_tokenizer(out / "base")
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
                           has_aux=True, metrics=True, count_tokens=count_tokens,
                           micro_batches=args.micro_batches, loss_weight=completion_tokens)
    reference_logprobs = eqx.filter_jit(functools.partial(logprobs,
                                                          micro_batches=args.micro_batches))

    rng = np.random.default_rng(args.seed)
    key = jax.random.key(args.seed + 2)
    history = []
    # TensorBoard event files (where tensorboardX is installed) and metrics.jsonl
    log = MetricsLogger(out / "metrics", tensorboard=find_spec("tensorboardX") is not None)
    print(f"metrics: {out / 'metrics'} (tensorboard --logdir {out / 'metrics'}; "
          f"metrics.jsonl)", flush=True)
    for i in range(args.steps):
        picked = rng.choice(len(questions), args.prompts)
        chosen = [questions[j] for j in picked]
        prompts = [tokenizer.apply_chat_template(question(a, b), add_generation_prompt=True)
                   ["input_ids"] for a, b in chosen for _ in range(args.group)]
        answers = [a + b for a, b in chosen for _ in range(args.group)]
        key, sample_key = jax.random.split(key)
        start = time.perf_counter()
        rollout = generate(policy, prompts, max_new_tokens=args.max_new_tokens, temperature=1.0,
                           key=sample_key, eos_id=tokenizer.eos_token_id,
                           pad_id=tokenizer.pad_token_id)
        completions = tokenizer.decode_batch(rollout)  # text, the end-of-turn token left out
        seconds = time.perf_counter() - start
        rewards = np.array([reward(text, answer)
                            for text, answer in zip(completions, answers, strict=True)])
        # each prompt's completions are consecutive rows: group_advantages's groups (TRL's)
        advantages = group_advantages(rewards, args.group,
                                      group_ids=np.repeat(picked, args.group))

        batch = rollout_batch(rollout)
        ref = reference_logprobs(reference, batch["input_ids"], targets=batch["targets"],
                                 attention_mask=batch["attention_mask"])
        for _ in range(args.updates):
            policy, state, (metrics, stats) = step(
                policy, state, **batch, advantages=advantages.astype(jnp.float32),
                ref_logprobs=ref)
        history.append(float(rewards.mean()))
        rollout_tokens = int(np.asarray(rollout.lengths).sum())
        log.log(i, {**metrics._asdict(), "reward": rewards.mean(), "kl": stats.kl,
                    "clip_fraction": stats.clip_fraction,
                    "rollout_tokens_per_s": rollout_tokens / seconds})
        print(f"step {i:3d}  reward {rewards.mean():.3f}  kl {float(stats.kl):.4f}  "
              f"clip {float(stats.clip_fraction):.3f}  grad norm {float(metrics.grad_norm):.3f}"
              f"  {rollout_tokens / seconds:8.0f} tokens/s  e.g. {completions[0]!r}", flush=True)
    log.close()

    save_lora(policy, out / "adapter", base_model=str(out / "base"))
    result = {"rewards": history, "adapter": sorted(p.name for p in (out / "adapter").iterdir()),
              "metrics": str(out / "metrics"),
              "compiles": {name: f.compiles for name, f in cache_stats().functions.items()
                           if f.compiles}}
    print("result:", json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
