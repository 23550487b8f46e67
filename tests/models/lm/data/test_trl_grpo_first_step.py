"""jaxlean's GRPO step equals TRL's ``GRPOTrainer``'s first step on fixed completions.

``fixtures/trl/grpo_first_step.json`` (``scripts/make_trl_grpo_fixtures.py``): two chat
prompts, four fixed completions each (handed to TRL through ``rollout_func``), fixed
rewards, and TRL 1.16's advantages, loss and gradients for ``loss_type`` grpo, dr_grpo
(both ``beta=0.04``) and dapo. Here the same rows go through what ``grpo_train`` runs:
a rollout laid out by ``rollout_batch``, ``group_advantages``, and ``policy_loss`` with
``loss_options(GRPOConfig(...))``. Sampling is not compared (the completions are fixed).
"""

from __future__ import annotations

import json
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.loss.advantages import group_advantages
from jaxlean.models.lm.causal_loss import logprobs
from jaxlean.models.lm.generate import Rollout
from jaxlean.models.lm.grpo_train import _loss, loss_options
from jaxlean.models.lm.hf import load_pretrained
from jaxlean.models.lm.hf_names import hf_tensors
from jaxlean.models.lm.rollout_batch import rollout_batch
from jaxlean.models.lm.trl_config import GRPOConfig

FIXTURES = Path(__file__).parent / "fixtures" / "trl"
STEPS = json.loads((FIXTURES / "grpo_first_step.json").read_text())["steps"]
PAD, EOS = 0, 2


@pytest.fixture(scope="module")
def model():
    return load_pretrained(FIXTURES / "llama", progress=False)[0]


def rollout_of(step):
    rows = step["rows"]
    width = max(len(r["completion_ids"]) for r in rows)
    length = max(len(r["prompt_ids"]) for r in rows)
    tokens = np.full((len(rows), width), PAD, np.int32)
    prompt = np.full((len(rows), length), PAD, np.int32)
    prompt_mask = np.zeros((len(rows), length), bool)
    for i, r in enumerate(rows):
        tokens[i, :len(r["completion_ids"])] = r["completion_ids"]
        prompt[i, length - len(r["prompt_ids"]):] = r["prompt_ids"]  # left-padded
        prompt_mask[i, length - len(r["prompt_ids"]):] = True
    lengths = np.array([len(r["completion_ids"]) for r in rows], np.int32)
    stopped = np.array([r["completion_ids"][-1] == EOS for r in rows], np.int32)
    return Rollout(jnp.asarray(tokens), jnp.zeros(tokens.shape), jnp.asarray(lengths),
                   jnp.asarray(stopped), jnp.asarray(prompt), jnp.asarray(prompt_mask))


@pytest.mark.parametrize("step", STEPS, ids=[s["loss_type"] for s in STEPS])
def test_first_step_equals_trls(step, model):
    config = GRPOConfig(loss_type=step["loss_type"], beta=step["beta"],
                        num_generations=step["num_generations"],
                        max_completion_length=step["max_completion_length"])
    advantages = group_advantages(np.asarray(step["rewards"]), config.num_generations,
                                  scale_rewards=config.scale_rewards)
    np.testing.assert_allclose(advantages, step["advantages"], rtol=1e-5, atol=1e-6)
    batch = rollout_batch(rollout_of(step))
    options = loss_options(config)

    @eqx.filter_jit  # one program, as grpo_train runs it (eagerly, one compile per operation)
    def first_step(model, advantages, batch):
        # the sampler's log-probs: the policy's own at the first step (TRL's old = current)
        current = logprobs(model, batch["input_ids"], targets=batch["targets"],
                           attention_mask=batch["attention_mask"])
        batch = dict(batch, old_logprobs=jax.lax.stop_gradient(current) * batch["mask"])
        if config.beta:
            batch["ref_logprobs"] = batch["old_logprobs"]
        return eqx.filter_value_and_grad(_loss, has_aux=True)(
            model, options=options, advantages=advantages, **batch)

    (value, _), grads = first_step(model, jnp.asarray(advantages, jnp.float32), dict(batch))
    np.testing.assert_allclose(float(value), step["loss"], rtol=0, atol=1e-6)
    ours = dict(hf_tensors(grads))
    for name, want in step["grads"].items():
        grad = ours[name].astype(np.float64)
        np.testing.assert_allclose(np.linalg.norm(grad), want["norm"], rtol=1e-4, err_msg=name)
        np.testing.assert_allclose(grad.reshape(-1)[want["index"]], want["values"], rtol=0,
                                   atol=1e-5, err_msg=name)


def test_the_fixture_gradients_are_not_trivial():
    for step in STEPS:
        assert min(g["norm"] for g in step["grads"].values()) > 1e-4, step["loss_type"]
    assert len({round(s["loss"], 6) for s in STEPS}) == 3
