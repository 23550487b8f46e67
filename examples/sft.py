"""Supervised fine-tuning on text: a chat dataset, the model's own tokenizer and chat template.

What a TRL ``SFTTrainer`` user starts from, built here so nothing is downloaded: a model
directory with a real tokenizer (a byte-level BPE trained with the ``tokenizers`` library,
``tokenizer.json``) and a ChatML chat template whose ``{% generation %}`` markers give the
assistant-token mask, and a JSONL file of conversations
(``{"messages": [{"role": "user", ...}, {"role": "assistant", ...}]}``). The conversations
are tokenized with the chat template as ``transformers`` applies it, with the loss on the
assistant's tokens only (TRL's ``assistant_only_loss=True``), optionally packed several to
a row (``--packing``, TRL's ``packing=True``), and batched reproducibly from a seed. A tiny
model is fine-tuned with LoRA, asked the held-out questions, and its replies decoded to text.

    pip install "jaxlean[text]"   # tokenizers, transformers (no torch), jinja2
    python examples/sft.py [--steps 150] [--packing]

``JAXLEAN_EXAMPLE_SIZE=small`` (what the test suite sets) runs fewer steps.
Prints the loss as it goes and ``result: {json}`` at the end; the metrics of every step go
to TensorBoard event files (``pip install "jaxlean[tensorboard]"``) and ``metrics.jsonl``
under ``<out>/metrics``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from importlib.util import find_spec
from pathlib import Path

import equinox as eqx
import jax
import numpy as np
import optax

from jaxlean import packed
from jaxlean.models.lm.data import Batches, load_tokenizer, tokenize_records
from jaxlean.models.lm.data.toy_tokenizer import write_toy_tokenizer
from jaxlean.models.lm.generate import generate
from jaxlean.models.lm.hf import load_pretrained, save_pretrained
from jaxlean.models.lm.lora import add_lora, is_lora_path
from jaxlean.models.lm.peft import save_lora
from jaxlean.models.lm.tokens import count_tokens
from jaxlean.models.lm.transformer import Transformer, TransformerConfig, loss
from jaxlean.train.metrics_log import MetricsLogger
from jaxlean.train.step import make_train_step

SMALL = os.environ.get("JAXLEAN_EXAMPLE_SIZE") == "small"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30 if SMALL else 150)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq-length", type=int, default=32)
    parser.add_argument("--packing", action="store_true", help="pack several chats per row")
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--out", help="where to write the model, data and adapter (default: temp)")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def conversation(a: int, b: int) -> dict:
    return {"messages": [{"role": "user", "content": f"What is {a} + {b}?"},
                         {"role": "assistant", "content": str(a + b)}]}


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    out = Path(args.out or tempfile.mkdtemp(prefix="sft-"))
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    questions = [(a, b) for a in range(10) for b in range(10)]
    order = rng.permutation(len(questions))
    held_out = [questions[i] for i in order[:16]]
    train = [conversation(*questions[i]) for i in order[16:]]
    with open(out / "train.jsonl", "w") as file:
        file.writelines(json.dumps(record) + "\n" for record in train)

    # The model directory: a tokenizer and chat template, and random weights beside them.
    write_toy_tokenizer(out / "tokenizer", [m["content"] for r in train for m in r["messages"]]
                        + ["user", "assistant", "system"])
    tokenizer = load_tokenizer(out / "tokenizer")
    config = TransformerConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                               num_layers=2, num_heads=4, num_kv_heads=2, qk_norm=True)
    random_model = eqx.filter_jit(lambda key: Transformer(config, key=key))
    save_pretrained(random_model(jax.random.key(args.seed)), out / "base",
                    tokenizer_from=out / "tokenizer")

    # What SFTTrainer(model="base", train_dataset=..., args=SFTConfig(assistant_only_loss=True))
    # does to the data: the chat template, the assistant mask, batches from a seed.
    model, config, _ = load_pretrained(out / "base", progress=False)
    tokenizer = load_tokenizer(out / "base")
    examples = tokenize_records(out / "train.jsonl", tokenizer, assistant_only_loss=True)
    batches = Batches(examples, args.batch, args.seq_length, pad_id=tokenizer.pad_token_id,
                      packing=args.packing, seed=args.seed)
    print(f"{len(examples)} conversations in {len(batches.rows)} rows of {args.seq_length} "
          f"tokens ({batches.efficiency:.0%} real tokens)", flush=True)

    model = add_lora(model, rank=8, key=jax.random.key(args.seed + 1),
                     targets=("q_proj", "v_proj", "up_proj", "down_proj"))
    tx = packed(optax.adam(args.lr), trainable=is_lora_path)
    state = tx.init(model)
    # loss(model, **batch) is transformers' causal-LM loss (labels shifted inside, -100
    # skipped); a packed batch's segment_ids and positions keep its conversations apart
    # (attention within each, positions restarting in each).
    step = make_train_step(loss, tx, metrics=True, count_tokens=count_tokens)
    # loss, grad norm, tokens and tokens/s per step: TensorBoard event files (where
    # tensorboardX is installed) and metrics.jsonl
    log = MetricsLogger(out / "metrics", tensorboard=find_spec("tensorboardX") is not None)
    print(f"metrics: {out / 'metrics'} (tensorboard --logdir {out / 'metrics'}; "
          f"metrics.jsonl)", flush=True)
    losses = []
    for i in range(args.steps):
        batch = next(batches)
        model, state, metrics = step(model, state, **batch)
        log.log(i, metrics)
        losses.append(float(metrics.loss))
        if i % 10 == 0 or i == args.steps - 1:
            print(f"step {i:4d}  loss {losses[-1]:.4f}  (epoch {batches.state.epoch})",
                  flush=True)
    log.close()

    # Ask the held-out questions through the chat template; read the replies as text.
    prompts = [tokenizer.apply_chat_template(conversation(a, b)["messages"][:1],
                                             add_generation_prompt=True)["input_ids"]
               for a, b in held_out]
    replies = tokenizer.decode_batch(generate(model, prompts, max_new_tokens=4,
                                              eos_id=tokenizer.eos_token_id))
    correct = sum(reply.strip() == str(a + b) for reply, (a, b) in zip(replies, held_out,
                                                                       strict=True))
    for reply, (a, b) in list(zip(replies, held_out, strict=True))[:4]:
        print(f"  What is {a} + {b}?  ->  {reply!r}")
    print(f"held-out questions answered right: {correct} / {len(held_out)}")
    save_lora(model, out / "adapter", base_model=str(out / "base"))
    result = {"losses": losses, "held_out_correct": int(correct),
              "efficiency": batches.efficiency, "metrics": str(out / "metrics"),
              "adapter": sorted(p.name for p in (out / "adapter").iterdir())}
    print("result:", json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
