"""Matrix optimizers: transformations that see whole weight matrices, batched over stacks.

Muon orthogonalises each weight matrix's momentum by a Newton-Schulz iteration.
Written per leaf, a model of 32 layers x 7 matrices runs 224 small iterations;
on a stacked ``[L, m, n]`` weight every matrix goes through one batched
iteration instead. A :class:`MatrixTransformation` treats the last two axes of
every leaf with two or more axes as a matrix and the leading axes as a batch,
and hands leaves with fewer axes to its fallback; so :func:`jaxlean.packed` may
give it ``[B, m, n]`` buffers that gather every same-shape matrix of the model
(its layers and different modules alike), with the batch axis sharded.

:func:`muon` is ``optax.contrib.muon``: same options, defaults and fallback
(AdamW without weight decay, Nesterov like the matrices), and the same values
on a tree of matrices, vectors and scalars. One difference by design: a leaf of
three or more axes is a stack of matrices (optax gives it to Adam unless
``muon_weight_dimension_numbers`` names its last two axes).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxlean.errors import ConfigError, StructureError
from jaxlean.train._muon_batched import (
    PRECONDITIONINGS,
    scale_by_batched_muon,
    scale_by_matrix_shape,
)

__all__ = ["MatrixState", "MatrixTransformation", "matrix_transform", "muon"]

_NS_PRESETS = {
    "standard": (3.4445, -4.7750, 2.0315),
    "dion": ((4.0848, -6.8946, 2.9270), (3.9505, -6.3029, 2.6377), (3.7418, -5.5913, 2.3037),
             (2.8769, -3.1427, 1.2046), (2.8366, -3.0525, 1.2012)),
}
"""Newton-Schulz coefficient presets, as named by ``optax.contrib.muon`` (Jordan; Ahn et al.)."""


class MatrixTransformation(NamedTuple):
    """An optax transformation for matrices (last two axes) with a fallback for other leaves.

    ``init``/``update`` work on any pytree: leaves of two or more axes go to the
    matrix transformation, as batches of matrices, the others to ``fallback``.
    The matrix result for a leaf must not depend on how the leading axes group
    the matrices, which lets :func:`jaxlean.packed` concatenate matrices of the
    same shape from different leaves into one ``[B, m, n]`` buffer.

    Attributes:
        init, update: as in ``optax.GradientTransformationExtraArgs``.
        fallback: the transformation for leaves with fewer than two axes
            (biases, norms, scalars), or None to reject them.
        sees_params: what in the matrix part reads the params tree itself (a
            weight-decay mask), or None; :func:`jaxlean.packed` refuses it by this
            name, since inside packed it would see buffers, not the params.
    """

    init: Any
    update: Any
    fallback: optax.GradientTransformation | None = None
    sees_params: str | None = None


class MatrixState(NamedTuple):
    """State of a :class:`MatrixTransformation`: the matrix part's and the fallback's.

    A part with no leaves has ``optax.EmptyState()``.
    """

    matrix: Any
    fallback: Any


def _is_masked(leaf: Any) -> bool:
    return isinstance(leaf, optax.MaskedNode)


def _kinds(tree: Any) -> list[bool | None]:
    """Per leaf (``MaskedNode`` counted as one): a matrix, another leaf, or None (masked out)."""
    return [None if _is_masked(x) else jnp.ndim(x) >= 2
            for x in jax.tree.leaves(tree, is_leaf=_is_masked)]


def _split(tree: Any) -> tuple[Any, Any, list[bool | None]]:
    """(matrix leaves, other leaves, kinds): each tree masks the other's leaves."""
    leaves, treedef = jax.tree.flatten(tree, is_leaf=_is_masked)
    kinds = _kinds(tree)
    pick = lambda want: jax.tree.unflatten(treedef, [
        x if kind is want else optax.MaskedNode() for x, kind in zip(leaves, kinds, strict=True)])
    return pick(True), pick(False), kinds


def _merge(like: Any, matrices: Any, others: Any, kinds: list[bool | None]) -> Any:
    leaves, treedef = jax.tree.flatten(like, is_leaf=_is_masked)
    mats = jax.tree.leaves(matrices, is_leaf=_is_masked)
    rest = jax.tree.leaves(others, is_leaf=_is_masked)
    merged = [x if kind is None else m if kind else o
              for x, m, o, kind in zip(leaves, mats, rest, kinds, strict=True)]
    return jax.tree.unflatten(treedef, merged)


def matrix_transform(tx: optax.GradientTransformation,
                     fallback: optax.GradientTransformation | None = None) -> MatrixTransformation:
    """Run ``tx`` on leaves of two or more axes (matrices, batched), ``fallback`` on the rest.

    ``tx`` must treat each leaf's last two axes as a matrix and the leading
    axes as a batch. Each part sees the whole tree with the other part's leaves
    replaced by ``optax.MaskedNode()``, as inside ``optax.partition``.

    Raises:
        StructureError: (at ``init``) a leaf with fewer than two axes and no fallback.
    """
    tx = optax.with_extra_args_support(tx)
    rest = None if fallback is None else optax.with_extra_args_support(fallback)

    def init_fn(params: Any) -> MatrixState:
        matrices, others, kinds = _split(params)
        if rest is None and False in kinds:
            path, leaf = next((p, x) for (p, x), kind in zip(jax.tree_util.tree_leaves_with_path(
                params, is_leaf=_is_masked), kinds, strict=True) if kind is False)
            raise StructureError(
                f"params{jax.tree_util.keystr(path)} has shape {jnp.shape(leaf)}, but this matrix "
                "transformation needs at least two axes and has no fallback; give it one "
                "(matrix_transform(tx, fallback=...)) or send this leaf to another group")
        return MatrixState(tx.init(matrices) if True in kinds else optax.EmptyState(),
                           rest.init(others) if False in kinds else optax.EmptyState())

    def update_fn(updates: Any, state: MatrixState, params: Any = None,
                  **extra_args: Any) -> tuple[Any, MatrixState]:
        matrices, others, kinds = _split(updates)
        params_m, params_o = (None, None) if params is None else _split(params)[:2]
        matrix_state, rest_state = state
        if True in kinds:
            matrices, matrix_state = tx.update(matrices, matrix_state, params_m, **extra_args)
        if False in kinds:
            others, rest_state = rest.update(others, rest_state, params_o, **extra_args)
        return _merge(updates, matrices, others, kinds), MatrixState(matrix_state, rest_state)

    return MatrixTransformation(init_fn, update_fn, fallback)


def _checked_coeffs(ns_coeffs: Any, ns_steps: int) -> Any:
    if isinstance(ns_coeffs, str):
        if ns_coeffs not in _NS_PRESETS:
            raise ConfigError(f"muon: ns_coeffs={ns_coeffs!r} is not a preset; the presets are "
                              f"{sorted(_NS_PRESETS)}, or give the coefficients")
        ns_coeffs = _NS_PRESETS[ns_coeffs]
    shape = np.shape(np.asarray(ns_coeffs, dtype=float))
    if len(shape) not in (1, 2) or shape[-1] != 3:
        raise ConfigError(f"muon: ns_coeffs must have shape (3,) or (n, 3), got {shape}")
    if isinstance(ns_steps, bool) or not isinstance(ns_steps, int | np.integer) or ns_steps < 1:
        raise ConfigError(f"muon: ns_steps must be a positive int, got {ns_steps!r}")
    if len(shape) == 2 and shape[0] > ns_steps:
        raise ConfigError(f"muon: {shape[0]} rows of ns_coeffs but ns_steps={ns_steps}; "
                          "ns_steps must be at least the number of rows")
    return ns_coeffs


_ADAM_DEFAULTS = {"adam_b1": 0.9, "adam_b2": 0.999, "adam_eps_root": 0.0,
                  "adam_weight_decay": 0.0, "adam_learning_rate": None}


def muon(
    learning_rate: optax.ScalarOrSchedule,
    *,
    ns_coeffs: Any = "standard",
    ns_steps: int = 5,
    beta: float = 0.95,
    eps: float = 1e-8,
    weight_decay: float = 0.0,
    weight_decay_mask: Any = None,
    mu_dtype: Any = None,
    nesterov: bool = True,
    adaptive: bool = False,
    preconditioning: str = "frobenius",
    adam_b1: float = 0.9,
    adam_b2: float = 0.999,
    adam_eps_root: float = 0.0,
    adam_weight_decay: float = 0.0,
    adam_learning_rate: optax.ScalarOrSchedule | None = None,
    consistent_rms: float | None = None,
    muon_weight_dimension_numbers: None = None,
    fallback: optax.GradientTransformation | None = None,
) -> MatrixTransformation:
    """``optax.contrib.muon`` with stacks of matrices orthogonalised in one batched iteration.

    A matrix ``[m, n]`` (or each matrix of a ``[..., m, n]`` stack) gets
    ``-lr * (O * s + wd * w)``, ``O`` the Newton-Schulz orthogonalisation of its
    (Nesterov) momentum, ``s = sqrt(max(1, n / m))`` or, with ``consistent_rms``,
    ``sqrt(max(m, n)) * consistent_rms``. Leaves with fewer than two axes get
    ``optax.adamw(adam_learning_rate or learning_rate, adam_b1, adam_b2, eps,
    adam_eps_root, adam_weight_decay, mu_dtype=mu_dtype, nesterov=nesterov)``, as
    in optax, unless ``fallback`` replaces it. Every argument means what it means
    in ``optax.contrib.muon``.

    Args:
        learning_rate: a float or an optax schedule.
        ns_coeffs: Newton-Schulz coefficients ``(3,)`` or one row per step
            ``(n, 3)``, or a preset name ("standard", "dion").
        ns_steps: Newton-Schulz iterations (at least the rows of ``ns_coeffs``).
        beta: momentum decay.
        eps: added to denominators (Newton-Schulz scaling and Adam).
        weight_decay: decoupled weight decay of the matrices, times the learning rate.
        weight_decay_mask: bools (a prefix of the params) or a function of the
            params giving them: which matrices decay. Inside :func:`jaxlean.packed`
            the transformation sees buffers, so use groups (``param_labels=``) there.
        mu_dtype: dtype of the momenta (Muon's and Adam's).
        nesterov: Nesterov momentum (Muon's and Adam's).
        adaptive: scale each orthogonalised matrix by ``<momentum, O>``.
        preconditioning: scaling before the iteration: "frobenius", "spectral",
            "aol" or "schatten".
        adam_b1, adam_b2, adam_eps_root, adam_weight_decay, adam_learning_rate:
            the fallback AdamW's (learning rate: ``learning_rate`` when None).
        consistent_rms: see above; None for width scaling.
        muon_weight_dimension_numbers: must be None: here the matrix of a leaf
            is always its last two axes; route leaves with ``packed``'s ``param_labels=``.
        fallback: a transformation for the leaves with fewer than two axes,
            instead of the AdamW above (then the ``adam_*`` arguments must stay unset).

    Raises:
        ConfigError: an unknown preset or preconditioning, coefficients of the
            wrong shape, ``muon_weight_dimension_numbers``, or ``fallback``
            together with ``adam_*`` arguments.
    """
    if muon_weight_dimension_numbers is not None:
        raise ConfigError(
            "muon: muon_weight_dimension_numbers is not supported; jaxlean's muon treats the "
            "last two axes of every leaf with two or more axes as the matrix (leading axes: a "
            "batch of matrices). Reshape such leaves, or give them another group with "
            "packed(..., param_labels=...)")
    if preconditioning not in PRECONDITIONINGS:
        raise ConfigError(f"muon: preconditioning={preconditioning!r} is not one of "
                          f"{list(PRECONDITIONINGS)}")
    ns_coeffs = _checked_coeffs(ns_coeffs, ns_steps)
    adam = {"adam_b1": adam_b1, "adam_b2": adam_b2, "adam_eps_root": adam_eps_root,
            "adam_weight_decay": adam_weight_decay, "adam_learning_rate": adam_learning_rate}
    if fallback is not None:
        given = [name for name, value in adam.items() if (
            value is not None if _ADAM_DEFAULTS[name] is None else value != _ADAM_DEFAULTS[name])]
        if given:
            raise ConfigError(f"muon: {given} configure the built-in AdamW fallback, which "
                              "fallback= replaces; set them on your fallback instead")
    else:
        fallback = optax.adamw(
            learning_rate=learning_rate if adam_learning_rate is None else adam_learning_rate,
            b1=adam_b1, b2=adam_b2, eps=eps, eps_root=adam_eps_root,
            weight_decay=adam_weight_decay, mu_dtype=mu_dtype, nesterov=nesterov)
    tx = optax.chain(
        scale_by_batched_muon(ns_coeffs, ns_steps, beta, eps, mu_dtype, nesterov=nesterov,
                              adaptive=adaptive, preconditioning=preconditioning),
        scale_by_matrix_shape(consistent_rms),
        optax.add_decayed_weights(weight_decay, weight_decay_mask),
        optax.scale_by_learning_rate(learning_rate),
    )
    matrices = matrix_transform(tx, fallback)
    if weight_decay_mask is None:
        return matrices
    return matrices._replace(sees_params="muon's weight_decay_mask")
