"""Several sequences in one row: best-fit-decreasing packing, segment ids, restarting positions.

Padding every example to the longest wastes most of a batch on real chat data, so rows
of ``seq_length`` tokens are filled with whole examples: :func:`best_fit_decreasing`
takes the examples longest first and puts each in the open row it fills most tightly
(the strategy of TRL's ``packing_strategy="bfd"``, "Fewer Truncations Improve Language
Modeling", here over the whole dataset at once rather than per map batch of 1000).
:func:`collate` lays rows out as arrays: ``segment_ids`` (1, 2, ... per example, 0 at
padding) let the model attend within a segment only, ``positions`` restart at 0 in each
segment, and the label of each segment's first token is ``-100`` (as TRL's padding-free
collator sets it), so no token is predicted across a boundary and the loss equals the
unpacked one. A packed batch (:class:`PackedBatch`) has no ``attention_mask``: a mask
alone would let its sequences attend to each other, so asking for one raises, naming
``segment_ids``; ``loss(model, **batch)`` passes what keeps them apart.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import defaultdict, deque
from collections.abc import Sequence

import numpy as np

from jaxlean._args import as_int
from jaxlean.errors import DataError
from jaxlean.models.lm.data.conversations import IGNORE_INDEX, Example

__all__ = ["PackedBatch", "Packing", "best_fit_decreasing", "collate", "pack",
           "packing_efficiency"]


class PackedBatch(dict):
    """The arrays of a packed batch: ``input_ids``, ``labels``, ``segment_ids``, ``positions``.

    A plain dict (and a pytree like one) but for one thing: it has no ``attention_mask``,
    and ``batch["attention_mask"]`` raises :class:`DataError`. Passing a packed row's ids
    with only a padding mask (Hugging Face's usual call) would let its sequences attend to
    each other and give a plausible, wrong loss; ``segment_ids`` and ``positions`` keep them
    apart: pass the batch whole, ``loss(model, **batch)`` or ``step(model, state, **batch)``.
    """

    def __missing__(self, key: str) -> np.ndarray:
        if key == "attention_mask":
            raise DataError(
                "a packed batch has no attention_mask: a padding mask alone lets the packed "
                "sequences of a row attend to each other; pass segment_ids (and positions) "
                "instead, e.g. loss(model, **batch) or step(model, state, **batch)")
        raise KeyError(key)


@functools.cache
def _register_packed_batch() -> None:
    """Make :class:`PackedBatch` a pytree like a dict (once, at the first packed batch: the
    data package itself imports no JAX)."""
    import jax

    jax.tree_util.register_pytree_with_keys(
        PackedBatch,
        lambda b: ([(jax.tree_util.DictKey(k), b[k]) for k in sorted(b)], tuple(sorted(b))),
        lambda keys, values: PackedBatch(zip(keys, values, strict=True)),
        flatten_func=lambda b: ([b[k] for k in sorted(b)], tuple(sorted(b))))


class _MaxTree:
    """A set of values in ``1..capacity`` (free spaces) that finds the smallest one >= a query."""

    def __init__(self, capacity: int):
        self.size = 1 << max(capacity - 1, 0).bit_length()
        self.tree = [0] * (2 * self.size)

    def set(self, value: int, present: bool) -> None:
        i = self.size + value - 1
        self.tree[i] = value if present else 0
        while i > 1:
            i >>= 1
            left, right = self.tree[2 * i], self.tree[2 * i + 1]
            self.tree[i] = left if left >= right else right

    def smallest_at_least(self, value: int) -> int:
        """The smallest present value >= ``value`` (0 if none)."""
        if self.tree[1] < value:
            return 0
        i = 1
        while i < self.size:
            i = 2 * i if self.tree[2 * i] >= value else 2 * i + 1
        return self.tree[i]


def best_fit_decreasing(lengths: Sequence[int] | np.ndarray, capacity: int) -> list[list[int]]:
    """Indices of ``lengths`` grouped into bins of total length <= ``capacity``.

    Longest first (ties in index order), each item goes into the open bin whose free space
    is the smallest that still fits it, or a new bin. Every length must be in
    ``1..capacity`` (truncate or drop first).
    """
    capacity = as_int(capacity, "capacity", minimum=1)
    lengths = np.asarray(lengths, np.int64).reshape(-1)
    if len(lengths) and (lengths.min() < 1 or lengths.max() > capacity):
        bad = int(np.flatnonzero((lengths < 1) | (lengths > capacity))[0])
        raise DataError(f"best_fit_decreasing: item {bad} has length {int(lengths[bad])}, "
                        f"outside 1..{capacity}")
    order = np.argsort(-lengths, kind="stable")
    tree = _MaxTree(capacity)
    tree.set(capacity, True)  # a new, empty bin is always available
    by_space: defaultdict[int, deque[int]] = defaultdict(deque)
    bins: list[list[int]] = []
    for index in order.tolist():
        length = int(lengths[index])
        space = tree.smallest_at_least(length)
        if space < capacity:
            b = by_space[space].popleft()
            if not by_space[space]:
                tree.set(space, False)
        else:
            b = len(bins)
            bins.append([])
        bins[b].append(index)
        space -= length
        if space > 0:
            by_space[space].append(b)
            tree.set(space, True)
    return bins


def packing_efficiency(lengths: Sequence[int] | np.ndarray, rows: int, seq_length: int) -> float:
    """Real tokens / row tokens: ``sum(lengths) / (rows * seq_length)``."""
    total = int(np.sum(np.asarray(lengths, np.int64)))
    return total / (rows * seq_length) if rows else 0.0


@dataclasses.dataclass(frozen=True)
class Packing:
    """Examples (truncated to ``seq_length``) and the rows they are packed into.

    ``rows[r]`` lists the indices into ``examples`` that row ``r`` holds, in order.
    """

    examples: list[Example]
    rows: list[list[int]]
    seq_length: int

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def efficiency(self) -> float:
        """Real tokens / row tokens over all rows."""
        return packing_efficiency([len(e) for e in self.examples], len(self.rows),
                                  self.seq_length)


def pack(examples: Sequence[Example], seq_length: int) -> Packing:
    """Pack ``examples`` into rows of ``seq_length`` tokens by :func:`best_fit_decreasing`.

    An example longer than ``seq_length`` is truncated to its first ``seq_length`` tokens
    and empty ones are dropped, as TRL's ``"bfd"`` strategy does.
    """
    seq_length = as_int(seq_length, "seq_length", minimum=1)
    kept = [e if len(e) <= seq_length else dataclasses.replace(
        e, input_ids=e.input_ids[:seq_length], labels=e.labels[:seq_length])
        for e in examples if len(e)]
    rows = best_fit_decreasing([len(e) for e in kept], seq_length)
    return Packing(kept, rows, seq_length)


def collate(examples: Sequence[Example], rows: Sequence[Sequence[int]], seq_length: int,
            pad_id: int, *, packed: bool) -> dict[str, np.ndarray]:
    """``[len(rows), seq_length]`` arrays of the given rows, each row holding its examples.

    Returns ``input_ids`` (``pad_id`` at padding), ``labels`` (``-100`` at padding and, when
    ``packed``, at each segment's first token), ``segment_ids`` (1, 2, ... per example in
    its row, 0 at padding), ``positions`` (restarting at 0 in each segment, 0 at padding)
    and, unpacked, ``attention_mask`` (``segment_ids > 0``). An empty row is all padding.
    Packed, the result is a :class:`PackedBatch`, which refuses to give an attention mask.
    Unpacked with at most one example per row (padded batches), it is Hugging Face's
    ``input_ids``, ``labels``, ``attention_mask`` alone: segments and positions add nothing
    there (the model counts positions from the mask) but work.
    """
    shape = (len(rows), seq_length)
    out = {"input_ids": np.full(shape, pad_id, np.int32),
           "labels": np.full(shape, IGNORE_INDEX, np.int32),
           "segment_ids": np.zeros(shape, np.int32),
           "positions": np.zeros(shape, np.int32)}
    for r, members in enumerate(rows):
        start = 0
        for segment, index in enumerate(members, start=1):
            example = examples[index]
            stop = start + len(example)
            if stop > seq_length:
                raise DataError(f"{example.where or f'example {index}'}: row {r} needs "
                                f"{stop} tokens but seq_length={seq_length} (truncate the "
                                f"examples: tokenize_records(max_length=...), or pack them)")
            out["input_ids"][r, start:stop] = example.input_ids
            out["labels"][r, start:stop] = example.labels
            out["segment_ids"][r, start:stop] = segment
            out["positions"][r, start:stop] = np.arange(len(example))
            if packed:
                out["labels"][r, start] = IGNORE_INDEX
            start = stop
    if packed:
        _register_packed_batch()
        return PackedBatch(out)
    out["attention_mask"] = out["segment_ids"] > 0
    if all(len(members) <= 1 for members in rows):
        del out["segment_ids"], out["positions"]
    return out
