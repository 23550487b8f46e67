"""Preference records (prompt, chosen, rejected) to DPO batches, as TRL's ``DPOTrainer`` makes them.

A record holds ``prompt``, ``chosen`` and ``rejected``: all strings, or all message lists
(conversational); without ``prompt``, conversational ``chosen``/``rejected`` share their
leading messages, which become the prompt (TRL's implicit prompt). TRL 1.16's rules:

- plain text: the eos token is appended to ``chosen`` and ``rejected`` unless they end with it;
  the prompt and prompt + completion are tokenized with the tokenizer (its special tokens
  added);
- conversational: the prompt rendered by the chat template with the generation prompt, and
  prompt + completion rendered whole;
- the completion starts where the tokenized prompt and prompt + completion diverge (the
  shorter of the two divergences, for chosen and rejected);
- with ``max_length`` and ``truncation_mode="keep_start"``, a pair whose prompt alone has
  ``max_length`` tokens or more is dropped; each prompt + completion sequence is cut to
  ``max_length`` (its start, or with ``"keep_end"`` its end) when batched.

:func:`collate_preferences` lays pairs out as TRL's concatenated batch: rows ``[0, B)`` the
prompts + chosen completions, rows ``[B, 2B)`` the prompts + rejected ones, right-padded,
with Hugging Face's unshifted ``labels`` (``-100`` on the prompt and padding), so
``dpo_loss(model, **batch, reference=...)`` takes it whole.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxlean._args import as_int
from jaxlean.errors import ConfigError, DataError
from jaxlean.models.lm.data.batches import Batches, BatchState
from jaxlean.models.lm.data.conversations import IGNORE_INDEX, _common_prefix
from jaxlean.models.lm.data.records import Record, _messages, read_records
from jaxlean.models.lm.data.tokenizer import Tokenizer

__all__ = ["TRUNCATION_MODES", "PreferenceBatches", "PreferenceExample", "collate_preferences",
           "tokenize_preference", "tokenize_preferences"]

TRUNCATION_MODES = ("keep_start", "keep_end")


@dataclasses.dataclass(frozen=True)
class PreferenceExample:
    """One tokenized pair: the prompt's ids and each completion's (int32)."""

    prompt_ids: np.ndarray
    chosen_ids: np.ndarray
    rejected_ids: np.ndarray
    where: str = ""

    def __len__(self) -> int:
        """The longer of prompt + chosen and prompt + rejected."""
        return len(self.prompt_ids) + max(len(self.chosen_ids), len(self.rejected_ids))


def _fields(record: Record) -> tuple[Any, Any, Any, dict[str, Any]]:
    data = record.data
    missing = [key for key in ("chosen", "rejected") if key not in data]
    if missing:
        raise record.error(f"a preference record needs 'chosen' and 'rejected' (and usually "
                           f"'prompt'); missing {missing} (fields: {sorted(data)})")
    template: dict[str, Any] = {}
    if data.get("tools") is not None:
        tools = data["tools"]
        template["tools"] = json.loads(tools) if isinstance(tools, str) else tools
    if data.get("chat_template_kwargs") is not None:
        if not isinstance(data["chat_template_kwargs"], Mapping):
            raise record.error("'chat_template_kwargs' must be an object")
        template.update(data["chat_template_kwargs"])
    chosen, rejected = data["chosen"], data["rejected"]
    if isinstance(chosen, list) and isinstance(rejected, list):
        chosen, rejected = _messages(record, "chosen"), _messages(record, "rejected")
        if "prompt" in data:
            if not isinstance(data["prompt"], list):
                raise record.error("'prompt' must be a message list when 'chosen' and "
                                   "'rejected' are")
            return _messages(record, "prompt"), chosen, rejected, template
        shared = 0
        while (shared < min(len(chosen), len(rejected)) - 1
               and chosen[shared] == rejected[shared]):
            shared += 1
        if shared == 0:
            raise record.error("has no 'prompt', and 'chosen' and 'rejected' share no leading "
                               "message to take as the prompt")
        return chosen[:shared], chosen[shared:], rejected[shared:], template
    if isinstance(chosen, str) and isinstance(rejected, str):
        if "prompt" not in data:
            raise record.error("has no 'prompt': plain-text preference records need one "
                               "(only conversational ones share their leading messages)")
        if not isinstance(data["prompt"], str):
            raise record.error(f"'prompt' must be a string when 'chosen' and 'rejected' are, "
                               f"got {type(data['prompt']).__name__}")
        return data["prompt"], chosen, rejected, template
    raise record.error(f"'chosen' and 'rejected' must both be strings or both message lists, "
                       f"got {type(chosen).__name__} and {type(rejected).__name__}")


def tokenize_preference(record: Record, tokenizer: Tokenizer) -> PreferenceExample:
    """One preference record's prompt, chosen and rejected ids (rules in the module doc).

    Raises:
        DataError: the record lacks a field or mixes text and messages (names its place).
    """
    prompt, chosen, rejected, template = _fields(record)
    if isinstance(prompt, list):
        prompt_ids = tokenizer.apply_chat_template(prompt, add_generation_prompt=True,
                                                   **template)["input_ids"]
        with_chosen = tokenizer.apply_chat_template(prompt + chosen, **template)["input_ids"]
        with_rejected = tokenizer.apply_chat_template(prompt + rejected, **template)["input_ids"]
    else:
        eos = tokenizer.eos_token or ""
        chosen = chosen if chosen.endswith(eos) else chosen + eos
        rejected = rejected if rejected.endswith(eos) else rejected + eos
        prompt_ids = tokenizer.encode(prompt)
        with_chosen = tokenizer.encode(prompt + chosen)
        with_rejected = tokenizer.encode(prompt + rejected)
    start = min(_common_prefix(prompt_ids, with_chosen), _common_prefix(prompt_ids, with_rejected))
    if start < len(prompt_ids):
        warnings.warn(f"{record.where}: the tokenized prompt is not a prefix of the tokenized "
                      f"prompt + completion; the completion starts where they diverge, at token "
                      f"{start}, as in TRL", stacklevel=2)
    as_ids = lambda ids: np.asarray(ids, np.int32)
    return PreferenceExample(as_ids(prompt_ids[:start]), as_ids(with_chosen[start:]),
                             as_ids(with_rejected[start:]), record.where)


def _check_truncation(truncation_mode: str) -> str:
    if truncation_mode not in TRUNCATION_MODES:
        raise ConfigError(f"truncation_mode must be one of {list(TRUNCATION_MODES)}, got "
                          f"{truncation_mode!r}")
    return truncation_mode


def tokenize_preferences(source: str | Path | Iterable[Mapping[str, Any]] | Iterable[Record],
                         tokenizer: Tokenizer, *, max_length: int | None = 1024,
                         truncation_mode: str = "keep_start") -> list[PreferenceExample]:
    """Every preference record of ``source`` (a JSONL/JSON/parquet file, a
    ``datasets.Dataset``, dicts or :class:`Record`\\ s) tokenized as TRL's ``DPOTrainer`` does.

    Args:
        max_length: TRL's ``max_length`` (default 1024, as ``DPOConfig``): with
            ``"keep_start"``, pairs whose prompt alone fills it are dropped (their
            completions would be cut away). The sequences themselves are cut when batched
            (:func:`collate_preferences`). None: no limit.
        truncation_mode: ``"keep_start"`` (TRL's default) or ``"keep_end"``.
    """
    _check_truncation(truncation_mode)
    if max_length is not None:
        max_length = as_int(max_length, "max_length", minimum=1)
    if isinstance(source, str | Path) or hasattr(source, "column_names"):
        records = read_records(source)
    else:
        items = list(source)
        records = (items if items and all(isinstance(item, Record) for item in items)
                   else read_records(items))
    examples = [tokenize_preference(record, tokenizer) for record in records]
    if max_length is not None and truncation_mode == "keep_start":
        examples = [e for e in examples if len(e.prompt_ids) < max_length]
    return examples


def collate_preferences(examples: Sequence[PreferenceExample], pad_id: int, *,
                        max_length: int | None = None, truncation_mode: str = "keep_start",
                        seq_length: int | None = None) -> dict[str, np.ndarray]:
    """TRL's concatenated preference batch ``[2B, T]``: chosen rows, then rejected rows.

    Each row is prompt + completion, cut to ``max_length`` as ``truncation_mode`` says,
    right-padded with ``pad_id`` to ``seq_length`` (default: the longest row; give it so
    every batch has one shape and a jitted step compiles once).

    Returns:
        ``input_ids``, ``labels`` (the completion's ids, ``-100`` on the prompt and padding:
        Hugging Face's unshifted labels) and ``attention_mask``.

    Raises:
        DataError: a row longer than ``seq_length`` (give ``max_length``).
    """
    _check_truncation(truncation_mode)
    rows, masks = [], []
    for part in ("chosen_ids", "rejected_ids"):
        for e in examples:
            ids = np.concatenate([e.prompt_ids, getattr(e, part)])
            mask = np.r_[np.zeros(len(e.prompt_ids), bool), np.ones(len(getattr(e, part)), bool)]
            if max_length is not None and len(ids) > max_length:
                cut = slice(None, max_length) if truncation_mode == "keep_start" else slice(
                    -max_length, None)
                ids, mask = ids[cut], mask[cut]
            rows.append(ids)
            masks.append(mask)
    longest = max((len(r) for r in rows), default=0)
    length = longest if seq_length is None else as_int(seq_length, "seq_length", minimum=1)
    if longest > length:
        where = examples[int(np.argmax([len(r) for r in rows])) % len(examples)].where
        raise DataError(f"{where}: a prompt + completion has {longest} tokens > seq_length="
                        f"{length}: pass max_length={length}")
    out = {"input_ids": np.full((len(rows), length), pad_id, np.int32),
           "labels": np.full((len(rows), length), IGNORE_INDEX, np.int32),
           "attention_mask": np.zeros((len(rows), length), bool)}
    for i, (ids, mask) in enumerate(zip(rows, masks, strict=True)):
        out["input_ids"][i, :len(ids)] = ids
        out["labels"][i, :len(ids)] = np.where(mask, ids, IGNORE_INDEX)
        out["attention_mask"][i, :len(ids)] = True
    return out


class PreferenceBatches(Batches):
    """Fixed-shape DPO batches of :class:`PreferenceExample`\\ s, shuffled per epoch from a
    seed and resumable mid-epoch, as :class:`~jaxlean.models.lm.data.batches.Batches`.

    Each batch is :func:`collate_preferences` of ``batch_size`` pairs: ``[2 batch_size,
    max_length]`` (TRL's ``per_device_train_batch_size`` pairs, chosen rows then rejected
    ones); a short last batch is filled with empty pairs (no labels).

    Args:
        examples: the tokenized pairs.
        batch_size: pairs per batch.
        max_length: tokens per row (TRL's ``max_length``): longer rows are cut as
            ``truncation_mode`` says.
        pad_id, shuffle, seed, drop_last, epochs, state: as for ``Batches``.
    """

    def __init__(self, examples: Sequence[PreferenceExample], batch_size: int,
                 max_length: int, *, pad_id: int, truncation_mode: str = "keep_start",
                 shuffle: bool = True, seed: int | None = None, drop_last: bool = False,
                 epochs: int | None = None,
                 state: BatchState | Mapping[str, int] | None = None):
        self.truncation_mode = _check_truncation(truncation_mode)
        super().__init__([], batch_size, max_length, pad_id=pad_id, shuffle=shuffle, seed=seed,
                         drop_last=drop_last, epochs=epochs, state=state,
                         _rows=[[i] for i in range(len(examples))], _examples=list(examples))

    def _collate(self, rows: list[list[int]]) -> dict[str, np.ndarray]:
        empty = PreferenceExample(*(np.zeros(0, np.int32),) * 3)
        pairs = [self.examples[r[0]] if r else empty for r in rows]
        return collate_preferences(pairs, self.pad_id, max_length=self.seq_length,
                                   truncation_mode=self.truncation_mode,
                                   seq_length=self.seq_length)
