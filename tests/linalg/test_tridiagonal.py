"""tridiagonal_solve against a dense jnp.linalg.solve, values and derivatives."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import NonFiniteError, StructureError
from jaxlean.linalg import tridiagonal_solve


def system(m, seed, dtype, batch=(), k=None):
    rng = np.random.default_rng(seed)
    dl, du = rng.uniform(-1, 1, (2, *batch, m))
    d = rng.choice([-1, 1], (*batch, m)) * rng.uniform(2.5, 4, (*batch, m))
    b = rng.normal(size=(*batch, m) if k is None else (*batch, m, k))
    # converted in NumPy and put on the device: jnp.asarray compiles a program per shape
    return tuple(jax.device_put(np.asarray(a, dtype)) for a in (dl, d, du, b))


def dense(dl, d, du):
    m = d.shape[-1]
    eye = jnp.eye(m, dtype=d.dtype)
    return (d[..., None] * eye + dl[..., None] * jnp.eye(m, k=-1, dtype=d.dtype)
            + du[..., :, None] * jnp.eye(m, k=1, dtype=d.dtype))


@jax.jit
def dense_solve(dl, d, du, b):
    vector = b.ndim == d.ndim
    x = jnp.linalg.solve(dense(dl, d, du), b[..., None] if vector else b)
    return x[..., 0] if vector else x


def test_dense_reference_places_the_diagonals():
    dl, d, du = jnp.array([9.0, 1, 2]), jnp.array([3.0, 4, 5]), jnp.array([6.0, 7, 9])
    np.testing.assert_array_equal(dense(dl, d, du), [[3, 6, 0], [1, 4, 7], [0, 2, 5]])


@pytest.mark.parametrize("dtype,tol", [(jnp.float32, 2e-5), (jnp.float64, 1e-12)])
@pytest.mark.parametrize("batch,k", [((), None), ((3,), None), ((2,), 4), ((), 3)])
def test_matches_dense(dtype, tol, batch, k):
    with jax.enable_x64(dtype == jnp.float64):
        dl, d, du, b = system(11, 0, dtype, batch, k)
        x = tridiagonal_solve(dl, d, du, b)
        assert x.shape == b.shape and x.dtype == dtype
        np.testing.assert_allclose(x, dense_solve(dl.at[..., 0].set(0), d,
                                                  du.at[..., -1].set(0), b), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype,tol", [(jnp.float32, 1e-4), (jnp.float64, 1e-10)])
def test_grad_and_jvp_match_dense(dtype, tol):
    with jax.enable_x64(dtype == jnp.float64):
        args = system(9, 1, dtype, batch=(2,), k=3)
        tangents = system(9, 2, dtype, batch=(2,), k=3)
        mask = lambda dl, d, du, b: (dl.at[..., 0].set(0), d, du.at[..., -1].set(0), b)

        def both(solve):
            loss = lambda *a: jnp.sum(jnp.tanh(solve(*a)))
            run = jax.jit(lambda args, tangents: (jax.grad(loss, argnums=(0, 1, 2, 3))(*args),
                                                  jax.jvp(loss, args, tangents)[1]))
            return run(args, tangents)

        ours = both(tridiagonal_solve)
        want = both(lambda *a: dense_solve(*mask(*a)))
        for got, ref in zip(jax.tree.leaves(ours), jax.tree.leaves(want), strict=True):
            np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)
        np.testing.assert_array_equal(ours[0][0][..., 0], 0)
        np.testing.assert_array_equal(ours[0][2][..., -1], 0)


def test_vmap_over_matrices_and_rhs():
    with jax.enable_x64():
        dl, d, du, b = system(8, 3, jnp.float64, batch=(4,))
        x = jax.jit(jax.vmap(tridiagonal_solve))(dl, d, du, b)
        np.testing.assert_allclose(x, tridiagonal_solve(dl, d, du, b), rtol=1e-13)
        one_matrix = jax.vmap(lambda rhs: tridiagonal_solve(dl[0], d[0], du[0], rhs))(b)
        np.testing.assert_allclose(one_matrix, tridiagonal_solve(dl[0], d[0], du[0], b),
                                   rtol=1e-13)


def test_bad_shapes_and_non_finite():
    with pytest.raises(StructureError, match="last axis"):
        tridiagonal_solve(jnp.ones(3), jnp.ones(4), jnp.ones(4), jnp.ones(4))
    with pytest.raises(StructureError, match=r"\(\.\.\., 4\)"):
        tridiagonal_solve(jnp.ones(4), jnp.ones(4), jnp.ones(4), jnp.ones(5))
    d = jnp.array([1.0, 0.0, 1.0])
    with pytest.raises(NonFiniteError, match="node"):
        tridiagonal_solve(jnp.zeros(3), d, jnp.zeros(3), jnp.ones(3), check=True)
