"""Write tiny random Hugging Face checkpoints and what ``transformers`` computes on them.

For each supported family this saves, under ``tests/models/lm/fixtures/<name>/``:
``config.json`` as transformers 5 writes it (``rope_parameters``), ``config_4x.json``
(the same model in the 4.x layout: top-level ``rope_theta`` / ``rope_scaling``),
``model.safetensors``, and ``expected.npz`` with the inputs and Hugging Face's
float32 logits, next-token log-probs and greedy tokens (``generate(do_sample=False)``
on a left-padded batch), and ``loss.npz``: the causal-LM loss ``transformers``
computes from ``labels`` (unshifted, ``-100`` on prompts and padding) and an
``attention_mask`` on a right-padded batch. Under ``composite/<name>/`` it saves tiny
vision-language checkpoints (LLaVA, Mistral 3) with the logits they compute on text
alone. The tests compare jaxlean against these without torch.

Needs the ``hf-parity`` extra (torch, transformers)::

    pip install -e '.[hf-parity]'
    python scripts/make_hf_fixtures.py           # everything (new random weights)
    python scripts/make_hf_fixtures.py loss      # loss.npz only, from the stored weights
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from safetensors.numpy import load_file, save_file

OUT = Path(__file__).resolve().parents[1] / "tests" / "models" / "lm" / "fixtures"
SIZES = dict(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
             rms_norm_eps=1e-6)
LLAMA3 = dict(rope_type="llama3", rope_theta=500000.0, factor=8.0, low_freq_factor=1.0,
              high_freq_factor=4.0, original_max_position_embeddings=8)
FAMILIES = {
    "llama": ("LlamaConfig", dict(rope_parameters=dict(rope_type="default",
                                                       rope_theta=500000.0))),
    "llama31": ("LlamaConfig", dict(rope_parameters=LLAMA3)),
    "llama_linear": ("LlamaConfig", dict(rope_parameters=dict(rope_type="linear", factor=2.0,
                                                              rope_theta=10000.0))),
    "qwen2": ("Qwen2Config", dict(rope_parameters=dict(rope_type="default",
                                                       rope_theta=1000000.0))),
    "qwen3_tied": ("Qwen3Config", dict(head_dim=8, tie_word_embeddings=True,
                                       rope_parameters=dict(rope_type="default",
                                                            rope_theta=1000000.0))),
    "mistral": ("MistralConfig", dict(sliding_window=4, rope_parameters=dict(
        rope_type="default", rope_theta=10000.0))),
}
LENGTH, PADS, NEW_TOKENS = 10, 3, 6


def legacy_layout(config: dict) -> dict:
    """The transformers 4.x ``config.json`` of the same model."""
    config = dict(config)
    params = dict(config.pop("rope_parameters"))
    config["rope_theta"] = params.pop("rope_theta")
    config["rope_scaling"] = None if params["rope_type"] == "default" else params
    return config


def write(name: str, config_class: str, options: dict, seed: int) -> None:
    torch.manual_seed(seed)
    config = getattr(transformers, config_class)(**SIZES, **options, pad_token_id=0,
                                                 eos_token_id=None, bos_token_id=None)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    with torch.no_grad():  # random norms and biases, so a wrong reading cannot hide
        for pname, param in model.named_parameters():
            if pname.endswith(("norm.weight", ".bias")):
                param.copy_(1 + 0.3 * torch.randn_like(param) if "norm" in pname
                            else 0.3 * torch.randn_like(param))
    model.eval()
    folder = OUT / name
    shutil.rmtree(folder, ignore_errors=True)
    model.save_pretrained(folder)
    for extra in ("generation_config.json",):
        (folder / extra).unlink(missing_ok=True)
    hf = json.loads((folder / "config.json").read_text())
    (folder / "config_4x.json").write_text(json.dumps(legacy_layout(hf), indent=2) + "\n")
    if config.tie_word_embeddings:  # a tied file that also stores the head (HF ignores it)
        tensors = load_file(str(folder / "model.safetensors"))
        tensors["lm_head.weight"] = tensors["model.embed_tokens.weight"].copy()
        save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})

    rng = np.random.default_rng(seed)
    tokens = rng.integers(1, SIZES["vocab_size"], (2, LENGTH))
    mask = np.ones((2, LENGTH), bool)
    mask[0, :PADS] = False
    tokens[0, :PADS] = 0
    positions = np.maximum(np.cumsum(mask, axis=1) - 1, 0)
    with torch.no_grad():
        out = model(input_ids=torch.tensor(tokens), attention_mask=torch.tensor(mask.astype(int)),
                    position_ids=torch.tensor(positions))
        logits = out.logits.float().numpy()
        logp = torch.log_softmax(out.logits.float(), -1)[:, :-1]
        logprobs = logp.gather(-1, torch.tensor(tokens[:, 1:, None])).squeeze(-1).numpy()
        greedy = model.generate(input_ids=torch.tensor(tokens),
                                attention_mask=torch.tensor(mask.astype(int)),
                                max_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=0,
                                eos_token_id=None)[:, LENGTH:].numpy()
    np.savez_compressed(folder / "expected.npz", tokens=tokens.astype(np.int32), mask=mask,
                        logits=logits.astype(np.float32), logprobs=logprobs.astype(np.float32),
                        greedy=greedy.astype(np.int32))
    write_loss(name, seed)


def hf_loss(model, input_ids: np.ndarray, attention_mask: np.ndarray,
            labels: np.ndarray) -> float:
    """``transformers``' own causal-LM loss: ``model(input_ids, attention_mask, labels).loss``."""
    with torch.no_grad():
        out = model(input_ids=torch.tensor(input_ids),
                    attention_mask=torch.tensor(attention_mask.astype(np.int64)),
                    labels=torch.tensor(labels.astype(np.int64)))
    return float(out.loss)


def loss_batch(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A right-padded batch as SFT collators write it: ``(input_ids, attention_mask, labels)``
    with labels ``-100`` on each row's prompt and padding."""
    rng = np.random.default_rng(100 + seed)
    lengths, prompts = [LENGTH, LENGTH - 3, LENGTH - 1], [0, 2, 4]
    ids = rng.integers(1, SIZES["vocab_size"], (3, LENGTH))
    attention = np.arange(LENGTH)[None] < np.array(lengths)[:, None]
    ids[~attention] = 0
    labels = np.where(attention, ids, -100)
    for row, prompt in enumerate(prompts):
        labels[row, :prompt] = -100
    return ids.astype(np.int32), attention, labels.astype(np.int32)


def write_loss(name: str, seed: int) -> None:
    """``loss.npz``: the stored checkpoint's loss on :func:`loss_batch`, as HF computes it."""
    folder = OUT / name
    model = transformers.AutoModelForCausalLM.from_pretrained(
        folder, attn_implementation="eager", dtype=torch.float32).eval()
    ids, attention, labels = loss_batch(seed)
    np.savez_compressed(folder / "loss.npz", input_ids=ids, attention_mask=attention,
                        labels=labels, loss=np.float32(hf_loss(model, ids, attention, labels)))


TEXT = dict(vocab_size=64, hidden_size=16, intermediate_size=24, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=4, rms_norm_eps=1e-6)
VISION = dict(hidden_size=8, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2,
              image_size=8, patch_size=4)
# Vision-language models whose language model jaxlean reads: (model class, config class,
# text config class, vision config class and options, top-level options). mistral3 keeps
# its default tying (top level True, text_config False: transformers 5 ties).
COMPOSITES = {
    "llava": ("LlavaForConditionalGeneration", "LlavaConfig", "LlamaConfig",
              ("CLIPVisionConfig", {}), dict(image_token_index=63, tie_word_embeddings=False)),
    "mistral3": ("Mistral3ForConditionalGeneration", "Mistral3Config", "MistralConfig",
                 ("PixtralVisionConfig", dict(head_dim=4)), dict(image_token_index=63)),
}


def write_composite(name: str, seed: int) -> None:
    """A tiny vision-language checkpoint and its logits on text alone (its language model)."""
    model_class, config_class, text_class, (vision_class, vision), options = COMPOSITES[name]
    torch.manual_seed(seed)
    text = getattr(transformers, text_class)(**TEXT, sliding_window=None) \
        if text_class == "MistralConfig" else getattr(transformers, text_class)(**TEXT)
    config = getattr(transformers, config_class)(
        text_config=text, vision_config=getattr(transformers, vision_class)(**VISION, **vision),
        **options)
    model = getattr(transformers, model_class)(config).eval()
    with torch.no_grad():
        for pname, param in model.named_parameters():
            if pname.endswith("norm.weight"):
                param.copy_(1 + 0.3 * torch.randn_like(param))
    folder = OUT / "composite" / name
    shutil.rmtree(folder, ignore_errors=True)
    model.save_pretrained(folder)
    (folder / "generation_config.json").unlink(missing_ok=True)
    tokens = np.random.default_rng(seed).integers(1, 63, (2, 6))
    with torch.no_grad():
        logits = model(input_ids=torch.tensor(tokens)).logits.float().numpy()
    np.savez_compressed(folder / "expected.npz", tokens=tokens.astype(np.int32),
                        logits=logits.astype(np.float32))


def main() -> None:
    """Every fixture; ``composite`` as the argument writes the composite ones only, ``loss``
    each family's ``loss.npz`` only (from the checkpoint already stored)."""
    if sys.argv[1:] == ["loss"]:
        for seed, name in enumerate(FAMILIES):
            write_loss(name, seed)
            print("wrote", OUT / name / "loss.npz", file=sys.stderr)
        print(f"transformers {transformers.__version__}, torch {torch.__version__}",
              file=sys.stderr)
        return
    if sys.argv[1:] != ["composite"]:
        for seed, (name, (config_class, options)) in enumerate(FAMILIES.items()):
            write(name, config_class, options, seed)
            print("wrote", OUT / name, file=sys.stderr)
    for seed, name in enumerate(COMPOSITES):
        write_composite(name, seed)
        print("wrote", OUT / "composite" / name, file=sys.stderr)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
