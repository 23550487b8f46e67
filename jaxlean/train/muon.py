"""Matrix optimizers: transformations that see whole weight matrices, batched over stacks.

Muon orthogonalises each weight matrix's momentum by a Newton-Schulz iteration.
Written per leaf, a model of 32 layers x 7 matrices runs 224 small iterations;
on a stacked ``[L, m, n]`` weight every matrix can go through one batched
iteration instead. A :class:`MatrixTransformation` marks a transformation that
treats the last two axes of every leaf as a matrix and all leading axes as a
batch, so :func:`jaxlean.packed` may hand it ``[B, m, n]`` buffers that gather
every same-shape matrix of the model (its layers and different modules alike),
with the batch axis sharded over the mesh.

The Newton-Schulz step and the momentum are ``optax.contrib.scale_by_muon``
(Jordan's public formulation, coefficients (3.4445, -4.7750, 2.0315), 5 steps);
this module only says which axes are the matrix and adds the batching contract.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from optax.contrib import MuonDimensionNumbers, scale_by_muon

__all__ = ["MatrixTransformation", "matrix_transform", "muon"]


class MatrixTransformation(NamedTuple):
    """An optax transformation whose leaves are batches of matrices (last two axes).

    It works on any pytree whose leaves have at least two axes; its result for a
    leaf must not depend on how the leading axes group the matrices, which lets
    :func:`jaxlean.packed` concatenate matrices of the same shape from different
    leaves into one ``[B, m, n]`` buffer.

    Attributes:
        init, update: as in ``optax.GradientTransformationExtraArgs``.
        fallback: the transformation :func:`jaxlean.packed` uses for leaves with
            fewer than two axes (biases, norms, scalars), or None to reject them.
    """

    init: Any
    update: Any
    fallback: optax.GradientTransformation | None = None


def matrix_transform(tx: optax.GradientTransformation,
                     fallback: optax.GradientTransformation | None = None) -> MatrixTransformation:
    """Declare that ``tx`` treats each leaf's last two axes as a matrix and the rest as batch."""
    tx = optax.with_extra_args_support(tx)
    return MatrixTransformation(tx.init, tx.update, fallback)


def _last_two_axes(tree: Any) -> Any:
    """Muon dimension numbers for every leaf: reduce over axis -2, output axis -1."""
    return jax.tree.map(lambda x: MuonDimensionNumbers(x.ndim - 2, x.ndim - 1), tree)


def _scale_by_width() -> optax.GradientTransformation:
    """Scale a ``[..., m, n]`` update by ``sqrt(max(1, n / m))`` (Muon's width transfer)."""

    def update(updates, state, params=None):
        del params
        scale = lambda u: u * jnp.sqrt(max(1.0, u.shape[-1] / u.shape[-2])).astype(u.dtype)
        return jax.tree.map(scale, updates), state

    return optax.GradientTransformation(optax.init_empty_state, update)


def muon(
    learning_rate: optax.ScalarOrSchedule,
    *,
    beta: float = 0.95,
    ns_steps: int = 5,
    nesterov: bool = True,
    weight_decay: float = 0.0,
    fallback: optax.GradientTransformation | None = None,
) -> MatrixTransformation:
    """Muon on every matrix: momentum, Newton-Schulz orthogonalisation, width scaling.

    The update of a matrix ``[m, n]`` is ``-lr * (O * sqrt(max(1, n / m)) + wd * w)``
    where ``O`` is the Newton-Schulz orthogonalisation of the (Nesterov) momentum,
    exactly ``optax.contrib.muon`` on that matrix. Leaves ``[..., m, n]`` are
    batches of matrices.

    Args:
        learning_rate: a float or an optax schedule.
        beta: momentum decay.
        ns_steps: Newton-Schulz iterations.
        nesterov: Nesterov momentum.
        weight_decay: decoupled weight decay, multiplied by the learning rate.
        fallback: transformation for leaves with fewer than two axes when used in
            :func:`jaxlean.packed` (e.g. ``optax.adamw(3e-4)``); without one, such a
            leaf is an error naming its path.
    """
    tx = optax.chain(
        scale_by_muon(ns_steps=ns_steps, beta=beta, nesterov=nesterov,
                      weight_dimension_numbers=_last_two_axes),
        _scale_by_width(),
        optax.add_decayed_weights(weight_decay),
        optax.scale_by_learning_rate(learning_rate),
    )
    return matrix_transform(tx, fallback)
