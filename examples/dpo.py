"""DPO with LoRA on a tiny model: preference pairs on a toy arithmetic task.

Each pair shares a prompt ``"a+b="``; the chosen completion is the right digit then
end-of-sequence, the rejected one a wrong digit. LoRA adapters are trained with the
DPO loss (TRL's ``sigmoid``; ``--loss-type hinge`` or ``ipo`` for the others) against
the frozen reference that the adapters modify: ``reference="base"`` runs the policy
without its adapters, on the same arrays. The loss on held-out pairs must fall
(the script exits non-zero otherwise).

    python examples/dpo.py [--steps 60] [--loss-type sigmoid]

``JAXLEAN_EXAMPLE_SIZE=small`` (what the test suite sets) runs fewer steps.
Prints one line per step and ``result: {json}`` at the end.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxlean import packed
from jaxlean.models.lm.lora import add_lora, is_lora_path
from jaxlean.models.lm.preference import dpo_loss
from jaxlean.models.lm.transformer import Transformer, TransformerConfig
from jaxlean.train.step import make_train_step

PLUS, EQUALS, EOS = 10, 11, 12  # ids 0-9 are the digits
VOCAB = 16
PROMPT = 4  # a + b =
SMALL = os.environ.get("JAXLEAN_EXAMPLE_SIZE") == "small"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=15 if SMALL else 60)
    parser.add_argument("--pairs", type=int, default=16, help="preference pairs per step")
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--beta", type=float, default=0.1)
    parser.add_argument("--loss-type", default="sigmoid", choices=["sigmoid", "hinge", "ipo"])
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def make_pairs(rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` pairs as TRL's concatenated batch (chosen rows, then rejected rows): the
    inputs ``[2 count, 5]`` and their next-token targets, -100 on the prompt."""
    a = rng.integers(0, 10, count)
    b = rng.integers(0, 10 - a)
    wrong = (a + b + rng.integers(1, 10, count)) % 10
    prompt = np.stack([a, np.full(count, PLUS), b, np.full(count, EQUALS)], axis=1)
    sequences = np.concatenate([
        np.concatenate([prompt, (a + b)[:, None], np.full((count, 1), EOS)], axis=1),
        np.concatenate([prompt, wrong[:, None], np.full((count, 1), EOS)], axis=1)])
    targets = sequences[:, 1:].copy()
    targets[:, :PROMPT - 1] = -100  # no loss on the prompt
    return sequences[:, :-1], targets


def loss_fn(model, tokens, targets, *, beta, loss_type):
    out = dpo_loss(model, tokens, targets=targets, reference="base", beta=beta,
                   loss_type=loss_type)
    return out.loss, out


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    config = TransformerConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                               num_layers=2, num_heads=4, num_kv_heads=2)
    base = Transformer(config, key=jax.random.key(args.seed))
    policy = add_lora(base, rank=8, key=jax.random.key(args.seed + 1),
                      targets=("q_proj", "v_proj", "up_proj", "down_proj"))
    tx = packed(optax.adam(args.lr), trainable=is_lora_path)
    state = tx.init(policy)
    fn = functools.partial(loss_fn, beta=args.beta, loss_type=args.loss_type)
    step = make_train_step(fn, tx, has_aux=True)
    evaluate = eqx.filter_jit(lambda model, tokens, targets: fn(model, tokens, targets)[1])

    rng = np.random.default_rng(args.seed)
    held_out = [jnp.asarray(x) for x in make_pairs(np.random.default_rng(args.seed + 99), 64)]
    before = evaluate(policy, *held_out)
    losses = []
    for i in range(args.steps):
        tokens, targets = make_pairs(rng, args.pairs)
        policy, state, (loss, out) = step(policy, state, jnp.asarray(tokens),
                                          jnp.asarray(targets))
        losses.append(float(loss))
        print(f"step {i:3d}  dpo loss {float(loss):.4f}  reward accuracy "
              f"{float(out.accuracy):.2f}  margin {float(out.margin):+.4f}", flush=True)
    after = evaluate(policy, *held_out)
    result = {"losses": losses, "held_out_before": float(before.loss),
              "held_out_after": float(after.loss), "accuracy_after": float(after.accuracy)}
    print("result:", json.dumps(result), flush=True)
    if not result["held_out_after"] < result["held_out_before"]:
        raise SystemExit(f"the held-out DPO loss did not fall: {result['held_out_before']:.4f} "
                         f"-> {result['held_out_after']:.4f}")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
