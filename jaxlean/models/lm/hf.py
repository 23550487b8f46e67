"""Hugging Face checkpoints (Llama, Mistral, Qwen2, Qwen3) <-> the stacked ``Transformer``.

Hugging Face stores one tensor per layer and projection, as ``[out, in]``
(``model.layers.3.self_attn.q_proj.weight``); the :class:`Transformer` keeps
each projection once, as ``[layers, in, out]``. Loading parses the safetensors
headers (no torch), checks names and shapes against the config, then reads each
file once, front to back, with plain reads straight into each tensor's place in
its parameter's preallocated stacked array (transposed or cast a slab at a
time), so host memory peaks near one copy of the model. A missing, unexpected
or mis-shaped tensor raises :class:`CheckpointError` naming it. A tied model
whose file also stores ``lm_head.weight`` loads as Hugging Face loads it: the
stored head is ignored.

:func:`load_pretrained` / :func:`save_pretrained` read and write a whole model
directory (``config.json``, ``generation_config.json``, safetensors shards
with ``model.safetensors.index.json``) that ``transformers`` loads as is, with
the tokenizer and chat-template files of the source directory copied unchanged
(``tokenizer_from=``). LoRA adapters are not part of the base checkpoint: saving a
model that has them folds one in (``merge_adapter=``) or is refused (see
:mod:`jaxlean.models.lm.peft` for PEFT's adapter files).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import shutil
import struct
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
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


# safetensors dtype names -> NumPy (bfloat16 and float8 through ml_dtypes, as JAX has them).
_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16,
           "F8_E4M3": ml_dtypes.float8_e4m3fn, "F8_E5M2": ml_dtypes.float8_e5m2,
           "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8, "U64": np.uint64,
           "U32": np.uint32, "U16": np.uint16, "U8": np.uint8, "BOOL": np.bool_,
           "C64": np.complex64}


@dataclasses.dataclass(frozen=True)
class _Stored:
    """Where one tensor's bytes lie in its file (``start``: absolute byte offset)."""

    file: Path
    dtype: np.dtype
    shape: tuple[int, ...]
    start: int
    nbytes: int


def _header(file: Path) -> dict[str, _Stored]:
    """The tensors of one safetensors file, from its header (8-byte little-endian length,
    then JSON); a damaged or truncated file raises :class:`CheckpointError` naming it."""
    try:
        with open(file, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            raw = handle.read(8)
            length = struct.unpack("<Q", raw)[0] if len(raw) == 8 else size
            if length > size - 8:
                raise ValueError(f"its header length ({length} bytes) exceeds the file")
            header = json.loads(handle.read(length))
        if not isinstance(header, dict):
            raise ValueError("its header is not a JSON object")
        base, tensors, end = 8 + length, {}, 0
        for name, info in sorted(((n, i) for n, i in header.items() if n != "__metadata__"),
                                 key=lambda item: item[1]["data_offsets"][0]):
            if info["dtype"] not in _DTYPES:
                raise ValueError(f"tensor {name!r} has dtype {info['dtype']!r} (known: "
                                 f"{sorted(_DTYPES)})")
            dtype, shape = np.dtype(_DTYPES[info["dtype"]]), tuple(int(d) for d in info["shape"])
            begin, stop = (int(o) for o in info["data_offsets"])
            if begin != end or stop - begin != math.prod(shape) * dtype.itemsize:
                raise ValueError(f"tensor {name!r} has data offsets {[begin, stop]} that do not "
                                 f"follow byte {end} or do not fit shape {list(shape)} of {dtype}")
            tensors[name] = _Stored(file, dtype, shape, base + begin, stop - begin)
            end = stop
        if base + end != size:
            raise ValueError(f"its tensors end at byte {base + end} but the file has {size}")
    except (OSError, ValueError, KeyError, TypeError, IndexError) as error:
        raise CheckpointError(f"{file} is not a readable safetensors file: {error}") from None
    return tensors


# Where a composite (vision-language) checkpoint keeps its language model's ``model.`` and
# ``lm_head.`` tensors: transformers' saved layout, then its in-memory one.
_TEXT_LAYOUTS = (("language_model.model.", "language_model.lm_head."),
                 ("model.language_model.", "lm_head."))


class _Reader:
    """Tensors of several safetensors files by name, read by plain reads into their places.

    Only the headers are read up front. :meth:`plan` checks a tensor's name and
    shape; :meth:`take` reads its bytes straight into the destination array (or,
    when it must be transposed or cast, through one reused buffer), so nothing is
    memory-mapped and no second copy of the model is ever held. With
    ``composite``, only the language model's tensors are read (see
    ``_TEXT_LAYOUTS``); the vision tower and projector are not part of it.
    """

    def __init__(self, files: list[Path], composite: bool = False):
        self.where: dict[str, _Stored] = {}
        self.progress: Progress | None = None
        self.layout = ("model.", "lm_head.")
        self.buffer = np.empty(0, np.uint8)
        for file in files:
            for name, stored in _header(file).items():
                if name in self.where:
                    raise CheckpointError(f"tensor {name!r} appears twice (again in {file})")
                self.where[name] = stored
        if composite:
            layout = next((layout for layout in _TEXT_LAYOUTS
                           if any(n.startswith(layout[0]) for n in self.where)), None)
            if layout is None:
                raise CheckpointError(f"no language-model tensors in {files[0].parent} (looked "
                                      f"for names starting with {[m for m, _ in _TEXT_LAYOUTS]})")
            self.layout = layout
            self.where = {n: f for n, f in self.where.items() if n.startswith(layout)}
        self.unread = set(self.where)
        self.done = 0

    def stored(self, name: str) -> str:
        """The file's name for the causal-LM tensor ``name`` (``model.…`` or ``lm_head.…``)."""
        model, head = self.layout
        return model + name[6:] if name.startswith("model.") else head + name[8:]

    def plan(self, name: str, expected: tuple, transpose: bool) -> tuple[str, _Stored]:
        """Check that ``name`` is stored with its (Hugging Face) shape; its file name and place."""
        name = self.stored(name)
        stored = tuple(expected[::-1]) if transpose else tuple(expected)
        if name not in self.where:
            raise CheckpointError(f"checkpoint is missing tensor {name!r} (expected shape "
                                  f"{list(stored)})")
        self.unread.discard(name)
        found = self.where[name]
        if found.shape != stored:
            raise CheckpointError(f"tensor {name!r} has shape {list(found.shape)}, "
                                  f"expected {list(stored)}")
        return name, found

    def take(self, handle: Any, name: str, out: np.ndarray, transpose: bool) -> None:
        """Read tensor ``name`` from the open file ``handle`` into ``out`` (our layout).

        A tensor stored as ``out`` holds it is read straight into ``out``; one to
        transpose or cast is read in slabs of rows of about ``_BLOCK_BYTES``
        through a small reused buffer, each slab written to its place at once.
        """
        found = self.where[name]
        handle.seek(found.start)
        if not transpose and out.dtype == found.dtype and out.flags.c_contiguous:
            self._read(handle, name, out.reshape(-1).view(np.uint8))
        else:
            stored = out.T if transpose else out  # ``out`` seen in the file's layout
            stored = stored[None] if stored.ndim == 0 else stored
            row_bytes = math.prod(stored.shape[1:]) * found.dtype.itemsize
            rows = max(1, _BLOCK_BYTES // max(1, row_bytes))
            for start in range(0, stored.shape[0], rows):
                slab = stored[start:start + rows]
                if self.buffer.size < slab.shape[0] * row_bytes:
                    self.buffer = np.empty(slab.shape[0] * row_bytes, np.uint8)
                raw = self.buffer[:slab.shape[0] * row_bytes]
                self._read(handle, name, raw)
                slab[...] = raw.view(found.dtype).reshape(slab.shape)
        self.done += 1
        if self.progress is not None:
            self.progress.update(self.done)

    def _read(self, handle: Any, name: str, target: np.ndarray) -> None:
        """Fill the bytes of ``target`` from ``handle``'s position; a short file is named."""
        view = memoryview(target)
        while view.nbytes:
            count = handle.readinto(view)
            if not count:
                raise CheckpointError(f"tensor {name!r} of {self.where[name].file} cannot be "
                                      f"read: the file ends early")
            view = view[count:]


# Bytes of one slab of a tensor read through the buffer (transposed or cast): small enough
# to stay in cache while it is written to its place.
_BLOCK_BYTES = 1 << 20


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


def _allocate(reader: _Reader, names: list[str], expected: tuple, transpose: bool, dtype: Any,
              stacked: bool) -> tuple[np.ndarray, list[tuple[str, np.ndarray, bool]]]:
    """Check ``names`` and preallocate the one array they fill; the (name, slot) reads to do.

    With ``stacked`` the array is ``[len(names), *expected]`` (one row per
    layer), else the single tensor itself. With ``dtype=None`` the file's dtype
    is kept, and every layer must share the first one's.
    """
    found = [reader.plan(name, expected, transpose) for name in names]
    first = found[0][1].dtype
    for name, (_, stored) in zip(names[1:], found[1:], strict=True):
        if dtype is None and stored.dtype != first:
            raise CheckpointError(f"tensor {name!r} is {stored.dtype} but {names[0]!r} is "
                                  f"{first}; pass dtype= to load them as one dtype")
    target = jax.dtypes.canonicalize_dtype(first if dtype is None else dtype)
    out = _aligned_empty((len(names), *expected) if stacked else tuple(expected),
                         np.dtype(target))
    reads = [(name, out[i] if stacked else out, transpose)
             for i, (name, _) in enumerate(found)]
    return out, reads


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
    return _load(_Reader(_files(path)), config, dtype, progress)


def _load(reader: _Reader, config: TransformerConfig, dtype: Any, progress: bool) -> Transformer:
    """The model of ``config`` filled from ``reader`` (see :func:`load_safetensors`)."""
    template = eqx.filter_eval_shape(lambda: Transformer(config, key=jax.random.key(0)))
    top, per_layer = _table(config)
    wheres, arrays, reads = [], [], []
    for names, where, transpose, stacked in (
            [([name], where, transpose, False) for name, where, transpose in top]
            + [([_LAYER.format(i=i) + suffix for i in range(config.num_layers)], where,
                transpose, True) for suffix, where, transpose in per_layer]):
        shape = where(template).shape[1:] if stacked else where(template).shape
        out, slots = _allocate(reader, names, shape, transpose, dtype, stacked)
        arrays.append(out)
        wheres.append(where)
        reads += slots
    if config.tie_embeddings:
        reader.unread.discard(reader.stored("lm_head.weight"))  # Hugging Face ignores it
    if reader.unread:
        names = sorted(reader.unread)
        listing = ", ".join(repr(n) for n in names[:5]) + (" ..." if len(names) > 5 else "")
        raise CheckpointError(f"checkpoint has {len(names)} unexpected tensor(s) for this "
                              f"config: {listing}")
    # Each file once, its tensors in file order: sequential reads, no seeking back.
    reads.sort(key=lambda read: (str(reader.where[read[0]].file), reader.where[read[0]].start))
    with Progress("load weights", len(reader.where), enabled=progress, unit="tensors",
                  quiet=True, transient=True) as reader.progress:
        for file, group in itertools.groupby(reads, key=lambda read: reader.where[read[0]].file):
            try:
                with open(file, "rb", buffering=0) as handle:
                    for name, slot, transpose in group:
                        reader.take(handle, name, slot, transpose)
            except OSError as error:
                raise CheckpointError(f"{file} cannot be read: {error}") from None
        reader.buffer = np.empty(0, np.uint8)
    arrays = [jax.device_put(array) for array in arrays]
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
