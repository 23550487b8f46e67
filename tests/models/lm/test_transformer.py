"""The scanned transformer against an unrolled reference: values, gradients, remat, errors."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError, DataError
from jaxlean.models.lm.transformer import (
    ModelInputs,
    Transformer,
    TransformerConfig,
    attend,
    check_tokens,
    logprobs,
    loss,
    positions_from_mask,
)
from jaxlean.nn.layers import unstack

# 3 layers: more than one layer in each remat group with nested=2, and a ragged last group.
CONFIG = TransformerConfig(vocab_size=61, hidden_size=32, intermediate_size=48, num_layers=3,
                           num_heads=4, num_kv_heads=2, qk_norm=True)


@pytest.fixture(scope="module")
def model():
    return Transformer(CONFIG, key=jax.random.key(0))


@pytest.fixture(scope="module")
def batch():
    # NumPy inputs: no eager JAX op (each a compile) to make them
    tokens = np.random.default_rng(1).integers(0, CONFIG.vocab_size, (2, 7)).astype(np.int32)
    mask = np.ones(tokens.shape, np.float32)
    mask[:, -1] = 0
    return jnp.asarray(tokens), jnp.asarray(np.roll(tokens, -1, axis=1)), jnp.asarray(mask)


def unrolled_hidden(model, tokens, mask=None):
    """Reference: a Python loop over the unstacked layers, then the final norm."""
    length = tokens.shape[1]
    h = model.embed[tokens]
    causal = jnp.tril(jnp.ones((length, length), bool))[None]
    if mask is None:
        attn_mask, positions = causal, jnp.broadcast_to(jnp.arange(length), tokens.shape)
    else:
        attn_mask, positions = causal & mask[:, None, :], positions_from_mask(mask)
    outputs = []
    for layer in unstack(model.layers):
        h, _ = layer(h, positions, attn_mask)
        outputs.append(h)
    return model.norm(h), jnp.stack(outputs)


def reference_loss(model, tokens, targets, mask):
    hidden, _ = unrolled_hidden(model, tokens)
    logits = hidden @ (model.embed.T if model.lm_head.weight is None else model.lm_head.weight)
    logp = jnp.take_along_axis(jax.nn.log_softmax(logits), targets[..., None], axis=-1)[..., 0]
    return -jnp.sum(logp * mask) / jnp.sum(mask)


def test_attend_matches_per_head_softmax():
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=shape).astype(np.float32)
               for shape in [(2, 3, 4, 8), (2, 5, 2, 8), (2, 5, 2, 8)])
    mask = rng.random((2, 3, 5)) < 0.7
    mask[..., 0] = True
    out = np.asarray(jax.jit(attend)(q, k, v, mask))
    q, k, v, mask = (np.asarray(x, np.float64) for x in (q, k, v, mask))
    for b in range(2):
        for head in range(4):
            kv = head // 2  # two query heads share each key/value head
            scores = q[b, :, head] @ k[b, :, kv].T / np.sqrt(8)
            scores = np.where(mask[b] > 0, scores, -np.inf)
            probs = np.exp(scores - scores.max(-1, keepdims=True))
            probs /= probs.sum(-1, keepdims=True)
            np.testing.assert_allclose(out[b, :, head], probs @ v[b, :, kv], rtol=1e-5, atol=1e-6)


def test_scanned_forward_equals_unrolled(model, batch):
    tokens, _, _ = batch
    mask = jnp.ones(tokens.shape, bool).at[0, :2].set(False)

    @eqx.filter_jit
    def run(model):
        variants = [model.with_options(**options)
                    for options in [{}, dict(remat="full", nested=2), dict(scan=False),
                                    dict(scan=False, remat="full")]]
        return ([(m.last_hidden_state(tokens, attention_mask=mask),
                  m.hidden_states(tokens, attention_mask=mask))
                 for m in variants],
                unrolled_hidden(model, tokens, mask))

    variants, (want_hidden, want_layers) = run(model)
    for hidden, per_layer in variants:
        assert per_layer.shape == (CONFIG.num_layers, *tokens.shape, CONFIG.hidden_size)
        np.testing.assert_allclose(hidden, want_hidden, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(per_layer, want_layers, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_gradients_equal_reference_and_identical_across_remat(model, batch):
    """Loss + gradient of every remat variant equal the unrolled full-logits reference;
    remat and nested remat give the same gradients as no remat (up to f32 rounding)."""
    tokens, targets, mask = batch

    @eqx.filter_jit
    def variants(model):
        def run(**options):
            return eqx.filter_value_and_grad(loss)(model.with_options(**options), tokens,
                                                   targets=targets, weights=mask)
        return [run(), run(remat="full"), run(remat="full", nested=2),
                run(scan=False, remat="full"),
                eqx.filter_value_and_grad(reference_loss)(model, tokens, targets, mask)]

    (value, grads), *others, (want, want_grads) = variants(model)
    np.testing.assert_allclose(value, want, rtol=1e-5)
    for got, ref in zip(jax.tree.leaves(grads), jax.tree.leaves(want_grads), strict=True):
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-6)
    for other_value, other_grads in others:
        np.testing.assert_allclose(other_value, value, rtol=1e-6)
        for got, ref in zip(jax.tree.leaves(other_grads), jax.tree.leaves(grads), strict=True):
            np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-7)


def test_tied_head_and_logprobs(batch):
    tied = Transformer(TransformerConfig(vocab_size=61, hidden_size=16, intermediate_size=24,
                                         num_layers=2, num_heads=2, tie_embeddings=True),
                       key=jax.random.key(3))
    tokens, targets, mask = batch
    assert tied.lm_head.weight is None

    @eqx.filter_jit
    def outputs(tied):
        logits = tied.last_hidden_state(tokens) @ tied.embed.T
        want = jnp.take_along_axis(jax.nn.log_softmax(logits), targets[..., None], -1)[..., 0]
        return (tied(tokens), logits, logprobs(tied, tokens, targets=targets), want,
                loss(tied, tokens, targets=targets, weights=mask),
                reference_loss(tied, tokens, targets, mask))

    logits, want_logits, logp, want_logp, value, want_value = outputs(tied)
    np.testing.assert_allclose(logits, want_logits, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(logp, want_logp, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(value, want_value, rtol=1e-5)


@pytest.mark.parametrize(
    "sizes, message",
    [
        (dict(num_heads=6, num_kv_heads=4), "num_heads=6 must be a multiple of num_kv_heads=4"),
        (dict(hidden_size=30, num_heads=4), "hidden_size=30 is not divisible by num_heads=4"),
        (dict(head_dim=7), "head_dim=7 must be even"),
        (dict(num_layers=0), "num_layers must be a positive int"),
        (dict(remat="everything"), "remat='everything' is not one of"),
        (dict(scan=False, nested=2), "nested=2 needs scan=True"),
    ],
)
def test_config_errors(sizes, message):
    base = dict(vocab_size=10, hidden_size=32, intermediate_size=8, num_layers=1, num_heads=4)
    with pytest.raises(ConfigError, match=message):
        TransformerConfig(**{**base, **sizes})


def test_with_options_changes_only_structure(model):
    unrolled = model.with_options(scan=False, remat="full")
    assert unrolled.config.scan is False and unrolled.config.remat == "full"
    assert model.config.scan is True and model.config.remat is None
    assert unrolled.embed is model.embed
    with pytest.raises(ConfigError, match=r"changes only .* got \['rope_theta'\]"):
        model.with_options(rope_theta=1.0)


def test_explicit_head_dim_need_not_divide_hidden():
    config = TransformerConfig(vocab_size=10, hidden_size=30, intermediate_size=8, num_layers=1,
                               num_heads=4, num_kv_heads=2, head_dim=8)
    model = Transformer(config, key=jax.random.key(0))
    assert model.layers.attn.q_proj.weight.shape == (1, 30, 32)
    hidden = eqx.filter_eval_shape(model.last_hidden_state, jnp.zeros((1, 3), jnp.int32))
    assert hidden.shape == (1, 3, 30)


def test_out_of_range_tokens(model, batch):
    tokens, targets, mask = batch
    bad = tokens.at[1, 4].set(CONFIG.vocab_size)
    with pytest.raises(DataError, match=r"token id 61 at index \(1, 4\) is outside"):
        model(bad)
    with pytest.raises(DataError, match=r"target id -1 at index \(0, 0\)"):
        loss(model, tokens, targets=targets.at[0, 0].set(-1), weights=mask)
    # Masked-out targets may hold anything (the usual -100).
    check_tokens(targets.at[:, -1].set(-100), CONFIG.vocab_size, mask, what="target id")
    with pytest.raises(DataError, match=r"target id -100 at index \(0, 6\)"):
        check_tokens(targets.at[:, -1].set(-100), CONFIG.vocab_size, what="target id")
    with pytest.raises(DataError, match=r"token id 61 at index \(1, 4\)"):
        check_tokens(bad, CONFIG.vocab_size)
    # Under jit the ids cannot be checked; they embed as NaN so the loss is loudly NaN.
    assert np.isnan(eqx.filter_jit(loss)(model, bad, targets=targets, weights=mask))
    assert np.isfinite(eqx.filter_jit(loss)(model, tokens, targets=targets, weights=mask))


def test_compute_dtype_bfloat16_with_float32_weights():
    """Full fine-tuning in mixed precision: f32 weights, bf16 products, f32 gradients close to
    the all-f32 ones."""
    config = TransformerConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_layers=1,
                               num_heads=2)
    model = Transformer(config, key=jax.random.key(0))
    tokens = np.random.default_rng(1).integers(0, 32, (2, 8)).astype(np.int32)
    tokens, targets, mask = jnp.asarray(tokens), jnp.asarray(np.roll(tokens, -1, axis=1)), None
    fast = model.with_options(compute_dtype=jnp.bfloat16)
    assert fast.config.compute_dtype == jnp.bfloat16 and fast.embed is model.embed

    @eqx.filter_jit
    def run(m):
        return m.last_hidden_state(tokens).dtype, eqx.filter_value_and_grad(loss)(
            m, tokens, targets=targets, weights=mask)

    (dtype, (value, grads)), (_, (want, want_grads)) = run(fast), run(model)
    assert dtype == jnp.bfloat16
    np.testing.assert_allclose(value, want, rtol=2e-2)
    for got, expected in zip(jax.tree.leaves(grads), jax.tree.leaves(want_grads), strict=True):
        assert got.dtype == jnp.float32
        err = np.linalg.norm(got - expected) / max(np.linalg.norm(expected), 1e-6)
        assert err < 6e-2
    with pytest.raises(ConfigError, match="compute_dtype must be a floating-point"):
        model.with_options(compute_dtype=jnp.int32)


def test_attention_mask_is_the_padding_argument(model, batch):
    """Hugging Face's names: input_ids and attention_mask (0/1 or bool); the old keywords
    raise naming the new ones; a mask of another shape is named, not a broadcasting error."""
    tokens, _, _ = batch
    padding = np.ones(tokens.shape, np.int32)
    padding[0, :2] = 0
    padding = jnp.asarray(padding)
    # both forwards in one program (eagerly, one compile per operation)
    got, want = eqx.filter_jit(lambda m: (m(input_ids=tokens, attention_mask=padding),
                                          m(tokens, attention_mask=padding.astype(bool))))(model)
    np.testing.assert_array_equal(got, want)
    for method in (model, model.last_hidden_state, model.hidden_states):
        with pytest.raises(ConfigError, match="'mask' is now called 'attention_mask'"):
            method(tokens, mask=padding)
        with pytest.raises(ConfigError, match="'tokens' is now called 'input_ids'"):
            method(tokens=tokens)
        with pytest.raises(DataError, match=r"attention_mask must have the input ids' shape "
                                            r"\(2, 7\) .* got \(2, 6\)"):
            method(tokens, attention_mask=padding[:, :-1])
    with pytest.raises(DataError, match=r"attention_mask must have .* got \(7,\)"):
        loss(model, tokens, targets=tokens, attention_mask=padding[0])


def test_the_forward_methods_share_one_keyword_list(model, batch):
    """__call__, last_hidden_state and hidden_states take the ModelInputs keywords, and
    refuse any other by name."""
    assert set(ModelInputs.__annotations__) == {"attention_mask", "positions", "adapter_ids",
                                                "segment_ids"}
    tokens, _, _ = batch
    for method in (model, model.last_hidden_state, model.hidden_states):
        with pytest.raises(TypeError, match=r"unexpected keyword.*\['attention'\]"):
            method(tokens, attention=tokens)


def test_loss_takes_hugging_face_labels_or_shifted_targets(model, batch):
    """labels are shifted inside (-100 ignored), as transformers' causal-LM loss; targets
    are already shifted; weights are the loss weights; nothing ambiguous is positional."""
    tokens, _, _ = batch
    labels = np.array(tokens)
    labels[:, :3] = -100                            # no loss on a 3-token prompt
    shifted = jnp.asarray(np.concatenate([labels[:, 1:], np.full((2, 1), -100)], axis=1))
    labels = jnp.asarray(labels)
    weights = np.ones(tokens.shape, np.float32)
    weights[:, 6] = 3.0
    weights = jnp.asarray(weights)

    @eqx.filter_jit  # every value in one program (eagerly, one compile per operation)
    def values(model):
        logits = model(tokens)[:, :-1]
        logp = jnp.take_along_axis(jax.nn.log_softmax(logits), tokens[:, 1:, None], -1)[..., 0]
        return (logp, loss(model, tokens, labels=labels),
                loss(model, input_ids=tokens, targets=shifted),
                loss(model, tokens, labels=labels, weights=weights))

    logp, by_labels, by_targets, weighted = (np.asarray(x) for x in values(model))
    want = -np.mean(logp[:, 2:])                    # predictions of labels 3..6
    np.testing.assert_allclose(by_labels, want, rtol=1e-5)
    np.testing.assert_allclose(by_targets, want, rtol=1e-5)
    # weights with labels are per label, shifted with them
    per = -logp[:, 2:]
    np.testing.assert_allclose(weighted,
                               (per[:, :3].sum() + 3 * per[:, 3].sum()) / (2 * 3 + 2 * 3),
                               rtol=1e-5)
    with pytest.raises(ConfigError,
                       match=r"by keyword, not as (positional )?argument 3: labels=.*targets="):
        loss(model, tokens, labels)
    with pytest.raises(ConfigError, match=r"exactly one of labels= .* got both"):
        loss(model, tokens, labels=labels, targets=shifted)
    with pytest.raises(ConfigError, match="got neither"):
        loss(model, tokens)
    with pytest.raises(ConfigError, match="'mask' is now called 'weights'"):
        loss(model, tokens, targets=shifted, mask=weights)
    with pytest.raises(ConfigError, match="labels need an ignore_index"):
        loss(model, tokens, labels=tokens, ignore_index=None)
    with pytest.raises(DataError, match=r"labels must have the shape of input_ids \(2, 7\)"):
        loss(model, tokens, labels=labels[:, 1:])
    with pytest.raises(DataError, match=r"weights must have the shape of targets"):
        loss(model, tokens, targets=shifted, weights=weights[:, 1:])


def test_split_modules_stay_small_and_names_stay_importable():
    """transformer.py was split (config, layers, causal_loss); its names still import from it."""
    from pathlib import Path

    import jaxlean.models.lm.transformer as transformer

    folder = Path(transformer.__file__).parent
    for name in ("transformer", "config", "layers", "causal_loss", "generate", "lora"):
        lines = len((folder / f"{name}.py").read_text().splitlines())
        assert lines <= 450, (name, lines)
    for name in transformer.__all__:
        assert getattr(transformer, name) is not None, name
    assert {"RMSNorm", "Attention", "window_mask", "loss", "logprobs"} <= set(transformer.__all__)
