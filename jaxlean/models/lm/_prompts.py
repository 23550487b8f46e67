"""Prompts as :func:`~jaxlean.models.lm.generate.generate` takes them: ragged lists or padded
arrays in, left-padded rows out; eos ids and stop sequences as fixed-size tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from jaxlean.errors import ConfigError, DataError

__all__ = ["left_padded", "prompt_rows", "stop_table"]

STOP_SLOTS = 4  # eos ids and stop sequences are padded to multiples of this (data, not shapes)


def prompt_rows(prompt: Any, prompt_mask: Any, pad_id: int | None) -> list[np.ndarray]:
    """Each prompt's real ids, in order, from a ragged list or a padded array and mask.

    A mask-less array with a row ending in ``pad_id`` (when known) is refused as
    right-padded: those pads would be read as prompt and generated after.
    """
    if isinstance(prompt, (jax.Array, np.ndarray)):
        ids = np.asarray(prompt)
        if ids.ndim != 2:
            raise DataError(f"prompt must be [batch, length] or a list of sequences, got shape "
                            f"{ids.shape}")
        if prompt_mask is None:
            _refuse_right_padding(ids, pad_id)
            return list(ids)
        mask = np.asarray(prompt_mask)
        if mask.shape != ids.shape:
            raise DataError(f"attention_mask (prompt_mask) must have the prompt's shape "
                            f"{ids.shape} ([batch, length], False or 0 at padding), got "
                            f"{mask.shape}")
        return [row[keep] for row, keep in zip(ids, mask.astype(bool), strict=True)]
    if prompt_mask is not None:
        raise ConfigError("attention_mask (prompt_mask) is for a padded [batch, length] array; "
                          "a list of sequences has no padding")
    rows = [np.asarray(row) for row in prompt]
    for i, row in enumerate(rows):
        if row.ndim != 1:
            raise DataError(f"prompt {i} must be a sequence of ids, got shape {row.shape}")
    return rows


def _refuse_right_padding(ids: np.ndarray, pad_id: int | None) -> None:
    """Raise when a row of a mask-less prompt array ends with ``pad_id`` (Hugging Face warns
    on the same sign of right padding); ``None``: no pad id is known, nothing to check."""
    if pad_id is None or not ids.shape[1]:
        return
    ends = np.flatnonzero(ids[:, -1] == pad_id)
    if ends.size:
        raise DataError(
            f"prompt row {int(ends[0])} ends with pad_id {pad_id}: a right-padded batch "
            "without a mask would generate after the pads. Pass attention_mask (False or 0 "
            "at padding, either side) or a list of sequences; if those ids are real tokens, "
            "pass an all-True attention_mask")


def left_padded(rows: list[np.ndarray], width: int, pad_id: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    ids = np.full((len(rows), width), pad_id, np.int32)
    mask = np.zeros((len(rows), width), bool)
    for i, row in enumerate(rows):
        ids[i, width - len(row):] = row
        mask[i, width - len(row):] = True
    return ids, mask


def stop_table(eos_ids: tuple[int, ...], stop_sequences: Sequence[Sequence[int]],
                vocab: int) -> tuple[np.ndarray, np.ndarray]:
    """Eos ids ``[K]`` and right-aligned stop sequences ``[S, L]``, padded with -1 to
    multiples of :data:`STOP_SLOTS` so other stop settings reuse the compiled program."""
    seqs = [tuple(int(t) for t in seq) for seq in stop_sequences]
    for where, ids in [("eos_id", eos_ids), *((f"stop_sequences[{i}]", s)
                                              for i, s in enumerate(seqs))]:
        if not ids and where != "eos_id":
            raise ConfigError(f"{where} is empty")
        bad = [t for t in ids if not 0 <= t < vocab]
        if bad:
            raise ConfigError(f"{where}: token id {bad[0]} is outside the vocabulary [0, {vocab})")
    round_up = lambda n: STOP_SLOTS * max(1, -(-n // STOP_SLOTS))
    eos = np.full(round_up(len(eos_ids)), -1, np.int32)
    eos[:len(eos_ids)] = eos_ids
    table = np.full((round_up(len(seqs)), round_up(max(map(len, seqs), default=1))), -1, np.int32)
    for i, seq in enumerate(seqs):
        table[i, table.shape[1] - len(seq):] = seq
    return eos, table
