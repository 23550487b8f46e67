"""jaxlean's SFT first step equals TRL's ``SFTTrainer``'s: loss and gradients, to 1e-4.

``fixtures/trl/llama`` is a tiny random Llama saved by ``transformers`` and
``first_step.json`` the loss and gradients of TRL's first training step on
``conversations.jsonl`` (the whole dataset in one batch, torch on CPU), with
``assistant_only_loss`` and ``packing`` on and off (``scripts/make_trl_fixtures.py``).
Here jaxlean loads the same checkpoint, tokenizer and file, tokenizes, packs and collates
them its own way and differentiates its loss. No torch needed.
"""

from __future__ import annotations

import json
from pathlib import Path

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.models.lm.causal_loss import loss, loss_tokens
from jaxlean.models.lm.data import collate, load_tokenizer, pack, tokenize_records
from jaxlean.models.lm.hf import load_pretrained
from jaxlean.models.lm.hf_names import hf_tensors

FIXTURES = Path(__file__).parent / "fixtures" / "trl"
STEPS = json.loads((FIXTURES / "first_step.json").read_text())["steps"]


def step_id(step):
    return f"assistant_only={step['assistant_only_loss']}-packing={step['packing']}"


@pytest.fixture(scope="module")
def tokenizer():
    pytest.importorskip("transformers")
    return load_tokenizer(FIXTURES)


@pytest.fixture(scope="module")
def model():
    return load_pretrained(FIXTURES / "llama", progress=False)[0]


def batch_of(step, tokenizer):
    """Every example of the dataset in one batch, as jaxlean's SFT path makes it."""
    examples = tokenize_records(FIXTURES / step["dataset"], tokenizer,
                                assistant_only_loss=step["assistant_only_loss"])
    if step["packing"]:
        packing = pack(examples, step["max_length"])
        examples, rows, length = packing.examples, packing.rows, step["max_length"]
    else:
        rows, length = [[i] for i in range(len(examples))], max(len(e) for e in examples)
    batch = collate(examples, rows, length, tokenizer.pad_token_id, packed=step["packing"])
    return len(rows), {key: jnp.asarray(batch[key])
                       for key in ("input_ids", "labels", "attention_mask", "segment_ids")
                       if key in batch}


@pytest.mark.parametrize("step", STEPS, ids=[step_id(s) for s in STEPS])
def test_first_step_loss_and_gradients_equal_trls(step, model, tokenizer):
    rows, batch = batch_of(step, tokenizer)
    assert rows == step["rows"]
    ids = batch.pop("input_ids")
    assert int(loss_tokens(ids, **batch)) == step["tokens"]  # the same labelled tokens
    value, grads = eqx.filter_jit(eqx.filter_value_and_grad(loss))(model, ids, **batch)
    np.testing.assert_allclose(float(value), step["loss"], rtol=0, atol=1e-4)
    ours = dict(hf_tensors(grads))
    assert sorted(ours) == sorted(step["grads"])
    for name, want in step["grads"].items():
        grad = ours[name].astype(np.float64)
        np.testing.assert_allclose(np.linalg.norm(grad), want["norm"], rtol=1e-4,
                                   err_msg=name)
        np.testing.assert_allclose(grad.reshape(-1)[want["index"]], want["values"], rtol=0,
                                   atol=1e-4, err_msg=name)


def test_the_gradients_compared_are_not_trivial():
    # every parameter's gradient is far above the tolerance, in every case
    for step in STEPS:
        assert min(g["norm"] for g in step["grads"].values()) > 0.05, step_id(step)
        assert step["tokens"] > 100
