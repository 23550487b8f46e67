"""jaxlean's data path against TRL's SFTTrainer, token for token, on files both load.

``fixtures/trl/`` holds a tokenizer (byte-level BPE, ChatML with ``{% generation %}``),
four small datasets, and ``trl.json``: what TRL's ``SFTTrainer`` prepared from them
(``scripts/make_trl_fixtures.py``; TRL's version is recorded there). No torch here.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from jaxlean.models.lm.data import (
    best_fit_decreasing,
    collate,
    load_tokenizer,
    pack,
    packing_efficiency,
    tokenize_records,
)

FIXTURES = Path(__file__).parent / "fixtures" / "trl"
TRL = json.loads((FIXTURES / "trl.json").read_text())
CASES = TRL["cases"]


def case_id(case):
    return (f"{case['dataset'].removesuffix('.jsonl')}-assistant_only={case['assistant_only_loss']}"
            f"-packing={case['packing']}-max_length={case['max_length']}")


@pytest.fixture(scope="module")
def tokenizer():
    pytest.importorskip("transformers")
    return load_tokenizer(FIXTURES)


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_input_ids_and_labels_equal_trls(case, tokenizer):
    examples = tokenize_records(FIXTURES / case["dataset"], tokenizer,
                                assistant_only_loss=case["assistant_only_loss"],
                                max_length=None if case["packing"] else case["max_length"])
    if case["packing"]:
        packing = pack(examples, case["max_length"])
        ours = [{"input_ids": np.concatenate([packing.examples[i].input_ids for i in row]),
                 "labels": np.concatenate([packing.examples[i].labels for i in row]),
                 "seq_lengths": [len(packing.examples[i]) for i in row]}
                for row in packing.rows]
    else:
        ours = [{"input_ids": e.input_ids, "labels": e.labels} for e in examples]
    assert len(ours) == len(case["rows"])
    for i, (got, want) in enumerate(zip(ours, case["rows"], strict=True)):
        for key, value in want.items():
            assert np.asarray(got[key]).tolist() == value, (i, key)
    if case["packing"]:  # TRL's padding-free collator: positions restart, boundaries -100
        batch = collate(packing.examples, packing.rows[:2], case["max_length"],
                        tokenizer.pad_token_id, packed=True)
        real = batch["segment_ids"] > 0
        for ours_key, trl_key in (("input_ids", "input_ids"), ("labels", "labels"),
                                  ("positions", "position_ids")):
            assert batch[ours_key][real].tolist() == case["collated"][trl_key][0], ours_key


def test_assistant_masks_are_not_trivial(tokenizer):
    # the assistant-only cases mask something and keep something in every example
    case = next(c for c in CASES if c["assistant_only_loss"] and not c["packing"]
                and c["max_length"] is None and c["dataset"] == "conversations.jsonl")
    for row in case["rows"]:
        labels = np.asarray(row["labels"])
        assert 0 < (labels != -100).sum() < len(labels)


def test_packing_is_at_least_as_tight_as_trls_bfd():
    mix = TRL["pack_mix"]
    seq_length = mix["seq_length"]
    lengths = np.minimum(mix["lengths"], seq_length)
    rows = best_fit_decreasing(lengths, seq_length)
    ours = packing_efficiency(lengths, len(rows), seq_length)
    print(f"packing efficiency on {len(lengths)} long-tailed lengths at {seq_length}: "
          f"jaxlean {ours:.4f} ({len(rows)} rows), TRL {TRL['versions']['trl']} bfd "
          f"{mix['efficiency']:.4f} ({mix['rows']} rows)")
    assert len(rows) <= mix["rows"] and ours >= mix["efficiency"]
