"""Hugging Face checkpoints (Llama, Mistral, Qwen2, Qwen3) <-> the stacked ``Transformer``.

Hugging Face stores one tensor per layer and projection, as ``[out, in]``
(``model.layers.3.self_attn.q_proj.weight``); the :class:`Transformer` keeps
each projection once, as ``[layers, in, out]``. Loading reads the tensors with
the ``safetensors`` NumPy API (no torch), one tensor at a time, checks names and
shapes against the config, and copies each (transposed, cast) into its
parameter's preallocated stacked array, so host memory peaks near one copy of
the model. A missing, unexpected or mis-shaped tensor raises
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
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from safetensors import SafetensorError, safe_open
from safetensors.numpy import save_file

from jaxlean._progress import Progress
from jaxlean.errors import CheckpointError, ConfigError
from jaxlean.models.lm.hf_config import (
    GenerationSettings,
    config_from_hf,
    config_to_hf,
    generation_settings,
    missing_path,
    model_path,
    read_json,
)
from jaxlean.models.lm.lora import Linear
from jaxlean.models.lm.peft import merge_lora
from jaxlean.models.lm.transformer import Transformer, TransformerConfig

__all__ = ["config_from_hf", "config_to_hf", "load_pretrained", "load_safetensors",
           "save_pretrained", "save_safetensors"]

_LAYER = "model.layers.{i}."

# (Hugging Face name, where the array lives in the model, stored transposed?)
_PER_LAYER: list[tuple[str, Callable[[Transformer], Any], bool]] = [
    ("input_layernorm.weight", lambda m: m.layers.input_norm.weight, False),
    ("self_attn.q_proj.weight", lambda m: m.layers.attn.q_proj.weight, True),
    ("self_attn.k_proj.weight", lambda m: m.layers.attn.k_proj.weight, True),
    ("self_attn.v_proj.weight", lambda m: m.layers.attn.v_proj.weight, True),
    ("self_attn.o_proj.weight", lambda m: m.layers.attn.o_proj.weight, True),
    ("post_attention_layernorm.weight", lambda m: m.layers.post_attn_norm.weight, False),
    ("mlp.gate_proj.weight", lambda m: m.layers.mlp.gate_proj.weight, True),
    ("mlp.up_proj.weight", lambda m: m.layers.mlp.up_proj.weight, True),
    ("mlp.down_proj.weight", lambda m: m.layers.mlp.down_proj.weight, True),
]
_QKV_BIAS = [
    ("self_attn.q_proj.bias", lambda m: m.layers.attn.q_bias, False),
    ("self_attn.k_proj.bias", lambda m: m.layers.attn.k_bias, False),
    ("self_attn.v_proj.bias", lambda m: m.layers.attn.v_bias, False),
]
_QK_NORM = [
    ("self_attn.q_norm.weight", lambda m: m.layers.attn.q_norm.weight, False),
    ("self_attn.k_norm.weight", lambda m: m.layers.attn.k_norm.weight, False),
]


def _table(config: TransformerConfig) -> tuple[list, list]:
    """(global entries, per-layer entries) for ``config``."""
    top = [("model.embed_tokens.weight", lambda m: m.embed, False),
           ("model.norm.weight", lambda m: m.norm.weight, False)]
    if not config.tie_embeddings:
        top.append(("lm_head.weight", lambda m: m.lm_head.weight, True))
    per_layer = (_PER_LAYER + (_QK_NORM if config.qk_norm else [])
                 + (_QKV_BIAS if config.qkv_bias else []))
    return top, per_layer


def _files(path: str | Path | Iterable[str | Path]) -> list[Path]:
    if isinstance(path, str | Path):
        path = Path(path)
        files = sorted(path.glob("*.safetensors")) if path.is_dir() else [path]
    else:
        files = [Path(p) for p in path]
    if not files:
        raise CheckpointError(f"no .safetensors files in {path}")
    for file in files:
        if not file.is_file():
            raise missing_path(file, "file")
    return files


def _open(file: Path) -> Any:
    """``safe_open(file)`` whose failure (a damaged or truncated file) names ``file``."""
    try:
        return safe_open(file, framework="np")
    except (SafetensorError, OSError) as error:
        raise CheckpointError(f"{file} is not a readable safetensors file: {error}") from None


# Where a composite (vision-language) checkpoint keeps its language model's ``model.`` and
# ``lm_head.`` tensors: transformers' saved layout, then its in-memory one.
_TEXT_LAYOUTS = (("language_model.model.", "language_model.lm_head."),
                 ("model.language_model.", "lm_head."))


class _Reader:
    """Tensors of several safetensors files by name, read one at a time (never all at once).

    A file is opened (memory-mapped) only while one tensor is copied out of it,
    so the pages of what was already read do not stay mapped into the process.
    With ``composite``, only the language model's tensors are read (see
    ``_TEXT_LAYOUTS``); the vision tower and projector are not part of it.
    """

    def __init__(self, files: list[Path], composite: bool = False):
        self.where: dict[str, Path] = {}
        self.progress: Progress | None = None
        self.layout = ("model.", "lm_head.")
        for file in files:
            with _open(file) as handle:
                for name in handle.keys():  # noqa: SIM118 - safe_open handles are not iterable
                    if name in self.where:
                        raise CheckpointError(f"tensor {name!r} appears twice (again in {file})")
                    self.where[name] = file
        if composite:
            layout = next((layout for layout in _TEXT_LAYOUTS
                           if any(n.startswith(layout[0]) for n in self.where)), None)
            if layout is None:
                raise CheckpointError(f"no language-model tensors in {files[0].parent} (looked "
                                      f"for names starting with {[m for m, _ in _TEXT_LAYOUTS]})")
            self.layout = layout
            self.where = {n: f for n, f in self.where.items() if n.startswith(layout)}
        self.unread = set(self.where)

    def stored(self, name: str) -> str:
        """The file's name for the causal-LM tensor ``name`` (``model.…`` or ``lm_head.…``)."""
        model, head = self.layout
        return model + name[6:] if name.startswith("model.") else head + name[8:]

    def take(self, name: str, expected: tuple, transpose: bool) -> np.ndarray:
        """Read ``name``, check its (Hugging Face) shape, return it in our layout."""
        name = self.stored(name)
        stored = tuple(expected[::-1]) if transpose else tuple(expected)
        if name not in self.where:
            raise CheckpointError(f"checkpoint is missing tensor {name!r} (expected shape "
                                  f"{list(stored)})")
        self.unread.discard(name)
        if self.progress is not None:
            self.progress.update(len(self.where) - len(self.unread))
        with _open(self.where[name]) as handle:
            try:
                array = handle.get_tensor(name)
            except (SafetensorError, OSError) as error:
                raise CheckpointError(f"tensor {name!r} of {self.where[name]} cannot be read: "
                                      f"{error}") from None
        if tuple(array.shape) != stored:
            raise CheckpointError(f"tensor {name!r} has shape {list(array.shape)}, "
                                  f"expected {list(stored)}")
        return array.T if transpose else array


_ALIGN = 64


def _aligned_empty(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """An uninitialised array whose data starts on a 64-byte boundary.

    JAX's CPU backend adopts such a NumPy array as a device buffer without
    copying it, so a parameter filled here exists once, not twice.
    """
    size = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(size + _ALIGN, np.uint8)
    start = -raw.ctypes.data % _ALIGN
    return raw[start:start + size].view(dtype).reshape(shape)


def _read_into_one(reader: _Reader, names: list[str], expected: tuple, transpose: bool,
                   dtype: Any, stacked: bool) -> jax.Array:
    """Read ``names`` one tensor at a time into one preallocated array, casting each.

    With ``stacked`` the result is ``[len(names), *expected]`` (one row per
    layer), else the single tensor itself. With ``dtype=None`` the file's dtype
    is kept, and every layer must share the first one's.
    """
    out: np.ndarray | None = None
    for i, name in enumerate(names):
        tensor = reader.take(name, expected, transpose)
        if out is None:
            first = tensor.dtype
            target = jax.dtypes.canonicalize_dtype(first if dtype is None else dtype)
            out = _aligned_empty((len(names), *expected) if stacked else tuple(expected),
                                 np.dtype(target))
        elif dtype is None and tensor.dtype != first:
            raise CheckpointError(f"tensor {name!r} is {tensor.dtype} but {names[0]!r} is "
                                  f"{first}; pass dtype= to load them as one dtype")
        out[i if stacked else ...] = tensor
        del tensor
    return jax.device_put(out)


def load_safetensors(
    path: str | Path | Iterable[str | Path],
    config: TransformerConfig,
    *,
    dtype: Any = None,
    progress: bool = True,
) -> Transformer:
    """Load Hugging Face weights into a stacked :class:`Transformer`.

    Each parameter is preallocated once (all layers stacked) and filled one
    tensor at a time, cast to ``dtype`` as it is copied; on the CPU backend JAX
    adopts the filled array without a copy. Peak host memory is about one copy
    of the model plus its largest tensor.

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
    return _load(_Reader(_files(path)), config, dtype, progress)


def _load(reader: _Reader, config: TransformerConfig, dtype: Any, progress: bool) -> Transformer:
    """The model of ``config`` filled from ``reader`` (see :func:`load_safetensors`)."""
    template = eqx.filter_eval_shape(lambda: Transformer(config, key=jax.random.key(0)))
    top, per_layer = _table(config)
    wheres, arrays = [], []
    with Progress("load weights", len(reader.where), enabled=progress, unit="tensors",
                  quiet=True, transient=True) as reader.progress:
        for name, where, transpose in top:
            arrays.append(_read_into_one(reader, [name], where(template).shape, transpose,
                                         dtype, stacked=False))
            wheres.append(where)
        for suffix, where, transpose in per_layer:
            names = [_LAYER.format(i=i) + suffix for i in range(config.num_layers)]
            arrays.append(_read_into_one(reader, names, where(template).shape[1:], transpose,
                                         dtype, stacked=True))
            wheres.append(where)
    if config.tie_embeddings:
        reader.unread.discard(reader.stored("lm_head.weight"))  # Hugging Face ignores it
    if reader.unread:
        names = sorted(reader.unread)
        listing = ", ".join(repr(n) for n in names[:5]) + (" ..." if len(names) > 5 else "")
        raise CheckpointError(f"checkpoint has {len(names)} unexpected tensor(s) for this "
                              f"config: {listing}")
    return eqx.tree_at(lambda m: [w(m) for w in wheres], template, arrays)


def _hf_tensors(model: Transformer) -> Iterator[tuple[str, np.ndarray]]:
    """``(name, array)`` of every base weight in Hugging Face layout, one at a time."""
    top, per_layer = _table(model.config)
    for name, where, transpose in top:
        array = np.asarray(where(model))
        yield name, np.ascontiguousarray(array.T if transpose else array)
    for i in range(model.config.num_layers):
        for suffix, where, transpose in per_layer:
            array = np.asarray(where(model)[i])
            yield (_LAYER.format(i=i) + suffix,
                   np.ascontiguousarray(array.T if transpose else array))


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
    save_file(dict(_hf_tensors(model)), str(path), metadata={"format": "pt"})


def _dtype_name(dtype: Any) -> str:
    return "bfloat16" if dtype == jnp.bfloat16 else str(np.dtype(dtype))


# What tokenizers and chat templates read, as transformers and serving engines save them.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "added_tokens.json", "vocab.json", "merges.txt", "vocab.txt",
                   "tokenizer.model", "spiece.model", "tekken.json", "chat_template.jinja",
                   "chat_template.json")
_TEMPLATES = "additional_chat_templates"


def _copy_tokenizer(source: str | Path, directory: Path) -> Path | None:
    """Copy the tokenizer and chat-template files of ``source`` unchanged into ``directory``.

    Returns ``source``'s ``generation_config.json`` (or None), for the caller to write.
    """
    source = Path(source)
    if not source.is_dir():
        raise missing_path(source) if not source.exists() else CheckpointError(
            f"tokenizer_from={str(source)!r} is a file: pass the directory that holds it")
    names = [name for name in TOKENIZER_FILES if (source / name).is_file()]
    if not names:
        raise CheckpointError(f"tokenizer_from={str(source)!r} holds no tokenizer file "
                              f"(looked for {list(TOKENIZER_FILES)})")
    if source.resolve() != directory.resolve():
        for name in names:
            shutil.copyfile(source / name, directory / name)
        if (source / _TEMPLATES).is_dir():
            shutil.copytree(source / _TEMPLATES, directory / _TEMPLATES, dirs_exist_ok=True)
    settings = source / "generation_config.json"
    return settings if settings.is_file() else None


def save_pretrained(model: Transformer, directory: str | Path, *,
                    max_shard_bytes: int = 5 * 2**30,
                    generation: GenerationSettings | None = None,
                    tokenizer_from: str | Path | None = None,
                    merge_adapter: int | None = None) -> None:
    """Write ``model`` as a Hugging Face model directory.

    ``config.json`` (see :func:`~jaxlean.models.lm.hf_config.config_to_hf`), the
    weights as ``model.safetensors``, or above ``max_shard_bytes`` as
    ``model-0000i-of-0000n.safetensors`` shards with ``model.safetensors.index.json``.
    ``transformers.AutoModelForCausalLM.from_pretrained(directory)`` loads it with
    no missing or unexpected keys.

    Args:
        model: the model; one with LoRA adapters is refused (naming them) unless
            ``merge_adapter`` says which adapter to fold in (see
            :func:`~jaxlean.models.lm.peft.merge_lora`; :func:`~jaxlean.models.lm.peft.save_lora`
            saves an adapter on its own).
        directory: created if needed.
        max_shard_bytes: the largest safetensors file.
        generation: eos/pad/bos ids, written to ``generation_config.json`` and ``config.json``.
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
    source = _copy_tokenizer(tokenizer_from, directory) if tokenizer_from is not None else None
    if generation is None and source is None and tokenizer_from is not None and (
            Path(tokenizer_from) / "config.json").is_file():  # ids from the source's config.json
        found = generation_settings(None, read_json(tokenizer_from))
        generation = found if found != GenerationSettings((), None, None) else None
    target = directory / "generation_config.json"
    hf = config_to_hf(model.config)
    hf["torch_dtype"] = _dtype_name(model.embed.dtype)
    if generation is not None:
        ids = {"eos_token_id": list(generation.eos_ids) or None,
               "pad_token_id": generation.pad_id, "bos_token_id": generation.bos_id}
        hf.update(ids)
        settings = read_json(source) if source is not None else {}
        target.write_text(json.dumps({**settings, **ids}, indent=2) + "\n")
    elif source is not None and source.resolve() != target.resolve():
        shutil.copyfile(source, target)
    (directory / "config.json").write_text(json.dumps(hf, indent=2) + "\n")
    shards: list[dict[str, np.ndarray]] = [{}]
    size = 0
    for name, array in _hf_tensors(model):
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
    path: str | Path, *, dtype: Any = None, progress: bool = True
) -> tuple[Transformer, TransformerConfig, GenerationSettings]:
    """Load a Hugging Face model directory (or one ``.safetensors`` file beside its config).

    A composite (vision-language) model of
    :data:`~jaxlean.models.lm.hf_config.COMPOSITE_TYPES` whose ``text_config`` is a
    supported family loads as its language model alone (the vision tower and
    projector are not read); any other composite is refused, naming its types.

    Args:
        path: the directory holding ``config.json`` and the safetensors file(s)
            (a ``model.safetensors.index.json`` names the shards), or one file.
        dtype: cast every tensor to this dtype (default: keep the file's dtype).
        progress: report the tensors read when loading is long (see :func:`load_safetensors`).

    Returns:
        ``(model, config, generation settings)``.

    Raises:
        ConfigError: the config asks for something this model does not compute
            (named: field, value, what is supported).
        CheckpointError: a missing, unexpected or mis-shaped tensor, or a missing file.
    """
    path = model_path(path)
    directory = path if path.is_dir() else path.parent
    hf = read_json(directory)
    config = config_from_hf(hf)
    index = directory / "model.safetensors.index.json"
    files: Any = path
    if path.is_dir() and index.is_file():
        weight_map = read_json(index, index.name).get("weight_map", {})
        files = [directory / name for name in sorted(set(weight_map.values()))]
    reader = _Reader(_files(files), composite="text_config" in hf)
    return _load(reader, config, dtype, progress), config, generation_settings(directory, hf)
