"""fit, like make_train_step, trains only the adapters of a model that holds any by default."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxlean.models.lm.lora import Linear, LoRA
from jaxlean.train._adapters import adapter_mask
from jaxlean.train.fit import fit


def _model():
    keys = jax.random.split(jax.random.key(0), 3)
    lora = LoRA(jax.random.normal(keys[0], (1, 3, 2)), jnp.zeros((1, 2, 1)), 1.0)
    return {"proj": Linear(jax.random.normal(keys[1], (3, 1)), lora),
            "bias": jax.random.normal(keys[2], (1,))}


def _loss(params, batch):
    x, y = batch
    return jnp.mean((params["proj"](x) + params["bias"] - y) ** 2)


def test_adapter_mask_marks_the_lora_arrays_only():
    mask = adapter_mask(_model())
    assert jax.tree.leaves(mask) == [False, False, True, True]   # bias, weight; a, b
    assert adapter_mask({"w": jnp.ones(2)}) is None


@pytest.mark.parametrize("trainable", [None, lambda path: True], ids=["default", "everything"])
def test_fit_trains_only_the_adapters_unless_asked(trainable):
    model = _model()
    x = jax.random.normal(jax.random.key(1), (32, 3))
    data = (x, x @ jnp.ones((3, 1)))
    params, _ = fit(_loss, model, data, optax.adam(1e-2), epochs=2, batch_size=8,
                    key=jax.random.key(2), trainable=trainable, progress=False)
    base_moved = [not np.array_equal(params["proj"].weight, model["proj"].weight),
                  not np.array_equal(params["bias"], model["bias"])]
    assert base_moved == [trainable is not None] * 2
    assert not np.array_equal(params["proj"].lora.b, model["proj"].lora.b)
