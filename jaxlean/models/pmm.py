"""pyPMM's affine-observable parametric matrix model, as an Equinox module.

A parametric matrix model (Cook, Jammooa, Hjorth-Jensen, Lee & Lee, "Parametric
matrix models", Nat. Commun. 16, 5929, 2025) maps features ``x`` through the
eigenvectors of a Hermitian matrix that depends on ``x``. This is a port of
pyPMM's ``AffineObservablePMM`` (github.com/Parametric-Matrix-Models/pyPMM,
commit 43f6346d70f9efd128c12730ee6d974a8a233d38, modules
``affineobservablepmm``, ``affinehermitianmatrix``, ``eigenvectors``,
``transitionamplitudesum``, ``expectationvaluesum``, ``bias``, ``_smoothing`` and
``eigen_util``), the same math on the same parameters:

- ``M(x) = M_0 + sum_i x_i M_i + s C`` with trainable complex ``M_i`` (Hermitian
  part taken in the forward pass), ``C = i sum_{a>b} [M_a, M_b]`` the smoothing
  commutator and ``s`` the smoothing hyperparameter;
- the ``r`` eigenvectors ``v_1..v_r`` of ``M(x)`` chosen by ``which`` (pyPMM's
  eight selection modes, in pyPMM's order);
- ``z_k = sum_m sum_{i,j} |v_i^H D_km v_j|^2 - 1/2 sum_m ||D_km||_2^2 + b_k``:
  one set of observables ``D_km`` per output, shared by every eigenvector pair
  (``m`` runs over ``num_secondaries``), centred by half the squared spectral
  norm as pyPMM does, plus a real bias. With ``use_expectation_values`` the sum
  is ``sum_m sum_i v_i^H D_km v_i`` instead.

pyPMM trains complex parameters with its ``complex_adam``, which conjugates
JAX's gradient (JAX returns ``df/dRe - i df/dIm`` for a real loss) before Adam;
:func:`complex_adam` is that optimizer as an optax transformation.
"""

from __future__ import annotations

import warnings
from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jax import Array

from jaxlean._random import normal
from jaxlean.errors import ConfigError, StructureError
from jaxlean.nn.graph import Graph, chain_edges
from jaxlean.nn.remat import RematOption

__all__ = ["SEED_CONFIG", "WHICH", "AffineObservablePMM", "Which", "complex_adam",
           "hermitian_part", "pmm_chain", "selected_indices", "smoothing_matrix"]

Which = Literal["SA", "LA", "SM", "LM", "EA", "EM", "IA", "IM"]
WHICH: tuple[str, ...] = ("SA", "LA", "SM", "LM", "EA", "EM", "IA", "IM")


def hermitian_part(matrices: Array) -> Array:
    """``(X + X^H) / 2`` over the last two axes."""
    return 0.5 * (matrices + jnp.conj(jnp.swapaxes(matrices, -1, -2)))


def smoothing_matrix(ms: Array) -> Array:
    """``C = i sum_{a>b} [M_a, M_b]`` for ``ms`` of shape ``(p, n, n)`` (Hermitian for Hermitian M).

    By linearity, ``sum_{a>b} [M_a, M_b] = sum_{a>=1} [M_a, S_{a-1}]`` with
    ``S_a = M_0 + ... + M_a``: two batched products instead of ``p^2`` commutators.
    """
    partial = jnp.cumsum(ms[:-1], axis=0)
    rest = ms[1:]
    return 1j * (jnp.einsum("aij,ajk->ik", rest, partial)
                 - jnp.einsum("aij,ajk->ik", partial, rest))


def selected_indices(values: Array, num_eig: int, which: str) -> Array:
    """Indices of the ``num_eig`` eigenvalues chosen by ``which``, in pyPMM's order.

    Algebraic modes (``*A``) rank by value, magnitude modes (``*M``) by ``|value|``,
    ascending; ``S``/``L`` take the first/last ``num_eig``, ``E`` the lower half
    from the start and the rest from the end, ``I`` the ones around the middle.
    Works on ``values`` of shape ``(..., n)``.
    """
    which = which.upper()
    key = values if which.endswith("A") else jnp.abs(values)
    order = jnp.argsort(key, axis=-1)
    n, half, rest = values.shape[-1], num_eig // 2, num_eig - num_eig // 2
    if which[0] == "S":
        return order[..., :num_eig]
    if which[0] == "L":
        return order[..., n - num_eig:]
    if which[0] == "E":
        return jnp.concatenate([order[..., :half], order[..., n - rest:]], axis=-1)
    middle = n // 2
    return order[..., middle - half: middle + rest]


def _complex_normal(key: Array, shape: tuple[int, ...], dtype: jnp.dtype) -> Array:
    """pyPMM's initialiser: ``N + i N'`` with ``N, N'`` complex standard normals."""
    key_re, key_im = jax.random.split(key)
    return normal(key_re, shape, dtype) + 1j * normal(key_im, shape, dtype)


class AffineObservablePMM(eqx.Module):
    """pyPMM's ``AffineObservablePMM``: ``R^p -> R^q`` through selected eigenvectors of ``M(x)``.

    Works on one input ``x`` of shape ``(p,)`` or on a batch ``(..., p)``.

    Attributes:
        ms: ``(p + 1, n, n)`` complex ``M_0, M_1, ..., M_p`` (``(p, n, n)`` without
            ``affine_bias_matrix``); their Hermitian parts are used.
        ds: ``(q, l, n, n)`` complex observables ``D_km``; their Hermitian parts are used.
        bias: ``(q,)`` real output bias, or None without ``bias_term``.
    """

    ms: Array
    ds: Array
    bias: Array | None
    num_eig: int = eqx.field(static=True)
    which: str = eqx.field(static=True)
    smoothing: float = eqx.field(static=True)
    affine_bias_matrix: bool = eqx.field(static=True)
    centered: bool = eqx.field(static=True)
    use_expectation_values: bool = eqx.field(static=True)

    def __init__(self, in_features: int, out_features: int, *, matrix_size: int, num_eig: int,
                 key: Array, which: Which | None = None, smoothing: float | None = None,
                 affine_bias_matrix: bool = True, num_secondaries: int = 1,
                 centered: bool = True, bias_term: bool = True,
                 use_expectation_values: bool = False, init_magnitude: float = 1e-2,
                 dtype: jnp.dtype = jnp.complex64):
        """Random initialisation as pyPMM's (``init_magnitude`` times a complex normal).

        Args:
            in_features: ``p``, the size of ``x``.
            out_features: ``q``, the number of outputs.
            matrix_size: ``n``, the size of the Hermitian matrices.
            num_eig: ``r``, how many eigenvectors are read out (``1 <= r <= n``).
            key: PRNG key.
            which: which eigenvectors, one of ``WHICH`` (case-insensitive); default
                ``"LM"`` without smoothing and ``"SA"`` with it, as pyPMM.
            smoothing: ``s``, the weight of the smoothing commutator (None or 0: none).
            affine_bias_matrix: include the constant matrix ``M_0``.
            num_secondaries: ``l``, observables per output.
            centered: subtract ``1/2 sum_m ||D_km||_2^2`` from output ``k``.
            bias_term: add a trainable real bias to each output.
            use_expectation_values: sum expectation values ``v_i^H D v_i`` instead of
                squared transition amplitudes.
            init_magnitude: scale of the random initial parameters.
            dtype: complex dtype of ``ms`` and ``ds`` (the bias uses its real dtype).
        """
        smoothing = float(smoothing or 0.0)
        which = ("LM" if smoothing == 0.0 else "SA") if which is None else which.upper()
        n, r = matrix_size, num_eig
        if which not in WHICH:
            raise ConfigError(f"which must be one of {', '.join(WHICH)}, got {which!r}")
        if n < 1 or not 1 <= r <= n:
            raise ConfigError(f"num_eig must be between 1 and matrix_size={n}, got {r}")
        if num_secondaries < 1:
            raise ConfigError(f"num_secondaries must be at least 1, got {num_secondaries}")
        if not jnp.issubdtype(dtype, jnp.complexfloating):
            raise ConfigError(f"dtype must be a complex dtype, got {jnp.dtype(dtype).name}")
        if smoothing != 0.0 and which.endswith("M"):
            warnings.warn(f"smoothing with which={which!r}: smoothing keeps eigenvalues that are "
                          "close algebraically apart, not close in magnitude", stacklevel=2)
        key_m, key_d, key_b = jax.random.split(key, 3)
        count = in_features + 1 if affine_bias_matrix else in_features
        self.ms = hermitian_part(init_magnitude * _complex_normal(key_m, (count, n, n), dtype))
        self.ds = hermitian_part(init_magnitude * _complex_normal(
            key_d, (out_features, num_secondaries, n, n), dtype))
        real = jnp.finfo(dtype).dtype
        self.bias = (init_magnitude * jax.random.normal(key_b, (out_features,), real)
                     if bias_term else None)
        self.num_eig = r
        self.which = which
        self.smoothing = smoothing
        self.affine_bias_matrix = affine_bias_matrix
        self.centered = centered
        self.use_expectation_values = use_expectation_values

    @property
    def in_features(self) -> int:
        return self.ms.shape[0] - int(self.affine_bias_matrix)

    def matrix(self, x: Array) -> Array:
        """The Hermitian ``M(x)`` of shape ``(..., n, n)``, complex."""
        if x.shape[-1:] != (self.in_features,):
            raise StructureError(f"AffineObservablePMM expects inputs of shape (..., "
                                 f"{self.in_features}), got {tuple(x.shape)}")
        ms = hermitian_part(self.ms)
        x = x.astype(jnp.result_type(ms.dtype, x.dtype))
        constant = ms[0] if self.affine_bias_matrix else jnp.zeros_like(ms[0])
        slopes = ms[1:] if self.affine_bias_matrix else ms
        if self.smoothing != 0.0:
            constant = constant + self.smoothing * smoothing_matrix(ms)
        return constant + jnp.einsum("...i,ijk->...jk", x, slopes)

    def eigenvectors(self, x: Array) -> Array:
        """The selected eigenvectors of ``M(x)`` as columns, shape ``(..., n, r)``."""
        values, vectors = jnp.linalg.eigh(self.matrix(x))
        index = selected_indices(values, self.num_eig, self.which)
        return jnp.take_along_axis(vectors, index[..., None, :], axis=-1)

    def __call__(self, x: Array) -> Array:
        """Outputs ``z`` of shape ``(..., q)``, real."""
        v = self.eigenvectors(x)
        ds = hermitian_part(self.ds)
        if self.use_expectation_values:
            out = jnp.einsum("...ai,klab,...bi->...k", jnp.conj(v), ds, v).real
        else:
            amplitudes = jnp.einsum("...ai,klab,...bj->...klij", jnp.conj(v), ds, v)
            out = jnp.sum(jnp.abs(amplitudes) ** 2, axis=(-3, -2, -1))
        if self.centered:
            out = out - 0.5 * jnp.sum(jnp.linalg.norm(ds, ord=2, axis=(-2, -1)) ** 2, axis=-1)
        return out if self.bias is None else out + self.bias


def complex_adam(learning_rate: optax.ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999,
                 eps: float = 1e-8) -> optax.GradientTransformation:
    """Adam on complex parameters as pyPMM trains them: JAX's gradient conjugated, then Adam.

    For a real loss JAX's gradient with respect to ``z = a + ib`` is
    ``dL/da - i dL/db``; its conjugate is the ascent direction, so plain Adam
    would climb in the imaginary parts. Real leaves pass through unchanged.
    """
    def conjugate(updates, state, params=None):
        del params
        return jax.tree.map(jnp.conj, updates), state

    return optax.chain(optax.GradientTransformation(lambda params: optax.EmptyState(), conjugate),
                       optax.adam(learning_rate, b1=b1, b2=b2, eps=eps))


SEED_CONFIG = {"matrix_size": 12, "num_eig": 6, "num_secondaries": 1, "smoothing": 1.0}
"""pyPMM's 16-module benchmark chain (its ``tests/test_compile_time.py``): 5 features in
and out; 1,589 complex entries per module, 25,424 for 16."""


def pmm_chain(depth: int, width: int = 5, *, key: Array, remat: RematOption = None,
              scan: bool = True, **options) -> Graph:
    """A :class:`~jaxlean.nn.graph.Graph` of ``depth`` PMMs in a chain, ``R^width -> R^width``.

    Nodes are named ``pmm0 ... pmm{depth-1}``. Without ``options`` every module
    is pyPMM's benchmark module (:data:`SEED_CONFIG`): ``n = 12``, 6 eigenvectors
    (smallest algebraic), smoothing 1, one observable per output.

    Args:
        depth: number of modules.
        width: input and output size of every module.
        key: PRNG key (split once per module).
        remat, scan: passed to :class:`~jaxlean.nn.graph.Graph`; ``scan=False`` runs the
            modules one by one.
        **options: keyword arguments of :class:`AffineObservablePMM`, replacing
            :data:`SEED_CONFIG`'s.

    Returns:
        The graph; call it on ``x`` of shape ``(..., width)``.
    """
    config = {**SEED_CONFIG, **options}
    keys = jax.random.split(key, depth)
    nodes = {f"pmm{i}": AffineObservablePMM(width, width, key=keys[i], **config)
             for i in range(depth)}
    return Graph(nodes, chain_edges(nodes), remat=remat, scan=scan)
