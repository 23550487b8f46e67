"""Fixed-shape batches of tokenized examples, shuffled per epoch from a seed, resumable mid-epoch.

:class:`Batches` turns :class:`~jaxlean.models.lm.data.conversations.Example`\\ s into
``[batch_size, seq_length]`` arrays, one example per row (padded) or several (packed by
:func:`~jaxlean.models.lm.data.packing.pack`). Every batch has the same shape, so a
jitted step compiles once: the last, short batch of an epoch is filled with empty rows
(all padding, no labels), which add nothing to a loss averaged over labelled tokens.
Epoch ``e`` visits the rows in the order ``permutation(seed, e)``, so a run is the same
from the same seed, and :attr:`Batches.state` (``epoch``, ``position``, ``seed``) is all
it takes to continue mid-epoch with the very next batch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from jaxlean._args import as_int
from jaxlean.errors import ConfigError, DataError
from jaxlean.models.lm.data.conversations import Example
from jaxlean.models.lm.data.packing import collate, pack, packing_efficiency

__all__ = ["BatchState", "Batches"]


@dataclasses.dataclass(frozen=True)
class BatchState:
    """Where a :class:`Batches` stands: rows served so far in ``epoch``, and the ``seed``."""

    epoch: int = 0
    position: int = 0
    seed: int = 0

    def to_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


class Batches(Iterator[dict[str, np.ndarray]]):
    """An iterator of batch dicts (see :func:`~jaxlean.models.lm.data.packing.collate`).

    Args:
        examples: the tokenized examples.
        batch_size: rows per batch.
        seq_length: tokens per row. Unpacked, an example longer than this is refused
            (truncate with ``tokenize_records(max_length=...)``); packed, it is truncated.
        pad_id: the padding token id (``Tokenizer.pad_token_id``).
        packing: pack several examples per row (best-fit decreasing), TRL's ``packing=True``.
        shuffle: visit the rows in a new order each epoch (else in dataset order).
        seed: the shuffling seed (default 0, or the seed of ``state``).
        drop_last: skip an epoch's last, short batch instead of filling it with empty rows.
        epochs: stop after this many epochs (default: never stop).
        state: a :attr:`state` (or its ``to_dict()``) to resume from.
    """

    def __init__(self, examples: Sequence[Example], batch_size: int, seq_length: int, *,
                 pad_id: int, packing: bool = False, shuffle: bool = True,
                 seed: int | None = None, drop_last: bool = False, epochs: int | None = None,
                 state: BatchState | Mapping[str, int] | None = None,
                 _rows: list[list[int]] | None = None, _examples: list | None = None):
        self.batch_size = as_int(batch_size, "batch_size", minimum=1)
        self.seq_length = as_int(seq_length, "seq_length", minimum=1)
        self.pad_id = as_int(pad_id, "pad_id", minimum=0)
        self.packing, self.shuffle, self.drop_last = bool(packing), bool(shuffle), bool(drop_last)
        self.epochs = None if epochs is None else as_int(epochs, "epochs", minimum=1)
        if _rows is not None:  # a subclass's own examples, one per row
            self.examples, self.rows = _examples, _rows
        elif packing:
            packed = pack(examples, self.seq_length)
            self.examples, self.rows = packed.examples, packed.rows
        else:
            self.examples = list(examples)
            for i, example in enumerate(self.examples):
                if len(example) > self.seq_length:
                    raise DataError(f"{example.where or f'example {i}'} has {len(example)} "
                                    f"tokens > seq_length={self.seq_length}: truncate with "
                                    f"tokenize_records(max_length={self.seq_length}), pass "
                                    f"packing=True, or raise seq_length")
            self.rows = [[i] for i in range(len(self.examples))]
        if not self.rows:
            raise DataError("Batches: no examples to batch")
        if drop_last and len(self.rows) < self.batch_size:
            raise DataError(f"Batches: {len(self.rows)} rows make no full batch of "
                            f"{self.batch_size} and drop_last=True")
        self._state = self._check_state(state, seed)

    def _check_state(self, state: BatchState | Mapping[str, int] | None,
                     seed: int | None) -> BatchState:
        if state is None:
            return BatchState(0, 0, 0 if seed is None else as_int(seed, "seed"))
        if isinstance(state, Mapping):
            unknown = set(state) - {"epoch", "position", "seed"}
            if unknown:
                raise ConfigError(f"Batches: state has unknown keys {sorted(unknown)}; "
                                  f"accepted: ['epoch', 'position', 'seed']")
            state = BatchState(**state)
        epoch = as_int(state.epoch, "state.epoch", minimum=0)
        position = as_int(state.position, "state.position", minimum=0)
        saved = as_int(state.seed, "state.seed")
        if seed is not None and seed != saved:
            raise ConfigError(f"Batches: seed={seed} but the state to resume was saved with "
                              f"seed={saved} (leave seed out to resume)")
        if position >= len(self.rows):
            raise DataError(f"Batches: state.position={position} but an epoch has "
                            f"{len(self.rows)} rows (a state saved for another dataset, "
                            f"batch size or packing?)")
        return BatchState(epoch, position, saved)

    @property
    def state(self) -> BatchState:
        """Where the next batch starts; pass it as ``state=`` to continue from here."""
        return self._state

    @property
    def steps_per_epoch(self) -> int:
        full, rest = divmod(len(self.rows), self.batch_size)
        return full + (1 if rest and not self.drop_last else 0)

    @property
    def efficiency(self) -> float:
        """Real tokens / row tokens over one epoch's rows (empty filler rows not counted)."""
        return packing_efficiency([len(e) for e in self.examples], len(self.rows),
                                  self.seq_length)

    def order(self, epoch: int) -> np.ndarray:
        """The row order of ``epoch``: a permutation drawn from ``(seed, epoch)``."""
        if not self.shuffle:
            return np.arange(len(self.rows))
        return np.random.default_rng([self._state.seed, epoch]).permutation(len(self.rows))

    def __next__(self) -> dict[str, np.ndarray]:
        epoch, position, seed = dataclasses.astuple(self._state)
        if self.drop_last and position + self.batch_size > len(self.rows):
            epoch, position = epoch + 1, 0
        if self.epochs is not None and epoch >= self.epochs:
            raise StopIteration
        take = self.order(epoch)[position:position + self.batch_size]
        rows = [self.rows[i] for i in take] + [[]] * (self.batch_size - len(take))
        batch = self._collate(rows)
        position += len(take)
        if position >= len(self.rows):
            epoch, position = epoch + 1, 0
        self._state = BatchState(epoch, position, seed)
        return batch

    def _collate(self, rows: list[list[int]]) -> dict[str, np.ndarray]:
        """The batch of these rows (an empty list: a filler row of padding)."""
        return collate(self.examples, rows, self.seq_length, self.pad_id, packed=self.packing)

    def __iter__(self) -> Batches:
        return self

    def __repr__(self) -> str:
        kind = "packed" if self.packing else "padded"
        return (f"Batches({len(self.rows)} {kind} rows of {self.seq_length}, batch_size="
                f"{self.batch_size}, state={self._state})")
