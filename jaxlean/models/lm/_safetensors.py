"""Reading safetensors files by name into preallocated arrays: no torch, no memory map.

Model-agnostic: :class:`Reader` parses the headers of one or more files and
checks each tensor's name and shape (:meth:`Reader.plan`); :func:`allocate`
preallocates the one (possibly layer-stacked) array a list of tensors fills;
:func:`fill` reads every planned tensor, each file once and front to back, with
plain reads straight into its place (transposed or cast a slab at a time), and
puts the arrays into a module template. Host memory peaks near one copy of the
weights. A damaged file, a missing, unexpected or mis-shaped tensor raises
:class:`~jaxlean.errors.CheckpointError` naming it. The Hugging Face names of
the :class:`~jaxlean.models.lm.transformer.Transformer` are in
:mod:`jaxlean.models.lm.hf_names`.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import struct
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import ml_dtypes
import numpy as np

from jaxlean._progress import Progress
from jaxlean.errors import CheckpointError
from jaxlean.models.lm.hf_config import missing_path

__all__ = ["ALIGN", "BLOCK_BYTES", "DTYPES", "TEXT_LAYOUTS", "Reader", "Stored", "aligned_empty",
           "allocate", "fill", "read_header", "safetensors_files"]


def safetensors_files(path: str | Path | Iterable[str | Path]) -> list[Path]:
    """The files of ``path``: one file, every ``.safetensors`` of a directory, or a list."""
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
DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16,
          "F8_E4M3": ml_dtypes.float8_e4m3fn, "F8_E5M2": ml_dtypes.float8_e5m2,
          "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8, "U64": np.uint64,
          "U32": np.uint32, "U16": np.uint16, "U8": np.uint8, "BOOL": np.bool_,
          "C64": np.complex64}


@dataclasses.dataclass(frozen=True)
class Stored:
    """Where one tensor's bytes lie in its file (``start``: absolute byte offset)."""

    file: Path
    dtype: np.dtype
    shape: tuple[int, ...]
    start: int
    nbytes: int


def read_header(file: Path) -> dict[str, Stored]:
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
            if info["dtype"] not in DTYPES:
                raise ValueError(f"tensor {name!r} has dtype {info['dtype']!r} (known: "
                                 f"{sorted(DTYPES)})")
            dtype, shape = np.dtype(DTYPES[info["dtype"]]), tuple(int(d) for d in info["shape"])
            begin, stop = (int(o) for o in info["data_offsets"])
            if begin != end or stop - begin != math.prod(shape) * dtype.itemsize:
                raise ValueError(f"tensor {name!r} has data offsets {[begin, stop]} that do not "
                                 f"follow byte {end} or do not fit shape {list(shape)} of {dtype}")
            tensors[name] = Stored(file, dtype, shape, base + begin, stop - begin)
            end = stop
        if base + end != size:
            raise ValueError(f"its tensors end at byte {base + end} but the file has {size}")
    except (OSError, ValueError, KeyError, TypeError, IndexError) as error:
        raise CheckpointError(f"{file} is not a readable safetensors file: {error}") from None
    return tensors


# Where a composite (vision-language) checkpoint keeps its language model's ``model.`` and
# ``lm_head.`` tensors: transformers' saved layout, then its in-memory one.
TEXT_LAYOUTS = (("language_model.model.", "language_model.lm_head."),
                 ("model.language_model.", "lm_head."))


class Reader:
    """Tensors of several safetensors files by name, read by plain reads into their places.

    Only the headers are read up front. :meth:`plan` checks a tensor's name and
    shape; :meth:`take` reads its bytes straight into the destination array (or,
    when it must be transposed or cast, through one reused buffer), so nothing is
    memory-mapped and no second copy of the model is ever held. With
    ``composite``, only the language model's tensors are read (see
    ``TEXT_LAYOUTS``); the vision tower and projector are not part of it.
    """

    def __init__(self, files: list[Path], composite: bool = False):
        self.where: dict[str, Stored] = {}
        self.progress: Progress | None = None
        self.layout = ("model.", "lm_head.")
        self.buffer = np.empty(0, np.uint8)
        for file in files:
            for name, stored in read_header(file).items():
                if name in self.where:
                    raise CheckpointError(f"tensor {name!r} appears twice (again in {file})")
                self.where[name] = stored
        if composite:
            layout = next((layout for layout in TEXT_LAYOUTS
                           if any(n.startswith(layout[0]) for n in self.where)), None)
            if layout is None:
                raise CheckpointError(f"no language-model tensors in {files[0].parent} (looked "
                                      f"for names starting with {[m for m, _ in TEXT_LAYOUTS]})")
            self.layout = layout
            self.where = {n: f for n, f in self.where.items() if n.startswith(layout)}
        self.unread = set(self.where)
        self.done = 0

    def stored(self, name: str) -> str:
        """The file's name for the causal-LM tensor ``name`` (``model.…`` or ``lm_head.…``)."""
        model, head = self.layout
        return model + name[6:] if name.startswith("model.") else head + name[8:]

    def plan(self, name: str, expected: tuple, transpose: bool) -> tuple[str, Stored]:
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
        transpose or cast is read in slabs of rows of about ``BLOCK_BYTES``
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
            rows = max(1, BLOCK_BYTES // max(1, row_bytes))
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
BLOCK_BYTES = 1 << 20


ALIGN = 64


def aligned_empty(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """An uninitialised array whose data starts on a 64-byte boundary.

    JAX's CPU backend adopts such a NumPy array as a device buffer without
    copying it, so a parameter filled here exists once, not twice.
    """
    size = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(size + ALIGN, np.uint8)
    start = -raw.ctypes.data % ALIGN
    return raw[start:start + size].view(dtype).reshape(shape)


def allocate(reader: Reader, names: list[str], expected: tuple, transpose: bool, dtype: Any,
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
    out = aligned_empty((len(names), *expected) if stacked else tuple(expected),
                        np.dtype(target))
    reads = [(name, out[i] if stacked else out, transpose)
             for i, (name, _) in enumerate(found)]
    return out, reads


def fill(reader: Reader, template: Any,
         entries: list[tuple[list[str], Callable[[Any], Any], bool, bool]],
         dtype: Any, progress: bool) -> Any:
    """``template`` with each entry's array read from ``reader``.

    Each entry is ``(names, where, transpose, stacked)``: the tensors that fill
    the array ``where(template)`` (one per layer, stacked, when ``stacked``),
    stored transposed or not. Every tensor of the files must be planned by an
    entry (or discarded from ``reader.unread`` beforehand); the others are named.
    """
    wheres, arrays, reads = [], [], []
    for names, where, transpose, stacked in entries:
        shape = where(template).shape[1:] if stacked else where(template).shape
        out, slots = allocate(reader, names, shape, transpose, dtype, stacked)
        arrays.append(out)
        wheres.append(where)
        reads += slots
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
