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


def _is_bias(path) -> bool:
    return getattr(path[-1], "name", None) == "bias"


@pytest.mark.parametrize("tx", [optax.adam(1e-2), packed(optax.adamw(1e-2)),
                                packed(optax.adamw(1e-2), trainable=_is_bias)],
                         ids=["adam", "packed", "packed-biases-only"])
def test_steps_equal_a_hand_written_optax_loop(tx):
    model = eqx.nn.MLP(3, 1, 16, 2, key=jax.random.key(0))   # activation leaves are not arrays
    x, y = _data()
    step = make_train_step(_mlp_loss, tx, donate=False)
    state = tx.init(eqx.filter(model, eqx.is_array))
    want_model, want_state = model, tx.init(eqx.filter(model, eqx.is_array))

    @eqx.filter_jit
    def by_hand(model, state):
        value, grads = eqx.filter_value_and_grad(_mlp_loss)(model, x, y)
        updates, state = tx.update(grads, state, eqx.filter(model, eqx.is_array))
        return eqx.apply_updates(model, updates), state, value

    for _ in range(3):
        model, state, value = step(model, state, x, y)
        want_model, want_state, want_value = by_hand(want_model, want_state)
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


def _tiny_lm():
    from jaxlean.models.lm.transformer import Transformer, TransformerConfig
    config = TransformerConfig(vocab_size=32, hidden_size=16, intermediate_size=32,
                               num_layers=1, num_heads=2)
    return Transformer(config, key=jax.random.key(0))


def test_ref_and_policy_sharing_the_base_survive_three_steps():
    from jaxlean.models.lm.lora import add_lora, is_lora_path
    from jaxlean.models.lm.transformer import loss

    ref = _tiny_lm()
    policy = add_lora(ref, rank=2, key=jax.random.key(1))
    tokens = jax.random.randint(jax.random.key(2), (2, 9), 0, 32)
    x, y = tokens[:, :-1], tokens[:, 1:]
    ref_values = [np.asarray(leaf) for leaf in jax.tree.leaves(ref)]
    tx = packed(optax.adam(1e-2), trainable=is_lora_path)
    step, state = make_train_step(loss, tx), tx.init(policy)
    lora_before = policy.layers.mlp.up_proj.lora.b
    values = []
    for _ in range(3):
        policy, state, value = step(policy, state, x, targets=y)
        values.append(float(value))
    # the base is the very same arrays as ref's, alive and unchanged; the adapters trained
    assert policy.embed is ref.embed
    assert policy.layers.attn.q_proj.weight is ref.layers.attn.q_proj.weight
    assert not lora_before.is_deleted()   # held here: copied, not donated
    for leaf, value in zip(jax.tree.leaves(ref), ref_values, strict=True):  # alive, unchanged
        np.testing.assert_array_equal(leaf, value)
    assert values[2] < values[0]
    assert not np.allclose(policy.layers.mlp.up_proj.lora.b, 0)


class _Affine(eqx.Module):
    w: jax.Array
    b: jax.Array


@pytest.mark.parametrize("container", ["dict", "module"])
def test_unshared_trainable_leaves_are_donated_and_shared_ones_copied(container):
    w, b = jnp.ones((3, 1)), jnp.zeros(1)
    params = {"w": w, "b": b} if container == "dict" else _Affine(w, b)
    get = (lambda p, name: p[name]) if container == "dict" else getattr
    del b                                    # only params holds b now; w is also held here
    tx = optax.sgd(0.1)
    step = make_train_step(lambda p, x: jnp.sum((x @ get(p, "w") + get(p, "b")) ** 2), tx)
    out, _, _ = step(params, tx.init(params), jnp.ones((2, 3)))
    assert not w.is_deleted() and not get(params, "w").is_deleted()   # copied, then donated
    assert get(params, "b").is_deleted()     # donated as it was: nothing else held it
    assert not get(out, "b").is_deleted()


def test_keyword_batch_metrics_and_injected_learning_rate():
    params = {"w": jnp.ones((3, 1))}
    x, y = _data()
    schedule = optax.linear_schedule(0.1, 0.0, 10)
    tx = optax.inject_hyperparams(optax.sgd)(learning_rate=schedule)

    def loss(params, x, y, *, weights):
        return jnp.sum(weights * (x @ params["w"] - y) ** 2) / jnp.sum(weights), {"n": x.shape[0]}

    step = make_train_step(loss, tx, has_aux=True, metrics=True)
    state = tx.init(params)
    weights = jnp.ones((16, 1)).at[:4].set(0)
    for i in range(3):
        grads = jax.grad(lambda p: loss(p, x, y, weights=weights)[0])(params)
        params, state, (metrics, aux) = step(params, state, x, y, weights=weights)
        np.testing.assert_allclose(metrics.learning_rate, schedule(i), rtol=1e-6)
        np.testing.assert_allclose(metrics.grad_norm, optax.tree.norm(grads), rtol=1e-5)
    assert int(aux["n"]) == 16
    assert metrics.tokens is None                # no integer batch argument, no attention_mask


def test_default_token_count_and_trainable_selecting_nothing():
    from jaxlean.train.step import default_count_tokens
    ids, am = jnp.zeros((2, 5), jnp.int32), jnp.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    assert int(default_count_tokens(ids)) == 10
    assert int(default_count_tokens(ids, attention_mask=am)) == 8
    params = {"w": jnp.ones(2)}
    tx = optax.sgd(0.1)
    step = make_train_step(lambda p: jnp.sum(p["w"] ** 2), tx, trainable=lambda path: False)
    with pytest.raises(ConfigError, match="no leaf of the model is trainable"):
        step(params, tx.init(params))
