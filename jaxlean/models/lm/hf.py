"""Hugging Face checkpoints (Llama, Mistral, Qwen2, Qwen3) <-> the stacked ``Transformer``.

Hugging Face stores one tensor per layer and projection, as ``[out, in]``; the
:class:`Transformer` keeps each projection once, as ``[layers, in, out]``
(the names: :mod:`jaxlean.models.lm.hf_names`). Loading parses the safetensors
headers (no torch), checks names and shapes against the config, then reads each
file once, front to back, straight into each parameter's preallocated stacked
array (:mod:`jaxlean.models.lm._safetensors`), so host memory peaks near one
copy of the model. A missing, unexpected or mis-shaped tensor raises
:class:`CheckpointError` naming it. A tied model whose file also stores
``lm_head.weight`` loads as Hugging Face loads it: the stored head is ignored.

:func:`load_pretrained` / :func:`save_pretrained` read and write a whole model
directory (``config.json``, ``generation_config.json``, safetensors shards
with ``model.safetensors.index.json``) that ``transformers`` loads as is, with
the tokenizer and chat-template files of the source directory copied unchanged
(``tokenizer_from=``). LoRA adapters are not part of the base checkpoint: saving a
model that has them folds one in (``merge_adapter=``) or is refused (see
:mod:`jaxlean.models.lm.peft` for PEFT's adapter files).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from safetensors.numpy import save_file

from jaxlean.errors import ConfigError
from jaxlean.models.lm._hf_source import config_fields, source_of, with_ids, with_source
from jaxlean.models.lm._safetensors import Reader, fill, safetensors_files
from jaxlean.models.lm.hf_config import (
    GenerationSettings,
    config_from_hf,
    config_to_hf,
    generation_settings,
    model_path,
    read_json,
)
from jaxlean.models.lm.hf_hub import model_source
from jaxlean.models.lm.hf_names import LAYER, hf_tensors, name_table
from jaxlean.models.lm.hf_tokenizer import TOKENIZER_FILES, copy_tokenizer
from jaxlean.models.lm.lora import Linear
from jaxlean.models.lm.peft import merge_lora
from jaxlean.models.lm.transformer import Transformer, TransformerConfig

__all__ = ["TOKENIZER_FILES", "config_from_hf", "config_to_hf", "load_pretrained",
           "load_safetensors", "save_pretrained", "save_safetensors"]


def load_safetensors(
    path: str | Path | Iterable[str | Path],
    config: TransformerConfig,
    *,
    dtype: Any = None,
    progress: bool = True,
) -> Transformer:
    """Load Hugging Face weights into a stacked :class:`Transformer`.

    Each parameter is preallocated once (all layers stacked) and filled by
    plain reads, each file in file order, cast to ``dtype`` as it is copied; on
    the CPU backend JAX adopts the filled array without a copy. Peak host memory
    is about one copy of the model plus a buffer of about 1 MiB.

    Args:
        path: a ``.safetensors`` file, a directory of (sharded) files, or a list of files.
        config: the model sizes (see :func:`config_from_hf`).
        dtype: cast every tensor to this dtype (default: keep the file's dtype).
        progress: report the tensors read when loading outlasts
            ``$JAXLEAN_PROGRESS_INTERVAL`` seconds (see :mod:`jaxlean._progress`);
            False: silent.

    Returns:
        The model.

    Raises:
        CheckpointError: naming a missing, unexpected or mis-shaped tensor, or a
            layer whose dtype differs from the others' when ``dtype`` is not given.
    """
    return _load(Reader(safetensors_files(path)), config, dtype, progress)


def _load(reader: Reader, config: TransformerConfig, dtype: Any, progress: bool) -> Transformer:
    """The model of ``config`` filled from ``reader`` (see :func:`load_safetensors`)."""
    template = eqx.filter_eval_shape(lambda: Transformer(config, key=jax.random.key(0)))
    top, per_layer = name_table(config)
    entries = ([([name], where, transpose, False) for name, where, transpose in top]
               + [([LAYER.format(i=i) + suffix for i in range(config.num_layers)], where,
                   transpose, True) for suffix, where, transpose in per_layer])
    if config.tie_embeddings:
        reader.unread.discard(reader.stored("lm_head.weight"))  # Hugging Face ignores it
    return fill(reader, template, entries, dtype, progress)


def _adapted(model: Transformer) -> list[str]:
    """Key paths of the projections of ``model`` that carry LoRA adapters."""
    found = jax.tree_util.tree_flatten_with_path(
        model, is_leaf=lambda n: isinstance(n, Linear))[0]
    return [jax.tree_util.keystr(path) for path, node in found
            if isinstance(node, Linear) and node.lora is not None]


def _base_only(model: Transformer, merge_adapter: int | None, caller: str) -> Transformer:
    """``model`` as a base model: adapter ``merge_adapter`` folded in, or refused by name."""
    adapted = _adapted(model)
    if merge_adapter is not None:
        if not adapted:
            raise ConfigError(f"{caller}: merge_adapter={merge_adapter} but the model has no "
                              f"LoRA adapters")
        return merge_lora(model, merge_adapter)
    if adapted:
        raise ConfigError(f"{caller}: the model has LoRA adapters on {adapted} and a Hugging "
                          f"Face checkpoint holds base weights only: pass merge_adapter=<i> to "
                          f"fold adapter i in, or save the adapter itself with save_lora")
    return model


def save_safetensors(model: Transformer, path: str | Path, *,
                     merge_adapter: int | None = None) -> None:
    """Write the base weights of ``model`` with Hugging Face names (one file).

    A model with LoRA adapters is refused unless ``merge_adapter`` names the one to fold in.
    """
    model = _base_only(model, merge_adapter, "save_safetensors")
    save_file(dict(hf_tensors(model)), str(path), metadata={"format": "pt"})


def _dtype_name(dtype: Any) -> str:
    return "bfloat16" if dtype == jnp.bfloat16 else str(np.dtype(dtype))


def save_pretrained(model: Transformer, directory: str | Path, *,
                    max_shard_bytes: int = 5 * 2**30,
                    generation: GenerationSettings | None = None,
                    tokenizer_from: str | Path | None = None,
                    merge_adapter: int | None = None) -> None:
    """Write ``model`` as a Hugging Face model directory.

    ``config.json``, ``generation_config.json``, the weights as ``model.safetensors``,
    or above ``max_shard_bytes`` as ``model-0000i-of-0000n.safetensors`` shards with
    ``model.safetensors.index.json``. ``transformers.AutoModelForCausalLM.from_pretrained(
    directory)`` loads it with no missing or unexpected keys.

    Every field of the source's ``config.json`` and ``generation_config.json``
    (``max_position_embeddings``, sampling defaults, ...) is written back unless
    jaxlean changed it: the dtype when the weights' dtype is another, an id that
    ``generation`` changes. The source is ``tokenizer_from`` when given, else the
    checkpoint :func:`load_pretrained` read the model from, which the model carries
    (``model.hf_source``, kept by ``with_options``, ``add_lora``, ``merge_lora`` and
    training). A ``config.json`` of another architecture is not used.
    Without a source, ``config.json`` has the fields of
    :func:`~jaxlean.models.lm.hf_config.config_to_hf` (no ``max_position_embeddings``,
    which jaxlean does not know) and ``generation_config.json`` is written only for
    ``generation``.

    Args:
        model: the model; one with LoRA adapters is refused (naming them) unless
            ``merge_adapter`` says which adapter to fold in (see
            :func:`~jaxlean.models.lm.peft.merge_lora`; :func:`~jaxlean.models.lm.peft.save_lora`
            saves an adapter on its own).
        directory: created if needed.
        max_shard_bytes: the largest safetensors file.
        generation: eos/pad/bos ids, written to ``generation_config.json`` and ``config.json``
            where they differ from the source's (all of them without a source).
        tokenizer_from: a model directory (the one the model was loaded from) whose
            tokenizer and chat-template files (:data:`TOKENIZER_FILES`,
            ``additional_chat_templates/``) are copied unchanged, so that
            ``AutoTokenizer`` and serving engines open ``directory``; its
            ``generation_config.json`` is copied too (with ``generation``'s ids, if
            given), or built from the ids in its ``config.json``.
        merge_adapter: the index of the LoRA adapter to fold into the saved weights.
    """
    model = _base_only(model, merge_adapter, "save_pretrained")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if tokenizer_from is not None:  # the named directory is the source
        settings = copy_tokenizer(tokenizer_from, directory)
        source = (read_json(tokenizer_from) if (Path(tokenizer_from) / "config.json").is_file()
                  else None)
        if generation is None and settings is None and source is not None:
            found = generation_settings(None, source)  # ids from the source's config.json
            generation = found if found != GenerationSettings((), None, None) else None
        raw = settings.read_bytes() if settings is not None else None
    else:  # the checkpoint the model was loaded from, if any
        loaded = source_of(model)
        source = loaded.config if loaded is not None else None
        raw = loaded.generation if loaded is not None else None
        settings = None
    hf = config_fields(model.config, _dtype_name(model.embed.dtype), source)
    target = directory / "generation_config.json"
    if generation is not None:
        kept = read_json(settings) if settings is not None else (
            json.loads(raw) if raw is not None else None)
        before = (generation_settings(None, {**(source or {}), **(kept or {})})
                  if source is not None or kept is not None else None)
        hf = with_ids(hf, generation, before)
        target.write_text(json.dumps(with_ids(kept or {}, generation, before), indent=2) + "\n")
    elif raw is not None and (settings is None or settings.resolve() != target.resolve()):
        target.write_bytes(raw)
    (directory / "config.json").write_text(json.dumps(hf, indent=2) + "\n")
    shards: list[dict[str, np.ndarray]] = [{}]
    size = 0
    for name, array in hf_tensors(model):
        if shards[-1] and size + array.nbytes > max_shard_bytes:
            shards.append({})
            size = 0
        shards[-1][name] = array
        size += array.nbytes
    if len(shards) == 1:
        save_file(shards[0], str(directory / "model.safetensors"), metadata={"format": "pt"})
        return
    weight_map, total = {}, 0
    for i, shard in enumerate(shards):
        file = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, str(directory / file), metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(shard, file))
        total += sum(a.nbytes for a in shard.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (directory / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")


def load_pretrained(
    path: str | Path, *, dtype: Any = None, progress: bool = True, revision: str | None = None
) -> tuple[Transformer, TransformerConfig, GenerationSettings]:
    """Load a Hugging Face model directory (or one ``.safetensors`` file beside its config).

    A string that is no local path but a Hub model id (``"Qwen/Qwen3-0.6B"``) is resolved
    as ``transformers`` resolves it, through ``huggingface_hub``'s cache (``HF_HOME``,
    ``HF_HUB_CACHE``, ``HF_HUB_OFFLINE``), downloading what is missing when the network
    allows (:func:`~jaxlean.models.lm.hf_hub.resolve_model`; extra ``hub``).

    A composite (vision-language) model of
    :data:`~jaxlean.models.lm.hf_config.COMPOSITE_TYPES` whose ``text_config`` is a
    supported family loads as its language model alone (the vision tower and
    projector are not read); any other composite is refused, naming its types.

    Args:
        path: the directory holding ``config.json`` and the safetensors file(s)
            (a ``model.safetensors.index.json`` names the shards), or one file, or a
            Hub model id.
        dtype: cast every tensor to this dtype (default: keep the file's dtype).
        progress: report the tensors read when loading is long (see :func:`load_safetensors`).
        revision: the branch, tag or commit of a Hub model id (default ``"main"``).

    Returns:
        ``(model, config, generation settings)``.

    Raises:
        ConfigError: the config asks for something this model does not compute
            (named: field, value, what is supported).
        CheckpointError: a missing, unexpected or mis-shaped tensor, or a missing file; a
            model id that cannot be resolved (named, with its revision).
    """
    path = model_path(model_source(path, revision))
    directory = path if path.is_dir() else path.parent
    hf = read_json(directory)
    config = config_from_hf(hf)
    index = directory / "model.safetensors.index.json"
    files: Any = path
    if path.is_dir() and index.is_file():
        weight_map = read_json(index, index.name).get("weight_map", {})
        files = [directory / name for name in sorted(set(weight_map.values()))]
    reader = Reader(safetensors_files(files), composite="text_config" in hf)
    model = _load(reader, config, dtype, progress)
    settings = directory / "generation_config.json"
    model = with_source(model, hf, settings.read_bytes() if settings.is_file() else None)
    return model, config, generation_settings(directory, hf)
