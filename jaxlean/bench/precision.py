"""Benchmark ``precision``: loss+grad memory of float32 training vs bfloat16 compute of the base.

Two ways to train a transformer, each on the same model and tokens:

- LoRA: the baseline keeps base and adapters in float32 and computes in
  float32; jaxlean stores the frozen base in bfloat16, keeps the adapters in
  float32 (``add_lora(..., dtype=jnp.float32)``) and runs every product in
  bfloat16 (``TransformerConfig.compute_dtype``);
- full fine-tuning: float32 weights either way; the baseline computes in
  float32, jaxlean in bfloat16 (the float32 weights are cast where used).

The gradient is taken of the trainable weights only (the adapters, or all),
as the train step does. Memory is XLA's ``memory_analysis()`` of the compiled
loss+gradient (arguments: weights and tokens; temp: activations and
workspace), compiled and never run at that size. First both sides run at a
tiny size and must agree to bfloat16 round-off (:func:`check_close`).
"""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.bench._measure import SidesDisagreeError, aot_compile
from jaxlean.bench._registry import BenchContext, BenchResult, register
from jaxlean.models.lm.lora import add_lora, lora_mask
from jaxlean.models.lm.transformer import Transformer, TransformerConfig, loss

__all__ = ["check_close", "loss_and_grad", "random_weights", "run", "split", "tiny_values"]

MIB = 2**20
FULL = dict(config=dict(vocab_size=4096, hidden_size=256, intermediate_size=704, num_heads=8,
                        num_kv_heads=4, num_layers=8), tokens=(4, 512))
QUICK = dict(config=dict(vocab_size=512, hidden_size=64, intermediate_size=176, num_heads=4,
                         num_kv_heads=2, num_layers=4), tokens=(1, 256))
TINY = dict(config=dict(vocab_size=128, hidden_size=32, intermediate_size=64, num_heads=4,
                        num_kv_heads=2, num_layers=2), tokens=(2, 16))
LORA_RANK = 16
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
BASELINE, MIXED = "float32", "bf16 compute, float32 trainables"
CASES = ("LoRA", "full")
LOSS_RTOL, GRAD_RTOL = 2e-2, 5e-2  # bfloat16 keeps 8 bits: ~0.4% per rounding, a few layers


def _float32_model(config: dict, case: str) -> Transformer:
    """The float32 model of ``case`` (with float32 adapters for LoRA), randomly initialised."""
    key = jax.random.key(0)
    model = Transformer(TransformerConfig(**config), key=key)
    if case == "full":
        return model
    return add_lora(model, rank=LORA_RANK, key=jax.random.fold_in(key, 1), targets=LORA_TARGETS,
                    dtype=jnp.float32)


def split(model: Transformer, case: str, side: str) -> tuple[Transformer, Transformer]:
    """``(trainable, frozen)`` halves of the float32 ``model`` as ``side`` trains it
    (``eqx.combine`` them to get the model): jaxlean's side computes in bfloat16 and
    stores a LoRA model's frozen base in bfloat16; trainable weights stay float32."""
    if side == MIXED:
        model = model.with_options(compute_dtype=jnp.bfloat16)
    if case == "full":
        return eqx.partition(model, eqx.is_inexact_array)
    trainable, frozen = eqx.partition(model, lora_mask(model))
    if side == MIXED:
        frozen = jax.tree.map(lambda x: x.astype(jnp.bfloat16) if eqx.is_inexact_array(x)
                              else x, frozen)
    return trainable, frozen


def random_weights(abstract: Transformer, seed: int = 0) -> Transformer:
    """The model of shapes ``abstract`` with random float32 weights drawn by numpy (no
    compile): norms near 1, embeddings N(0, 1), matrices N(0, 1/fan_in), adapters a tenth
    of that (both non-zero, so their path's rounding is part of the check)."""
    rng = np.random.default_rng(seed)

    def draw(path: tuple, x: jax.ShapeDtypeStruct) -> jax.Array:
        name = jax.tree_util.keystr(path)
        z = rng.standard_normal(x.shape)
        if "norm" in name:
            z = 1 + 0.1 * z
        elif "embed" not in name:
            z = z / np.sqrt(x.shape[-2]) * (0.1 if "lora" in name else 1.0)
        return jnp.asarray(z, x.dtype)

    return jax.tree_util.tree_map_with_path(draw, abstract)


def loss_and_grad(trainable: Transformer, frozen: Transformer, tokens: jax.Array,
                  targets: jax.Array) -> tuple[jax.Array, Transformer]:
    """Next-token loss and its gradient with respect to the trainable half."""
    return eqx.filter_value_and_grad(lambda t: loss(eqx.combine(t, frozen), tokens,
                                                   targets=targets))(trainable)


def check_close(case: str, reference: tuple, other: tuple) -> str:
    """The mixed side's loss and gradient differences from float32, in words; raises
    :class:`SidesDisagreeError` beyond bfloat16 round-off (then they compute different things)."""
    (loss_a, grads_a), (loss_b, grads_b) = reference, other
    loss_gap = abs(float(loss_a - loss_b)) / abs(float(loss_a))
    pairs = list(zip(jax.tree.leaves(grads_a), jax.tree.leaves(grads_b), strict=True))
    scale = max(float(jnp.max(jnp.abs(a))) for a, _ in pairs)
    grad_gap = max(float(jnp.max(jnp.abs(a - b.astype(a.dtype)))) for a, b in pairs) / scale
    text = (f"{case}: relative loss difference {loss_gap:.1e}, max |grad difference| / "
            f"max |grad| {grad_gap:.1e} ({MIXED} vs {BASELINE}, tiny model)")
    if loss_gap > LOSS_RTOL or grad_gap > GRAD_RTOL:
        raise SidesDisagreeError(f"{text}: beyond bfloat16 round-off, no memory is reported")
    return text


def tiny_values(case: str) -> dict[str, tuple]:
    """Loss and gradient of each side on the tiny model (the same weights), random tokens;
    both sides in one program, compiled without LLVM's optimisations (which would take most
    of the check's time for a program that runs in milliseconds; the values are the same)."""
    config, shape = TINY["config"], TINY["tokens"]
    model = random_weights(eqx.filter_eval_shape(_float32_model, config, case))
    arrays, static = eqx.partition(model, eqx.is_array)
    tokens = jax.random.randint(jax.random.key(1), shape, 0, config["vocab_size"])

    def both(arrays: Transformer, tokens: jax.Array) -> dict[str, tuple]:
        model, targets = eqx.combine(arrays, static), jnp.roll(tokens, -1, axis=1)
        return {side: loss_and_grad(*split(model, case, side), tokens, targets)
                for side in (BASELINE, MIXED)}

    return jax.jit(both, compiler_options={"xla_backend_optimization_level": 0})(arrays, tokens)


def _compiled(config: dict, case: str, side: str, shape: tuple[int, int]):
    halves = eqx.filter_eval_shape(lambda: split(_float32_model(config, case), case, side))
    arrays, static = eqx.partition(halves, lambda x: isinstance(x, jax.ShapeDtypeStruct))
    tokens = jax.ShapeDtypeStruct(shape, jnp.int32)

    def step(arrays: tuple, tokens: jax.Array, targets: jax.Array):
        return loss_and_grad(*eqx.combine(arrays, static), tokens, targets)

    return aot_compile(step, arrays, tokens, tokens)


@register("precision", "loss+grad memory: float32 vs bf16 base compute with float32 trainable "
          "weights (LoRA and full)")
def run(ctx: BenchContext) -> BenchResult:
    """Run the precision benchmark: loss and gradient memory, float32 against bf16 compute."""
    setting = QUICK if ctx.quick else FULL
    config, shape = setting["config"], setting["tokens"]
    result = BenchResult("precision", f"loss+grad memory, float32 vs bf16 compute (hidden "
                         f"{config['hidden_size']}, {config['num_layers']} layers, vocab "
                         f"{config['vocab_size']}, batch {shape[0]} x {shape[1]} tokens)")
    for case in CASES:
        ctx.step(f"{case}: both sides on a tiny model, checked close")
        values = tiny_values(case)
        result.notes.append(check_close(case, values[BASELINE], values[MIXED]))
        measured: dict[str, Callable] = {}
        for side in (BASELINE, MIXED):
            ctx.step(f"{case}: compiling loss+grad, {side}")
            measured[side] = _compiled(config, case, side, shape)
        name = f"{case} loss+grad"
        for metric, attribute in (("argument memory", "argument_bytes"),
                                  ("temp memory", "temp_bytes")):
            result.compare(name, metric, "bytes", getattr(measured[BASELINE], attribute),
                           getattr(measured[MIXED], attribute), MIXED, BASELINE)
        total = {side: c.argument_bytes + c.temp_bytes for side, c in measured.items()}
        result.compare(name, "argument + temp memory", "bytes", total[BASELINE], total[MIXED],
                       MIXED, BASELINE)
        result.notes.append(f"{case}: argument + temp {total[BASELINE] / MIB:.1f} MiB "
                            f"({BASELINE}) vs {total[MIXED] / MIB:.1f} MiB ({MIXED})")
    result.notes.append(
        f"LoRA rank {LORA_RANK} on {', '.join(LORA_TARGETS)}; loss+grad compiled with XLA on "
        f"{jax.default_backend()}, never run at this size" + (
            "; XLA:CPU computes bfloat16 operations in float32, so the temp memory of the bf16 "
            "side does not shrink here: measure it on a GPU" if jax.default_backend() == "cpu"
            else ""))
    return result
