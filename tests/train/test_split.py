"""Splitting a packed buffer at runtime offsets: same blocks as slicing, one kernel per shape."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.train._split import split


def _blocks(shapes, per=1):
    starts = np.cumsum([0] + [int(np.prod(s)) // per for s in shapes])
    return [int(x) for x in starts[:-1]], int(starts[-1])


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_flat_blocks_equal_slices_values_and_gradients(dtype):
    shapes = [(3, 4), (5,), (3, 4), (), (5,), (3, 4), (0,)]
    starts, total = _blocks(shapes)
    buffer = jax.random.normal(jax.random.key(0), (total,), dtype)
    expected = [np.asarray(buffer[s:s + int(np.prod(shape))]).reshape(shape)
                for s, shape in zip(starts, shapes, strict=True)]
    for out in (split(buffer, starts, shapes), jax.jit(lambda b: split(b, starts, shapes))(buffer)):
        for got, want in zip(out, expected, strict=True):
            assert got.shape == want.shape and got.dtype == dtype
            np.testing.assert_array_equal(np.asarray(got), want)
    weights = [jax.random.normal(jax.random.key(i), shape, dtype) for i, shape in enumerate(shapes)]
    loss = lambda blocks: sum(jnp.sum(jnp.sin(b) * w) for b, w in zip(blocks, weights, strict=True))
    sliced = lambda b: [b[s:s + int(np.prod(shape))].reshape(shape)
                        for s, shape in zip(starts, shapes, strict=True)]
    np.testing.assert_array_equal(
        np.asarray(jax.jit(jax.grad(lambda b: loss(split(b, starts, shapes))))(buffer)),
        np.asarray(jax.jit(jax.grad(lambda b: loss(sliced(b))))(buffer)))


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_matrix_buffer_blocks_are_stacks_of_matrices(x64):
    """Also under ``jax_enable_x64``, where a Python int index is int64 beside the int32
    runtime offsets (one index type is required)."""
    shapes = [(2, 3, 4), (3, 4), (2, 3, 4), (1, 3, 4)]
    starts, total = _blocks(shapes, per=12)
    with jax.enable_x64(x64):
        buffer = jax.device_put(np.random.default_rng(1).standard_normal((total, 3, 4)))
        out = jax.jit(lambda b: split(b, starts, shapes))(buffer)
    for got, start, shape in zip(out, starts, shapes, strict=True):
        count = int(np.prod(shape)) // 12
        np.testing.assert_array_equal(np.asarray(got),
                                      np.asarray(buffer[start:start + count]).reshape(shape))


def _distinct_kernels(leaves: int) -> int:
    """Distinct fused computations (names and metadata stripped) in the compiled program that
    takes ``leaves`` same-shaped leaves out of a buffer and adds one to each."""
    shapes = [(8, 8)] * leaves
    starts, total = _blocks(shapes)
    fn = jax.jit(lambda b: [x + 1 for x in split(b, starts, shapes)])
    text = fn.lower(jnp.zeros(total)).compile().as_text()
    bodies = set()
    for computation in text.split("\n\n"):
        lines = computation.strip().split("\n")
        if re.match(r"%?fused", lines[0]):
            bodies.add("\n".join(re.sub(r"%[\w.-]+", "%", re.sub(r", metadata=\{[^}]*\}", "", x))
                                 for x in lines[1:]))
    return len(bodies)


def test_same_shaped_leaves_share_their_kernels():
    """At constant offsets each leaf's slice compiles a kernel of its own (2.2 s for 192
    leaves on XLA:CPU); at runtime offsets the program holds as many kernels for 32 leaves as
    for 4."""
    assert _distinct_kernels(32) == _distinct_kernels(4)
