"""packed names a NaN hyperparameter, not a per-leaf computation, when it probes the optimizer."""

from __future__ import annotations

import jax.numpy as jnp
import optax
import pytest

from jaxlean.errors import NonFiniteError
from jaxlean.train.packed import packed


@pytest.mark.parametrize("lr", [float("nan"), float("inf")])
def test_a_nan_learning_rate_is_named_at_init(lr):
    params = {"w": jnp.ones((3,)), "b": jnp.zeros((2, 2))}
    with pytest.raises(NonFiniteError, match=r"non-finite update at params\['\w'\] .*the "
                                             r"learning rate\?\) is NaN or infinite") as caught:
        packed(optax.adam(lr)).init(params)
    assert "per leaf: " not in str(caught.value)         # not blamed on a norm or an RMS
