"""Records to ``input_ids`` and ``labels``, as TRL's ``SFTTrainer`` prepares its dataset.

- conversational (``messages``): the chat template applied to the whole conversation;
  with ``assistant_only_loss`` the labels keep only the tokens the template marks with
  ``{% generation %}`` (``return_assistant_tokens_mask``).
- prompt-completion: the prompt (with the generation prompt, if conversational) and the
  prompt + completion tokenized separately; with ``completion_only_loss`` (the default
  for this format, as in TRL) the labels keep only the tokens from where the two diverge
  (the end of the prompt, unless tokens merge across the join).
- text: the text tokenized, with the eos token appended if it does not end with it (as TRL
  does, and as it does to a plain-text completion).

Labels are Hugging Face's: unshifted, ``-100`` where a token is not learned (the model
predicts ``labels[t + 1]`` from ``input_ids[:t + 1]``). ``max_length`` truncates keeping the
start and drops examples left with no label, as TRL does when not packing.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from jaxlean._args import as_int
from jaxlean.errors import ConfigError
from jaxlean.models.lm.data.records import Record, read_records, record_format
from jaxlean.models.lm.data.tokenizer import Tokenizer

__all__ = ["IGNORE_INDEX", "Example", "tokenize_example", "tokenize_records"]

IGNORE_INDEX = -100  # Hugging Face's "no label"


@dataclasses.dataclass(frozen=True)
class Example:
    """One tokenized sequence: ``input_ids`` and ``labels`` (int32, ``-100`` = no loss)."""

    input_ids: np.ndarray
    labels: np.ndarray
    where: str = ""

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def num_labels(self) -> int:
        """How many tokens carry a label."""
        return int(np.count_nonzero(self.labels != IGNORE_INDEX))


def tokenize_example(record: Record, tokenizer: Tokenizer, *,
                     assistant_only_loss: bool = False,
                     completion_only_loss: bool | None = None,
                     text_field: str = "text") -> Example:
    """One record's ``input_ids`` and ``labels`` (see the module docstring for the rules).

    Raises:
        DataError: the record is malformed (names its place and field), or
            ``assistant_only_loss`` is on and the record has no assistant token (the chat
            template has no ``{% generation %}`` marker, or the record no assistant turn).
    """
    kind, fields = record_format(record, text_field=text_field)
    template = {"tools": fields.get("tools"), **fields.get("chat_template_kwargs", {})}
    if assistant_only_loss and kind != "messages" and not isinstance(fields.get("prompt"), list):
        raise record.error("assistant_only_loss=True needs conversational records ('messages', "
                           f"or prompt/completion message lists); this one is {kind!r} text")
    masks = []
    if kind == "messages":
        full = tokenizer.apply_chat_template(fields["messages"],
                                             assistant_mask=assistant_only_loss, **template)
        ids = full["input_ids"]
    elif kind == "prompt-completion":
        if isinstance(fields["prompt"], list):
            prompt = tokenizer.apply_chat_template(fields["prompt"], add_generation_prompt=True,
                                                   **template)["input_ids"]
            full = tokenizer.apply_chat_template(fields["prompt"] + fields["completion"],
                                                 assistant_mask=assistant_only_loss, **template)
            ids = full["input_ids"]
        else:
            completion = _with_eos(fields["completion"], tokenizer)
            prompt = tokenizer.encode(fields["prompt"])
            ids, full = tokenizer.encode(fields["prompt"] + completion), {}
        start = _common_prefix(prompt, ids)
        if start < len(prompt):
            warnings.warn(f"{record.where}: the tokenized prompt is not a prefix of the tokenized "
                          f"prompt + completion (tokens merge across the join, or the template "
                          f"renders the prompt alone differently); the completion starts where "
                          f"they diverge, at token {start}, as in TRL", stacklevel=2)
        if completion_only_loss is not False:
            masks.append([0] * start + [1] * (len(ids) - start))
    else:
        ids, full = tokenizer.encode(_with_eos(fields["text"], tokenizer)), {}
    if assistant_only_loss:
        assistant = full["assistant_masks"]
        if 1 not in assistant:
            raise record.error("assistant_only_loss=True but no token is marked as the "
                               "assistant's: the chat template must wrap assistant replies in "
                               "{% generation %} ... {% endgeneration %}, and the record must "
                               "have an assistant turn")
        masks.append(assistant)
    input_ids = np.asarray(ids, np.int32)
    keep = np.ones(len(input_ids), bool)
    for mask in masks:
        keep &= np.asarray(mask[:len(input_ids)], bool)
    labels = np.where(keep, input_ids, IGNORE_INDEX).astype(np.int32)
    return Example(input_ids, labels, record.where)


def _common_prefix(a: list[int], b: list[int]) -> int:
    """How many leading ids ``a`` and ``b`` share (TRL's ``common_prefix_length``)."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _with_eos(text: str, tokenizer: Tokenizer) -> str:
    eos = tokenizer.eos_token
    return text if not eos or text.endswith(eos) else text + eos


def tokenize_records(source: str | Path | Iterable[Mapping[str, Any]] | Iterable[Record],
                     tokenizer: Tokenizer, *,
                     assistant_only_loss: bool = False,
                     completion_only_loss: bool | None = None,
                     max_length: int | None = None,
                     text_field: str = "text") -> list[Example]:
    """Every record of ``source`` (a file, a ``datasets.Dataset``, dicts or :class:`Record`\\ s)
    tokenized by :func:`tokenize_example`.

    Args:
        assistant_only_loss: learn only the assistant's tokens (TRL's ``assistant_only_loss``).
        completion_only_loss: for prompt-completion records, learn only the completion;
            ``None`` (the default) means True, as in TRL.
        max_length: truncate each example to its first ``max_length`` tokens and drop those
            left with no label (TRL's ``max_length`` with ``truncation_mode="keep_start"``);
            leave it None when packing (:func:`~jaxlean.models.lm.data.packing.pack` truncates).
        text_field: the field of language-modelling records (TRL's ``dataset_text_field``).
    """
    if max_length is not None:
        max_length = as_int(max_length, "max_length", minimum=1)
    for flag, name in ((assistant_only_loss, "assistant_only_loss"),
                       (completion_only_loss, "completion_only_loss")):
        if flag is not None and not isinstance(flag, bool | np.bool_):
            raise ConfigError(f"{name} must be True or False, got {flag!r}")
    if isinstance(source, str | Path) or hasattr(source, "column_names"):  # a datasets.Dataset
        records = read_records(source)
    else:
        items = list(source)
        records = (items if items and all(isinstance(item, Record) for item in items)
                   else read_records(items))
    examples = []
    for record in records:
        example = tokenize_example(record, tokenizer, assistant_only_loss=assistant_only_loss,
                                   completion_only_loss=completion_only_loss,
                                   text_field=text_field)
        if max_length is not None and len(example) > max_length:
            example = dataclasses.replace(example, input_ids=example.input_ids[:max_length],
                                          labels=example.labels[:max_length])
            if example.num_labels == 0:
                continue
        examples.append(example)
    return examples
