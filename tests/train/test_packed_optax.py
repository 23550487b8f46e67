"""packed(tx) is optax's per-leaf result after 50 steps, or refused at init naming why.

Each transformation runs 50 steps (one jitted ``lax.scan``) per leaf and
packed on a tiny tree of f32 and bf16 leaves: f32 leaves agree to rtol 1e-6,
bf16 leaves within one bf16 ulp of the parameter, every bf16 operation
rounded as written (:data:`AS_WRITTEN`). Transformations that mix
elements without keeping state per leaf (norms, trust ratios, clips) run on
per-leaf views and must be exact too; those that keep state per leaf (factored
moments, per-leaf averages) must be refused at ``init``.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxlean.errors import ConfigError
from jaxlean.train.packed import packed

STEPS = 50
# XLA keeps some bf16 intermediates of a fused chain in f32 by default (excess precision), as
# each program's fusion decides: optax alone moves by up to 31.5 bf16 ulps after 50 lars steps
# eagerly vs jitted, 0 with this off (packed vs optax: 0 on an AMD VM, 2-27 ulps on an Intel
# CI VM, both on). The comparison rounds every bf16 operation as the program writes it.
AS_WRITTEN = {"xla_allow_excess_precision": False}
SHAPES = {"w": (4, 3), "b": (5,), "s": (), "m": (2, 3, 2), "v": (3, 4)}


def tree(dtypes):
    rng = np.random.default_rng(0)
    # made in NumPy and put on the device: jnp.asarray compiles a program per shape and dtype
    return {k: jax.device_put(np.asarray(rng.standard_normal(s) * (1 + i), dtypes[i % len(dtypes)]))
            for i, (k, s) in enumerate(SHAPES.items())}


def grad_seq(params):
    rng = np.random.default_rng(1)
    grads = {k: jax.device_put(np.asarray(
        rng.standard_normal((STEPS, *x.shape)) * 10.0 ** (i % 3 - 1), x.dtype))
        for i, (k, x) in enumerate(params.items())}
    values = jax.device_put(np.asarray(np.r_[np.linspace(1, 0.5, 10), np.full(STEPS - 10, 0.6)],
                                       np.float32))
    return grads, values


def run(tx, params, state, grads, values):
    def body(carry, xs):
        p, s = carry
        u, s = tx.update(xs[0], s, p, value=xs[1])
        return (optax.apply_updates(p, u), s), None

    return jax.lax.scan(body, (params, state), (grads, values))[0][0]


@functools.partial(jax.jit, static_argnums=(0, 1), compiler_options=AS_WRITTEN)
def run_both(plain, ours, params, plain_state, our_state, grads, values):
    """Both 50-step loops in one program: one compile per transformation, each bf16 operation
    rounded as written (:data:`AS_WRITTEN`)."""
    return (run(plain, params, plain_state, grads, values),
            run(ours, params, our_state, grads, values))


def bf16_ulp(x):
    x = np.abs(np.asarray(x, np.float64))
    return 2.0 ** (np.floor(np.log2(np.maximum(x, 2.0 ** -126))) - 7)


def assert_optax_equal(tx_fn, params, bf16_ulps=1):
    grads, values = grad_seq(params)
    plain = optax.with_extra_args_support(tx_fn())
    ours = packed(tx_fn())
    want, got = run_both(plain, ours, params, plain.init(params), ours.init(params), grads,
                         values)
    for key, w in want.items():
        g = np.asarray(got[key], np.float64)
        assert got[key].dtype == w.dtype, key
        w = np.asarray(w, np.float64)
        assert not np.array_equal(w, np.asarray(params[key], np.float64)), key
        if params[key].dtype == jnp.bfloat16:
            ulps = np.max(np.abs(g - w) / bf16_ulp(w))
            assert ulps <= bf16_ulps, (key, ulps)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6 * np.max(np.abs(w)),
                                       err_msg=key)


def normalize_per_leaf():
    """A transformation nobody listed: each leaf's gradient divided by its own norm."""
    def update(updates, state, params=None):
        return jax.tree.map(lambda g: g / (jnp.linalg.norm(g) + 1e-6), updates), state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update)


EXACT = {
    "adam": lambda: optax.adam(1e-2),
    "adamw": lambda: optax.adamw(1e-2, weight_decay=0.1),
    "sgd": lambda: optax.sgd(1e-2),
    "nesterov": lambda: optax.sgd(1e-2, momentum=0.9, nesterov=True),
    "lion": lambda: optax.lion(1e-3, weight_decay=0.1),
    "rmsprop": lambda: optax.rmsprop(1e-2, momentum=0.5),
    "adagrad": lambda: optax.adagrad(1e-2),
    "schedule_free": lambda: optax.contrib.schedule_free_adamw(1e-2, warmup_steps=5),
    "multi_steps": lambda: optax.MultiSteps(optax.adam(1e-2), every_k_schedule=3),
    "lars_without_trust_ratio": lambda: optax.lars(1e-2, trust_ratio_mask=False),
    "masked_all": lambda: optax.chain(optax.masked(optax.add_decayed_weights(0.1), True),
                                      optax.sgd(1e-2)),
    "reduce_on_plateau": lambda: optax.chain(
        optax.adam(1e-2), optax.contrib.reduce_on_plateau(patience=2, cooldown=1)),
    "apply_every": lambda: optax.chain(optax.sgd(1e-2, momentum=0.9), optax.apply_every(3)),
    # these mix elements (a norm per leaf or over all): their stateless parts run on views
    "clip_by_global_norm": lambda: optax.chain(optax.clip_by_global_norm(0.5),
                                               optax.adam(1e-2)),
    "lamb": lambda: optax.lamb(1e-2),
    "lars": lambda: optax.lars(0.1, trust_coefficient=0.1),
    "clip_by_block_rms": lambda: optax.chain(optax.clip_by_block_rms(0.1), optax.sgd(0.5)),
    "adaptive_grad_clip": lambda: optax.chain(optax.adaptive_grad_clip(0.1), optax.sgd(1e-2)),
    "custom_per_leaf_norm": lambda: optax.chain(normalize_per_leaf(), optax.sgd(1e-2)),
}


@pytest.mark.parametrize("name", list(EXACT))
def test_exact_transformations_match_optax_over_50_steps(name):
    assert_optax_equal(EXACT[name], tree((jnp.float32, jnp.bfloat16)))


def test_inject_hyperparams_matches_optax():
    """f32 leaves: optax's own inject_hyperparams turns bf16 moments into f32 (f32 hyperparams)."""
    assert_optax_equal(lambda: optax.inject_hyperparams(optax.adamw)(
        learning_rate=optax.linear_schedule(1e-2, 1e-3, 20), weight_decay=0.1),
        tree((jnp.float32,)))


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_clip_by_global_norm_matches_optax_per_dtype(dtype):
    """One dtype per tree: optax sums the squares of bf16 leaves in bf16, leaf by leaf, and so
    does packed, whose clip runs on per-leaf views (a bf16 buffer summed at once rounds
    otherwise, which 50 steps accumulated to 8 ulps of the bf16 parameters)."""
    assert_optax_equal(lambda: optax.chain(optax.clip_by_global_norm(0.5), optax.adam(1e-2)),
                       tree((dtype,)))


def running_per_leaf_norm():
    """A transformation nobody listed that views cannot run either: each leaf's gradient
    divided by a running average of its own norm, one average per leaf in the state."""
    def init(params):
        return jax.tree.map(lambda p: jnp.ones((), p.dtype), params)

    def update(updates, state, params=None):
        state = jax.tree.map(lambda g, s: 0.9 * s + 0.1 * jnp.linalg.norm(g), updates, state)
        return jax.tree.map(lambda g, s: g / (s + 1e-6), updates, state), state

    return optax.GradientTransformation(init, update)


REFUSED = {
    "adafactor": (lambda: optax.adafactor(1e-2), "scale_by_factored_rms"),
    "novograd": (lambda: optax.novograd(1e-2), "scale_by_novograd"),
    "masked_by_tree": (lambda: optax.masked(optax.adam(1e-2), {k: k != "b" for k in SHAPES}),
                       "masked"),
    "custom_running_per_leaf_norm": (lambda: optax.chain(running_per_leaf_norm(),
                                                         optax.sgd(1e-2)),
                                     "running_per_leaf_norm"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_per_leaf_transformations_are_refused_by_name_at_init(name):
    make, culprit = REFUSED[name]
    with pytest.raises(ConfigError, match=culprit) as info:
        packed(make()).init(tree((jnp.float32, jnp.bfloat16)))
    phrase = "param_labels= instead" if name == "masked_by_tree" else "not exact on packed buffers"
    assert phrase in str(info.value)


def test_adafactor_factoring_is_refused_at_real_shapes():
    """A factored second moment appears only for large matrices: the state check sees it at
    the real shapes, even when its RMS clipping is turned off."""
    big = {"w": jnp.zeros((256, 128)), "b": jnp.zeros((8,))}
    tx = optax.adafactor(1e-2, clipping_threshold=None, multiply_by_parameter_scale=False)
    with pytest.raises(ConfigError, match=r"scale_by_factored_rms.*|shape \(256,\)"):
        packed(tx).init(big)


def test_views_keep_the_state_packed():
    """lamb's trust ratio runs on per-leaf views; its Adam moments stay on the buffers."""
    params = tree((jnp.float32, jnp.bfloat16))
    lamb, adam = packed(optax.lamb(1e-2)).init(params), packed(optax.adam(1e-2)).init(params)
    per_leaf = optax.lamb(1e-2).init(params)
    assert len(jax.tree.leaves(lamb)) == len(jax.tree.leaves(adam)) == 5  # a count, 2 x 2 buffers
    assert len(jax.tree.leaves(per_leaf)) == 1 + 2 * len(SHAPES)
