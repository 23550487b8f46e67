"""What :func:`~jaxlean.models.lm.hf.save_pretrained` keeps of the checkpoint a model came from.

A :class:`TransformerConfig` holds only what jaxlean computes with; a
``config.json`` holds more (``max_position_embeddings``, ``initializer_range``,
``use_cache``, ...) and ``generation_config.json`` holds sampling defaults.
:func:`remember` notes, for each config :func:`~jaxlean.models.lm.hf.load_pretrained`
returns, the files it was read from; :func:`recall` finds them again for a
model to save, and :func:`config_fields` / :func:`with_ids` write every field
back unchanged unless jaxlean changed it (the weights' dtype, the token ids).

A model's config is the one its load returned (``add_lora``, ``merge_lora``
and training keep it) or an equal one with other structure options
(``with_options``). Configs are held weakly: a source is forgotten with the
last config that came from it.
"""

from __future__ import annotations

import dataclasses
import warnings
import weakref
from typing import Any

from jaxlean.errors import JaxleanError
from jaxlean.models.lm.hf_config import (
    ARCHITECTURES,
    GenerationSettings,
    _ids,
    config_from_hf,
    config_to_hf,
    text_config,
)
from jaxlean.models.lm.transformer import STRUCTURE_OPTIONS, TransformerConfig

__all__ = ["Source", "config_fields", "recall", "remember", "with_ids"]

_IDS = ("eos_token_id", "pad_token_id", "bos_token_id")


@dataclasses.dataclass(frozen=True)
class Source:
    """The files a model was loaded from: ``config.json`` as read, and the bytes of its
    ``generation_config.json`` (None: there was none)."""

    config: dict
    generation: bytes | None


# Architecture (structure options reset) -> (weak reference to a loaded config, its source).
_LOADED: dict[TransformerConfig, list[tuple[weakref.ref, Source]]] = {}


def _architecture(config: TransformerConfig) -> TransformerConfig:
    """``config`` with its structure options (how the layers run) at their defaults."""
    defaults = {f.name: f.default for f in dataclasses.fields(config)
                if f.name in STRUCTURE_OPTIONS}
    return dataclasses.replace(config, **defaults)


def remember(config: TransformerConfig, source: Source) -> None:
    """Note that ``config`` (the very object a load returned) was read from ``source``."""
    key = _architecture(config)
    live = [(ref, known) for ref, known in _LOADED.get(key, []) if ref() is not None]
    _LOADED[key] = [*live, (weakref.ref(config), source)]


def recall(config: TransformerConfig, caller: str) -> Source | None:
    """The source of ``config``: the one its load noted, or the one every loaded config of
    its architecture shares. Several that differ, none of them ``config`` itself: a
    warning, and None."""
    live = [(ref(), known) for ref, known in _LOADED.get(_architecture(config), [])]
    live = [(loaded, known) for loaded, known in live if loaded is not None]
    sources = [known for i, (_, known) in enumerate(live)
               if all(known != other for _, other in live[:i])]
    if len(sources) <= 1:
        return sources[0] if sources else None
    mine = [known for loaded, known in live if loaded is config]
    if mine:
        return mine[0]
    warnings.warn(f"{caller}: {len(sources)} checkpoints loaded in this process have this "
                  f"model's architecture but different config.json or generation_config.json "
                  f"fields, and the model's config is not one those loads returned; only "
                  f"the fields jaxlean knows are written (pass tokenizer_from=<the source "
                  f"directory> to keep that checkpoint's fields)", stacklevel=3)
    return None


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
