"""Write TRL's ``GRPOTrainer`` first step on fixed completions and rewards, for jaxlean's tests.

Uses the tokenizer and tiny random Llama of ``tests/models/lm/data/fixtures/trl/`` (from
``scripts/make_trl_fixtures.py``). Two chat prompts, four completions each: the
completions are fixed texts handed to TRL through its ``rollout_func`` hook (no sampling)
and the rewards a fixed table of those texts, so both sides train on the same batch. For
``loss_type`` ``grpo`` (``beta`` 0.04), ``dr_grpo`` (``beta`` 0.04) and ``dapo`` (``beta`` 0),
``grpo_first_step.json`` holds each row's prompt and completion ids (in TRL's order), the
rewards, TRL's advantages, and the loss, ``kl`` / ``clip_ratio`` metrics and gradients of
TRL's first training step (torch on CPU, float32).

``tests/models/lm/data/test_trl_grpo_first_step.py`` rebuilds the batch with jaxlean
(``rollout_batch``, ``group_advantages``, the loss ``grpo_train`` uses) and compares. Needs
torch, trl and transformers (see ``scripts/make_trl_dpo_fixtures.py``)::

    /work/venvs/trl/bin/python scripts/make_trl_grpo_fixtures.py
"""

from __future__ import annotations

import json
import os
import tempfile
from importlib.metadata import version
from pathlib import Path

import numpy as np
import torch
import transformers
import trl
from datasets import Dataset

OUT = Path(__file__).resolve().parents[1] / "tests" / "models" / "lm" / "data" / "fixtures" / "trl"
PROMPTS = [[{"role": "user", "content": "What colour is the sky?"}],
           [{"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Why is the snow white?"}]]
COMPLETIONS = ["Blue.", "The sky is blue because.", "Green, maybe.", "Snow",
               "Because the snow is cold.", "White.", "Yes.", "No, the sun is hot."]
REWARDS = [1.0, 0.5, 0.0, 0.25, 0.75, 1.0, 0.0, 0.1]
GENERATIONS = 4
MAX_COMPLETION = 10
#: (loss_type, beta)
CASES = [("grpo", 0.04), ("dr_grpo", 0.04), ("dapo", 0.0)]


def first_step(tokenizer, loss_type: str, beta: float, work: str) -> dict:
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    model = transformers.AutoModelForCausalLM.from_pretrained(str(OUT / "llama"),
                                                              dtype=torch.float32)
    eos = tokenizer.eos_token_id
    texts = {}

    def rollout(prompts, trainer):
        ids, completions = [], []
        for i, prompt in enumerate(prompts):
            prompt_ids = tokenizer.apply_chat_template(prompt, add_generation_prompt=True,
                                                       tokenize=True, return_dict=True)
            ids.append(list(prompt_ids["input_ids"]))
            group = PROMPTS.index(prompt)
            text = COMPLETIONS[group * GENERATIONS + i % GENERATIONS]
            tokens = tokenizer(text=text, add_special_tokens=False)["input_ids"]
            tokens = tokens[:MAX_COMPLETION - 1] + [eos] if i % 3 else tokens[:MAX_COMPLETION]
            completions.append(tokens)
            texts[tokenizer.decode(tokens, skip_special_tokens=True)] = REWARDS[
                group * GENERATIONS + i % GENERATIONS]
        return {"prompt_ids": ids, "completion_ids": completions, "logprobs": None}

    def reward(completions, **_):
        return [texts[c[0]["content"] if isinstance(c, list) else c] for c in completions]

    args = trl.GRPOConfig(output_dir=work, loss_type=loss_type, beta=beta, report_to=[],
                          use_cpu=True, bf16=False, gradient_checkpointing=False,
                          per_device_train_batch_size=len(COMPLETIONS),
                          num_generations=GENERATIONS, max_completion_length=MAX_COMPLETION,
                          max_steps=1, seed=0, shuffle_dataset=False)
    trainer = trl.GRPOTrainer(model=model, reward_funcs=reward, args=args,
                              processing_class=tokenizer, rollout_func=rollout,
                              train_dataset=Dataset.from_list([{"prompt": p} for p in PROMPTS]))
    batch = next(iter(trainer.get_train_dataloader()))
    trainer.current_gradient_accumulation_steps = 1
    inputs = trainer._prepare_inputs(batch)
    model.zero_grad()
    model.train()
    loss = trainer.compute_loss(model, inputs)
    loss.backward()
    rng = np.random.default_rng(1)
    grads = {}
    for name, param in model.named_parameters():
        grad = param.grad.detach().numpy().astype(np.float64)
        index = rng.choice(grad.size, size=min(8, grad.size), replace=False)
        grads[name] = {"norm": float(np.linalg.norm(grad)), "index": index.tolist(),
                       "values": grad.reshape(-1)[index].tolist()}
    prompt_mask = inputs["prompt_mask"].bool().tolist()
    completion_mask = inputs["completion_mask"].bool().tolist()
    rows = [{"prompt_ids": [t for t, m in zip(p, pm, strict=True) if m],
             "completion_ids": [t for t, m in zip(c, cm, strict=True) if m]}
            for p, pm, c, cm in zip(inputs["prompt_ids"].tolist(), prompt_mask,
                                    inputs["completion_ids"].tolist(), completion_mask,
                                    strict=True)]
    metrics = {k: float(np.mean(v)) for k, v in trainer._metrics["train"].items()
               if k in ("reward", "reward_std", "kl", "clip_ratio/region_mean")}
    rewards = [texts[tokenizer.decode(r["completion_ids"], skip_special_tokens=True)]
               for r in rows]
    return {"loss_type": loss_type, "beta": beta, "num_generations": GENERATIONS,
            "max_completion_length": MAX_COMPLETION, "rows": rows, "rewards": rewards,
            "advantages": inputs["advantages"].reshape(-1).tolist(), "loss": float(loss),
            "metrics": metrics, "grads": grads}


def main() -> None:
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(OUT))
    steps = []
    with tempfile.TemporaryDirectory() as work:
        for loss_type, beta in CASES:
            steps.append(first_step(tokenizer, loss_type, beta, work))
            print(f"{loss_type:8s} beta={beta}: loss {steps[-1]['loss']:.6f} "
                  f"{steps[-1]['metrics']}")
    versions = {p: version(p) for p in ("trl", "transformers", "tokenizers", "torch")}
    (OUT / "grpo_first_step.json").write_text(json.dumps({"versions": versions, "steps": steps},
                                                         indent=1) + "\n")


if __name__ == "__main__":
    main()
