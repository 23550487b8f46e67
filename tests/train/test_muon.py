"""Muon against optax.contrib.muon: defaults, options, stacks batched, inside packed."""

import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxlean._random import normal
from jaxlean.compile.quick import quick_compile_options
from jaxlean.errors import ConfigError, StructureError
from jaxlean.train.muon import matrix_transform, muon
from jaxlean.train.packed import packed

from .sharded_steps import PRELUDE
from .test_packed_optax import AS_WRITTEN

LR, WD, ADAM_LR, ADAM_WD = 0.02, 0.1, 1e-3, 0.01


def default_code():
    """Compile options for XLA's default CPU code (its fusion emitters, which make test's
    quick flags turn off; where this XLA has the option) for one program, rounded as written:
    Muon equals optax at rtol 1e-6 through Newton-Schulz iterations in it and not in the
    quick emitters' rounding. Per program, so no child process with other flags."""
    fusion = "xla_cpu_use_fusion_emitters"
    return {**AS_WRITTEN, **({fusion: True} if fusion in quick_compile_options() else {})}


def mixed_params(dtype):
    """A wide and a tall matrix, a vector and a scalar (what optax's muon routes)."""
    shapes = {"wide": (4, 8), "tall": (8, 4), "bias": (8,), "scale": ()}
    keys = jax.random.split(jax.random.key(0), len(shapes))
    return {name: normal(k, shape, dtype) for (name, shape), k in
            zip(shapes.items(), keys, strict=True)}


def train(runs, steps, compiler_options=AS_WRITTEN):
    """Each ``(transformation, params)`` of ``runs`` trained ``steps`` steps, all in one jit.

    The gradients, of a loss that changes each step, are elementwise in the params
    (a tree split into its matrices gets the same ones). Every bf16 operation is rounded
    as written (:data:`AS_WRITTEN`), the precision both sides are defined at.
    """

    def one(tx, params, scales):
        def step(carry, scale):
            params, state = carry
            loss = lambda p: sum(jnp.sum(jnp.sin(x * scale) * x) for x in jax.tree.leaves(p))
            updates, state = tx.update(jax.grad(loss)(params), state, params)
            return (optax.apply_updates(params, updates), state), None

        return jax.lax.scan(step, (params, tx.init(params)), scales)[0][0]

    txs = [tx for tx, _ in runs]
    run = jax.jit(lambda trees, scales: [one(tx, p, scales) for tx, p in
                                         zip(txs, trees, strict=True)],
                  compiler_options=compiler_options)
    return run([p for _, p in runs], jnp.linspace(1.0, 3.0, steps))


def assert_same_params(got, want, dtype):
    for name in want:
        if dtype == jnp.bfloat16:  # within one bf16 ulp of the parameter
            ulps = np.abs(np.asarray(got[name]).view(np.int16).astype(np.int32)
                          - np.asarray(want[name]).view(np.int16).astype(np.int32))
            assert ulps.max(initial=0) <= 1, (name, ulps.max())
        else:
            np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-7, err_msg=name)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16], ids=["f32", "bf16"])
def test_default_muon_is_optax_muon_after_50_steps(dtype):
    """Matrices by Muon, the vector and the scalar by optax's built-in AdamW fallback."""
    params = mixed_params(dtype)
    got, want = train([(muon(LR), params), (optax.contrib.muon(LR), params)], 50)
    assert_same_params(got, want, dtype)


OPTIONS = {
    "adaptive-rms-heavy-ball": dict(adaptive=True, consistent_rms=0.2, nesterov=False, beta=0.9),
    "decay-mask-fn-adam": dict(weight_decay=WD, weight_decay_mask=lambda p: {
        name: name == "tall" for name in p}, adam_b1=0.8, adam_b2=0.99, adam_eps_root=1e-9,
        adam_weight_decay=ADAM_WD, adam_learning_rate=ADAM_LR, eps=1e-6),
    "aol-dion-bf16-momentum": dict(preconditioning="aol", ns_coeffs="dion",
                                   mu_dtype=jnp.bfloat16),
    "schatten-decay-mask-tree": dict(preconditioning="schatten", weight_decay=WD,
                                     weight_decay_mask={"wide": True, "tall": False,
                                                        "bias": False, "scale": False}),
    "spectral-3-steps": dict(preconditioning="spectral", ns_steps=3,
                             ns_coeffs=(3.0, -3.2, 1.2)),
}


@pytest.mark.parametrize("options", OPTIONS.values(), ids=OPTIONS.keys())
def test_options_are_optax_muon_options(options):
    params = mixed_params(jnp.float32)
    got, want = train([(muon(LR, **options), params),
                       (optax.contrib.muon(LR, **options), params)], 5, default_code())
    assert_same_params(got, want, jnp.float32)


def per_matrix(tree):
    """Every matrix of ``tree`` as its own 2-D leaf (the reference sees no stacks)."""
    out = {}
    for name, x in tree.items():
        if x.ndim < 2:
            out[name] = x
            continue
        flat = x.reshape(-1, *x.shape[-2:])
        out.update({f"{name}.{i}": flat[i] for i in range(flat.shape[0])})
    return out


def restack(flat, like):
    return {name: flat[name] if x.ndim < 2 else
            jnp.stack([flat[f"{name}.{i}"] for i in range(int(np.prod(x.shape[:-2])))]
                      ).reshape(x.shape) for name, x in like.items()}


def test_stacks_are_orthogonalised_matrix_by_matrix():
    """A [3, m, n] or [2, 2, m, n] leaf is its matrices, each one as optax's muon treats it;
    ``adaptive`` scales each matrix by its own <momentum, update>, not the stack's."""
    keys = jax.random.split(jax.random.key(2), 4)
    params = {"stack": normal(keys[0], (3, 8, 4)), "deep": normal(keys[1], (2, 2, 4, 8)),
              "w": normal(keys[2], (4, 8)), "b": normal(keys[3], (8,))}
    options = dict(adaptive=True, consistent_rms=0.2, weight_decay=WD)
    got, want = train([(muon(LR, **options), params),
                       (optax.contrib.muon(LR, **options), per_matrix(params))], 5)
    want = restack(want, params)
    for name in params:  # batched against one-by-one matmuls: rounding differs (jax 0.12: 5e-6)
        np.testing.assert_allclose(got[name], want[name], rtol=2e-5, atol=2e-6, err_msg=name)


def test_batched_muon_in_packed_matches_optax_muon_matrix_by_matrix():
    shapes = {"attn": (2, 4, 8), "mlp": (1, 4, 8), "proj": (8, 4), "heads": (2, 2, 4, 8),
              "up": (2, 8, 4), "bias": (8,), "scale": ()}
    keys = jax.random.split(jax.random.key(0), len(shapes))
    params = {name: normal(k, shape) for (name, shape), k in
              zip(shapes.items(), keys, strict=True)}
    options = dict(weight_decay=WD, adam_learning_rate=ADAM_LR, adam_weight_decay=ADAM_WD)
    tx = packed(muon(LR, **options))
    # Every [4, 8] matrix (attn, mlp, heads) shares one buffer; [8, 4] (proj, up) another.
    matrix_buffers = sorted((b.matrix, b.size) for b in tx.init(params).layout.buffers if b.matrix)
    assert matrix_buffers == [((4, 8), 2 + 1 + 4), ((8, 4), 1 + 2)]
    got, want = train([(tx, params), (optax.contrib.muon(LR, **options), per_matrix(params))], 4)
    for name, value in restack(want, params).items():
        # batched against one-by-one matmuls: rounding differs (jax 0.12: up to 5e-6)
        np.testing.assert_allclose(got[name], value, rtol=2e-5, atol=2e-6, err_msg=name)


@pytest.mark.parametrize("mask", [lambda p: jax.tree.map(lambda x: True, p),
                                  {"w": True, "b": False}], ids=["function", "tree"])
def test_weight_decay_mask_inside_packed_is_refused(mask):
    """Inside packed the mask would see buffers, not the params: refused, groups advised."""
    params = {"w": jnp.ones((2, 4, 4)), "b": jnp.ones(4)}
    with pytest.raises(ConfigError, match="param_labels="):
        packed(muon(LR, weight_decay=WD, weight_decay_mask=mask)).init(params)


def test_first_update_is_nearly_orthogonal():
    """From zero momentum, a square matrix's update is lr * U S' V^T with S' near 1."""
    params = {"w": jnp.zeros((3, 16, 16))}
    grads = {"w": normal(jax.random.key(1), (3, 16, 16))}
    tx = packed(muon(1.0))
    updates, _ = tx.update(grads, tx.init(params), params)
    singular = np.linalg.svd(np.asarray(-updates["w"]), compute_uv=False)
    assert singular.min() > 0.5 and singular.max() < 1.5, singular


@pytest.mark.parametrize("options, named", [
    (dict(muon_weight_dimension_numbers=lambda p: p), "muon_weight_dimension_numbers"),
    (dict(preconditioning="polar"), "'polar'"),
    (dict(ns_coeffs="quintic"), "'quintic'"),
    (dict(ns_coeffs=(1.0, 2.0)), "(2,)"),
    (dict(ns_coeffs=((3.0, -3.2, 1.2),) * 3, ns_steps=2), "ns_steps=2"),
    (dict(fallback=optax.sgd(0.1), adam_b2=0.95), "adam_b2"),
])
def test_unsupported_options_are_refused_by_name(options, named):
    with pytest.raises(ConfigError, match=None) as error:
        muon(LR, **options)
    assert named in str(error.value)


def test_matrix_transform_without_fallback_names_the_leaf():
    tx = matrix_transform(optax.sgd(0.1))
    with pytest.raises(StructureError, match=r"params\['b'\] has shape \(3,\)"):
        tx.init({"w": jnp.ones((2, 2)), "b": jnp.ones(3)})
    updates, _ = tx.update({"w": jnp.ones((2, 2))}, tx.init({"w": jnp.zeros((2, 2))}))
    np.testing.assert_array_equal(updates["w"], -0.1 * jnp.ones((2, 2)))


# run on 4 devices by tests/train/test_four_devices.py, with the other trainers' checks
SHARDED_SCRIPT = PRELUDE + textwrap.dedent('''
    put = mesh_put((1, 4), ("data", "fsdp"))
    keys = jax.random.split(jax.random.key(0), 5)
    params = {  # FSDP: the stacks are split along a matrix axis, as partition rules do
        "wq": put(normal(keys[0], (8, 16, 16)), P(None, "fsdp", None)),
        "w_up": put(normal(keys[1], (4, 16, 32)), P(None, None, "fsdp")),
        "w_down": put(normal(keys[2], (4, 32, 16)), P(None, "fsdp", None)),
        "norm": put(normal(keys[3], (8, 16)), P(None, "fsdp")),
        "bias": put(normal(keys[4], (16,)), P("fsdp")),
    }
    labels = {"wq": "muon", "w_up": "muon", "w_down": "muon", "norm": "adam", "bias": "adam"}
    loss = lambda p: sum(jnp.sum(jnp.sin(x)) for x in jax.tree.leaves(p))
    groups = lambda: {"muon": muon(0.02, weight_decay=0.1), "adam": optax.adamw(1e-3)}

    def check(name, state, found):
        if name == "packed":
            momentum = [x for x in jax.tree.leaves(state) if x.ndim == 3]
            assert all(x.sharding.spec[0] in ("fsdp", ("fsdp",)) for x in momentum), momentum

    results = run_both([("packed", packed(groups(), param_labels=labels)),
                        ("per-leaf", optax.multi_transform(groups(), labels))], params, loss,
                       r"all-gather|all-reduce|all-to-all|collective-permute", check)
    for name in params:
        got, want = results["packed"][name], results["per-leaf"][name]
        assert got.sharding.is_equivalent_to(params[name].sharding, got.ndim), name
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6, err_msg=name)
    print("ok")
''')
