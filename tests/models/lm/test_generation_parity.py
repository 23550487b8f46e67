"""``generate`` stops where ``transformers`` stops, from the checkpoint's generation config alone.

``scripts/make_generation_fixtures.py`` saved a tiny random Llama with ``transformers``,
its ``generation_config.json`` listing two eos ids (plus pad id and
``max_new_tokens``), and what ``transformers``' greedy ``generate`` returned on a
left-padded batch with no eos, pad or length argument: one row ends at each eos id,
one runs to the limit.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from jaxlean.models.lm.generate import generate
from jaxlean.models.lm.hf import load_pretrained

FIXTURE = Path(__file__).parent / "fixtures" / "generation" / "two_eos"


@pytest.fixture(scope="module")
def expected():
    return dict(np.load(FIXTURE / "generated.npz"))


@pytest.fixture(scope="module")
def rollout():
    model, _, _ = load_pretrained(FIXTURE, progress=False)
    want = np.load(FIXTURE / "generated.npz")
    return generate(model, want["input_ids"], attention_mask=want["attention_mask"])


def _check(generated: np.ndarray, rollout, eos: np.ndarray) -> None:
    tokens = np.asarray(rollout.tokens)
    width = generated.shape[1]
    np.testing.assert_array_equal(tokens[:, :width], generated)
    assert (tokens[:, width:] == 0).all()  # the config's pad id after every row's end
    for row, got in enumerate(generated):
        ends = np.flatnonzero(np.isin(got, eos))
        length = int(ends[0]) + 1 if ends.size else width
        assert int(rollout.lengths[row]) == length
        keep = np.asarray(rollout.completion_mask[row])
        assert keep.sum() == length and keep[:length].all()
        assert (np.asarray(rollout.logprobs[row, length:]) == 0).all()
        assert (np.asarray(rollout.logprobs[row, :length]) < 0).all()


def test_fixture_ends_rows_at_both_eos_ids(expected):
    eos, generated = expected["eos"], expected["generated"]
    assert len(set(eos.tolist())) == 2
    last = [row[np.flatnonzero(row != 0)[-1]] for row in generated]
    assert set(eos.tolist()) <= set(int(t) for t in last)  # each id ends one row
    assert not np.isin(generated[-1], eos).any()  # and one row runs to max_new_tokens
    assert sum(f.stat().st_size for f in FIXTURE.iterdir()) < 200_000


def test_generate_stops_where_transformers_stops(expected, rollout):
    _check(expected["generated"], rollout, expected["eos"])
    assert rollout.finish_reasons() == ["stop", "stop", "length"]


def test_live_transformers_generate_equals_jaxlean(expected, rollout):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model = transformers.AutoModelForCausalLM.from_pretrained(
        FIXTURE, attn_implementation="eager", dtype=torch.float32).eval()
    ids = expected["input_ids"]
    with torch.no_grad():
        out = model.generate(input_ids=torch.tensor(ids, dtype=torch.long),
                             attention_mask=torch.tensor(expected["attention_mask"].astype(int)))
    _check(out[:, ids.shape[1]:].numpy(), rollout, expected["eos"])
