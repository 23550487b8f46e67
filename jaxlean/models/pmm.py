"""Affine-observable parametric matrix model (PMM): the reference module of seed 000.

A PMM (Cook, Jammooa, Hjorth-Jensen, Lee & Lee, "Parametric Matrix Models",
2024) maps an input ``x`` to the spectrum of a Hermitian matrix that depends on
``x``. The affine-observable variant builds ``M(x) = A + sum_i x_i B_i``, keeps
the ``r`` eigenvectors of lowest eigenvalue and reads out
``y_k = g_k + sum_{i,j} |v_i^H D_kij v_j|^2`` with Hermitian observables ``D``.

Complex matrices are stored as real arrays with a trailing axis of size 2 (real,
imaginary part), so optimizers and packed state see ordinary floats; the
Hermitian part is taken in the forward pass.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import Array

from jaxlean.errors import ConfigError
from jaxlean.nn.graph import Graph, chain_edges
from jaxlean.nn.remat import RematOption


def hermitian(parts: Array) -> Array:
    """The Hermitian matrices ``(X + X^H) / 2`` for ``X = parts[..., 0] + i parts[..., 1]``."""
    matrix = jax.lax.complex(parts[..., 0], parts[..., 1])
    return 0.5 * (matrix + jnp.conj(jnp.swapaxes(matrix, -1, -2)))


class AffineObservablePMM(eqx.Module):
    """One affine-observable PMM: ``R^p -> R^q`` through the eigenvectors of ``M(x)``.

    Works on one input ``x`` of shape ``(p,)`` or on a batch ``(..., p)``.

    Attributes:
        a: ``(n, n, 2)`` real/imaginary parts of the constant matrix ``A``.
        b: ``(p, n, n, 2)`` parts of the matrices ``B_i`` multiplying ``x_i``.
        d: ``(q, r, r, n, n, 2)`` parts of the observables ``D_kij``.
        g: ``(q,)`` output biases.
    """

    a: Array
    b: Array
    d: Array
    g: Array
    num_eig: int = eqx.field(static=True)

    def __init__(self, in_features: int, out_features: int, *, matrix_size: int, num_eig: int,
                 key: Array, dtype: jnp.dtype = jnp.float32):
        """Random initialisation.

        Args:
            in_features: ``p``, the size of ``x``.
            out_features: ``q``, the number of outputs.
            matrix_size: ``n``, the size of the Hermitian matrices.
            num_eig: ``r``, how many lowest eigenvectors are read out (``r <= n``).
            key: PRNG key.
            dtype: real dtype of the stored parameters.
        """
        n, r = matrix_size, num_eig
        if not 1 <= r <= n:
            raise ConfigError(f"num_eig must be between 1 and matrix_size={n}, got {r}")
        key_a, key_b, key_d = jax.random.split(key, 3)
        self.a = jax.random.normal(key_a, (n, n, 2), dtype)
        self.b = jax.random.normal(key_b, (in_features, n, n, 2), dtype) / in_features**0.5
        self.d = jax.random.normal(key_d, (out_features, r, r, n, n, 2), dtype) / (r * n**0.5)
        self.g = jnp.zeros((out_features,), dtype)
        self.num_eig = r

    def matrix(self, x: Array) -> Array:
        """The Hermitian ``M(x) = A + sum_i x_i B_i``, shape ``(..., n, n)``, complex."""
        a, b = hermitian(self.a), hermitian(self.b)
        return a + jnp.einsum("...i,ijk->...jk", x.astype(b.real.dtype), b)

    def __call__(self, x: Array) -> Array:
        """Outputs ``y`` of shape ``(..., q)``, real."""
        _, vectors = jnp.linalg.eigh(self.matrix(x))
        lowest = vectors[..., : self.num_eig]
        amplitudes = jnp.einsum("...ai,kijab,...bj->...kij", jnp.conj(lowest),
                                hermitian(self.d), lowest)
        return self.g + jnp.sum(jnp.abs(amplitudes) ** 2, axis=(-2, -1))


def pmm_chain(depth: int, width: int, *, matrix_size: int = 6, num_eig: int = 2,
              key: Array, dtype: jnp.dtype = jnp.float32, remat: RematOption = None,
              scan: bool = True) -> Graph:
    """A :class:`~jaxlean.nn.graph.Graph` of ``depth`` PMMs in a chain, ``R^width -> R^width``.

    Nodes are named ``pmm0 ... pmm{depth-1}``. The defaults give 1,516 parameters
    per module at ``width=4`` (about 24k for 16 modules, the size of seed 000).

    Args:
        depth: number of modules.
        width: input and output size of every module.
        matrix_size, num_eig, dtype: see :class:`AffineObservablePMM`.
        key: PRNG key (split once per module).
        remat, scan: passed to :class:`~jaxlean.nn.graph.Graph`; ``scan=False`` runs the
            modules one by one (the baseline of seed 000).

    Returns:
        The graph; call it on ``x`` of shape ``(..., width)``.
    """
    keys = jax.random.split(key, depth)
    nodes = {
        f"pmm{i}": AffineObservablePMM(width, width, matrix_size=matrix_size, num_eig=num_eig,
                                       key=keys[i], dtype=dtype)
        for i in range(depth)
    }
    return Graph(nodes, chain_edges(nodes), remat=remat, scan=scan)
