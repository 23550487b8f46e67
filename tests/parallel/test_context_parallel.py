"""Context parallelism on 8 forced CPU devices: a sequence split over a ``seq`` axis.

One child process runs every check (:func:`~tests.parallel.sections.run_sections`):
``context_parallel_attention`` against one device's flash attention (padding, packed
segments, a sliding window, grouped-query heads fewer than the devices), the transformer's
loss and gradient under ``jax.set_mesh`` with ``seq`` = 2, 4, 8 and with data and fsdp
axes beside it (packed rows, remat, the vocabulary-parallel loss, micro-batches), the
collectives of the compiled step, the per-device memory, and the errors.
"""

import textwrap

import pytest

from tests.parallel.sections import check_sections, run_sections

PRELUDE = textwrap.dedent("""
    import re

    import equinox as eqx, jax, jax.numpy as jnp, numpy as np, optax
    from jax.sharding import NamedSharding, PartitionSpec as P
    from jaxlean.errors import ConfigError
    from jaxlean.loss.chunked import VocabParallel
    from jaxlean.models.lm.rules import transformer_rules
    from jaxlean.models.lm.causal_loss import loss_tokens
    from jaxlean.models.lm.transformer import Transformer, TransformerConfig, loss
    from jaxlean.nn.attention_mask import AttentionMask
    from jaxlean.nn.flash import flash_attention
    from jaxlean.parallel.context import context_parallel_attention
    from jaxlean.parallel.mesh import make_mesh, shard_batch, shard_model
    from jaxlean.train.step import make_train_step

    assert jax.device_count() == 8
    RULES = (*transformer_rules(), (r".*", P()))

    def mesh(shape):  # (data, fsdp, seq[, tensor])
        data, fsdp, seq, tensor = (*shape, 1)[:4]
        return make_mesh(data, fsdp, tensor, seq=seq,
                         devices=jax.devices()[:data * fsdp * seq * tensor])

    def worst(got, want):
        return max(float(np.max(np.abs(np.asarray(a) - np.asarray(b)))
                         / (np.max(np.abs(np.asarray(b))) + 1e-30))
                   for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True))

    rng = np.random.default_rng(0)
""")

ATTENTION = textwrap.dedent("""
    # 1. the function: values and gradients equal one device's flash attention
    B, T, H, D = 4, 64, 8, 16
    # inputs made in NumPy and put on the device (jnp.asarray compiles per shape)
    q = jax.device_put(rng.normal(size=(B, T, H, D)).astype(np.float32))
    w = jax.device_put(rng.normal(size=(B, T, H, D)).astype(np.float32))
    segments = jax.device_put(np.repeat([[1] * 20 + [2] * 30 + [3] * 10 + [0] * 4], B, 0)
                              .astype(np.int32))
    valid = jax.device_put(np.arange(T)[None] < np.array([[64], [50], [33], [64]]))
    # key/value heads that split over seq (8), fewer than the devices (2 over 4 or 8, 1)
    cases = {"causal": (8, AttentionMask()),
             "padded, packed": (2, AttentionMask(key_valid=valid, q_segments=segments,
                                                 k_segments=segments)),
             "window": (1, AttentionMask(window=9))}
    for name, (kv_heads, m) in cases.items():
        k, v = (jax.device_put(rng.normal(size=(B, T, kv_heads, D)).astype(np.float32))
                for _ in "kv")
        def one(q, k, v):
            return jnp.sum((flash_attention(q, k, v, m, q_tile=16, k_tile=16) * w) ** 2)
        want = jax.jit(jax.value_and_grad(one, (0, 1, 2)))(q, k, v)  # one compile, not per op
        for shape in [(1, 1, 8), (2, 2, 2)]:
            on = mesh(shape)
            def split(q, k, v):
                out = context_parallel_attention(q, k, v, m, on, batch_axes=("data", "fsdp"),
                                                 q_tile=16, k_tile=16)
                return jnp.sum((out * w) ** 2)
            got = jax.jit(jax.value_and_grad(split, (0, 1, 2)))(q, k, v)
            assert worst(got, want) <= 1e-5, (kv_heads, name, shape, worst(got, want))

    # one long sequence on a mesh whose batch axes cannot split it: the batch stays whole
    from jaxlean.parallel.context import splittable_batch_axes
    on = mesh((1, 2, 4))
    assert splittable_batch_axes(on, 1) == () and splittable_batch_axes(on, 4) == ("fsdp",)
    k, v = (jax.device_put(rng.normal(size=(1, T, 2, D)).astype(np.float32)) for _ in "kv")
    m = AttentionMask()
    got = jax.jit(lambda q, k, v: context_parallel_attention(
        q, k, v, m, on, batch_axes=splittable_batch_axes(on, 1), q_tile=16, k_tile=16))(
        q[:1], k, v)
    alone = jax.jit(lambda q, k, v: flash_attention(q, k, v, m, q_tile=16, k_tile=16))
    assert worst(got, alone(q[:1], k, v)) <= 1e-5

    # what cannot be split is refused, naming the sizes
    on = mesh((1, 1, 8))
    k = jnp.zeros((B, T, 3, D))
    for args, text in [((q[:, :60], k[:, :60], k[:, :60]), "multiple of the 'seq' axis size 8"),
                       ((q[:, :, :6], k, k), "query heads per device must split"),
                       ((q, k, k), "3 key/value heads")]:
        try:
            context_parallel_attention(*args, AttentionMask(), on)
        except ConfigError as e:
            assert text in str(e), (text, str(e))
        else:
            raise AssertionError(f"no error for {text}")
    print("ok")
""")

TRANSFORMER = textwrap.dedent("""
    # 2. the transformer under jax.set_mesh with a seq axis: loss and gradients equal one
    # device's, alone and beside data and fsdp axes; packed rows; remat; vocab-parallel loss
    config = TransformerConfig(vocab_size=64, hidden_size=32, intermediate_size=64,
                               num_layers=2, num_heads=8, num_kv_heads=2, attention="flash",
                               attention_tile=8)
    model = Transformer(config, key=jax.random.key(0))
    tokens = jax.device_put(rng.integers(0, 64, size=(4, 64)).astype(np.int32))
    segments = jax.device_put(np.repeat([[1] * 24 + [2] * 36 + [0] * 4], 4, 0).astype(np.int32))
    grad = eqx.filter_jit(eqx.filter_value_and_grad(loss))
    want = jax.block_until_ready(grad(model, tokens, targets=tokens))
    want_packed = jax.block_until_ready(grad(model, tokens, targets=tokens, segment_ids=segments))

    # seq = 8 alone, 4 beside data, 2 beside data and fsdp, 4 beside tensor = 2 (one query
    # head and a repeated key/value head per device), 2 beside fsdp and tensor; packed rows
    for shape, packed in [((1, 1, 8), True), ((2, 1, 4), False), ((2, 2, 2), True),
                          ((1, 1, 4, 2), True), ((1, 2, 2, 2), False)]:
        on = mesh(shape)
        sharded = shard_model(model, on, RULES)
        t, s = shard_batch((tokens, segments), on)
        assert t.sharding.spec == P(("data", "fsdp"), "seq")
        with jax.set_mesh(on):
            args = dict(targets=t, segment_ids=s if packed else None)
            got = grad(sharded, t, **args)
            expected = want_packed if packed else want
            assert worst(got, expected) <= 1e-5, (shape, packed, worst(got, expected))
            # attention was split: the program just run (its trace and lowering are cached,
            # so reading them costs no second trace) moves q, k, v by all-to-all
            assert "all_to_all" in grad.lower(sharded, t, **args).as_text(), shape
    on = mesh((2, 1, 4))
    sharded = shard_model(model, on, RULES)
    t = shard_batch(tokens, on)
    with jax.set_mesh(on):
        got = grad(sharded.with_options(remat="full"), t, targets=t,
                   vocab_parallel=VocabParallel(on, "seq", "data"))
    assert worst(got, want) <= 1e-5, ("remat, vocab-parallel", worst(got, want))

    # micro-batches: a training step with two of them trains as on one device (SGD, whose
    # update is the gradient: Adam's would magnify the rounding of near-zero gradients; a
    # large rate, so that the update read back as trained - initial keeps its digits)
    tx = optax.sgd(10.0)
    step = make_train_step(loss, tx, micro_batches=2, loss_weight=loss_tokens)
    ref_model, ref_state, ref_loss = jax.block_until_ready(
        step(model, tx.init(model), tokens, targets=tokens))
    with jax.set_mesh(on):
        got_model, _, got_loss = step(sharded, tx.init(sharded), t, targets=t)
    def update(trained):  # what the step changed, as numpy (the models live on other devices)
        return jax.tree.map(lambda a, b: np.asarray(a) - np.asarray(b),
                            eqx.filter(trained, eqx.is_array), eqx.filter(model, eqx.is_array))
    assert worst(got_loss, ref_loss) <= 1e-6
    assert worst(update(got_model), update(ref_model)) <= 1e-5
    print("ok")
""")

COLLECTIVES_AND_MEMORY = textwrap.dedent("""
    # 3. the split step's attention moves q, k, v and the output by all-to-all (no gather
    # of the activations), and its per-device temp memory falls with the split
    config = TransformerConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
                               num_layers=2, num_heads=8, num_kv_heads=2, attention="flash",
                               remat="full")
    model = Transformer(config, key=jax.random.key(0))

    def compiled(n, length):
        on = mesh((1, 1, n))
        params, static = eqx.partition(shard_model(model, on, RULES), eqx.is_array)
        tok = jax.ShapeDtypeStruct((1, length), jnp.int32,
                                   sharding=NamedSharding(on, P(None, "seq")))
        def f(p, t):
            return eqx.filter_value_and_grad(loss)(eqx.combine(p, static), t, targets=t)
        with jax.set_mesh(on):
            return jax.jit(f).lower(params, tok).compile()

    temp = {n: compiled(n, 4096).memory_analysis().temp_size_in_bytes for n in (1, 4)}
    assert temp[4] <= 0.35 * temp[1], temp
    # plan_memory's compiled check splits the ids over seq as the step does, and its model
    # divides the sequence: both per device
    from jaxlean.models.lm.memory_plan import _shape, step_memory
    on = mesh((1, 1, 4))
    assert step_memory(model, (1, 4096), 1024, on).temp == temp[4]
    assert _shape(model, (1, 4096), on, RULES).tokens == 1024
    text = compiled(4, 256).as_text()
    ops = re.findall(r" (all-to-all|all-gather|collective-permute|all-reduce)(?:-start)?\\(", text)
    assert ops.count("all-to-all") >= 4, ops  # q, k, v in and the output out, per layer
    assert "all-gather" not in ops, ops  # no activation is gathered whole
    print("ok")
""")


# Two children: with the attention section's programs run first, the transformer's step
# on a (2, 1, 4) mesh hung in XLA:CPU's in-process all-gather (a rendezvous timeout, 8
# forced devices on 2 loaded cores); each alone passed every time it was tried.
@pytest.mark.slow
@pytest.mark.parametrize("sections", [
    {"attention": ATTENTION},
    {"transformer": TRANSFORMER, "collectives and memory": COLLECTIVES_AND_MEMORY},
], ids=["attention", "transformer"])
def test_context_parallel_on_eight_devices(tmp_path, sections):
    stdout = check_sections(run_sections(tmp_path, PRELUDE, sections, devices=8))
    for name, out in stdout.items():
        assert out.strip().endswith("ok"), (name, out[-3000:])
