"""Muon inside packed: same-shape matrices batched into one buffer, against per-matrix optax."""

import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxlean._random import normal
from jaxlean.train.muon import muon
from jaxlean.train.packed import packed

LR, WD, ADAM_LR, ADAM_WD = 0.02, 0.1, 1e-3, 0.01


def model_params(key):
    """Stacked layers and modules whose matrices share shapes, plus non-matrix leaves."""
    shapes = {"attn": (4, 8, 16), "mlp": (2, 8, 16), "proj": (16, 8), "heads": (2, 3, 8, 16),
              "up": (3, 16, 8), "bias": (16,), "scale": ()}
    keys = jax.random.split(key, len(shapes))
    return {name: normal(k, shape) for (name, shape), k in
            zip(shapes.items(), keys, strict=True)}


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


def test_batched_muon_matches_optax_muon_matrix_by_matrix():
    key_params, key_grads = jax.random.split(jax.random.key(0))
    params = model_params(key_params)
    reference = optax.contrib.muon(LR, weight_decay=WD, adam_learning_rate=ADAM_LR,
                                   adam_weight_decay=ADAM_WD)
    fallback = optax.adamw(ADAM_LR, eps=1e-8, weight_decay=ADAM_WD, nesterov=True)
    tx = packed(muon(LR, weight_decay=WD, fallback=fallback))
    state, ref_state = tx.init(params), reference.init(per_matrix(params))
    # Every [8, 16] matrix (attn, mlp, heads) shares one buffer; [16, 8] (proj, up) another.
    matrix_buffers = sorted((b.matrix, b.size) for b in state.layout.buffers if b.matrix)
    assert matrix_buffers == [((8, 16), 4 + 2 + 6), ((16, 8), 1 + 3)]
    ours, theirs = params, per_matrix(params)
    update, ref_update = jax.jit(tx.update), jax.jit(reference.update)
    for k in jax.random.split(key_grads, 4):
        grads = jax.tree.map(lambda x, k=k: normal(k, x.shape), params)
        updates, state = update(grads, state, ours)
        ours = optax.apply_updates(ours, updates)
        ref_updates, ref_state = ref_update(per_matrix(grads), ref_state, theirs)
        theirs = optax.apply_updates(theirs, ref_updates)
        for name, want in restack(theirs, params).items():
            np.testing.assert_allclose(ours[name], want, rtol=2e-5, atol=2e-6, err_msg=name)


def test_first_update_is_nearly_orthogonal():
    """From zero momentum, a square matrix's update is lr * U S' V^T with S' near 1."""
    params = {"w": jnp.zeros((3, 16, 16))}
    grads = {"w": normal(jax.random.key(1), (3, 16, 16))}
    tx = packed(muon(1.0))
    updates, _ = tx.update(grads, tx.init(params), params)
    singular = np.linalg.svd(np.asarray(-updates["w"]), compute_uv=False)
    assert singular.min() > 0.5 and singular.max() < 1.5, singular


SHARDED_SCRIPT = textwrap.dedent('''
    import re
    import jax, jax.numpy as jnp, numpy as np, optax
    from jaxlean._random import normal
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    from jaxlean.train.muon import muon
    from jaxlean.train.packed import packed

    mesh = Mesh(np.array(jax.devices()).reshape(1, 4), ("data", "fsdp"))
    put = lambda x, spec: jax.device_put(x, NamedSharding(mesh, spec))
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

    def make_step(tx):
        def step(params, state):
            updates, state = tx.update(jax.grad(loss)(params), state, params)
            return optax.apply_updates(params, updates), state
        return jax.jit(step)

    results = {}
    for name, tx in [("packed", packed(groups(), labels=labels)),
                     ("per-leaf", optax.multi_transform(groups(), labels))]:
        state = tx.init(params)
        compiled = make_step(tx).lower(params, state).compile()
        found = sorted(set(re.findall(r"all-gather|all-reduce|all-to-all|collective-permute",
                                      compiled.as_text())))
        print(name, "collectives:", found)
        if name == "packed":
            momentum = [x for x in jax.tree.leaves(state) if x.ndim == 3]
            assert all(x.sharding.spec[0] in ("fsdp", ("fsdp",)) for x in momentum), momentum
        p, s = params, state
        for _ in range(3):
            p, s = compiled(p, s)
        results[name] = p
    for name in params:
        got, want = results["packed"][name], results["per-leaf"][name]
        assert got.sharding.is_equivalent_to(params[name].sharding, got.ndim), name
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6, err_msg=name)
    print("ok")
''')


@pytest.mark.slow
def test_fsdp_stacks_are_orthogonalised_without_all_gather_on_four_devices(run_on_devices):
    stdout = run_on_devices(SHARDED_SCRIPT, devices=4, timeout=300)
    packed_line = next(line for line in stdout.splitlines() if line.startswith("packed"))
    assert "all-gather" not in packed_line, stdout
    per_leaf_line = next(line for line in stdout.splitlines() if line.startswith("per-leaf"))
    assert "all-gather" in per_leaf_line, stdout  # the check could fail: per leaf, XLA gathers
