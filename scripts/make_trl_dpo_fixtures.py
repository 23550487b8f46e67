"""Write what TRL's ``DPOTrainer`` makes of small preference datasets, and its first step.

Uses the tokenizer and the tiny random Llama of ``tests/models/lm/data/fixtures/trl/``
(written by ``scripts/make_trl_fixtures.py``) and saves beside them:

- ``prefs.jsonl`` (conversational prompt / chosen / rejected message lists) and
  ``prefs_plain.jsonl`` (plain strings, where TRL appends the eos token);
- ``dpo_first_step.json``: per case (dataset, ``loss_type``, ``label_smoothing``, ``beta``,
  ``max_length``) the ``prompt_ids`` / ``chosen_ids`` / ``rejected_ids`` of TRL's prepared
  dataset, and the loss, logged metrics (``rewards/*``, ``logps/*``) and gradients (each
  parameter's norm and a few entries) of TRL's first training step on the whole dataset
  in one batch, against the reference ``llama_ref/`` (the Llama with its weights perturbed,
  saved here, so the log-ratios and rewards are not zero at the first step; torch on CPU,
  float32).

``tests/models/lm/data/test_trl_dpo_first_step.py`` loads the same files with jaxlean
(no torch) and compares. Needs torch, trl and transformers, e.g.::

    python -m venv /work/venvs/trl && /work/venvs/trl/bin/pip install torch==2.13.0 trl transformers
    /work/venvs/trl/bin/python scripts/make_trl_dpo_fixtures.py
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

OUT = Path(__file__).resolve().parents[1] / "tests" / "models" / "lm" / "data" / "fixtures" / "trl"
WORDS = ["the", "sky", "is", "blue", "grass", "green", "snow", "white", "sun", "hot", "ice",
         "cold", "what", "colour", "why", "because", "yes", "no", "maybe", "please"]

#: (dataset, loss_type, label_smoothing, beta, max_length)
CASES = [
    ("prefs.jsonl", "sigmoid", 0.0, 0.1, None),
    ("prefs.jsonl", "robust", 0.1, 0.1, None),
    ("prefs.jsonl", "sigmoid", 0.0, 0.5, 20),
    ("prefs_plain.jsonl", "sigmoid", 0.0, 0.1, None),
    ("prefs_plain.jsonl", "robust", 0.2, 0.3, None),
]


def sentence(rng: np.random.Generator, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS, int(rng.integers(low, high)))).capitalize() + "."


def datasets(rng: np.random.Generator) -> dict[str, list[dict]]:
    chats = []
    for i in range(6):
        prompt = [{"role": "system", "content": "You are terse."}] if i % 3 == 0 else []
        prompt += [{"role": "user", "content": sentence(rng, 2, 8)}]
        chats.append({"prompt": prompt,
                      "chosen": [{"role": "assistant", "content": sentence(rng, 1, 8)}],
                      "rejected": [{"role": "assistant", "content": sentence(rng, 1, 10)}]})
    plain = [{"prompt": sentence(rng, 2, 7) + " ", "chosen": sentence(rng, 1, 6),
              "rejected": sentence(rng, 1, 7)} for _ in range(5)]
    return {"prefs.jsonl": chats, "prefs_plain.jsonl": plain}


def write_reference(model_dir: Path, out: Path) -> None:
    """The model with every weight perturbed (seeded), saved as safetensors."""
    torch.manual_seed(1)
    model = transformers.AutoModelForCausalLM.from_pretrained(str(model_dir),
                                                              torch_dtype=torch.float32)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(0.05 * torch.randn_like(param))
    model.save_pretrained(str(out), safe_serialization=True)


def first_step(model_dir: Path, tokenizer, records, loss_type, smoothing, beta, max_length,
               work) -> dict:
    load = lambda path: transformers.AutoModelForCausalLM.from_pretrained(
        str(path), torch_dtype=torch.float32)
    model, reference = load(model_dir), load(OUT / "llama_ref")
    args = trl.DPOConfig(output_dir=str(work), loss_type=[loss_type], label_smoothing=smoothing,
                         beta=beta, max_length=max_length, report_to=[], use_cpu=True,
                         bf16=False, gradient_checkpointing=False,
                         per_device_train_batch_size=len(records), max_steps=1, seed=0)
    trainer = trl.DPOTrainer(model=model, ref_model=reference, args=args,
                             processing_class=tokenizer,
                             train_dataset=Dataset.from_list(records))
    rows = [{k: list(row[k]) for k in ("prompt_ids", "chosen_ids", "rejected_ids")}
            for row in trainer.train_dataset]
    batch = next(iter(trainer.get_train_dataloader()))
    trainer.current_gradient_accumulation_steps = 1
    model.zero_grad()
    model.train()
    loss = trainer.training_step(model, batch, None)
    metrics = {k: float(np.mean(v)) for k, v in trainer._metrics["train"].items()
               if k.startswith(("rewards/", "logps/"))}
    rng = np.random.default_rng(1)
    grads = {}
    for name, param in model.named_parameters():
        grad = param.grad.detach().numpy().astype(np.float64)
        index = rng.choice(grad.size, size=min(8, grad.size), replace=False)
        grads[name] = {"norm": float(np.linalg.norm(grad)), "index": index.tolist(),
                       "values": grad.reshape(-1)[index].tolist()}
    return {"rows": rows, "loss": float(loss), "metrics": metrics, "grads": grads}


def main() -> None:
    data = datasets(np.random.default_rng(5))
    for name, records in data.items():
        with open(OUT / name, "w") as file:
            file.writelines(json.dumps(record) + "\n" for record in records)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(OUT))
    write_reference(OUT / "llama", OUT / "llama_ref")
    steps = []
    with tempfile.TemporaryDirectory() as work:
        for name, loss_type, smoothing, beta, max_length in CASES:
            out = first_step(OUT / "llama", tokenizer, data[name], loss_type, smoothing, beta,
                             max_length, work)
            steps.append({"dataset": name, "loss_type": loss_type, "label_smoothing": smoothing,
                          "beta": beta, "max_length": max_length, **out})
            print(f"{name:18s} {loss_type:8s} smoothing={smoothing} beta={beta} "
                  f"max_length={max_length}: loss {out['loss']:.6f}, {out['metrics']}")
    versions = {p: version(p) for p in ("trl", "transformers", "tokenizers", "torch")}
    (OUT / "dpo_first_step.json").write_text(json.dumps({"versions": versions, "steps": steps},
                                                        indent=1) + "\n")


if __name__ == "__main__":
    main()
