"""One name per meaning: the loss functions' old keywords raise an error naming the new one."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.loss.distill import distill_loss
from jaxlean.loss.policy import policy_gradient_loss

B, T, H, V = 2, 5, 8, 32


def _data():
    k = jax.random.split(jax.random.key(0), 3)
    hidden = jax.random.normal(k[0], (B, T, H))
    head = jax.random.normal(k[1], (H, V)) * 0.3
    targets = jax.random.randint(k[2], (B, T), 0, V)
    return hidden, head, targets


def test_policy_gradient_loss_names_targets_for_the_old_tokens_keyword():
    hidden, head, targets = _data()
    old, adv = jnp.zeros((B, T)), jnp.ones((B,))
    with pytest.raises(ConfigError, match="'tokens' is now called 'targets'"):
        policy_gradient_loss(hidden, head, tokens=targets, old_logprobs=old, advantages=adv)
    assert np.isfinite(policy_gradient_loss(hidden, head, targets=targets, old_logprobs=old,
                                            advantages=adv).loss)
    with pytest.raises(ConfigError, match=r"by keyword.*labels=.*targets="):
        policy_gradient_loss(hidden, head, targets, old, adv)  # could be labels or targets


def test_policy_gradient_loss_still_requires_its_arrays():
    hidden, head, targets = _data()
    with pytest.raises(TypeError, match=r"missing required argument.*'advantages'"):
        policy_gradient_loss(hidden, head, targets=targets, old_logprobs=jnp.zeros((B, T)))
    with pytest.raises(TypeError, match=r"unexpected keyword.*'token'"):
        policy_gradient_loss(hidden, head, targets=targets, old_logprobs=jnp.zeros((B, T)),
                             advantages=jnp.ones((B,)), token=1)


def test_distill_loss_names_targets_for_the_old_labels_keyword():
    hidden, head, targets = _data()
    labels = targets.at[:, :2].set(-100)
    with pytest.raises(ConfigError, match="'labels' is now called 'targets'"):
        distill_loss(hidden, head, hidden, head[::-1], labels=labels)
    with pytest.raises(TypeError, match=r"unexpected keyword.*'label'"):
        distill_loss(hidden, head, hidden, head[::-1], label=labels)
    ignored = distill_loss(hidden, head, hidden, head[::-1], targets=labels)
    masked = distill_loss(hidden, head, hidden, head[::-1], mask=labels != -100)
    np.testing.assert_allclose(ignored, masked, rtol=1e-6)
