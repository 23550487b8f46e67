"""jaxlean's DPO equals TRL's ``DPOTrainer`` on its first step: data, loss, metrics, gradients.

``fixtures/trl/prefs.jsonl`` (conversational) and ``prefs_plain.jsonl`` (plain text),
the tiny Llama ``llama/`` and its perturbed copy ``llama_ref/`` (the reference), and
``dpo_first_step.json``: TRL 1.16's tokenized pairs and the loss, ``rewards/*`` /
``logps/*`` metrics and gradients of its first step on each dataset in one batch
(``loss_type`` sigmoid and robust with ``label_smoothing``, one case truncated by
``max_length``), made by ``scripts/make_trl_dpo_fixtures.py``. No torch needed here; with
torch and trl installed the script's first step is also run live and must reproduce the file.
"""

from __future__ import annotations

import json
from pathlib import Path

import equinox as eqx
import numpy as np
import pytest

from jaxlean.models.lm.data import collate_preferences, load_tokenizer, tokenize_preferences
from jaxlean.models.lm.hf import load_pretrained
from jaxlean.models.lm.hf_names import hf_tensors
from jaxlean.models.lm.preference import dpo_loss

FIXTURES = Path(__file__).parent / "fixtures" / "trl"
STEPS = json.loads((FIXTURES / "dpo_first_step.json").read_text())["steps"]


def step_id(step):
    return (f"{step['dataset'].removesuffix('.jsonl')}-{step['loss_type']}-"
            f"e={step['label_smoothing']}-beta={step['beta']}-max_length={step['max_length']}")


@pytest.fixture(scope="module")
def tokenizer():
    pytest.importorskip("transformers")
    return load_tokenizer(FIXTURES)


@pytest.fixture(scope="module")
def models():
    return (load_pretrained(FIXTURES / "llama", progress=False)[0],
            load_pretrained(FIXTURES / "llama_ref", progress=False)[0])


def examples_of(step, tokenizer):
    return tokenize_preferences(FIXTURES / step["dataset"], tokenizer,
                                max_length=step["max_length"])


@eqx.filter_jit
def _loss_and_grads(model, batch, **options):
    """DPO's loss, its outputs and its gradient in the policy: one compiled program."""
    return eqx.filter_value_and_grad(
        lambda m: (lambda o: (o.loss, o))(dpo_loss(m, **batch, **options)), has_aux=True)(model)


@pytest.mark.parametrize("step", STEPS, ids=[step_id(s) for s in STEPS])
def test_first_step_equals_trls(step, tokenizer, models):
    examples = examples_of(step, tokenizer)
    assert [{"prompt_ids": e.prompt_ids.tolist(), "chosen_ids": e.chosen_ids.tolist(),
             "rejected_ids": e.rejected_ids.tolist()} for e in examples] == step["rows"]
    model, reference = models
    batch = collate_preferences(examples, tokenizer.pad_token_id, max_length=step["max_length"])
    options = dict(reference=reference, beta=step["beta"], loss_type=step["loss_type"],
                   label_smoothing=step["label_smoothing"])
    (value, out), grads = _loss_and_grads(model, batch, **options)
    np.testing.assert_allclose(float(value), step["loss"], rtol=0, atol=1e-5)
    got = {"rewards/chosen": np.mean(out.chosen_rewards),
           "rewards/rejected": np.mean(out.rejected_rewards),
           "rewards/accuracies": out.accuracy, "rewards/margins": out.margin,
           "logps/chosen": np.mean(out.chosen_logps), "logps/rejected": np.mean(out.rejected_logps)}
    for name, want in step["metrics"].items():
        np.testing.assert_allclose(float(got[name]), want, rtol=1e-4, atol=1e-5, err_msg=name)
    ours = dict(hf_tensors(grads))
    assert sorted(ours) == sorted(step["grads"])
    for name, want in step["grads"].items():
        grad = ours[name].astype(np.float64)
        np.testing.assert_allclose(np.linalg.norm(grad), want["norm"], rtol=1e-4, err_msg=name)
        np.testing.assert_allclose(grad.reshape(-1)[want["index"]], want["values"], rtol=0,
                                   atol=1e-5, err_msg=name)


def test_the_dpo_loop_takes_trls_first_step(tokenizer, models):
    from jaxlean.models.lm.post_train import dpo_train
    from jaxlean.models.lm.trl_config import DPOConfig
    step = next(s for s in STEPS if s["loss_type"] == "robust")
    model, reference = models
    config = DPOConfig(max_steps=1, logging_steps=1, beta=step["beta"],
                       loss_type=step["loss_type"], label_smoothing=step["label_smoothing"],
                       max_length=step["max_length"], per_device_train_batch_size=len(step["rows"]))
    row = dpo_train(model, FIXTURES / step["dataset"], tokenizer, config,
                    ref_model=reference).history[0]
    np.testing.assert_allclose(row["loss"], step["loss"], atol=1e-5)
    for name, want in step["metrics"].items():
        np.testing.assert_allclose(row[name], want, rtol=1e-4, atol=1e-5, err_msg=name)


def test_the_fixture_cases_are_not_trivial():
    assert {s["loss_type"] for s in STEPS} == {"sigmoid", "robust"}
    for step in STEPS:
        assert abs(step["metrics"]["rewards/margins"]) > 1e-3, step_id(step)
        assert min(g["norm"] for g in step["grads"].values()) > 1e-3, step_id(step)


def test_live_trl_reproduces_the_fixture(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("trl")
    import importlib.util

    import transformers
    script = Path(__file__).parents[4] / "scripts" / "make_trl_dpo_fixtures.py"
    spec = importlib.util.spec_from_file_location("make_trl_dpo_fixtures", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(str(FIXTURES))
    step = STEPS[1]
    records = [json.loads(line) for line in (FIXTURES / step["dataset"]).read_text().splitlines()]
    live = module.first_step(FIXTURES / "llama", hf_tokenizer, records, step["loss_type"],
                             step["label_smoothing"], step["beta"], step["max_length"], tmp_path)
    assert live["rows"] == step["rows"]
    np.testing.assert_allclose(live["loss"], step["loss"], atol=1e-6)
