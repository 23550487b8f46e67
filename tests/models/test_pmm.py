"""AffineObservablePMM against a dense NumPy reference; pmm_chain as a scanned Graph."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.pmm import AffineObservablePMM, pmm_chain


def _complex(parts):
    parts = np.asarray(parts, np.float64)
    return parts[..., 0] + 1j * parts[..., 1]


def _naive(module, x):
    """y_k = g_k + sum_ij |v_i^H D_kij v_j|^2, by explicit loops over one sample."""
    herm = lambda m: (m + m.conj().T) / 2
    a, b, d = _complex(module.a), _complex(module.b), _complex(module.d)
    matrix = herm(a) + sum(x[i] * herm(b[i]) for i in range(len(x)))
    _, vectors = np.linalg.eigh(matrix)
    q, r = d.shape[0], module.num_eig
    y = np.array(module.g, np.float64)
    for k in range(q):
        for i in range(r):
            for j in range(r):
                amplitude = vectors[:, i].conj() @ herm(d[k, i, j]) @ vectors[:, j]
                y[k] += abs(amplitude) ** 2
    return y


def _module(key=0, p=3, q=2, n=5, r=2, dtype=jnp.float32):
    return AffineObservablePMM(p, q, matrix_size=n, num_eig=r, key=jax.random.key(key),
                               dtype=dtype)


def test_matrix_is_hermitian():
    module = _module()
    x = jax.random.normal(jax.random.key(1), (4, 3))
    matrix = np.asarray(jax.jit(lambda m, x: m.matrix(x))(module, x))
    assert matrix.shape == (4, 5, 5) and np.iscomplexobj(matrix)
    np.testing.assert_allclose(matrix, np.conj(np.swapaxes(matrix, -1, -2)), atol=1e-6)
    assert np.abs(matrix.imag).max() > 0.1


def test_outputs_are_real_and_match_dense_reference():
    module = eqx.tree_at(lambda m: m.g, _module(key=2), jax.random.normal(jax.random.key(5), (2,)))
    x = jax.random.normal(jax.random.key(3), (6, 3))
    y = jax.jit(lambda m, x: m(x))(module, x)
    assert y.shape == (6, 2) and y.dtype == jnp.float32
    expected = np.stack([_naive(module, np.asarray(row, np.float64)) for row in x])
    np.testing.assert_allclose(np.asarray(y), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(module(x[0])), expected[0], rtol=1e-4, atol=1e-5)


def test_gradients_are_finite_and_match_finite_differences():
    with jax.enable_x64():
        module = _module(key=4, p=2, n=4, dtype=jnp.float64)
        x = jax.random.normal(jax.random.key(6), (3, 2), jnp.float64)
        loss = jax.jit(lambda m, x: jnp.sum(jnp.sin(m(x))))
        grads = jax.jit(jax.grad(loss, argnums=(0, 1)))(module, x)
        assert all(bool(jnp.all(jnp.isfinite(leaf))) for leaf in jax.tree.leaves(grads))
        assert float(jnp.abs(grads[0].b).sum()) > 0
        leaves, treedef = jax.tree.flatten((module, x))
        keys = jax.random.split(jax.random.key(7), len(leaves))
        direction = treedef.unflatten(
            [jax.random.normal(k, leaf.shape, leaf.dtype) for k, leaf in zip(keys, leaves,
                                                                            strict=True)])
        shifted = lambda eps: jax.tree.map(lambda p, d: p + eps * d, (module, x), direction)
        eps = 1e-6
        numeric = (loss(*shifted(eps)) - loss(*shifted(-eps))) / (2 * eps)
        analytic = sum(jnp.vdot(g, d) for g, d in zip(jax.tree.leaves(grads),
                                                       jax.tree.leaves(direction), strict=True))
        np.testing.assert_allclose(float(analytic), float(numeric), rtol=1e-6)


def test_pmm_chain_is_one_scan_and_matches_a_loop():
    seed_size = pmm_chain(16, 4, key=jax.random.key(0))
    assert [len(step.nodes) for step in seed_size.plan.steps] == [16]
    assert 20_000 <= sum(leaf.size for leaf in jax.tree.leaves(seed_size)) <= 30_000
    graph = pmm_chain(4, 4, key=jax.random.key(0))
    x = jax.random.normal(jax.random.key(1), (5, 4))

    @jax.jit
    def unrolled(graph, x):
        for name in graph.plan.nodes:
            x = graph.node(name)(x)
        return x

    np.testing.assert_allclose(np.asarray(jax.jit(lambda g, x: g(x))(graph, x)),
                               np.asarray(unrolled(graph, x)), rtol=1e-5, atol=1e-6)


def test_bad_num_eig():
    with pytest.raises(ConfigError, match="num_eig"):
        _module(n=3, r=4)
