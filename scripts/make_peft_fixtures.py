"""Write tiny PEFT adapters, saved by PEFT itself, and the logits PEFT computes with them.

Each adapter sits on the ``llama`` fixture of ``make_hf_fixtures.py`` and goes to
``tests/models/lm/fixtures/peft/<name>/``. Adapters jaxlean loads (rsLoRA, rank and
alpha patterns, a head adapter saved with ``lm_head.base_layer.weight``) get random
weights, are saved with ``PeftModel.save_pretrained`` (PEFT's defaults), reloaded with
``PeftModel.from_pretrained`` on a fresh base, and ``expected.npz`` keeps the tokens and
that model's logits. Adapters jaxlean refuses (DoRA, activated LoRA, per-layer ranks)
keep only their ``adapter_config.json``: the refusal happens before any tensor is read.

Needs the ``hf-parity`` extra (torch, transformers, peft)::

    python scripts/make_peft_fixtures.py
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import peft
import torch
import transformers

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "models" / "lm" / "fixtures"
BASE = FIXTURES / "llama"
OUT = FIXTURES / "peft"
LOADED = {
    "rslora": dict(r=4, lora_alpha=6, use_rslora=True, target_modules=["q_proj", "v_proj"]),
    "patterns": dict(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj", "down_proj"],
                     rank_pattern={"v_proj": 4, r"model\.layers\.\d+\.mlp\.down_proj": 3},
                     alpha_pattern={"down_proj": 9}),
    "lm_head": dict(r=2, lora_alpha=4, target_modules=["q_proj", "lm_head"]),
    "all_linear": dict(r=2, lora_alpha=2, target_modules="all-linear"),
}
REFUSED = {
    "dora": dict(r=2, lora_alpha=4, target_modules=["q_proj"], use_dora=True),
    "alora": dict(r=2, lora_alpha=4, target_modules=["q_proj"], alora_invocation_tokens=[5, 7]),
    "per_layer_rank": dict(r=2, lora_alpha=4, target_modules=["q_proj"],
                           rank_pattern={"model.layers.0.self_attn.q_proj": 4}),
}


def base_model() -> torch.nn.Module:
    return transformers.AutoModelForCausalLM.from_pretrained(BASE, attn_implementation="eager")


def write(name: str, options: dict, seed: int, loaded: bool) -> None:
    torch.manual_seed(seed)
    config = peft.LoraConfig(task_type="CAUSAL_LM", **options)
    model = peft.get_peft_model(base_model(), config)
    model.peft_config["default"].base_model_name_or_path = "../../llama"
    with torch.no_grad():  # "trained": every adapter changes the output
        for pname, param in model.named_parameters():
            if "lora_" in pname:
                param.copy_(0.3 * torch.randn_like(param))
            if pname.endswith("lm_head.base_layer.weight"):  # saved too: PEFT loads it back
                param.add_(0.1 * torch.randn_like(param))
    folder = OUT / name
    shutil.rmtree(folder, ignore_errors=True)
    model.save_pretrained(folder)
    (folder / "README.md").unlink(missing_ok=True)
    if not loaded:
        for file in folder.iterdir():
            if file.name != "adapter_config.json":
                file.unlink()
        return
    reloaded = peft.PeftModel.from_pretrained(base_model(), folder).eval()
    tokens = np.random.default_rng(seed).integers(0, 64, (1, 6))
    with torch.no_grad():
        logits = reloaded(input_ids=torch.tensor(tokens)).logits.float().numpy()
    np.savez_compressed(folder / "expected.npz", tokens=tokens.astype(np.int32),
                        logits=logits.astype(np.float32))


def main() -> None:
    for seed, (name, options) in enumerate(LOADED.items()):
        write(name, options, seed, loaded=True)
    for seed, (name, options) in enumerate(REFUSED.items()):
        write(name, options, seed, loaded=False)
    print(f"wrote {OUT}; peft {peft.__version__}, transformers {transformers.__version__}, "
          f"torch {torch.__version__}", file=sys.stderr)


if __name__ == "__main__":
    main()
