"""A checkpoint's generation defaults (``generation_config.json``), read as transformers does.

``transformers`` stops a row at any of ``generation_config.eos_token_id`` (an id or
a list), pads with ``pad_token_id``, and samples or not by ``do_sample`` with
``temperature`` / ``top_k`` / ``top_p`` / ``min_p``, all from the checkpoint unless
the call says otherwise. :func:`generation_defaults` reads the same fields from
the files a model was loaded from (:attr:`Transformer.hf_source`: ``config.json``'s
ids and ``max_position_embeddings``, then ``generation_config.json`` over them), and
:func:`~jaxlean.models.lm.generate.generate` uses them where its arguments are not given.

Every field of the file is known: those generate implements (:data:`SUPPORTED`),
those that cannot change what it computes (:data:`IGNORED`: output flags, versions,
beam-search-only settings), and those that would change it but are off at the value
given in :data:`NEUTRAL` (``repetition_penalty: 1.0``). Any other field or value raises
:class:`ConfigError` naming it, rather than generating what ``transformers`` would not.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from jaxlean.errors import ConfigError

__all__ = ["HF_SAMPLING_DEFAULTS", "IGNORED", "NEUTRAL", "SUPPORTED", "GenerationDefaults",
           "generation_defaults", "parse_generation_config"]

SUPPORTED = ("eos_token_id", "pad_token_id", "do_sample", "temperature", "top_k", "top_p",
             "min_p", "max_length", "max_new_tokens", "num_return_sequences")
"""Fields of ``generation_config.json`` that generate reads."""

IGNORED = ("transformers_version", "_from_model_config", "bos_token_id", "use_cache",
           "cache_implementation", "cache_config", "max_cache_len", "compile_config",
           "disable_compile", "output_attentions", "output_hidden_states", "output_scores",
           "output_logits", "return_dict_in_generate", "return_legacy_cache",
           "decoder_start_token_id", "is_assistant", "num_assistant_tokens",
           "num_assistant_tokens_schedule", "assistant_confidence_threshold",
           "prompt_lookup_num_tokens", "max_matching_ngram_size", "assistant_early_exit",
           "assistant_lookbehind", "target_lookbehind", "trust_remote_code",
           # beam search only (num_beams above 1 is refused):
           "early_stopping", "length_penalty", "num_beam_groups", "diversity_penalty")
"""Fields that do not change the tokens generate computes (a decoder-only model, greedy or
sampled, never beam search; the prompt is taken as given, so ``bos_token_id`` is unused)."""

NEUTRAL: dict[str, Any] = {
    "num_beams": 1, "repetition_penalty": 1.0, "encoder_repetition_penalty": 1.0,
    "no_repeat_ngram_size": 0, "encoder_no_repeat_ngram_size": 0, "typical_p": 1.0,
    "epsilon_cutoff": 0.0, "eta_cutoff": 0.0, "min_length": 0, "min_new_tokens": 0,
    "renormalize_logits": False, "remove_invalid_values": False, "guidance_scale": 1.0,
    "token_healing": False, "low_memory": False, "bad_words_ids": None,
    "suppress_tokens": None, "begin_suppress_tokens": None, "forced_bos_token_id": None,
    "forced_eos_token_id": None, "exponential_decay_length_penalty": None,
    "sequence_bias": None, "stop_strings": None, "max_time": None, "top_h": None,
    "watermarking_config": None, "penalty_alpha": None, "dola_layers": None,
    "use_mtp": False, "speculation_type": None,
}
"""Fields that would change generation, with the value at which they do nothing: any
other value is refused (generate does not implement them)."""

HF_SAMPLING_DEFAULTS = {"temperature": 1.0, "top_k": 50, "top_p": 1.0}
"""``transformers``' values when neither the checkpoint nor the call sets them
(``GenerationConfig._get_default_generation_params``): note ``top_k=50``."""


class GenerationDefaults(NamedTuple):
    """What a checkpoint says about generation; None where it says nothing.

    Attributes:
        eos_ids: every id that ends a row.
        pad_id: the id after a row's end.
        do_sample, temperature, top_k, top_p, min_p: the sampling defaults.
        max_length: prompt plus new tokens (``transformers``' total length).
        max_new_tokens: new tokens.
        num_return_sequences: completions per prompt.
        max_positions: ``config.json``'s ``max_position_embeddings``.
        from_checkpoint: True when read from a checkpoint's files (then
            ``transformers``' own defaults, :data:`HF_SAMPLING_DEFAULTS`, apply to what
            they leave unset).
    """

    eos_ids: tuple[int, ...] = ()
    pad_id: int | None = None
    do_sample: bool | None = None
    temperature: float | None = None
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None
    max_length: int | None = None
    max_new_tokens: int | None = None
    num_return_sequences: int | None = None
    max_positions: int | None = None
    from_checkpoint: bool = False


def _int(name: str, value: Any, where: str, lowest: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
        raise ConfigError(f"{where}: {name}={value!r} must be an integer >= {lowest}")
    return value


def _number(name: str, value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: {name}={value!r} must be a number")
    return float(value)


def _eos(value: Any, where: str) -> tuple[int, ...]:
    ids = value if isinstance(value, list) else [value]
    return tuple(_int("eos_token_id", i, where) for i in ids)


def parse_generation_config(fields: dict, where: str = "generation_config.json") -> dict:
    """The fields of :data:`SUPPORTED` that ``fields`` sets (``null`` is unset), checked.

    Raises:
        ConfigError: a field outside :data:`SUPPORTED`, :data:`IGNORED` and :data:`NEUTRAL`,
            a :data:`NEUTRAL` field at another value, or a value of the wrong kind;
            each named with its value.
    """
    if not isinstance(fields, dict):
        raise ConfigError(f"{where} must be a JSON object of fields, got {type(fields).__name__}")
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if value is None or name in IGNORED:
            continue
        if name in NEUTRAL:
            if value != NEUTRAL[name] and not (NEUTRAL[name] is None and value in ([], {})):
                raise ConfigError(
                    f"{where}: {name}={value!r} changes what transformers generates and "
                    f"jaxlean's generate does not implement it (only {name}="
                    f"{NEUTRAL[name]!r}); pass generation_config= without it to generate as if "
                    f"it were unset")
            continue
        if name not in SUPPORTED:
            raise ConfigError(
                f"{where}: unknown field {name!r} (value {value!r}): jaxlean's generate "
                f"cannot tell whether it changes generation; it reads {list(SUPPORTED)}, "
                f"ignores {list(IGNORED)} and accepts {sorted(NEUTRAL)} at their neutral "
                f"values. Pass generation_config= without it")
        if name == "eos_token_id":
            out[name] = _eos(value, where)
        elif name == "do_sample":
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: do_sample={value!r} must be true or false")
            out[name] = value
        elif name in ("temperature", "top_p", "min_p"):
            out[name] = _number(name, value, where)
        else:
            lowest = 0 if name == "top_k" else 1
            out[name] = _int(name, value, where, 0 if name == "pad_token_id" else lowest)
    return out


def _from_config_json(config: dict) -> dict:
    """Ids and ``max_position_embeddings`` of a ``config.json`` (a composite's ``text_config``
    too, the top level first), as ``transformers`` builds a generation config from it."""
    text = config.get("text_config")
    merged = {**(text if isinstance(text, dict) else {}), **config}
    out: dict[str, Any] = {}
    if merged.get("eos_token_id") is not None:
        out["eos_token_id"] = _eos(merged["eos_token_id"], "config.json")
    if merged.get("pad_token_id") is not None:
        out["pad_token_id"] = _int("pad_token_id", merged["pad_token_id"], "config.json")
    if merged.get("max_position_embeddings") is not None:
        out["max_positions"] = _int("max_position_embeddings",
                                    merged["max_position_embeddings"], "config.json", 1)
    return out


def _defaults(fields: dict, from_checkpoint: bool) -> GenerationDefaults:
    names = {"eos_token_id": "eos_ids", "pad_token_id": "pad_id"}
    return GenerationDefaults(**{names.get(k, k): v for k, v in fields.items()},
                              from_checkpoint=from_checkpoint)


def generation_defaults(model: Any, generation_config: dict | None = None) -> GenerationDefaults:
    """The generation defaults of ``model``'s checkpoint (empty for a model built here).

    Args:
        model: a :class:`~jaxlean.models.lm.transformer.Transformer`.
        generation_config: fields to read instead of the checkpoint's
            ``generation_config.json`` (``config.json``'s ids and maximum positions
            still apply); ``{}`` to use none of the file's.
    """
    source = getattr(model, "hf_source", None)
    fields = _from_config_json(source.config) if source is not None else {}
    if generation_config is not None:
        fields.update(parse_generation_config(generation_config, "generation_config"))
    elif source is not None and source.generation is not None:
        try:
            stored = json.loads(source.generation)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise ConfigError(f"the checkpoint's generation_config.json is not valid JSON: "
                              f"{error}") from None
        fields.update(parse_generation_config(stored))
    return _defaults(fields, source is not None or generation_config is not None)
