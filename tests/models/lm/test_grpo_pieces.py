"""GRPO's pieces in the library (issue 50): the batch of a rollout, groups checked, and
``add_lora(targets="all-linear")``; each fails on the old API."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import StructureError
from jaxlean.loss.advantages import group_advantages
from jaxlean.models.lm.generate import Rollout
from jaxlean.models.lm.lora import LoRA, add_lora
from jaxlean.models.lm.rollout_batch import rollout_batch
from jaxlean.models.lm.transformer import Transformer, TransformerConfig


def test_rollout_batch_lays_out_next_tokens_masks_and_old_logprobs():
    rollout = Rollout(tokens=jnp.array([[7, 8, 0], [9, 0, 0]]),
                      logprobs=jnp.array([[-1.0, -2.0, 0.0], [-3.0, 0.0, 0.0]]),
                      lengths=jnp.array([2, 1]), finish_reason=jnp.array([1, 0]),
                      prompt=jnp.array([[0, 5, 6], [4, 5, 6]]),
                      prompt_mask=jnp.array([[False, True, True], [True, True, True]]))
    batch = rollout_batch(rollout)
    np.testing.assert_array_equal(batch["input_ids"], [[0, 5, 6, 7, 8], [4, 5, 6, 9, 0]])
    np.testing.assert_array_equal(batch["targets"], [[5, 6, 7, 8, 0], [5, 6, 9, 0, 0]])
    np.testing.assert_array_equal(batch["attention_mask"], [[0, 1, 1, 1, 1], [1, 1, 1, 1, 0]])
    np.testing.assert_array_equal(batch["mask"], [[0, 0, 1, 1, 0], [0, 0, 1, 0, 0]])
    np.testing.assert_array_equal(batch["old_logprobs"], [[0, 0, -1, -2, 0], [0, 0, -3, 0, 0]])
    # TRL's mask_truncated_completions: the row cut by the length limit learns nothing
    masked = rollout_batch(rollout, mask_truncated_completions=True)
    np.testing.assert_array_equal(masked["mask"], [[0, 0, 1, 1, 0], [0] * 5])


def test_group_advantages_refuses_interleaved_prompts():
    rewards = jnp.array([1.0, 0.0, 0.5, 0.2, 0.9, 0.1])
    prompts = np.repeat([10, 11], 3)  # TRL's layout: each prompt's completions in a row
    want = group_advantages(rewards, 3)
    np.testing.assert_allclose(group_advantages(rewards, 3, group_ids=prompts), want)
    # the sample (Bessel) standard deviation, as TRL's torch.std
    g = np.array([1.0, 0.0, 0.5])
    np.testing.assert_allclose(want[:3], (g - g.mean()) / (g.std(ddof=1) + 1e-4), rtol=1e-5)
    with pytest.raises(StructureError, match=r"np\.repeat"):
        group_advantages(rewards, 3, group_ids=np.tile([10, 11], 3))  # prompts * G


def test_add_lora_all_linear_adapts_every_projection_but_the_head():
    config = TransformerConfig(vocab_size=16, hidden_size=8, intermediate_size=16,
                               num_layers=1, num_heads=2)
    model = add_lora(Transformer(config, key=jax.random.key(0)), rank=2,
                     key=jax.random.key(1), targets="all-linear")
    layer = model.layers
    adapted = {name for name in ("q_proj", "k_proj", "v_proj", "o_proj")
               if getattr(layer.attn, name).lora is not None}
    adapted |= {name for name in ("gate_proj", "up_proj", "down_proj")
                if getattr(layer.mlp, name).lora is not None}
    assert len(adapted) == 7
    assert model.lm_head.lora is None
    assert isinstance(layer.attn.q_proj.lora, LoRA)
