"""What :func:`~jaxlean.models.lm.hf.save_pretrained` keeps of the checkpoint a model came from.

A :class:`TransformerConfig` computes with only some of a ``config.json``'s fields;
the file holds more (``max_position_embeddings``, ``initializer_range``,
``use_cache``, ...) and ``generation_config.json`` holds sampling defaults.
:func:`~jaxlean.models.lm.hf.load_pretrained` puts both files, as read, into the
model it returns (:attr:`Transformer.hf_source`, static), so every model made from
it (``add_lora``, ``merge_lora``, ``with_options``, training, ``jit``) carries its
own origin and nothing else's. :func:`config_fields` / :func:`with_ids` write
every field back unchanged unless jaxlean changed it (the weights' dtype, the
token ids).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from jaxlean.errors import JaxleanError
from jaxlean.models.lm.config import STRUCTURE_OPTIONS, HFSource, TransformerConfig
from jaxlean.models.lm.hf_config import (
    ARCHITECTURES,
    GenerationSettings,
    _ids,
    config_from_hf,
    config_to_hf,
    text_config,
)
from jaxlean.models.lm.transformer import Transformer

__all__ = ["config_fields", "source_of", "with_ids", "with_source"]

_IDS = ("eos_token_id", "pad_token_id", "bos_token_id")


def _architecture(config: TransformerConfig) -> TransformerConfig:
    """``config`` with its structure options (how the layers run) at their defaults."""
    defaults = {f.name: f.default for f in dataclasses.fields(config)
                if f.name in STRUCTURE_OPTIONS}
    return dataclasses.replace(config, **defaults)


def with_source(model: Transformer, config_json: dict, generation: bytes | None) -> Transformer:
    """``model`` carrying the ``config.json`` it was read from and its generation file."""
    model = copy.copy(model)
    object.__setattr__(model, "hf_source", HFSource.of(config_json, generation))
    return model


def source_of(model: Transformer) -> HFSource | None:
    """The checkpoint ``model`` was loaded from, if its ``config.json`` describes what the
    model computes."""
    source = model.hf_source
    if source is None:
        return None
    try:
        same = _architecture(config_from_hf(source.config)) == _architecture(model.config)
    except JaxleanError:
        same = False
    return source if same else None


def _same(key: str, old: Any, new: Any) -> bool:
    try:
        return _ids(old) == _ids(new) if key == "eos_token_id" else old == new
    except (TypeError, ValueError):
        return False


def with_ids(fields: dict, generation: GenerationSettings,
             before: GenerationSettings | None) -> dict:
    """``fields`` with ``generation``'s eos/pad/bos ids where they are missing or were changed.

    ``before``: the ids the source meant (None: no source, every id is set). An id
    ``generation`` leaves as it was keeps its field as written; a changed one is set,
    unless the field already means it (``2`` for ``[2]``).
    """
    ours = {"eos_token_id": (list(generation.eos_ids) or None, generation.eos_ids,
                             None if before is None else before.eos_ids),
            "pad_token_id": (generation.pad_id, generation.pad_id,
                             None if before is None else before.pad_id),
            "bos_token_id": (generation.bos_id, generation.bos_id,
                             None if before is None else before.bos_id)}
    out = dict(fields)
    for key, (value, new, old) in ours.items():
        changed = before is None or new != old
        if key not in out or (changed and not _same(key, out[key], value)):
            out[key] = value
    return out


def config_fields(config: TransformerConfig, dtype: str, source: dict | None) -> dict:
    """The ``config.json`` of a model of ``config`` whose weights are ``dtype``.

    When ``source`` (a ``config.json`` as read) describes the same architecture,
    its fields are kept as they are (a composite model's ``text_config``, the
    language model being what is saved), with the dtype set; otherwise only the
    fields of :func:`~jaxlean.models.lm.hf_config.config_to_hf`.
    """
    ours = config_to_hf(config)
    try:
        same = source is not None and (_architecture(config_from_hf(source))
                                       == _architecture(config))
    except JaxleanError:
        same = False
    if not same:
        return {**ours, "torch_dtype": dtype}
    fields, _ = text_config(source)
    out = dict(fields)
    if fields is not source:  # a composite: its language model as a causal LM
        out["architectures"] = [ARCHITECTURES[fields["model_type"]]]
        out.update({key: source[key] for key in _IDS if key in source})
    names = [key for key in ("dtype", "torch_dtype") if key in out or key in source]
    for key in names or ["torch_dtype"]:
        out[key] = dtype
    return out
