"""Training records in the formats TRL's ``SFTTrainer`` accepts, each knowing where it came from.

A record is one of (as in TRL's dataset formats):

- conversational: ``{"messages": [{"role": ..., "content": ...}, ...]}`` (ShareGPT's
  ``{"conversations": [{"from": ..., "value": ...}]}`` is converted, as TRL converts it);
- prompt-completion: ``{"prompt": ..., "completion": ...}``, both strings or both message lists;
- language modelling: ``{"text": ...}``.

:func:`read_records` reads them from a JSON Lines file, a JSON file (an array of objects,
JSON Lines, or an object holding the array under ``field``), a parquet file, a
``datasets.Dataset`` or a list of dicts. Every :class:`Record` carries ``where`` (``"train.jsonl
line 7"``, ``"dataset[6]"``), so a malformed record is refused naming its line and the field
that is missing or wrong.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from jaxlean.errors import DataError
from jaxlean.models.lm.data._extras import require

__all__ = ["FORMATS", "Record", "read_records", "record_format"]

Format = Literal["messages", "prompt-completion", "text"]
FORMATS: tuple[str, ...] = ("messages", "prompt-completion", "text")


@dataclasses.dataclass(frozen=True)
class Record:
    """One training record: its fields (``data``) and where it was read (``where``)."""

    data: Mapping[str, Any]
    where: str

    def error(self, message: str) -> DataError:
        """A :class:`DataError` that starts with this record's place."""
        return DataError(f"{self.where}: {message}")


def read_records(source: str | Path | Iterable[Mapping[str, Any]], *,
                 field: str | None = None) -> list[Record]:
    """The records of a file or of an in-memory dataset, each with its place.

    Args:
        source: a ``.jsonl``, ``.json`` or ``.parquet`` path; a ``datasets.Dataset``; or
            an iterable of dicts.
        field: for a ``.json`` file holding one object, the key of the record array
            (``datasets.load_dataset("json", field=...)``).

    Raises:
        DataError: unreadable JSON (names the line), a record that is not an object, an
            unknown file suffix.
    """
    if isinstance(source, str | Path):
        path = Path(source)
        if not path.is_file():
            raise DataError(f"read_records: no such file {str(path)!r}")
        suffix = path.suffix.lower()
        if suffix == ".jsonl":
            return _json_lines(path, path.read_text(encoding="utf-8"))
        if suffix == ".json":
            return _json(path, field)
        if suffix == ".parquet":
            parquet = require("pyarrow.parquet", "reading parquet files", "datasets")
            rows = parquet.read_table(path).to_pylist()
            return [_record(row, f"{path.name} row {i}") for i, row in enumerate(rows)]
        raise DataError(f"read_records: {str(path)!r} has suffix {path.suffix!r}; accepted: "
                        f"'.jsonl', '.json', '.parquet' (or pass a datasets.Dataset or a list "
                        f"of dicts)")
    if isinstance(source, Mapping):
        raise DataError("read_records: got one dict; pass a list of records, a "
                        "datasets.Dataset or a file path")
    try:
        items = iter(source)
    except TypeError:
        raise DataError(f"read_records: source must be a path, a datasets.Dataset or a list of "
                        f"dicts, got {type(source).__name__}") from None
    return [_record(row, f"dataset[{i}]") for i, row in enumerate(items)]


def _record(row: Any, where: str) -> Record:
    if not isinstance(row, Mapping):
        raise DataError(f"{where}: a record must be a JSON object / dict, got "
                        f"{type(row).__name__}")
    return Record(row, where)


def _json_lines(path: Path, text: str) -> list[Record]:
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise DataError(f"{path.name} line {number}: not valid JSON ({error.msg} at "
                            f"column {error.colno})") from None
        records.append(_record(row, f"{path.name} line {number}"))
    return records


def _json(path: Path, field: str | None) -> list[Record]:
    text = path.read_text(encoding="utf-8")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        if error.msg == "Extra data":  # one object per line, as datasets' json loader allows
            return _json_lines(path, text)
        raise DataError(f"{path.name} line {error.lineno}: not valid JSON ({error.msg} at "
                        f"column {error.colno})") from None
    if field is not None:
        if not isinstance(value, Mapping) or field not in value:
            raise DataError(f"{path.name}: field={field!r} is not a key of the file's top-level "
                            f"object")
        value = value[field]
    if isinstance(value, Mapping):
        return [_record(value, f"{path.name} line 1")]
    if not isinstance(value, list):
        raise DataError(f"{path.name}: expected an array of records, got "
                        f"{type(value).__name__}")
    return [_record(row, f"{path.name}[{i}]") for i, row in enumerate(value)]


def _messages(record: Record, key: str) -> list[dict[str, Any]]:
    """``record[key]`` as ``[{"role", "content", ...}]``, ShareGPT's from/value converted."""
    messages = record.data[key]
    if not isinstance(messages, list) or not messages:
        raise record.error(f"{key!r} must be a non-empty list of messages, got "
                           f"{_describe(messages)}")
    out = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise record.error(f"{key}[{i}] must be an object with 'role' and 'content', got "
                               f"{type(message).__name__}")
        message = dict(message)
        if "role" not in message and "from" in message:
            message["role"] = message.pop("from")
        if "content" not in message and "value" in message:
            message["content"] = message.pop("value")
        if "role" not in message:
            raise record.error(f"{key}[{i}] has no 'role' (fields: {sorted(message)})")
        if "content" not in message and "tool_calls" not in message:
            raise record.error(f"{key}[{i}] has no 'content' (fields: {sorted(message)})")
        out.append(message)
    return out


def _describe(value: Any) -> str:
    return "an empty list" if value == [] else type(value).__name__


def record_format(record: Record, *, text_field: str = "text") -> tuple[Format, dict[str, Any]]:
    """``(format, fields)``: which of :data:`FORMATS` the record is, with its fields checked.

    ``fields`` holds ``messages`` (a list of messages), or ``prompt`` and ``completion``
    (both str, or both message lists), or ``text``; plus ``tools`` and
    ``chat_template_kwargs`` when the record has them (JSON strings decoded, as TRL does).
    ``text_field`` is the language-modelling field (TRL's ``dataset_text_field``).

    Raises:
        DataError: naming ``record.where`` and the missing or mistyped field.
    """
    data = record.data
    extra = {}
    if data.get("tools") is not None:
        tools = data["tools"]
        extra["tools"] = json.loads(tools) if isinstance(tools, str) else tools
    if data.get("chat_template_kwargs") is not None:
        if not isinstance(data["chat_template_kwargs"], Mapping):
            raise record.error("'chat_template_kwargs' must be an object")
        extra["chat_template_kwargs"] = dict(data["chat_template_kwargs"])
    for key in ("messages", "conversations"):
        if key in data:
            return "messages", {"messages": _messages(record, key), **extra}
    if "prompt" in data or "completion" in data:
        missing = "completion" if "prompt" in data else "prompt"
        if missing not in data:
            raise record.error(f"has {'prompt' if missing == 'completion' else 'completion'!r} "
                               f"but no {missing!r} (a prompt-completion record needs both)")
        prompt, completion = data["prompt"], data["completion"]
        if isinstance(prompt, str) and isinstance(completion, str):
            return "prompt-completion", {"prompt": prompt, "completion": completion, **extra}
        if isinstance(prompt, list) and isinstance(completion, list):
            return "prompt-completion", {"prompt": _messages(record, "prompt"),
                                         "completion": _messages(record, "completion"), **extra}
        raise record.error(f"'prompt' and 'completion' must both be strings or both be message "
                           f"lists, got {type(prompt).__name__} and {type(completion).__name__}")
    if text_field in data:
        if not isinstance(data[text_field], str):
            raise record.error(f"{text_field!r} must be a string, got "
                               f"{type(data[text_field]).__name__}")
        return "text", {"text": data[text_field], **extra}
    raise record.error(f"has none of the fields 'messages' (or 'conversations'), "
                       f"'prompt' + 'completion', {text_field!r} (fields: {sorted(data)})")
