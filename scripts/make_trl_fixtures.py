"""Write what TRL's ``SFTTrainer`` makes of a small chat dataset, for jaxlean's data tests.

Saves under ``tests/models/lm/data/fixtures/trl/``: a tiny model directory's tokenizer
(a byte-level BPE trained here with ``tokenizers``, ``tokenizer.json``) with a ChatML
chat template whose ``{% generation %}`` markers give assistant masks; four small JSONL
datasets (conversations, conversational and plain prompt-completion, plain text); and
``trl.json``: for each case (dataset, ``assistant_only_loss``, ``packing``, ``max_length``)
the ``input_ids`` / ``labels`` (/ ``seq_lengths``) of TRL's prepared training dataset, the
padding-free collator's output on the first packed rows, and TRL's ``pack_dataset``
("bfd") on a long-tailed length mix. ``tests/models/lm/data/test_trl_parity.py`` loads the
same files with jaxlean (no torch) and compares token for token.

It also saves a tiny random Llama checkpoint (``llama/``: ``config.json``,
``model.safetensors``) and ``first_step.json``: the loss and gradients of TRL's first
training step on ``conversations.jsonl`` (the whole dataset in one batch), with
``assistant_only_loss`` and ``packing`` on and off: the loss, every parameter's gradient
norm and a few of its entries. ``tests/models/lm/data/test_trl_first_step.py`` loads the
checkpoint and the data with jaxlean and compares.

Needs torch, trl and transformers, e.g. in a separate venv::

    python -m venv /tmp/trl && /tmp/trl/bin/pip install torch==2.13.0 trl transformers
    /tmp/trl/bin/python scripts/make_trl_fixtures.py
"""

from __future__ import annotations

import json
import tempfile
from importlib.metadata import version
from pathlib import Path

import numpy as np
import torch
import transformers
import trl
from datasets import Dataset
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

OUT = Path(__file__).resolve().parents[1] / "tests" / "models" / "lm" / "data" / "fixtures" / "trl"
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['role'] == 'assistant' %}"
    "{% generation %}{{ message['content'] + '<|im_end|>' }}{% endgeneration %}{{ '\\n' }}"
    "{% else %}{{ message['content'] + '<|im_end|>\\n' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
WORDS = ["the", "sky", "is", "blue", "grass", "green", "snow", "white", "sun", "hot", "ice",
         "cold", "what", "colour", "why", "because", "tell", "me", "a", "story", "once",
         "there", "was", "cat", "dog", "who", "ran", "far", "away", "and", "home", "again",
         "yes", "no", "maybe", "please", "thanks"]


def sentence(rng: np.random.Generator, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS, int(rng.integers(low, high)))).capitalize() + "."


def datasets(rng: np.random.Generator) -> dict[str, list[dict]]:
    chats = []
    for i in range(12):
        messages = [{"role": "system", "content": "You are terse."}] if i % 3 == 0 else []
        for _ in range(int(rng.integers(1, 4))):
            messages += [{"role": "user", "content": sentence(rng, 2, 9)},
                         {"role": "assistant", "content": sentence(rng, 1, 14)}]
        chats.append({"messages": messages})
    prompt_completion = [
        {"prompt": [{"role": "user", "content": sentence(rng, 2, 8)}],
         "completion": [{"role": "assistant", "content": sentence(rng, 1, 10)}]}
        for _ in range(6)]
    plain = [{"prompt": sentence(rng, 2, 6) + " ", "completion": sentence(rng, 1, 6)}
             for _ in range(4)]
    text = [{"text": sentence(rng, 3, 20)} for _ in range(4)]
    return {"conversations": chats, "prompt_completion": prompt_completion,
            "plain_prompt_completion": plain, "text": text}


def write_tokenizer(directory: Path, corpus: list[str]) -> None:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(corpus, trainer)
    tokenizer.save(str(directory / "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "chat_template": CHAT_TEMPLATE,
              "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "model_max_length": 512}
    (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=1) + "\n")


CASES = [  # (dataset, assistant_only_loss, packing, max_length)
    ("conversations", False, False, None),
    ("conversations", True, False, None),
    ("conversations", True, False, 24),
    ("conversations", False, True, 64),
    ("conversations", True, True, 64),
    ("prompt_completion", False, False, None),
    ("prompt_completion", True, False, None),
    ("plain_prompt_completion", False, False, None),
    ("text", False, False, None),
]


def prepare(model, tokenizer, records, assistant_only_loss, packing, max_length, work):
    args = trl.SFTConfig(output_dir=str(work), assistant_only_loss=assistant_only_loss,
                         packing=packing, max_length=max_length, report_to=[],
                         per_device_train_batch_size=2, use_cpu=True)
    trainer = trl.SFTTrainer(model=model, args=args, processing_class=tokenizer,
                             train_dataset=Dataset.from_list(records))
    rows = [{k: row[k] for k in ("input_ids", "labels", "seq_lengths") if k in row}
            for row in trainer.train_dataset]
    out = {"rows": rows}
    if packing:
        batch = trainer.data_collator([dict(r) for r in trainer.train_dataset][:2])
        out["collated"] = {k: batch[k].tolist() for k in ("input_ids", "labels", "position_ids")}
    return out


def pack_mix(seq_length: int = 1024, count: int = 5000, seed: int = 1) -> dict:
    """TRL's bfd packing of a long-tailed (lognormal) length mix, some over seq_length."""
    rng = np.random.default_rng(seed)
    lengths = np.clip(rng.lognormal(np.log(seq_length / 8), 1.0, count).astype(int), 1,
                      2 * seq_length).tolist()
    dataset = Dataset.from_dict({"input_ids": [[1] * n for n in lengths]})
    packed = trl.pack_dataset(dataset, seq_length, strategy="bfd")
    real = sum(min(n, seq_length) for n in lengths)
    return {"seq_length": seq_length, "lengths": lengths, "rows": len(packed),
            "efficiency": real / (len(packed) * seq_length)}


FIRST_STEP = [(False, False), (True, False), (False, True), (True, True)]  # assistant, packing
PACKED_LENGTH = 64


def write_llama(directory: Path, vocab_size: int) -> transformers.PreTrainedModel:
    """A tiny random Llama in float32, saved as safetensors (weights large enough that
    attention is far from uniform and every gradient is well above float32 noise)."""
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=vocab_size, hidden_size=16,
                                      intermediate_size=32, num_hidden_layers=2,
                                      num_attention_heads=2, num_key_value_heads=1, head_dim=8,
                                      max_position_embeddings=256, tie_word_embeddings=False,
                                      initializer_range=0.3,
                                      rms_norm_eps=1e-6, pad_token_id=0, bos_token_id=None,
                                      eos_token_id=2)
    model = transformers.LlamaForCausalLM(config).to(torch.float32)
    with torch.no_grad():  # norms away from 1, so their gradients matter to the check
        for name, param in model.named_parameters():
            if "norm" in name:
                param.add_(0.1 * torch.randn_like(param))
    model.save_pretrained(str(directory), safe_serialization=True)
    return model


def first_step(model, tokenizer, records, assistant_only_loss, packing, work) -> dict:
    """TRL's first training step on all of ``records`` in one batch: loss, gradients."""
    args = trl.SFTConfig(output_dir=str(work), assistant_only_loss=assistant_only_loss,
                         packing=packing, max_length=PACKED_LENGTH if packing else None,
                         report_to=[], per_device_train_batch_size=len(records), use_cpu=True,
                         max_steps=1, seed=0)
    trainer = trl.SFTTrainer(model=model, args=args, processing_class=tokenizer,
                             train_dataset=Dataset.from_list(records))
    batch = next(iter(trainer.get_train_dataloader()))
    samples, num_items = trainer.get_batch_samples(iter([batch]), 1, torch.device("cpu"))
    trainer.current_gradient_accumulation_steps = 1
    model.zero_grad()
    model.train()
    loss = trainer.training_step(model, samples[0], num_items)
    rng = np.random.default_rng(1)
    grads = {}
    for name, param in model.named_parameters():
        grad = param.grad.detach().numpy().astype(np.float64)
        index = rng.choice(grad.size, size=min(8, grad.size), replace=False)
        grads[name] = {"norm": float(np.linalg.norm(grad)), "index": index.tolist(),
                       "values": grad.reshape(-1)[index].tolist()}
    model.zero_grad()
    return {"dataset": "conversations.jsonl", "assistant_only_loss": assistant_only_loss,
            "packing": packing, "max_length": PACKED_LENGTH if packing else None,
            "rows": len(trainer.train_dataset), "tokens": int(num_items),
            "loss": float(loss), "grads": grads}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    data = datasets(np.random.default_rng(0))
    for name, records in data.items():
        with open(OUT / f"{name}.jsonl", "w") as file:
            file.writelines(json.dumps(record) + "\n" for record in records)
    corpus = [m["content"] for r in data["conversations"] for m in r["messages"]]
    write_tokenizer(OUT, corpus + WORDS + ["system", "user", "assistant"])
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(OUT))
    config = transformers.Qwen3Config(vocab_size=len(tokenizer), hidden_size=16,
                                      intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=1,
                                      head_dim=8, max_position_embeddings=256)
    model = transformers.AutoModelForCausalLM.from_config(config)
    cases = []
    with tempfile.TemporaryDirectory() as work:
        for name, assistant_only, packing, max_length in CASES:
            prepared = prepare(model, tokenizer, data[name], assistant_only, packing,
                               max_length, work)
            cases.append({"dataset": f"{name}.jsonl", "assistant_only_loss": assistant_only,
                          "packing": packing, "max_length": max_length, **prepared})
            print(f"{name:24s} assistant_only={assistant_only!s:5s} packing={packing!s:5s} "
                  f"max_length={max_length}: {len(prepared['rows'])} rows")
        llama = write_llama(OUT / "llama", len(tokenizer))
        steps = []
        for assistant_only, packing in FIRST_STEP:
            steps.append(first_step(llama, tokenizer, data["conversations"], assistant_only,
                                    packing, work))
            print(f"first step assistant_only={assistant_only!s:5s} packing={packing!s:5s}: "
                  f"loss {steps[-1]['loss']:.6f} over {steps[-1]['tokens']} tokens")
    mix = pack_mix()
    print(f"bfd on the long-tailed mix: {mix['rows']} rows, efficiency {mix['efficiency']:.4f}")
    versions = {p: version(p) for p in ("trl", "transformers", "tokenizers", "torch")}
    (OUT / "trl.json").write_text(json.dumps({"versions": versions, "cases": cases,
                                              "pack_mix": mix}) + "\n")
    (OUT / "first_step.json").write_text(json.dumps({"versions": versions, "steps": steps},
                                                    indent=1) + "\n")


if __name__ == "__main__":
    main()
