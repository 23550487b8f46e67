"""Records from JSONL / JSON / parquet files and datasets, refused naming their line and field."""

from __future__ import annotations

import json

import pytest

from jaxlean.errors import DataError
from jaxlean.models.lm.data import Record, read_records, record_format

CHAT = {"messages": [{"role": "user", "content": "hello"},
                     {"role": "assistant", "content": "world"}]}


def test_jsonl_records_know_their_line(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text(json.dumps(CHAT) + "\n\n" + json.dumps({"text": "a b"}) + "\n")
    records = read_records(path)
    assert [r.where for r in records] == ["train.jsonl line 1", "train.jsonl line 3"]
    assert records[1].data == {"text": "a b"}


def test_json_array_json_lines_and_field(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps([CHAT, {"text": "x"}]))
    assert [r.where for r in read_records(tmp_path / "a.json")] == ["a.json[0]", "a.json[1]"]
    (tmp_path / "b.json").write_text(json.dumps(CHAT) + "\n" + json.dumps(CHAT) + "\n")
    assert [r.where for r in read_records(tmp_path / "b.json")] == ["b.json line 1",
                                                                   "b.json line 2"]
    (tmp_path / "c.json").write_text(json.dumps({"data": [CHAT]}))
    assert read_records(tmp_path / "c.json", field="data")[0].data == CHAT
    with pytest.raises(DataError, match="field='rows' is not a key"):
        read_records(tmp_path / "c.json", field="rows")


def test_bad_json_names_the_line(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text(json.dumps(CHAT) + "\n" + '{"text": "a\n')
    with pytest.raises(DataError, match=r"train\.jsonl line 2: not valid JSON"):
        read_records(path)
    path.write_text(json.dumps(CHAT) + "\n[1, 2]\n")
    with pytest.raises(DataError, match=r"train\.jsonl line 2: a record must be a JSON object"):
        read_records(path)
    with pytest.raises(DataError, match=r"suffix '\.csv'"):
        (tmp_path / "x.csv").write_text("a")
        read_records(tmp_path / "x.csv")


def test_parquet_and_datasets_dataset(tmp_path):
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.Table.from_pylist([{"prompt": "a", "completion": "b"}] * 2),
                   tmp_path / "train.parquet")
    records = read_records(tmp_path / "train.parquet")
    assert [r.where for r in records] == ["train.parquet row 0", "train.parquet row 1"]
    assert record_format(records[0]) == ("prompt-completion", {"prompt": "a", "completion": "b"})
    datasets = pytest.importorskip("datasets")
    dataset = datasets.Dataset.from_list([CHAT, CHAT])
    records = read_records(dataset)
    assert records[1].where == "dataset[1]"
    assert record_format(records[1])[1]["messages"] == CHAT["messages"]


def test_formats_as_trl_accepts_them():
    sharegpt = Record({"conversations": [{"from": "user", "value": "hi"}]}, "x")
    assert record_format(sharegpt) == ("messages", {"messages": [{"role": "user",
                                                                  "content": "hi"}]})
    chat_pc = Record({"prompt": CHAT["messages"][:1], "completion": CHAT["messages"][1:],
                      "tools": "[]"}, "x")
    kind, fields = record_format(chat_pc)
    assert kind == "prompt-completion" and fields["tools"] == [] and len(fields["prompt"]) == 1
    assert record_format(Record({"body": "a"}, "x"), text_field="body") == ("text", {"text": "a"})


@pytest.mark.parametrize("data, message", [
    ({"question": "a"}, r"line 4: has none of the fields 'messages'.*\['question'\]"),
    ({"prompt": "a"}, r"line 4: has 'prompt' but no 'completion'"),
    ({"completion": "a"}, r"line 4: has 'completion' but no 'prompt'"),
    ({"prompt": "a", "completion": [{"role": "assistant", "content": "b"}]},
     "line 4: 'prompt' and 'completion' must both be strings or both be message lists"),
    ({"messages": [{"role": "user", "content": "a"}, {"content": "b"}]},
     r"line 4: messages\[1\] has no 'role'"),
    ({"messages": [{"role": "user"}]}, r"line 4: messages\[0\] has no 'content'"),
    ({"messages": []}, "line 4: 'messages' must be a non-empty list"),
    ({"text": 3}, "line 4: 'text' must be a string"),
])
def test_malformed_records_name_their_line_and_field(data, message):
    with pytest.raises(DataError, match=message):
        record_format(Record(data, "train.jsonl line 4"))
