"""Optax state packed per (group, dtype, sharding): a few buffers instead of one array per leaf.

An optimizer over N parameter leaves keeps ~2N state arrays and emits N small
updates; inside a training loop that is a carry of ~4N arrays, and trace and
compile time grow with N. :func:`packed` concatenates the trainable leaves
into one buffer per (group, dtype, sharding), so each wrapped transformation
sees a handful of buffers whatever the model size. Unlike ``optax.flatten`` it
never promotes dtypes (bf16 stays bf16), and leaves sharded over a mesh are
packed shard by shard (``shard_map``), so packing moves no data between devices.

Groups (``param_labels=``, as in ``optax.multi_transform``) give leaves their own
transformation: a learning rate for embeddings, no weight decay on norms, or a
matrix optimizer (:mod:`jaxlean.train.muon`) whose buffers are ``[B, m, n]``
stacks of every same-shape matrix, batch axis sharded over the mesh.

:class:`PackedLayout` (:mod:`jaxlean.train._layout`) is the packing plan;
training loops that carry packed parameters themselves (``fit``) use it directly.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import optax

from jaxlean._args import reject_renamed
from jaxlean._pytree import is_array
from jaxlean.errors import ConfigError
from jaxlean.train._groups import Labels, Trainable
from jaxlean.train._layout import PackedLayout
from jaxlean.train._packed_decisions import placed, where
from jaxlean.train._packed_probe import name
from jaxlean.train.muon import MatrixTransformation

__all__ = ["Labels", "PackedLayout", "PackedState", "Trainable", "checked_init", "packed",
           "update_buffers"]

PackedLayout.__module__ = __name__  # its public home (defined in _layout to keep files small)


def __getattr__(attribute: str) -> Any:
    """``Layout``: the former name of :class:`PackedLayout`, kept one release with a warning."""
    if attribute == "Layout":
        warnings.warn("jaxlean.train.packed.Layout is now called PackedLayout; Layout will be "
                      "removed in the next release", DeprecationWarning, stacklevel=2)
        return PackedLayout
    raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")


@jax.tree_util.register_pytree_node_class
class PackedState:
    """State of :func:`packed`: one inner state per part, over that part's buffers.

    The layout is static aux data, so the state's array leaves are only the
    inner states', i.e. O(groups x dtypes x shardings).

    Attributes:
        inner: a tuple with, per part of ``layout.parts``, its transformation's state.
        layout: the packing plan.
    """

    def __init__(self, inner: tuple, layout: PackedLayout):
        self.inner = tuple(inner)
        self.layout = layout

    def tree_flatten(self):
        return (self.inner,), self.layout

    @classmethod
    def tree_unflatten(cls, layout, children):
        return cls(children[0], layout)


def checked_init(tx: Any, layout: PackedLayout, buffers: tuple, part: int = 0) -> Any:
    """``tx.init`` on one part's packed ``buffers``, after deciding how packing ``tx`` is exact.

    A :class:`MatrixTransformation` is exact by its declaration; any other
    transformation is probed (:mod:`jaxlean.train._packed_views`): its parts
    that mix elements run on per-leaf views, and it is refused with a
    ConfigError naming it when it computes something per leaf that views cannot.
    """
    part_name = where(layout, part)
    if isinstance(tx, MatrixTransformation) and tx.sees_params:
        raise ConfigError(f"{part_name}: {tx.sees_params} would see the packed buffers, not "
                          "your params; give the leaves that differ their own group with "
                          "param_labels= "
                          "(e.g. {'decay': muon(...), 'no_decay': muon(..., weight_decay=0)})")
    runs = tx if isinstance(tx, MatrixTransformation) else placed(tx, layout, part)
    try:
        return runs.init(buffers)
    except (ValueError, TypeError) as error:
        raise ConfigError(f"{part_name}: initialising {name(tx)} on the packed buffers failed "
                          f"({error})") from error


def _transforms(tx: Any, param_labels: Labels) -> dict[str | None, Any]:
    if param_labels is None:
        if isinstance(tx, Mapping):
            raise ConfigError("packed was given a dict of transformations but no param_labels=; "
                              "give param_labels (a pytree of group names or a function of "
                              "params)")
        return {None: tx}
    if not isinstance(tx, Mapping):
        raise ConfigError("packed(tx, param_labels=...) needs tx to be a dict from group name to "
                          f"transformation, got {type(tx).__name__}")
    return dict(tx)


def packed(
    tx: optax.GradientTransformation | Mapping[str, optax.GradientTransformation],
    trainable: Trainable = None,
    *,
    param_labels: Labels = None,
    **renamed: Any,
) -> optax.GradientTransformationExtraArgs:
    """Run optax transformations on a few packed buffers instead of on every parameter leaf.

    Trainable leaves are grouped by (group, dtype, sharding) and each group is
    concatenated into one buffer; each transformation sees its buffers (and the
    packed params, for weight decay), so the state is a few arrays. ``init``
    decides, by probing each transformation (its state at the real shapes, probe
    steps per leaf vs packed: :mod:`jaxlean.train._packed_views`), how it runs
    exactly: elementwise ones (adam, sgd, lion, schedule-free, ...) on the buffers;
    parts that mix elements and keep no state per leaf (global-norm, block RMS and
    adaptive clipping, lamb's and lars' trust ratios) on per-leaf views of the
    buffers, so their sums are optax's to the last bit (bf16 too, when XLA rounds
    every bf16 operation as written: its default excess precision,
    ``xla_allow_excess_precision``, keeps fused bf16 intermediates in f32 as each
    program's fusion decides, which moves optax's own result between two programs as
    much); one that mixes elements and keeps state per leaf (adafactor's factored
    moments, novograd) is refused with a ConfigError naming it. Gradients must have
    the params' tree, shapes and dtype class. Updates leave the buffers through
    slices at runtime offsets (:mod:`jaxlean.train._split`), so same-shaped leaves
    share one compiled kernel as they do per leaf, so a jitted step compiles no slower
    than per-leaf optax (``jaxlean bench optim``; figures in BENCHMARKS.md).
    A :class:`~jaxlean.train.muon.MatrixTransformation` (``muon``) gets
    ``[B, m, n]`` buffers of all its same-shape matrices, layers and modules
    together, and its fallback the leaves with fewer than two axes. Frozen
    leaves get no state and exactly-zero updates. Extra arguments of ``update``
    (``value=`` for line searches, ...) go to every transformation.

    Args:
        tx: one optax transformation for every leaf, or with ``param_labels`` a dict
            from group name to transformation (like ``optax.multi_transform``).
        trainable: pytree of bools (params or a prefix of it), a predicate
            ``trainable(key_path) -> bool``, or None (every inexact leaf trains).
        param_labels: pytree of group names (params or a prefix of it), or a function
            ``param_labels(params)`` returning one (``optax.multi_transform``'s name;
            ``labels=`` is its former spelling here and raises naming this one).

    Returns:
        An ``optax.GradientTransformationExtraArgs`` over the ordinary params pytree.

    Raises:
        ConfigError: a dict without ``param_labels`` or ``param_labels`` without a
            dict, or ``labels=`` (now ``param_labels=``); (at
            ``init``) a transformation that is not exact on packed buffers (it
            computes per leaf, or masks leaves by the params tree: use groups).
        StructureError: (at ``init``) a label that names no group, a leaf with
            fewer than two axes in a matrix group without fallback, masks that do
            not fit the params, a ``trainable`` that selects no leaf; (at
            ``update``) gradients of another tree, shape or dtype class than the
            params (naming the path and both).
    """
    reject_renamed(renamed, {"labels": "param_labels"}, "packed")
    transforms = _transforms(tx, param_labels)

    def init_fn(params: Any) -> PackedState:
        layout = PackedLayout.plan(params, trainable, param_labels, transforms)
        buffers = layout.pack_params(params)
        inner = tuple(checked_init(_given_tx(transforms, layout, p), layout,
                                   _take(buffers, layout.part_buffers(p)), p)
                      for p in range(len(layout.parts)))
        return PackedState(inner, layout)

    def update_fn(updates: Any, state: PackedState, params: Any = None, **extra_args: Any):
        layout = state.layout
        grads = layout._flatten(updates, "updates")
        layout.check_like(grads, "updates")
        packed_params = None if params is None else layout.pack(params)
        new, state = _update_buffers(transforms, state, layout.pack(updates), packed_params,
                                     extra_args)
        out = layout.treedef.flatten_up_to(layout.unpack(tuple(new)))
        for index, leaf in enumerate(layout.leaves):
            if leaf is None:
                out[index] = grads[index]
            elif leaf.buffer < 0:
                g = grads[index]
                same = is_array(g) and g.dtype == leaf.dtype
                out[index] = jnp.zeros_like(g) if same else jnp.zeros(leaf.shape, leaf.dtype)
        return jax.tree_util.tree_unflatten(layout.treedef, out), state

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


def update_buffers(tx: optax.GradientTransformation, state: PackedState, grads: tuple,
                   params: tuple | None = None) -> tuple[tuple, PackedState]:
    """One update of ``packed(tx)`` on gradients and params already packed by ``state.layout``.

    For training loops that carry the trainable params as buffers (``fit``): the
    updates come back as buffers, so nothing is unpacked but what the loss reads.
    """
    return _update_buffers(_transforms(tx, None), state, grads, params, {})


def _update_buffers(transforms: dict, state: PackedState, buffers: tuple,
                    packed_params: tuple | None, extra_args: dict) -> tuple[tuple, PackedState]:
    """Each part's transformation on its buffers: the update buffers and the new state."""
    layout = state.layout
    new = list(buffers)
    inner = []
    for p, part_state in enumerate(state.inner):
        ids = layout.part_buffers(p)
        part_tx = _part_tx(transforms, layout, p)
        part_params = None if packed_params is None else _take(packed_params, ids)
        out, part_state = optax.with_extra_args_support(part_tx).update(
            _take(buffers, ids), part_state, part_params, **extra_args)
        for b, value in zip(ids, out, strict=True):
            new[b] = value
        inner.append(part_state)
    return tuple(new), PackedState(tuple(inner), layout)


def _given_tx(transforms: dict, layout: PackedLayout, part: int) -> Any:
    """The transformation the user gave for one part (a group's, or its fallback)."""
    label, fallback = layout.parts[part]
    return transforms[label].fallback if fallback else transforms[label]


def _part_tx(transforms: dict, layout: PackedLayout, part: int) -> Any:
    """What runs on one part's buffers: :func:`_given_tx`, placed as decided at ``init``."""
    tx = _given_tx(transforms, layout, part)
    return tx if isinstance(tx, MatrixTransformation) else placed(tx, layout, part)


def _take(buffers: tuple, ids: list[int]) -> tuple:
    return tuple(buffers[b] for b in ids)
