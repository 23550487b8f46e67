"""Write a tiny random checkpoint whose generation config lists two eos ids, and what
``transformers``' ``generate`` returns on it when the call names no eos id.

Saves, under ``tests/models/lm/fixtures/generation/two_eos/``, the checkpoint as
``transformers`` writes it (``config.json``, ``generation_config.json`` with
``eos_token_id: [a, b]``, ``pad_token_id`` and ``max_new_tokens``,
``model.safetensors``) and ``generated.npz``: a left-padded batch of prompts and
``model.generate(input_ids, attention_mask=...)`` (greedy, every other setting
from the generation config), the prompt stripped. The eos ids are chosen among the
tokens the model generates freely so that one row ends at each of them and one row
runs to ``max_new_tokens``. ``tests/models/lm/test_generation_parity.py`` checks
jaxlean's ``generate`` against it without torch (and live, when torch is installed).

Needs the ``hf-parity`` extra (torch, transformers)::

    pip install -e '.[hf-parity]'
    python scripts/make_generation_fixtures.py
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import torch
import transformers

OUT = (Path(__file__).resolve().parents[1] / "tests" / "models" / "lm" / "fixtures"
       / "generation" / "two_eos")
SIZES = dict(vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
             rms_norm_eps=1e-6, rope_theta=10000.0)
PROMPT_LENGTHS = (7, 4, 9)
NEW_TOKENS = 12
PAD = 0


def batch(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Left-padded prompts of :data:`PROMPT_LENGTHS` and their attention mask."""
    rng = np.random.default_rng(seed)
    width = max(PROMPT_LENGTHS)
    ids = np.full((len(PROMPT_LENGTHS), width), PAD, np.int64)
    mask = np.zeros(ids.shape, np.int64)
    for row, length in enumerate(PROMPT_LENGTHS):
        ids[row, width - length:] = rng.integers(2, SIZES["vocab_size"], length)
        mask[row, width - length:] = 1
    return ids, mask


def random_model(seed: int):
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(**SIZES, pad_token_id=PAD, bos_token_id=1,
                                      eos_token_id=None)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    with torch.no_grad():  # random norms, so a wrong reading cannot hide
        for name, param in model.named_parameters():
            if name.endswith("norm.weight"):
                param.copy_(1 + 0.3 * torch.randn_like(param))
    return model.eval()


def choose_eos(free: np.ndarray) -> tuple[int, int] | None:
    """Two ids such that row 0 first meets one, row 1 first meets the other, at different
    steps after the first, and row 2 meets neither (it runs to the limit)."""
    for step_a in range(2, NEW_TOKENS - 2):
        a = int(free[0, step_a])
        for step_b in range(2, NEW_TOKENS - 1):
            b = int(free[1, step_b])
            ends = {a, b}
            if (a == b or step_a == step_b or PAD in ends or set(free[2]) & ends
                    or set(free[0, :step_a]) & ends or set(free[1, :step_b]) & ends):
                continue
            return a, b
    return None


def main() -> None:
    ids, mask = batch(0)
    for seed in range(100):
        model = random_model(seed)
        with torch.no_grad():
            free = model.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                                  max_new_tokens=NEW_TOKENS, do_sample=False, eos_token_id=None,
                                  pad_token_id=PAD)[:, ids.shape[1]:].numpy()
        eos = choose_eos(free)
        if eos is not None:
            break
    else:
        raise SystemExit("no seed gave rows that end at two different eos ids")
    model.generation_config = transformers.GenerationConfig(
        eos_token_id=list(eos), pad_token_id=PAD, bos_token_id=1, do_sample=False,
        max_new_tokens=NEW_TOKENS)
    shutil.rmtree(OUT, ignore_errors=True)
    model.save_pretrained(OUT)
    reloaded = transformers.AutoModelForCausalLM.from_pretrained(
        OUT, attn_implementation="eager", dtype=torch.float32).eval()
    with torch.no_grad():  # no eos, pad, length or sampling argument: all from the files
        out = reloaded.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask))
    generated = out[:, ids.shape[1]:].numpy()
    np.savez_compressed(OUT / "generated.npz", input_ids=ids.astype(np.int32),
                        attention_mask=mask.astype(bool), generated=generated.astype(np.int32),
                        eos=np.asarray(eos, np.int32), seed=np.int32(seed))
    print(f"wrote {OUT}: seed {seed}, eos ids {list(eos)}, generated\n{generated}\n"
          f"transformers {transformers.__version__}, torch {torch.__version__}", file=sys.stderr)


if __name__ == "__main__":
    main()
