"""Hugging Face ``config.json`` <-> :class:`TransformerConfig`, refusing what differs.

Both layouts that ``transformers`` writes are read: 4.x keeps ``rope_theta`` and
``rope_scaling`` at the top level, 5.x nests them in ``rope_parameters``. Every
field that changes the math and is not implemented here (a ``model_type``,
``hidden_act``, rope type, window setting or bias this model lacks) raises
:class:`ConfigError` naming the field, its value and what is supported: a
checkpoint either loads to the same function Hugging Face computes, or not at all.
A composite (vision-language) config is read for its language model where both
types are supported (:func:`text_config`), and refused by name otherwise.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, NamedTuple

from jaxlean.errors import CheckpointError, ConfigError
from jaxlean.models.lm.rope import ROPE_TYPES, rope_scaling
from jaxlean.models.lm.transformer import TransformerConfig

__all__ = ["ARCHITECTURES", "COMPOSITE_TYPES", "MODEL_TYPES", "GenerationSettings",
           "config_from_hf", "config_to_hf", "generation_settings", "missing_path", "model_path",
           "read_json", "text_config"]

MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3")
# The causal-LM class transformers builds for each model type.
ARCHITECTURES = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
                 "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}
# Vision-language models whose language model (``text_config``, one of MODEL_TYPES) is read:
# their checkpoints keep it under ``language_model.`` (or ``model.language_model.``).
COMPOSITE_TYPES = ("llava", "llava_next", "mistral3")
# Fields whose transformers default differs from what their absence means here: stated or refused.
_STATED = {"mistral": ("num_key_value_heads", "sliding_window"), "qwen2": ("num_key_value_heads",),
           "qwen3": ("num_key_value_heads", "head_dim")}


class GenerationSettings(NamedTuple):
    """Token ids generation needs, from ``generation_config.json`` or ``config.json``.

    Attributes:
        eos_ids: every id that ends a sequence (Llama 3 lists several).
        pad_id: the padding id, or None.
        bos_id: the id a prompt starts with, or None.
    """

    eos_ids: tuple[int, ...]
    pad_id: int | None
    bos_id: int | None


def _refuse(field: str, value: Any, supported: Any) -> ConfigError:
    return ConfigError(f"config.json: {field}={value!r} is not supported "
                       f"(supported: {supported})")


_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def missing_path(path: Path, what: str = "directory") -> CheckpointError:
    """The error for a path that does not exist; a hub-id-like path says hub ids are not fetched."""
    message = f"no such {what} {str(path)!r}"
    if not path.is_absolute() and _HUB_ID.fullmatch(path.as_posix()):
        message += (f" (a Hugging Face hub id is not fetched: download it first, e.g. "
                    f"`huggingface-cli download {path.as_posix()} --local-dir <dir>`, "
                    f"and pass that directory)")
    return CheckpointError(message)


def model_path(path: str | Path) -> Path:
    """``path`` checked as a model directory or one ``.safetensors`` file; errors name ``path``."""
    path = Path(path)
    if not path.exists():
        raise missing_path(path)
    if path.is_file() and path.suffix != ".safetensors":
        raise CheckpointError(f"{str(path)!r} is a file: pass the model directory that holds it "
                              f"({str(path.parent)!r}), not {path.name}")
    return path


def read_json(path: str | Path, name: str = "config.json") -> dict:
    """A JSON file, or ``name`` inside a directory; errors name the file or the missing path."""
    path = Path(path)
    if not path.exists():
        raise missing_path(path, "directory" if path.suffix != ".json" else "file")
    if path.is_dir():
        path = path / name
    if not path.is_file():
        raise CheckpointError(f"no {name} in {str(path.parent)!r}")
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CheckpointError(f"{path} is not valid JSON: {error}") from None


def _rope(hf: dict, where: str) -> tuple[float, Any]:
    """``(rope_theta, RopeScaling)`` from either layout."""
    params = hf.get("rope_parameters")
    if params is not None:  # transformers 5.x
        theta = params.get("rope_theta", hf.get("rope_theta", 10000.0))
        scaling = params
        field = where + "rope_parameters.rope_type"
    else:  # transformers 4.x
        theta = hf.get("rope_theta", 10000.0)
        scaling = hf.get("rope_scaling") or {}
        field = where + "rope_scaling.rope_type"
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind not in ROPE_TYPES:
        raise _refuse(field, kind, list(ROPE_TYPES))
    values = {k: scaling.get(k) for k in ("factor", "low_freq_factor", "high_freq_factor",
                                          "original_max_position_embeddings")}
    return float(theta), rope_scaling(kind, **{k: v for k, v in values.items() if v is not None})


def _sliding_window(hf: dict, model_type: str, where: str) -> int | None:
    layer_types = hf.get("layer_types") or []
    if model_type == "mistral":
        window = hf.get("sliding_window")
        if any(t != layer_types[0] for t in layer_types):
            raise _refuse(where + "layer_types", layer_types, "one attention type for every layer")
        return int(window) if window is not None else None
    if hf.get("use_sliding_window"):
        raise _refuse(where + "use_sliding_window", hf["use_sliding_window"], [False])
    other = sorted({t for t in layer_types if t != "full_attention"})
    if other:
        raise _refuse(where + "layer_types", other, ["full_attention"])
    return None


def text_config(hf: dict) -> tuple[dict, str]:
    """The config of the language model, and the prefix that names its fields in errors.

    A plain causal LM is its own; a composite (vision-language) model of
    :data:`COMPOSITE_TYPES` keeps it in ``text_config``, whose ``model_type`` must be
    one of :data:`MODEL_TYPES`. Its embeddings are tied as transformers 5 ties them:
    by the top-level ``tie_word_embeddings`` where present. Any other composite is
    refused, naming both model types.
    """
    if "text_config" not in hf:
        return hf, ""
    outer, text = hf.get("model_type"), hf["text_config"]
    family = text.get("model_type") if isinstance(text, dict) else None
    if family not in MODEL_TYPES:
        raise ConfigError(f"config.json: text_config.model_type={family!r} (the language model "
                          f"of model_type={outer!r}) is not supported (supported: "
                          f"{list(MODEL_TYPES)})")
    if outer not in COMPOSITE_TYPES:
        raise _refuse("model_type", outer, f"{list(MODEL_TYPES)}, or a composite model among "
                                           f"{list(COMPOSITE_TYPES)} whose text_config is one")
    if "tie_word_embeddings" in hf:
        text = {**text, "tie_word_embeddings": hf["tie_word_embeddings"]}
    return text, "text_config."


def config_from_hf(hf_config: dict | str | Path) -> TransformerConfig:
    """A :class:`TransformerConfig` from a ``config.json`` (dict, file or model directory).

    Raises:
        ConfigError: a field whose value this model does not implement, naming it.
        CheckpointError: a required size is missing, or the file is unreadable.
    """
    hf = hf_config if isinstance(hf_config, dict) else read_json(hf_config)
    hf, where = text_config(hf)
    model_type = hf.get("model_type", "llama")
    if model_type not in MODEL_TYPES:
        raise _refuse("model_type", model_type, list(MODEL_TYPES))
    act = hf.get("hidden_act", hf.get("hidden_activation", "silu"))
    if act != "silu":
        raise _refuse(where + "hidden_act", act, ["silu"])
    if hf.get("attention_bias") and model_type != "qwen2":
        raise _refuse(where + "attention_bias", hf["attention_bias"], [False])
    if hf.get("mlp_bias"):
        raise _refuse(where + "mlp_bias", hf["mlp_bias"], [False])
    if hf.get("attention_dropout"):
        raise _refuse(where + "attention_dropout", hf["attention_dropout"], [0.0])
    theta, scaling = _rope(hf, where)
    window = _sliding_window(hf, model_type, where)
    unstated = [field for field in _STATED.get(model_type, ()) if field not in hf]
    if unstated:
        raise ConfigError(f"config.json: {where}{unstated[0]} is absent and transformers' "
                          f"{model_type} default for it differs from what its absence means "
                          f"here; state it in config.json")
    try:
        return TransformerConfig(
            vocab_size=hf["vocab_size"],
            hidden_size=hf["hidden_size"],
            intermediate_size=hf["intermediate_size"],
            num_layers=hf["num_hidden_layers"],
            num_heads=hf["num_attention_heads"],
            num_kv_heads=hf.get("num_key_value_heads"),
            head_dim=hf.get("head_dim"),
            rope_theta=theta,
            rope_scaling=scaling,
            rms_norm_eps=float(hf.get("rms_norm_eps", 1e-6)),
            qk_norm=model_type == "qwen3",
            qkv_bias=model_type == "qwen2",
            sliding_window=window,
            tie_embeddings=bool(hf.get("tie_word_embeddings", False)),
        )
    except KeyError as missing:
        raise CheckpointError(f"config.json lacks the field {where + missing.args[0]!r}") from None


def config_to_hf(config: TransformerConfig) -> dict:
    """The ``config.json`` of ``config`` (4.x layout, which transformers 4 and 5 both read).

    Only the fields a :class:`TransformerConfig` holds: ``save_pretrained`` keeps the
    others (``max_position_embeddings``, ...) from the checkpoint the model was loaded from.

    The ``model_type`` is the one family whose architecture matches: ``qwen3`` for
    q/k norms, ``qwen2`` for q/k/v biases, ``mistral`` for a sliding window, else ``llama``.
    """
    c = config
    if sum([c.qk_norm, c.qkv_bias, c.sliding_window is not None]) > 1:
        raise ConfigError("no Hugging Face model type combines q/k norm, q/k/v biases and a "
                          "sliding window; at most one of them can be saved")
    model_type = ("qwen3" if c.qk_norm else "qwen2" if c.qkv_bias
                  else "mistral" if c.sliding_window is not None else "llama")
    hf = {
        "architectures": [ARCHITECTURES[model_type]], "model_type": model_type,
        "vocab_size": c.vocab_size, "hidden_size": c.hidden_size,
        "intermediate_size": c.intermediate_size, "num_hidden_layers": c.num_layers,
        "num_attention_heads": c.num_heads, "num_key_value_heads": c.num_kv_heads,
        "head_dim": c.head_dim, "hidden_act": "silu", "rms_norm_eps": c.rms_norm_eps,
        "rope_theta": c.rope_theta, "tie_word_embeddings": c.tie_embeddings,
        "attention_bias": False, "mlp_bias": False,
    }
    if model_type == "qwen2":
        del hf["attention_bias"], hf["mlp_bias"]
        hf["use_sliding_window"] = False
    if model_type == "mistral":
        hf["sliding_window"] = c.sliding_window
    if c.rope_scaling is not None:
        kind, values = c.rope_scaling
        hf["rope_scaling"] = {"rope_type": kind, **dict(values)}
    return hf


def _ids(value: Any) -> tuple[int, ...]:
    if value is None:
        return ()
    return tuple(int(v) for v in value) if isinstance(value, list) else (int(value),)


def generation_settings(directory: str | Path | None, hf: dict) -> GenerationSettings:
    """Eos, pad and bos ids: ``generation_config.json`` where present, else ``config.json``.

    A composite model's ids may sit in its ``text_config``; top-level ones take precedence.
    """
    text = hf.get("text_config")
    merged = {**(text if isinstance(text, dict) else {}), **hf}
    if directory is not None and (Path(directory) / "generation_config.json").is_file():
        merged.update(read_json(directory, "generation_config.json"))
    pad, bos = merged.get("pad_token_id"), merged.get("bos_token_id")
    return GenerationSettings(_ids(merged.get("eos_token_id")),
                              None if pad is None else int(pad), None if bos is None else int(bos))
