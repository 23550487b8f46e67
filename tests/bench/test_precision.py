"""The precision benchmark's sides: float32 trainables, a bfloat16 base, the same values."""

import equinox as eqx
import jax
import jax.numpy as jnp
import pytest

from jaxlean.bench import available
from jaxlean.bench._measure import SidesDisagreeError
from jaxlean.bench.precision import (
    BASELINE,
    MIXED,
    TINY,
    _float32_model,
    check_close,
    split,
    tiny_values,
)


def _dtypes(tree) -> set:
    """The floating dtypes of the leaves (arrays or shapes)."""
    return {x.dtype for x in jax.tree.leaves(tree)
            if hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.inexact)}


def _halves(case: str, side: str):
    """The (trainable, frozen) shapes the benchmark compiles for ``case`` on ``side``."""
    return eqx.filter_eval_shape(lambda: split(_float32_model(TINY["config"], case), case, side))


def test_sides_store_what_they_claim():
    assert "precision" in available()
    trainable, frozen = _halves("LoRA", MIXED)
    assert _dtypes(trainable) == {jnp.dtype(jnp.float32)}
    assert _dtypes(frozen) == {jnp.dtype(jnp.bfloat16)}
    assert trainable.config.compute_dtype == jnp.bfloat16
    trainable, frozen = _halves("LoRA", BASELINE)
    assert _dtypes((trainable, frozen)) == {jnp.dtype(jnp.float32)}
    assert trainable.config.compute_dtype is None
    trainable, frozen = _halves("full", MIXED)
    assert _dtypes(trainable) == {jnp.dtype(jnp.float32)} and not _dtypes(frozen)
    assert trainable.config.compute_dtype == jnp.bfloat16


def test_mixed_lora_side_is_close_to_float32_and_a_wrong_side_is_refused():
    values = tiny_values("LoRA")
    check_close("LoRA", values[BASELINE], values[MIXED])
    loss, grads = values[MIXED]
    with pytest.raises(SidesDisagreeError, match="beyond bfloat16 round-off"):
        check_close("LoRA", values[BASELINE], (loss, jax.tree.map(lambda g: 1.1 * g, grads)))
