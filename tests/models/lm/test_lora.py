"""LoRA: zero init is the base model, mixed batches equal merged weights, only adapters train."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxlean.errors import ConfigError, DataError
from jaxlean.models.lm.lora import Linear, LoRA, add_lora, is_lora_path, lora_mask
from jaxlean.models.lm.transformer import Transformer, TransformerConfig, loss
from jaxlean.train.packed import packed

CONFIG = TransformerConfig(vocab_size=53, hidden_size=32, intermediate_size=40, num_layers=3,
                           num_heads=4, num_kv_heads=2)
TARGETS = ("q_proj", "v_proj", "o_proj", "up_proj", "down_proj", "lm_head")
ADAPTER_LIST = [2, 0, 1]
ADAPTER_IDS = jnp.array(ADAPTER_LIST)


@pytest.fixture(scope="module")
def base():
    return Transformer(CONFIG, key=jax.random.key(0))


@pytest.fixture(scope="module")
def tokens():
    return jax.random.randint(jax.random.key(1), (3, 6), 0, CONFIG.vocab_size)


def randomize_b(model, seed):
    """Give every adapter a non-zero ``b`` (fresh adapters have ``b = 0``)."""
    adapters = [n for n in jax.tree.leaves(model, is_leaf=lambda n: isinstance(n, LoRA))
                if isinstance(n, LoRA)]
    rng = np.random.default_rng(seed)
    new_b = [jnp.asarray(0.3 * rng.normal(size=a.b.shape), a.b.dtype) for a in adapters]

    def where(m):
        return [n.b for n in jax.tree.leaves(m, is_leaf=lambda n: isinstance(n, LoRA))
                if isinstance(n, LoRA)]

    return eqx.tree_at(where, model, new_b)


def merged(model, index):
    """Reference: the base model with adapter ``index`` folded into the weights (no LoRA)."""
    def fold(node):
        if not isinstance(node, Linear) or node.lora is None:
            return node
        a, b = node.lora.a[..., index, :, :], node.lora.b[..., index, :, :]
        weight = node.weight if node.weight is not None else None
        return Linear(weight + node.lora.scale * a @ b, None, node.tied_shape)

    return jax.tree.map(fold, model, is_leaf=lambda n: isinstance(n, Linear))


@pytest.fixture(scope="module")
def outputs(base, tokens):
    """Everything the two value tests compare, computed in one compiled function."""
    fresh = add_lora(base, rank=2, num_adapters=3, alpha=4.0, key=jax.random.key(2),
                     targets=TARGETS)
    trained = randomize_b(fresh, 3)
    targets = jnp.roll(tokens, -1, axis=1)

    @eqx.filter_jit
    def run(base, fresh, trained):
        mixed = trained(tokens, adapter_ids=ADAPTER_IDS)
        refs = jnp.stack([merged(trained, i)(tokens[n:n + 1])[0]
                          for n, i in enumerate(ADAPTER_LIST)])
        logp = jnp.take_along_axis(jax.nn.log_softmax(mixed), targets[..., None], -1)
        return dict(base=base(tokens), fresh=fresh(tokens, adapter_ids=ADAPTER_IDS),
                    mixed=mixed, merged=refs, reference_loss=-logp.mean(),
                    loss=loss(trained, tokens, targets=targets, adapter_ids=ADAPTER_IDS))

    return fresh, run(base, fresh, trained)


def test_zero_init_adapters_reproduce_base_model(outputs):
    fresh, out = outputs
    assert fresh.layers.attn.q_proj.lora.a.shape == (3, 3, 32, 2)
    assert fresh.layers.attn.k_proj.lora is None
    np.testing.assert_allclose(out["fresh"], out["base"], rtol=1e-6, atol=1e-6)


def test_mixed_batch_equals_each_adapter_merged_separately(outputs):
    _, out = outputs
    assert not np.allclose(out["mixed"][0], out["mixed"][1], atol=1e-2)
    np.testing.assert_allclose(out["mixed"], out["merged"], rtol=1e-4, atol=1e-4)
    # The chunked loss sees each token's own head adapter too.
    np.testing.assert_allclose(out["loss"], out["reference_loss"], rtol=1e-5)


@pytest.mark.slow
def test_only_adapter_params_get_updates(base, tokens):
    """Adam through jaxlean's packed optimizer with only the adapters trainable."""
    adapted = add_lora(base, rank=2, num_adapters=2, key=jax.random.key(4), targets=TARGETS)
    adapted = randomize_b(adapted, 5)  # at b = 0 the gradient of `a` is 0
    tx = packed(optax.adam(1e-2), trainable=is_lora_path)
    targets = jnp.roll(tokens, -1, axis=1)
    ids = jnp.array([1, 0, 1])

    @eqx.filter_jit
    def step(model, state):
        grads = eqx.filter_grad(loss)(model, tokens, targets=targets, adapter_ids=ids)
        updates, state = tx.update(grads, state, model)
        return eqx.apply_updates(model, updates), state

    new, _ = step(adapted, tx.init(adapted))
    changed = jax.tree.map(lambda a, b: not np.array_equal(a, b), adapted, new)
    mask = lora_mask(adapted)
    assert jax.tree.leaves(changed) == jax.tree.leaves(mask)
    assert sum(jax.tree.leaves(mask)) == 2 * len(TARGETS)


def test_add_lora_errors(base):
    with pytest.raises(ConfigError, match="rank >= 1"):
        add_lora(base, rank=0, key=jax.random.key(0))
    with pytest.raises(ConfigError, match=r"no Linear projection named \['qproj'\]"):
        add_lora(base, rank=2, key=jax.random.key(0), targets=("q_proj", "qproj"))


def _relative_error(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return np.linalg.norm(got - want) / np.linalg.norm(want)


def test_float32_adapters_on_a_bfloat16_base():
    """Mixed precision: the loss and adapter gradients of a bf16 base with f32 adapters are
    those of the all-f32 model within bf16 rounding, and the gradients are f32."""
    config = TransformerConfig(vocab_size=32, hidden_size=16, intermediate_size=32,
                               num_layers=1, num_heads=2)
    base = Transformer(config, key=jax.random.key(0), dtype=jnp.bfloat16)
    mixed = randomize_b(add_lora(base, rank=2, key=jax.random.key(1), dtype=jnp.float32,
                                 targets=("q_proj", "down_proj", "lm_head")), 2)
    assert mixed.layers.attn.q_proj.lora.a.dtype == jnp.float32
    assert mixed.lm_head.lora.b.dtype == jnp.float32
    assert mixed.layers.attn.q_proj.weight.dtype == jnp.bfloat16
    reference = jax.tree.map(lambda x: x.astype(jnp.float32) if eqx.is_inexact_array(x) else x,
                             mixed)
    tokens = jax.random.randint(jax.random.key(2), (2, 9), 0, 32)
    adapters = lora_mask(mixed)

    @eqx.filter_jit
    def value_and_adapter_grads(model):
        def of_adapters(lora, rest):
            return loss(eqx.combine(lora, rest), tokens[:, :-1], targets=tokens[:, 1:])
        return jax.value_and_grad(of_adapters)(*eqx.partition(model, adapters))

    (value, grads), (want, want_grads) = (value_and_adapter_grads(m) for m in (mixed, reference))
    assert value.dtype == jnp.float32                      # the chunked loss accumulates in f32
    np.testing.assert_allclose(value, want, rtol=2e-2)
    for got, expected in zip(jax.tree.leaves(grads), jax.tree.leaves(want_grads), strict=True):
        assert got.dtype == jnp.float32
        assert _relative_error(got, expected) < 5e-2
    with pytest.raises(ConfigError, match="dtype must be a floating-point dtype"):
        add_lora(base, rank=2, key=jax.random.key(1), dtype=jnp.int32)


def test_add_lora_arguments_are_refused_by_name(base):
    """One string is one target; a float rank or an int key is refused naming the argument."""
    one = add_lora(base, rank=2, key=jax.random.key(0), targets="q_proj")
    assert one.layers.attn.q_proj.lora is not None and one.layers.attn.k_proj.lora is None
    with pytest.raises(ConfigError, match=r"rank must be an integer, got float 8\.0"):
        add_lora(base, rank=8.0, key=jax.random.key(0))
    with pytest.raises(ConfigError, match="num_adapters must be an integer"):
        add_lora(base, rank=2, num_adapters=True, key=jax.random.key(0))
    for bad in [0, jax.random.split(jax.random.key(0), 2), jnp.zeros(2)]:
        with pytest.raises(ConfigError, match=r"key must be one jax\.random key"):
            add_lora(base, rank=2, key=bad)
    add_lora(base, rank=2, key=jax.random.PRNGKey(0), targets=["v_proj"])  # legacy keys work


def test_adapter_ids_out_of_range_raise_when_concrete(base, tokens):
    """Indexing would clamp 2, 7 and -1 to an existing adapter: concrete ids are checked."""
    two = add_lora(base, rank=2, num_adapters=2, key=jax.random.key(1), targets=TARGETS)
    targets = jnp.roll(tokens, -1, axis=1)
    for bad in (2, 7, -1):
        ids = jnp.array([0, bad, 1])
        message = rf"adapter_ids\[1\] = {bad} is outside \[0, 2\)"
        with pytest.raises(DataError, match=message):
            two(tokens, adapter_ids=ids)
        with pytest.raises(DataError, match=message):
            loss(two, tokens, targets=targets, adapter_ids=ids)
        with pytest.raises(DataError, match=message):
            two.project(jnp.zeros((3, CONFIG.hidden_size)), ids)
    with pytest.raises(DataError, match=r"adapter_ids must have shape \[batch\] = \(3,\)"):
        two(tokens, adapter_ids=jnp.array([0, 1]))
    with pytest.raises(DataError, match="adapter_ids must be integers"):
        two(tokens, adapter_ids=jnp.array([0.0, 1.0, 1.0]))
    # Traced ids cannot be checked (documented); in range they run as before.
    assert two(tokens, adapter_ids=jnp.array([0, 1, 1])).shape == (3, 6, CONFIG.vocab_size)
