"""Tensor-parallel (Megatron) transformer on 8 CPU devices equals the single-device one.

One child process with 8 forced host devices runs every group of checks after one shared
opening (see :mod:`tests.parallel.sections`), so the rest of the suite keeps one device.
The model is the smallest with grouped-query attention whose heads (16) and kv-heads (8)
split over a tensor axis of 8, with 2 stacked layers (3 unrolled ones where the HLO is
counted per layer). Every layout is traced under ``jax.set_mesh``, as the docs say.
"""

import textwrap

import pytest

from tests.parallel.sections import check_sections, run_sections

PRELUDE = textwrap.dedent("""
    import collections, re

    import equinox as eqx, jax, jax.numpy as jnp, numpy as np, optax
    from jax.sharding import PartitionSpec as P
    from jaxlean.errors import ConfigError
    from jaxlean.loss.chunked import VocabParallel
    from jaxlean.models.lm.data import synthetic_batch
    from jaxlean.models.lm.lora import add_lora
    from jaxlean.models.lm.rules import transformer_rules
    from jaxlean.models.lm.causal_loss import loss_tokens
    from jaxlean.models.lm.transformer import Transformer, TransformerConfig, loss
    from jaxlean.parallel.mesh import DATA, FSDP, TENSOR, make_mesh, shard_batch, shard_model
    from jaxlean.train.packed import packed
    from jaxlean.train.step import make_train_step

    assert jax.device_count() == 8
    RULES = (*transformer_rules(), (r".*", P()))

    def config(**options):
        sizes = dict(vocab_size=64, hidden_size=16, intermediate_size=32, num_layers=2,
                     num_heads=16, num_kv_heads=8, head_dim=2)
        return TransformerConfig(**{**sizes, **options})

    def mesh_of(data, fsdp, tensor):
        return make_mesh(data, fsdp, tensor, devices=jax.devices()[:data * fsdp * tensor])

    def close(got, want, tol, what):
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
            a, b = np.asarray(a), np.asarray(b)
            scale = np.max(np.abs(b)) + 1e-30
            assert np.max(np.abs(a - b)) <= tol * scale, (what, np.max(np.abs(a - b)) / scale)

    model = Transformer(config(), key=jax.random.key(0))
    tokens, targets = synthetic_batch(0, 8, 16, 64)
""")

GRADIENTS = textwrap.dedent("""
    # 1. loss and gradients equal one device's (float32, 1e-5 relative) for tensor 2 and 8,
    # tensor 4 x fsdp 2 and tensor 4 x data 2; with flash attention, remat, the vocab-parallel
    # loss, a small loss chunk, LoRA adapters on every projection and Qwen2's biases
    lora = add_lora(Transformer(config(qkv_bias=True), key=jax.random.key(2)), rank=2,
                    num_adapters=2, key=jax.random.key(3))
    lora = eqx.tree_at(lambda m: [m.layers.attn.q_proj.lora.b, m.layers.mlp.down_proj.lora.b,
                                  m.layers.attn.q_bias],
                       lora, replace_fn=lambda b: b + 0.1)  # adapters and biases that matter
    adapter_ids = jnp.arange(8) % 2
    lora_grad = eqx.filter_jit(eqx.filter_value_and_grad(
        lambda m, t, g, ids, vp: loss(m, t, targets=g, adapter_ids=ids, vocab_parallel=vp,
                                      chunk_size=32)))
    reference = lora_grad(lora, tokens, targets, adapter_ids, None)
    layouts = [  # (data, fsdp, tensor), options, vocab-parallel loss
        ((1, 1, 2), {}, False),
        ((1, 1, 8), {}, False),
        ((1, 2, 4), dict(remat="full", attention="flash", attention_tile=8), True),
        ((2, 1, 4), dict(remat="dots"), False),
    ]
    for shape, options, vocab_parallel in layouts:
        mesh = mesh_of(*shape)
        sharded = shard_model(lora, mesh, RULES).with_options(**options)
        assert sharded.layers.attn.k_proj.weight.sharding.spec == P(None, FSDP, TENSOR)
        assert sharded.layers.mlp.down_proj.weight.sharding.spec == P(None, (TENSOR, FSDP), None)
        stokens, stargets, sids = shard_batch((tokens, targets, adapter_ids), mesh)
        vp = VocabParallel(mesh, FSDP, DATA) if vocab_parallel else None
        with jax.set_mesh(mesh):
            got = lora_grad(sharded, stokens, stargets, sids, vp)
        close(got[0], reference[0], 1e-5, ("loss", shape))
        close(got[1], reference[1], 1e-5, ("grad", shape))
        print(shape, "loss", float(got[0]))
    print("ok")
""")

TRAINING = textwrap.dedent("""
    # 2. a packed AdamW step with micro-batches (tensor 4 x data 2) trains as on one device
    def train(model, batches, mesh=None):
        tx = packed(optax.adamw(1e-2))
        model = model.with_options(remat="full")
        step, state, losses = make_train_step(loss, tx, micro_batches=2,
                                                     loss_weight=loss_tokens), tx.init(model), []
        for batch in batches:
            model, state, value = step(model, state, batch[0], targets=batch[1])
            losses.append(float(value))
        return losses, model
    batches = [synthetic_batch(0, 8, 16, 64)] * 3  # the same batch: the loss must fall
    single_losses, single_model = train(model, batches)
    mesh = mesh_of(2, 1, 4)
    with jax.set_mesh(mesh):
        mesh_losses, mesh_model = train(shard_model(model, mesh, RULES),
                                        [shard_batch(b, mesh) for b in batches])
    np.testing.assert_allclose(mesh_losses, single_losses, rtol=1e-5)
    assert mesh_losses[-1] < mesh_losses[0]
    assert mesh_model.layers.attn.o_proj.weight.sharding.spec == P(None, (TENSOR, FSDP), None)
    close(mesh_model, single_model, 1e-5, "parameters after 3 AdamW steps")
    print("losses", mesh_losses)
    print("ok")
""")

COLLECTIVES = textwrap.dedent("""
    # 3. the forward pass has exactly the collectives of the Megatron layout: one all-reduce
    # of [batch / data, length, hidden] over the 4 tensor devices after o_proj and one after
    # down_proj per layer, no gather of weights or activations, and the loss's scalar sum
    # over the data axis
    def forward_collectives(layers, scan):
        mesh = mesh_of(2, 1, 4)
        m = shard_model(Transformer(config(num_layers=layers, scan=scan), key=jax.random.key(1)),
                        mesh, RULES)
        stokens, stargets = shard_batch((tokens, targets), mesh)
        with jax.set_mesh(mesh):
            text = jax.jit(lambda m, t, g: loss(m, t, targets=g)).lower(
                m, stokens, stargets).compile().as_text()
        found = re.findall(r"= (.+?) (all-reduce|reduce-scatter|all-gather|all-to-all|"
                           r"collective-permute)(?:-start)?\\(.*?replica_groups=(\\S+)", text)
        return collections.Counter(found)
    activation, tensor_groups = "f32[4,16,16]{2,1,0}", "[2,4]<=[8],"
    unrolled = forward_collectives(3, scan=False)
    print("unrolled, 3 layers:", dict(unrolled))
    assert unrolled.pop((activation, "all-reduce", tensor_groups)) == 2 * 3, unrolled
    assert [op for shape, op, _ in unrolled] == ["all-reduce"], unrolled  # the loss's sums
    assert all(shape.startswith("(f32[], f32[])") for shape, _, _ in unrolled), unrolled
    assert sum(unrolled.values()) == 1, unrolled
    scanned = forward_collectives(3, scan=True)  # the scanned body holds one layer's two
    print("scanned, 3 layers:", dict(scanned))
    assert scanned.pop((activation, "all-reduce", tensor_groups)) == 2, scanned
    assert sum(scanned.values()) == 1, scanned
    print("ok")
""")

ERRORS = textwrap.dedent("""
    # 4. heads or kv-heads the tensor axis does not divide: an error naming them and the sizes
    mesh = mesh_of(1, 1, 4)
    for heads, kv_heads, name in [(8, 2, "num_kv_heads=2"), (6, 6, "num_heads=6")]:
        bad = Transformer(config(num_heads=heads, num_kv_heads=kv_heads, head_dim=8),
                          key=jax.random.key(0))
        with jax.set_mesh(mesh):
            try:
                jax.eval_shape(lambda m: loss(m, tokens, targets=targets), bad)
            except ConfigError as error:
                assert name in str(error) and "tensor axis (size 4)" in str(error), error
            else:
                raise AssertionError(f"{name} over tensor=4 should fail")
    try:  # placing it: the rules' check names the leaf and the sizes
        shard_model(Transformer(config(intermediate_size=30), key=jax.random.key(0)), mesh,
                    RULES)
    except ConfigError as error:
        assert "gate_proj.weight: dimension 2 of shape [2, 16, 30] has size 30" in str(error)
    else:
        raise AssertionError("30 MLP features over tensor=4 should fail")
    print("ok")
""")

PLAN_MEMORY = textwrap.dedent("""
    # 5. plan_memory on a mesh plans one device's footprint: the step compiled for the mesh
    from jaxlean.models.lm.memory_plan import _shape, plan_memory, step_memory
    mesh = mesh_of(1, 1, 4)
    plan = plan_memory(model, (8, 16), 2**30, mesh=mesh, remats=[None], chunk_sizes=[128],
                       progress=False)
    assert plan.memory == step_memory(plan.apply(model), (8, 16), plan.chunk_size, mesh=mesh)
    whole = step_memory(plan.apply(model), (8, 16), plan.chunk_size)
    print("per device at tensor=4:", plan.memory, "one device:", whole)
    assert plan.memory.temp < whole.temp and plan.memory.arguments < whole.arguments / 2
    params = sum(x.nbytes for x in jax.tree.leaves(model))
    norms = sum(x.nbytes for x in jax.tree.leaves((model.norm, model.layers.input_norm,
                                                   model.layers.post_attn_norm)))
    vocab = model.embed.nbytes + model.lm_head.weight.nbytes  # split over fsdp only
    sizes = _shape(model, (8, 16), mesh_of(2, 2, 2), RULES)  # projections over fsdp x tensor
    assert sizes.param_bytes == (params - norms - vocab) // 4 + vocab // 2 + norms
    assert sizes.batch == 2
    assert sizes.tensor == 2 and sizes.heads == 8 and sizes.inner == 16
    bad = Transformer(config(num_heads=8, num_kv_heads=2, head_dim=8), key=jax.random.key(0))
    for args, message in [((bad, (8, 16)), "plan_memory: num_kv_heads=2 is not divisible"),
                          ((model, (5, 16)), "a batch of 5 examples cannot be split")]:
        try:
            plan_memory(*args, 2**30, mesh=mesh_of(2, 1, 4), progress=False)
        except ConfigError as error:
            assert message in str(error), error
        else:
            raise AssertionError(message)
    print("ok")
""")

SECTIONS = {"gradients": GRADIENTS, "training": TRAINING, "collectives": COLLECTIVES,
            "errors": ERRORS, "plan_memory": PLAN_MEMORY}


@pytest.mark.slow
def test_tensor_parallel_transformer_on_eight_devices(tmp_path):
    """The five groups of checks after one opening, in one child with 8 devices."""
    stdout = check_sections(run_sections(tmp_path, PRELUDE, SECTIONS, devices=8))
    for name, out in stdout.items():
        assert out.strip().endswith("ok"), (name, out)

