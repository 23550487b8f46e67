"""Transformer training on 4 CPU devices (data x FSDP) equals training on one device.

The groups of checks run one after another in one subprocess with 4 forced host devices
(2 x 2: both axes > 1, the smallest mesh where data and FSDP sharding combine), so the
rest of the suite keeps a single device and JAX's start and the opening are paid once;
they are one test, so that the child runs once (tests sharing a module fixture ran it on
each xdist worker they went to). The model is the smallest that keeps every property:
2 layers where the stacked layer axis is the point, 8 where memory growing with depth is.
The packed AdamW step on the mesh is one program, whose collectives section 4 reads and
with which section 5 trains.
"""

import textwrap

import pytest

from tests.parallel.sections import check_sections, run_sections

PRELUDE = textwrap.dedent("""
    import re

    import equinox as eqx, jax, jax.numpy as jnp, numpy as np, optax
    from jax.sharding import PartitionSpec as P
    from jaxlean.errors import ConfigError
    from jaxlean.loss.chunked import VocabParallel
    from jaxlean.models.lm.data import synthetic_batch
    from jaxlean.train.step import make_train_step
    from jaxlean.models.lm.transformer import Transformer, TransformerConfig, loss
    from jaxlean.train.packed import packed
    from jaxlean.models.lm.rules import transformer_rules
    from jaxlean.parallel.mesh import (DATA, FSDP, TENSOR, init_sharded, make_mesh, shard_batch,
                                       shard_model)

    assert jax.device_count() == 4
    RULES = (*transformer_rules(), (r".*", P()))
    mesh = make_mesh(data=2, fsdp=2)

    def config(layers):
        return TransformerConfig(vocab_size=64, hidden_size=32, intermediate_size=64,
                                 num_layers=layers, num_heads=4, num_kv_heads=2)

    def close(got, want, tol, what):
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
            a, b = np.asarray(a), np.asarray(b)
            scale = np.max(np.abs(b)) + 1e-30
            assert np.max(np.abs(a - b)) <= tol * scale, (what, np.max(np.abs(a - b)) / scale)

    def collectives(compiled):
        return sorted(re.findall(r"= (\\S+) (all-gather|all-to-all|collective-permute)\\(",
                                 compiled.as_text()))

    model = Transformer(config(2), key=jax.random.key(0))
    sharded = shard_model(model, mesh, RULES)
    ADAMW = packed(optax.adamw(1e-2))
    MESH_ADAMW_STEP = make_train_step(loss, ADAMW)  # sections 4 and 5: one compiled program
    tokens, targets = synthetic_batch(0, 8, 16, 64)
    stokens, stargets = shard_batch((tokens, targets), mesh)
""")

PLACEMENT_AND_GRADIENTS = textwrap.dedent("""
    # 1. placement: the stacked layer axis stays whole, weights split over fsdp
    assert sharded.layers.attn.q_proj.weight.sharding.spec == P(None, FSDP, TENSOR)
    assert sharded.embed.sharding.spec == P(FSDP, None)
    # built in its sharded layout, it is bit for bit the same build compiled for one device
    # (which equals eager init: tests/parallel/test_mesh.py, with XLA's default emitters)
    make = lambda: Transformer(config(2), key=jax.random.key(0))
    built = init_sharded(make, mesh, RULES)
    close(built, eqx.filter_jit(make)(), 0, "init_sharded")
    close(built, model, 1e-6, "init_sharded against eager init")
    assert built.lm_head.weight.sharding.spec == P(None, FSDP)

    # 2. loss and gradients equal the single-device ones (remat, vocab-parallel head; remat
    # with the plain head on the mesh is section 5's training, against one device)
    assert stokens.sharding.spec == P((DATA, FSDP), None)
    grad = eqx.filter_jit(eqx.filter_value_and_grad(loss))
    want_loss, want_grad = grad(model, tokens, targets=targets)
    for remat, vp in [(None, None), ("full", VocabParallel(mesh, FSDP, DATA))]:
        got_loss, got_grad = grad(sharded.with_options(remat=remat), stokens,
                                  targets=stargets, vocab_parallel=vp)
        close(got_loss, want_loss, 1e-6, ("loss", remat, vp))
        close(got_grad, want_grad, 1e-5, ("grad", remat, vp))

    print("ok")
""")

ONE_TRACE = textwrap.dedent("""
    # 3. the scanned layer stack is one trace; the remat policy still applies. Each
    # gradient is traced once: its jaxpr is counted, and 8 layers' are compiled for memory
    def traced(layers, remat):
        m = shard_model(Transformer(config(layers), key=jax.random.key(1)), mesh, RULES)
        m = m.with_options(remat=remat)
        return jax.jit(lambda m, t: eqx.filter_grad(loss)(m, t, targets=t)).trace(m, stokens)

    def equations(program):
        jaxpr = str(program.jaxpr)
        return len(jaxpr.splitlines()), "checkpoint" in jaxpr or "remat" in jaxpr
    deep, deep_none = traced(8, "full"), traced(8, None)
    assert equations(traced(2, "full")) == equations(deep), "jaxpr grows with depth"
    assert equations(deep)[1] and not equations(deep_none)[1]

    def temp_bytes(program):
        return program.lower().compile().memory_analysis().temp_size_in_bytes
    full, none = temp_bytes(deep), temp_bytes(deep_none)
    assert full < 0.5 * none, (full, none)
    print("ok")
""")

PACKED_STATE = textwrap.dedent("""
    # 4. packed optimizer state: no gather or reshard of optimizer state, unlike optax.flatten
    def update_fn(tx):
        def update(grads, state, params):
            updates, state = tx.update(grads, state, params)
            return eqx.apply_updates(params, updates), state
        return update
    counts = {}
    remat = sharded.with_options(remat="full")  # as section 5 trains: its step compiled here
    steps = {"packed": MESH_ADAMW_STEP, "plain": make_train_step(loss, optax.adamw(1e-2))}
    for name, tx in [("packed", ADAMW), ("plain", optax.adamw(1e-2)),
                     ("flatten", optax.flatten(optax.adamw(1e-2)))]:
        state = tx.init(remat)
        update = jax.jit(update_fn(tx)).lower(remat, state, remat).compile()
        step = (steps[name].lower(remat, state, stokens, targets=stargets).compile()
                if name != "flatten" else None)
        counts[name] = (collectives(update), step and collectives(step))
        print(name, "collectives in update / whole step:", len(counts[name][0]),
              step and len(counts[name][1]))
    assert counts["packed"][0] == [], counts["packed"][0]
    assert counts["packed"][1] == counts["plain"][1], "packing added collectives to the step"
    assert len(counts["flatten"][0]) > 0

    print("ok")
""")

TRAINING_AND_ERRORS = textwrap.dedent("""
    # 5. a few training steps give the same losses (and, with SGD, parameters) as on one device
    def train(model, batches, tx, step=None):
        model = model.with_options(remat="full")
        step, state, losses = step or make_train_step(loss, tx), tx.init(model), []
        for tokens, targets in batches:
            model, state, value = step(model, state, tokens, targets=targets)
            losses.append(float(value))
        return losses, model
    batches = [synthetic_batch(i, 8, 16, 64) for i in range(4)]
    for tx, steps, mesh_step in [(ADAMW, 4, MESH_ADAMW_STEP), (packed(optax.sgd(0.5)), 2, None)]:
        single_losses, single_model = train(Transformer(config(2), key=jax.random.key(0)),
                                            batches[:steps], tx)
        mesh_losses, mesh_model = train(shard_model(Transformer(config(2), key=jax.random.key(0)),
                                                    mesh, RULES),
                                        [shard_batch(b, mesh) for b in batches[:steps]], tx,
                                        mesh_step)
        np.testing.assert_allclose(mesh_losses, single_losses, rtol=1e-5)
        assert mesh_losses[-1] < mesh_losses[0]
        assert mesh_model.layers.mlp.up_proj.weight.sharding.spec == P(None, FSDP, TENSOR)
    close(mesh_model, single_model, 1e-5, "parameters after SGD steps")

    # 6. errors name the leaf
    try:
        shard_model({"w": np.zeros((4, 5))}, mesh, [("w", P(None, FSDP))])
    except ConfigError as error:
        assert "['w']: dimension 1 of shape [4, 5] has size 5" in str(error), error
    else:
        raise AssertionError("5 columns over 2 fsdp devices should fail")
    try:
        shard_batch((np.zeros((6, 4), np.int32),), mesh)
    except ConfigError as error:
        assert "batch[0]: 6 examples" in str(error), error
    else:
        raise AssertionError("6 examples over 4 devices should fail")
    print("ok")
""")


SECTIONS = {"placement_and_gradients": PLACEMENT_AND_GRADIENTS, "one_trace": ONE_TRACE,
            "packed_state": PACKED_STATE, "training_and_errors": TRAINING_AND_ERRORS}


@pytest.mark.slow
def test_sharded_transformer_on_four_devices(tmp_path):
    """The four groups of checks after one opening, in one child with 4 devices."""
    stdout = check_sections(run_sections(tmp_path, PRELUDE, SECTIONS, devices=4))
    for name, out in stdout.items():
        assert out.strip().endswith("ok"), (name, out)
