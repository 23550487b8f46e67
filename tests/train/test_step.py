"""make_train_step: one jitted step for any loss over any pytree model."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxlean._random import normal
from jaxlean.errors import ConfigError
from jaxlean.train.packed import packed
from jaxlean.train.step import make_train_step


def _mlp_loss(model, x, y):
    return jnp.mean((jax.vmap(model)(x) - y) ** 2)


def _data():
    x = normal(jax.random.key(1), (16, 3))
    return x, jnp.sin(x).sum(-1, keepdims=True)


@pytest.mark.parametrize("tx", [optax.adam(1e-2), packed(optax.adamw(1e-2))])
def test_steps_equal_a_hand_written_optax_loop(tx):
    model = eqx.nn.MLP(3, 1, 16, 2, key=jax.random.key(0))   # activation leaves are not arrays
    x, y = _data()
    step = make_train_step(_mlp_loss, tx, donate=False)
    state = tx.init(eqx.filter(model, eqx.is_array))
    want_model, want_state = model, tx.init(eqx.filter(model, eqx.is_array))
    for _ in range(3):
        model, state, value = step(model, state, x, y)
        want_value, grads = eqx.filter_value_and_grad(_mlp_loss)(want_model, x, y)
        updates, want_state = tx.update(grads, want_state, eqx.filter(want_model, eqx.is_array))
        want_model = eqx.apply_updates(want_model, updates)
        np.testing.assert_allclose(value, want_value, rtol=1e-6)
    arrays = [jax.tree.leaves(eqx.filter(m, eqx.is_array)) for m in (model, want_model)]
    for got, want in zip(*arrays, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_has_aux_returns_the_aux_and_compiles_once():
    params = {"w": jnp.ones((3, 1)), "b": jnp.zeros(1)}
    x, y = _data()
    traces = []

    def loss(params, x, y):
        traces.append(1)
        error = x @ params["w"] + params["b"] - y
        return jnp.mean(error**2), {"max_error": jnp.max(jnp.abs(error))}

    tx = optax.sgd(0.1)
    step = make_train_step(loss, tx, has_aux=True)
    state = tx.init(params)
    first = None
    for _ in range(3):
        params, state, (value, aux) = step(params, state, x, y)
        first = value if first is None else first
    assert float(value) < float(first)
    assert set(aux) == {"max_error"}
    assert len(traces) == 1


def test_unhashable_static_leaf_is_named():
    class Holder(eqx.Module):
        w: jax.Array
        labels: set

    model = Holder(jnp.ones(2), {"a", "b"})   # a set is a leaf, and unhashable
    tx = optax.sgd(0.1)
    step = make_train_step(lambda m: jnp.sum(m.w**2), tx)
    with pytest.raises(ConfigError, match="non-array leaves must be hashable"):
        step(model, tx.init(eqx.filter(model, eqx.is_array)))
