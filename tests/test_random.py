"""jaxlean._random draws exactly what jax.random.normal draws."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean._random import normal, normal_blocks


@pytest.mark.parametrize("shape,dtype", [((3, 4, 5), jnp.float32), ((2, 3), jnp.complex64),
                                         ((5, 7), jnp.bfloat16), ((), jnp.float32)])
def test_same_values_as_jax_random_normal(shape, dtype):
    key = jax.random.key(7)
    got, want = normal(key, shape, dtype), jax.random.normal(key, shape, dtype)
    assert got.shape == want.shape and got.dtype == want.dtype
    as_numpy = lambda x: np.asarray(x.astype(jnp.complex64))  # exact for every dtype here
    np.testing.assert_array_equal(as_numpy(got), as_numpy(want))


def test_blocks_are_consecutive_pieces_of_one_draw():
    key, shapes = jax.random.key(3), [(2, 3), (4,), (1, 2, 2)]
    blocks = normal_blocks(key, shapes)
    assert [block.shape for block in blocks] == shapes
    np.testing.assert_array_equal(np.concatenate([np.ravel(block) for block in blocks]),
                                  jax.random.normal(key, (14,)))
