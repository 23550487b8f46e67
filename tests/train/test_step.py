"""make_train_step: one jitted step for any loss over any pytree model."""

from __future__ import annotations

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxlean.errors import ConfigError
from jaxlean.train.packed import packed
from jaxlean.train.step import make_train_step


def _mlp_loss(model, x, y):
    return jnp.mean((jax.vmap(model)(x) - y) ** 2)


def _data():
    """16 random rows of 3 features and a target (NumPy-made: no eager compile)."""
    x = np.random.default_rng(1).standard_normal((16, 3)).astype(np.float32)
    return jax.device_put(x), jax.device_put(np.sin(x).sum(-1, keepdims=True))


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


def _tokens(seed: int) -> np.ndarray:
    """A random [2, 9] batch of token ids below the tiny model's vocabulary of 32 (NumPy:
    made and sliced without an eager compile)."""
    return np.random.default_rng(seed).integers(0, 32, (2, 9), dtype=np.int32)


def _everything(path) -> bool:
    return True


_ADAM_STEPS: dict = {}


def _adam_step(trainable):
    """``(make_train_step(loss, adam, trainable=trainable), adam)``, one per ``trainable``:
    the tests of the tiny LoRA model that run the very same step share its compile."""
    from jaxlean.models.lm.transformer import loss

    if trainable not in _ADAM_STEPS:
        tx = optax.adam(1e-2)
        _ADAM_STEPS[trainable] = make_train_step(loss, tx, trainable=trainable), tx
    return _ADAM_STEPS[trainable]


def test_ref_and_policy_sharing_the_base_survive_three_steps():
    from jaxlean.models.lm.lora import add_lora, is_lora_path
    from jaxlean.models.lm.transformer import loss

    ref = _tiny_lm()
    policy = add_lora(ref, rank=2, key=jax.random.key(1))
    tokens = _tokens(2)
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
    assert not lora_before.is_deleted()   # the default donates no array of the model
    for leaf, value in zip(jax.tree.leaves(ref), ref_values, strict=True):  # alive, unchanged
        np.testing.assert_array_equal(leaf, value)
    assert values[2] < values[0]
    assert not np.allclose(policy.layers.mlp.up_proj.lora.b, 0)


class _Affine(eqx.Module):
    w: jax.Array
    b: jax.Array


def _alive_and_equal(tree, values) -> None:
    """Every array leaf of ``tree`` is alive and equals ``values`` (numpy copies taken before)."""
    leaves = [x for x in jax.tree.leaves(tree) if eqx.is_array(x)]
    assert [x.is_deleted() for x in leaves] == [False] * len(leaves)
    for leaf, value in zip(leaves, values, strict=True):
        np.testing.assert_array_equal(leaf, value)


def _values(tree) -> list:
    # real copies: a view (np.asarray) of an array on the CPU holds a reference to it
    return [np.array(x, copy=True) for x in jax.tree.leaves(tree) if eqx.is_array(x)]


def test_full_fine_tune_keeps_the_model_passed_in_and_consumes_the_state():
    model = eqx.nn.MLP(3, 1, 16, 2, key=jax.random.key(0))
    x, y = _data()
    first, values = model, _values(model)
    tx = optax.adam(1e-2)
    state = first_state = tx.init(eqx.filter(model, eqx.is_array))
    step = make_train_step(_mlp_loss, tx)                     # default donate="state"
    for _ in range(3):
        model, state, _ = step(model, state, x, y)
    _alive_and_equal(first, values)                            # the caller's model: untouched
    assert not np.allclose(model.layers[0].weight, first.layers[0].weight)
    # the optimizer state passed in is what the default donates
    assert all(leaf.is_deleted() for leaf in jax.tree.leaves(first_state))


@pytest.mark.parametrize("trainable", [None, _everything], ids=["adapters", "everything"])
def test_reference_model_sharing_leaves_via_add_lora_stays_alive(trainable):
    from jaxlean.models.lm.lora import add_lora

    ref = _tiny_lm()
    policy = add_lora(ref, rank=2, key=jax.random.key(1))   # shares ref's Linear objects
    values = _values(ref)
    tokens = _tokens(2)
    step, tx = _adam_step(trainable)
    state = tx.init(policy)
    for _ in range(3):
        policy, state, _ = step(policy, state, tokens[:, :-1], targets=tokens[:, 1:])
    _alive_and_equal(ref, values)
    assert np.asarray(ref.lm_head.weight).shape == (16, 32)    # was deleted by one step


@pytest.mark.parametrize("container", ["dict", "module"])
def test_donate_all_consumes_the_trainable_leaves_only(container):
    w, b = jnp.ones((3, 1)), jnp.zeros(1)
    params = {"w": w, "b": b} if container == "dict" else _Affine(w, b)
    get = (lambda p, name: p[name]) if container == "dict" else getattr
    tx = optax.sgd(0.1)
    step = make_train_step(lambda p, x: jnp.sum((x @ get(p, "w") + get(p, "b")) ** 2), tx,
                           donate="all", trainable=lambda path: "b" in jax.tree_util.keystr(path))
    out, _, _ = step(params, tx.init(params), jnp.ones((2, 3)))
    assert get(params, "b").is_deleted() and b.is_deleted()    # asked for: donated
    assert not w.is_deleted() and get(out, "w") is w            # frozen: never donated
    assert not get(out, "b").is_deleted()


def test_a_donated_buffer_backing_another_argument_is_copied_first():
    w = jnp.ones((3,))
    alias = jax.device_put(w, jax.devices()[0])                # another array, the same buffer
    params = {"w": w, "v": alias}

    def keeps_params(params):                                  # a state holding the params
        return optax.GradientTransformation(lambda p: {"p": p, "n": jnp.zeros([], jnp.int32)},
                                            lambda u, s, p=None: (u, {**s, "n": s["n"] + 1}))

    tx = optax.chain(keeps_params(params), optax.sgd(0.1))
    loss = lambda p, x: jnp.sum((p["w"] + p["v"]) * x)
    for donate in ("state", "all"):
        model, state = params, tx.init(params)
        step = make_train_step(loss, tx, donate=donate)
        for _ in range(2):
            model, state, _ = step(model, state, jnp.ones(3))
        assert not w.is_deleted() and not alias.is_deleted()
        np.testing.assert_array_equal(w, 1.0)


def test_donate_values_are_checked():
    with pytest.raises(ConfigError, match=r"'state'.*'all'.*'none'.*ask for it with 'all'"):
        make_train_step(_mlp_loss, optax.sgd(0.1), donate=True)
    with pytest.raises(ConfigError, match=r"donate must be .* got 'params'"):
        make_train_step(_mlp_loss, optax.sgd(0.1), donate="params")


def _base_and_adapters(model) -> tuple[list, list]:
    from jaxlean.models.lm.lora import is_lora_path
    base, adapters = [], []
    for path, x in jax.tree_util.tree_leaves_with_path(model):
        (adapters if is_lora_path(path) else base).append(np.array(x, copy=True))
    return base, adapters


@pytest.mark.parametrize("trainable", [None, _everything], ids=["default", "everything"])
def test_a_model_with_adapters_trains_only_them_by_default(trainable):
    from jaxlean.models.lm.lora import add_lora

    model = add_lora(_tiny_lm(), rank=2, key=jax.random.key(1))
    tokens = _tokens(2)
    step, tx = _adam_step(trainable)                           # plain optax: no selection
    state, trained = tx.init(model), model
    for _ in range(2):
        trained, state, _ = step(trained, state, tokens[:, :-1], targets=tokens[:, 1:])
    (base, adapters), (base_after, adapters_after) = map(_base_and_adapters, (model, trained))
    moved = [not np.array_equal(x, y) for x, y in zip(base, base_after, strict=True)]
    assert moved == [trainable is not None] * len(base)      # bit-identical unless asked for
    assert all(not np.array_equal(x, y) for x, y in zip(adapters, adapters_after, strict=True))


def _oov_batch():
    tokens = _tokens(2)
    tokens[0, 3] = 40                                           # vocab_size is 32
    return tokens


def test_a_non_finite_step_is_skipped_and_reported():
    from jaxlean.models.lm.lora import add_lora
    from jaxlean.models.lm.transformer import loss

    model = add_lora(_tiny_lm(), rank=2, key=jax.random.key(1))
    tx = optax.adam(1e-2)
    step, state = make_train_step(loss, tx, metrics=True), tx.init(model)
    good = _tokens(3)
    model, state, _ = step(model, state, good[:, :-1], targets=good[:, 1:])
    before, state_before = _values(model), [np.array(x, copy=True) for x in jax.tree.leaves(state)]
    b_before = np.array(model.layers.mlp.up_proj.lora.b)
    bad = _oov_batch()
    model, state, metrics = step(model, state, bad[:, :-1], targets=bad[:, 1:])
    assert bool(metrics.skipped) and np.isnan(metrics.loss)
    _alive_and_equal(model, before)                              # bit for bit, adapters too
    for leaf, value in zip(jax.tree.leaves(state), state_before, strict=True):
        np.testing.assert_array_equal(leaf, value)
    with pytest.warns(RuntimeWarning, match=r"step 2 \(counting .* was skipped.*the loss is "
                                            r"not finite"):
        model, state, metrics = step(model, state, good[:, :-1], targets=good[:, 1:])
    assert not bool(metrics.skipped)
    assert all(np.all(np.isfinite(x)) for x in _values(model))   # trained on, finite
    b = model.layers.mlp.up_proj.lora.b
    assert not np.array_equal(b, b_before)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                           # step 3 was fine: no warning
        step(model, state, good[:, :-1], targets=good[:, 1:])


def test_a_nan_learning_rate_is_named():
    params = {"w": jnp.ones((3, 1))}
    x, y = _data()
    tx = optax.adam(float("nan"))
    step = make_train_step(lambda p, x, y: jnp.mean((x @ p["w"] - y) ** 2), tx)
    out, state, value = step(params, tx.init(params), x, y)
    assert np.isfinite(value)
    np.testing.assert_array_equal(out["w"], 1.0)                  # not applied
    with pytest.warns(RuntimeWarning, match=r"step 1 .*update is not finite at model\['w'\].*"
                                            r"learning rate"):
        step(out, state, x, y)


def test_keyword_batch_metrics_and_injected_learning_rate():
    params = {"w": jnp.ones((3, 1))}
    x, y = _data()
    schedule = optax.linear_schedule(0.1, 0.0, 10)
    tx = optax.inject_hyperparams(optax.sgd)(learning_rate=schedule)

    def loss(params, x, y, *, weights):
        return jnp.sum(weights * (x @ params["w"] - y) ** 2) / jnp.sum(weights), {"n": x.shape[0]}

    step = make_train_step(loss, tx, has_aux=True, metrics=True)
    state = tx.init(params)
    weights = np.ones((16, 1), np.float32)
    weights[:4] = 0

    @jax.jit  # the references in one program, not an eager program per operation
    def want(params, i):
        grads = jax.grad(lambda p: loss(p, x, y, weights=weights)[0])(params)
        return schedule(i), optax.tree.norm(grads)

    for i in range(3):
        rate, grad_norm = want(params, i)
        params, state, (metrics, aux) = step(params, state, x, y, weights=weights)
        np.testing.assert_allclose(metrics.learning_rate, rate, rtol=1e-6)
        np.testing.assert_allclose(metrics.grad_norm, grad_norm, rtol=1e-5)
    assert int(aux["n"]) == 16
    assert metrics.tokens is None                # no integer batch argument
    assert not bool(metrics.skipped)


def test_token_counts_and_trainable_selecting_nothing():
    from jaxlean.models.lm.tokens import count_tokens
    from jaxlean.train.step import count_integer_elements
    ids, am = jnp.zeros((2, 5), jnp.int32), jnp.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    assert int(count_integer_elements(ids)) == 10
    assert int(count_integer_elements(ids, attention_mask=am)) == 10    # train knows no masks
    assert int(count_tokens(ids)) == 10
    assert int(count_tokens(ids, attention_mask=am)) == 8
    params = {"w": jnp.ones((3, 1))}
    loss = lambda p, ids, attention_mask: jnp.sum(p["w"] ** 2) + 0 * jnp.sum(attention_mask)
    for counter, want in [(None, 10), (count_tokens, 8)]:
        kwargs = {} if counter is None else {"count_tokens": counter}
        step = make_train_step(loss, optax.sgd(0.1), metrics=True, **kwargs)
        _, _, metrics = step(params, optax.sgd(0.1).init(params), ids, attention_mask=am)
        assert int(metrics.tokens) == want
    params = {"w": jnp.ones(2)}
    tx = optax.sgd(0.1)
    step = make_train_step(lambda p: jnp.sum(p["w"] ** 2), tx, trainable=lambda path: False)
    with pytest.raises(ConfigError, match="no leaf of the model is trainable"):
        step(params, tx.init(params))
