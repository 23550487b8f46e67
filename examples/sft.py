"""Supervised fine-tuning on chat-formatted data, labels written as Hugging Face writes them.

Each example is a conversation rendered with a chat template
(``<user> a + b <end> <assistant> answer <end>``); as in ``transformers``' and
TRL's collators, the labels are the input ids with ``-100`` on the prompt (the
user turn and the assistant header) and on the padding, so only the
assistant's reply is learned. A tiny model written with ``save_pretrained`` is
loaded back, fine-tuned with LoRA, and asked the held-out questions with
``generate`` at the end; the adapter is saved in PEFT's layout.

    python examples/sft.py [--steps 150]

``JAXLEAN_EXAMPLE_SIZE=small`` (what the test suite sets) runs fewer steps.
Prints the loss as it goes and ``result: {json}`` at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxlean import packed
from jaxlean.models.lm.generate import generate
from jaxlean.models.lm.hf import load_pretrained, save_pretrained
from jaxlean.models.lm.lora import add_lora, is_lora_path
from jaxlean.models.lm.peft import save_lora
from jaxlean.models.lm.transformer import Transformer, TransformerConfig, loss
from jaxlean.train.step import make_train_step

PLUS, USER, ASSISTANT, END, PAD = 10, 11, 12, 13, 14  # ids 0-9 are the digits
VOCAB = 16
IGNORE = -100  # Hugging Face's "no label"
WIDTH = 12  # every example padded to this many tokens: one compiled step
SMALL = os.environ.get("JAXLEAN_EXAMPLE_SIZE") == "small"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30 if SMALL else 150)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--out", help="where to write the checkpoint and adapter (default: temp)")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def digits(n: int) -> list[int]:
    return [int(c) for c in str(n)]


def chat(a: int, b: int) -> tuple[list[int], list[int]]:
    """The chat template: ``(prompt ids, reply ids)`` of one question and its answer."""
    prompt = [USER, *digits(a), PLUS, *digits(b), END, ASSISTANT]
    return prompt, [*digits(a + b), END]


def collate(pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Right-padded ``input_ids``, ``attention_mask`` and ``labels`` (-100 off the reply)."""
    ids = np.full((len(pairs), WIDTH), PAD, np.int32)
    labels = np.full((len(pairs), WIDTH), IGNORE, np.int32)
    for row, (a, b) in enumerate(pairs):
        prompt, reply = chat(a, b)
        ids[row, :len(prompt) + len(reply)] = prompt + reply
        labels[row, len(prompt):len(prompt) + len(reply)] = reply
    return ids, ids != PAD, labels


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    out = Path(args.out or tempfile.mkdtemp(prefix="sft-"))
    config = TransformerConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                               num_layers=2, num_heads=4, num_kv_heads=2, qk_norm=True)
    random_model = eqx.filter_jit(lambda key: Transformer(config, key=key))
    save_pretrained(random_model(jax.random.key(args.seed)), out / "base")

    model, config, _ = load_pretrained(out / "base", progress=False)
    model = add_lora(model, rank=8, key=jax.random.key(args.seed + 1),
                     targets=("q_proj", "v_proj", "up_proj", "down_proj"))
    tx = packed(optax.adam(args.lr), trainable=is_lora_path)
    state = tx.init(model)
    # loss(model, input_ids, labels=..., attention_mask=...) is transformers' causal-LM
    # loss: labels shifted inside, -100 skipped.
    step = make_train_step(loss, tx)

    rng = np.random.default_rng(args.seed)
    questions = [(a, b) for a in range(10) for b in range(10)]
    order = rng.permutation(len(questions))
    held_out = [questions[i] for i in order[:16]]
    train = [questions[i] for i in order[16:]]
    losses = []
    for i in range(args.steps):
        ids, attention, labels = collate([train[j] for j in rng.integers(0, len(train),
                                                                     args.batch)])
        model, state, value = step(model, state, jnp.asarray(ids),
                                   attention_mask=jnp.asarray(attention),
                                   labels=jnp.asarray(labels))
        losses.append(float(value))
        if i % 10 == 0 or i == args.steps - 1:
            print(f"step {i:4d}  loss {losses[-1]:.4f}", flush=True)

    prompts = [chat(a, b)[0] for a, b in held_out]
    replies = generate(model, prompts, max_new_tokens=3, eos_id=END)
    tokens, lengths = np.asarray(replies.tokens), np.asarray(replies.lengths)
    answers = [tokens[i, :n].tolist() for i, n in enumerate(lengths)]
    correct = sum(got == chat(a, b)[1] for got, (a, b) in zip(answers, held_out, strict=True))
    print(f"held-out questions answered right: {correct} / {len(held_out)}")
    save_lora(model, out / "adapter", base_model=str(out / "base"))
    result = {"losses": losses, "held_out_correct": int(correct),
              "adapter": sorted(p.name for p in (out / "adapter").iterdir())}
    print("result:", json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
