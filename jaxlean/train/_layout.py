"""The packing plan of a params pytree: which leaves train, in which buffer, at which offset.

:class:`PackedLayout` is static and hashable (it travels as pytree aux data of
:class:`~jaxlean.train.packed.PackedState`). It groups the trainable leaves by
(group, dtype, sharding), concatenates each group into one buffer (flat, or
``[B, m, n]`` for a matrix optimizer) and inverts that; leaves sharded over a
mesh are packed shard by shard (``shard_map``), so packing moves no data
between devices. :func:`jaxlean.train.packed.packed` runs optax on these
buffers; training loops that carry packed parameters themselves (``fit``) use
the plan directly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxlean._pytree import is_array
from jaxlean.errors import StructureError
from jaxlean.parallel.mesh import axis_names, constrain
from jaxlean.train._groups import (
    Labels,
    Trainable,
    describe_trainable,
    leaf_labels,
    trainable_flags,
)
from jaxlean.train._split import split as split_buffer
from jaxlean.train.muon import MatrixTransformation

__all__ = ["PackedLayout"]

_REPLICATED = ("replicated",)


@dataclasses.dataclass(frozen=True)
class _Leaf:
    """Where one parameter leaf lives: frozen (``buffer == -1``) or a slice of a buffer.

    ``start`` counts elements in a flat buffer and matrices in a matrix buffer;
    ``local_shape`` is the leaf's block on one device as packed; ``spec`` the
    leaf's own ``PartitionSpec`` when its buffer is sharded; ``explicit`` the
    leaf's sharding when it is split over Explicit mesh axes but packed into a
    replicated buffer (its type carries the sharding: resharded on the way in and out).
    """

    path: str
    shape: tuple[int, ...]
    dtype: np.dtype
    buffer: int
    start: int = 0
    local_shape: tuple[int, ...] = ()
    spec: P | None = None
    explicit: NamedSharding | None = None

    @property
    def local_size(self) -> int:
        return int(np.prod(self.local_shape, dtype=np.int64))


@dataclasses.dataclass(frozen=True)
class _Buffer:
    """One buffer: the leaves of one part, dtype and placement, concatenated.

    Flat buffers are 1-D; matrix buffers are ``[count, m, n]`` (``matrix`` is
    ``(m, n)``). ``size`` counts elements (flat) or matrices (matrix) on one
    device. With ``mesh`` set, the buffer is split over ``axes`` along its first
    axis and holds on every device that device's blocks.
    """

    part: int
    dtype: np.dtype
    size: int
    matrix: tuple[int, int] | None = None
    mesh: Any = None
    axes: tuple[str, ...] = ()

    def spec(self) -> P:
        return P(self.axes) if self.matrix is None else P(self.axes, None, None)


@dataclasses.dataclass(frozen=True)
class PackedLayout:
    """The static packing plan of a params pytree (hashable: it travels as pytree aux data).

    Build it with :meth:`plan` from concrete arrays (so shardings are seen).
    ``pack`` turns a tree shaped like the params (params, gradients) into the
    buffers; ``unpack`` inverts it; ``merge`` adds frozen and static leaves back.

    Attributes:
        treedef: structure of the params pytree.
        leaves: one entry per leaf, in ``jax.tree.leaves`` order; ``None`` for
            non-array leaves, which are kept as static values in ``static``.
        buffers: one entry per buffer, ordered by part.
        parts: ``(group name, uses the group's fallback)`` per part; a part is
            one transformation's share of the buffers.
        static: the non-array leaves, by leaf index.
    """

    treedef: Any
    leaves: tuple[_Leaf | None, ...]
    buffers: tuple[_Buffer, ...]
    parts: tuple[tuple[str | None, bool], ...]
    static: tuple[tuple[int, Any], ...]

    @classmethod
    def plan(cls, params: Any, trainable: Trainable = None, param_labels: Labels = None,
             transforms: Mapping[str | None, Any] | None = None) -> PackedLayout:
        """Plan how ``params`` is packed: which leaves train, their buffer, offset and shape.

        Array leaves of inexact dtype for which ``trainable`` holds are packed;
        other array leaves are frozen; non-array leaves (functions, Python
        scalars) are kept as static values. With ``param_labels``, each trainable
        leaf goes to the group its label names in ``transforms``; a group whose
        transformation is a :class:`MatrixTransformation` packs its leaves of
        two or more axes into ``[B, m, n]`` buffers by matrix shape.

        Args:
            params: the params pytree, concrete arrays (their shardings are read).
            trainable: see :func:`~jaxlean.train.packed.packed`.
            param_labels: see :func:`~jaxlean.train.packed.packed`.
            transforms: group name -> transformation; ``None`` (one group) when
                ``param_labels`` is None.

        Raises:
            StructureError: ``trainable``/``param_labels`` do not match ``params``, a
                label names no group, or a matrix group without fallback gets a
                leaf with fewer than two axes.
        """
        with_paths, treedef = jax.tree_util.tree_flatten_with_path(params)
        paths = [path for path, _ in with_paths]
        flags = trainable_flags(paths, trainable)
        names = leaf_labels(paths, params, param_labels)
        transforms = {None: None} if transforms is None else transforms
        part_index: dict[tuple, int] = {}
        buffer_index: dict[tuple, int] = {}
        buffers: list[_Buffer] = []
        leaves: list[_Leaf | None] = []
        static = []
        for index, ((path, value), flag, label) in enumerate(
                zip(with_paths, flags, names, strict=True)):
            if not is_array(value):
                leaves.append(None)
                static.append((index, value))
                continue
            dtype, shape = np.dtype(value.dtype), tuple(value.shape)
            name = jax.tree_util.keystr(path)
            if not (flag and jnp.issubdtype(dtype, jnp.inexact)):
                leaves.append(_Leaf(name, shape, dtype, -1))
                continue
            if label not in transforms:
                raise StructureError(
                    f"param_labels{name} is {label!r}, which names no group; the groups are "
                    f"{sorted(map(str, transforms))}")
            tx = transforms[label]
            fallback = isinstance(tx, MatrixTransformation) and len(shape) < 2
            if fallback and tx.fallback is None:
                raise StructureError(
                    f"params{name} has shape {shape}, but group {label!r} is a matrix "
                    "optimizer and needs at least two axes; give it a fallback (e.g. "
                    "matrix_transform(tx, fallback=optax.adamw(...))) or label this leaf "
                    "with another group")
            matrix = shape[-2:] if isinstance(tx, MatrixTransformation) and not fallback else None
            part = part_index.setdefault((label, fallback), len(part_index))
            place = _placement(value, matrix is not None)
            key = (part, dtype, matrix, place.key)
            if key not in buffer_index:
                buffer_index[key] = len(buffers)
                buffers.append(_Buffer(part, dtype, 0, matrix, place.mesh, place.axes))
            b = buffer_index[key]
            local_shape = shape if place.local_shape is None else place.local_shape
            explicit = _explicit_sharding(value) if place.mesh is None else None
            leaf = _Leaf(name, shape, dtype, b, buffers[b].size, local_shape, place.spec,
                         explicit)
            grow = leaf.local_size if matrix is None else leaf.local_size // int(np.prod(matrix))
            buffers[b] = dataclasses.replace(buffers[b], size=buffers[b].size + grow)
            leaves.append(leaf)
        if not buffers:
            arrays = [leaf.path for leaf in leaves if leaf is not None]
            raise StructureError(
                f"no parameter trains: {describe_trainable(trainable)} selected none of the "
                f"{len(arrays)} array leaves of params"
                + (f" (e.g. params{arrays[0]})" if arrays else "")
                + "; only array leaves of floating dtype for which trainable holds are trained")
        order = sorted(range(len(buffers)), key=lambda b: buffers[b].part)
        renumber = {old: new for new, old in enumerate(order)}
        leaves = [leaf if leaf is None or leaf.buffer < 0
                  else dataclasses.replace(leaf, buffer=renumber[leaf.buffer]) for leaf in leaves]
        parts = tuple(sorted(part_index, key=part_index.get))
        return cls(treedef, tuple(leaves), tuple(buffers[b] for b in order), parts, tuple(static))

    def part_buffers(self, part: int) -> list[int]:
        """Indices of the buffers of one part."""
        return [b for b, buffer in enumerate(self.buffers) if buffer.part == part]

    def pack(self, tree: Any) -> tuple[jax.Array, ...]:
        """The buffers of the trainable leaves of ``tree`` (params, gradients: same structure).

        Other positions of ``tree`` are ignored (they may be None).
        """
        leaves = self._flatten(tree, "the tree to pack")
        return tuple(self._pack_buffer(b, [leaves[i] for i in self._members(b)])
                     for b in range(len(self.buffers)))

    def pack_part(self, ids: list[int], tree: Any) -> tuple[jax.Array, ...]:
        """The buffers ``ids`` (one part's) of the trainable leaves of ``tree``."""
        leaves = self._flatten(tree, "the tree to pack")
        return tuple(self._pack_buffer(b, [leaves[i] for i in self._members(b)]) for b in ids)

    def unpack_part(self, ids: list[int], buffers: tuple[jax.Array, ...]) -> Any:
        """The params tree with the leaves of buffers ``ids`` read from ``buffers``, None
        elsewhere: per-leaf views of one part."""
        out: list[Any] = [None] * len(self.leaves)
        for b, buffer in zip(ids, buffers, strict=True):
            members = self._members(b)
            for index, value in zip(members, self._unpack_buffer(b, members, buffer), strict=True):
                out[index] = value
        return jax.tree_util.tree_unflatten(self.treedef, out)

    def pack_params(self, params: Any) -> tuple[jax.Array, ...]:
        """:meth:`pack` of concrete params as one jitted program (eagerly, every leaf shape
        would compile a reshape of its own)."""
        return jax.jit(self.pack)(self.select(params))

    def unpack(self, buffers: tuple[jax.Array, ...]) -> Any:
        """The params tree with trainable leaves read from ``buffers`` and None elsewhere."""
        return self.unpack_part(list(range(len(buffers))), buffers)

    def frozen(self, params: Any) -> tuple[Any, ...]:
        """The frozen array leaves of ``params``, in leaf order."""
        leaves = self._flatten(params, "params")
        return tuple(leaves[i] for i in self._frozen_indices())

    def select(self, params: Any) -> Any:
        """``params`` with every position that is not a trainable leaf set to None."""
        leaves = self._flatten(params, "params")
        return jax.tree_util.tree_unflatten(self.treedef, [
            value if leaf is not None and leaf.buffer >= 0 else None
            for value, leaf in zip(leaves, self.leaves, strict=True)])

    def merge(self, trainable: Any, frozen: tuple[Any, ...]) -> Any:
        """The params tree from a tree of trainable leaves (:meth:`unpack`, :meth:`select`),
        the frozen leaves (:meth:`frozen`) and the static values."""
        leaves = self.treedef.flatten_up_to(trainable)
        for index, value in (*self.static, *zip(self._frozen_indices(), frozen, strict=True)):
            leaves[index] = value
        return jax.tree_util.tree_unflatten(self.treedef, leaves)

    def strip_static(self, tree: Any) -> Any:
        """``tree`` with its non-array leaves set to None, so it can leave a jitted function."""
        leaves = self.treedef.flatten_up_to(tree)
        return jax.tree_util.tree_unflatten(
            self.treedef, [None if leaf is None else value
                           for leaf, value in zip(self.leaves, leaves, strict=True)])

    def restore_static(self, tree: Any) -> Any:
        """Put the non-array leaves back into a tree from :meth:`strip_static`."""
        leaves = self.treedef.flatten_up_to(tree)
        for index, value in self.static:
            leaves[index] = value
        return jax.tree_util.tree_unflatten(self.treedef, leaves)

    def _flatten(self, tree: Any, what: str) -> list[Any]:
        try:
            return self.treedef.flatten_up_to(tree)
        except (ValueError, TypeError):
            raise StructureError(
                f"{what} has structure {jax.tree_util.tree_structure(tree)}, but the params "
                f"were planned with {self.treedef}") from None

    def check_like(self, leaves: list[Any], what: str) -> None:
        """Raise StructureError unless every trainable position of ``leaves`` (flattened up to
        the params structure) is an array of its parameter's shape and dtype kind."""
        for value, leaf in zip(leaves, self.leaves, strict=True):
            if leaf is None or leaf.buffer < 0:
                continue
            if not is_array(value) and not isinstance(value, jax.core.Tracer):
                raise StructureError(f"{what}{leaf.path} is {type(value).__name__}, but "
                                     f"params{leaf.path} is an array of shape {leaf.shape}")
            shape, dtype = tuple(value.shape), np.dtype(value.dtype)
            if shape != leaf.shape:
                raise StructureError(f"{what}{leaf.path} has shape {shape}, but "
                                     f"params{leaf.path} has shape {leaf.shape}")
            if _dtype_class(dtype) != _dtype_class(leaf.dtype):
                raise StructureError(f"{what}{leaf.path} has dtype {dtype}, but "
                                     f"params{leaf.path} has dtype {leaf.dtype}")

    def _members(self, b: int) -> list[int]:
        return [i for i, leaf in enumerate(self.leaves) if leaf is not None and leaf.buffer == b]

    def _member_leaves(self, b: int) -> list[_Leaf]:
        return [self.leaves[i] for i in self._members(b)]

    def _frozen_indices(self) -> list[int]:
        return [i for i, leaf in enumerate(self.leaves) if leaf is not None and leaf.buffer < 0]

    def _pack_buffer(self, b: int, values: list[Any]) -> jax.Array:
        buffer = self.buffers[b]
        if buffer.matrix is None:
            concat = lambda *blocks: jnp.concatenate(
                [jnp.ravel(x).astype(buffer.dtype) for x in blocks])
        else:
            concat = lambda *blocks: jnp.concatenate(
                [x.reshape(-1, *buffer.matrix).astype(buffer.dtype) for x in blocks])
        if buffer.mesh is None:
            return concat(*[v if leaf.explicit is None else
                            constrain(v, NamedSharding(leaf.explicit.mesh, P()))
                            for v, leaf in zip(values, self._member_leaves(b), strict=True)])
        specs = tuple(self._block_spec(i) for i in self._members(b))
        if buffer.matrix is not None:
            values = [constrain(v, NamedSharding(buffer.mesh, s))
                      for v, s in zip(values, specs, strict=True)]
        return jax.shard_map(concat, mesh=buffer.mesh, in_specs=specs,
                             out_specs=buffer.spec())(*values)

    def _unpack_buffer(self, b: int, members: list[int], flat: jax.Array) -> tuple:
        buffer = self.buffers[b]
        leaves = [self.leaves[i] for i in members]

        def split(x: jax.Array) -> tuple:
            return split_buffer(x, [leaf.start for leaf in leaves],
                                [leaf.local_shape for leaf in leaves])

        if buffer.mesh is None:
            return tuple(x if leaf.explicit is None else constrain(x, leaf.explicit)
                         for x, leaf in zip(split(flat), leaves, strict=True))
        specs = tuple(self._block_spec(i) for i in members)
        out = jax.shard_map(split, mesh=buffer.mesh, in_specs=buffer.spec(),
                            out_specs=specs)(flat)
        if buffer.matrix is None:
            return out
        return tuple(constrain(x, NamedSharding(buffer.mesh, leaf.spec))
                     for x, leaf in zip(out, leaves, strict=True))

    def _block_spec(self, index: int) -> P:
        """How a leaf is split when packed: its own spec (flat), its first axis (matrix)."""
        leaf = self.leaves[index]
        buffer = self.buffers[leaf.buffer]
        if buffer.matrix is None:
            return leaf.spec
        return P(buffer.axes, *(None,) * (len(leaf.shape) - 1))


def _explicit_sharding(leaf: Any) -> NamedSharding | None:
    """The sharding of a concrete leaf split over Explicit mesh axes, else None."""
    sharding = getattr(leaf, "sharding", None)
    if isinstance(leaf, jax.core.Tracer) or not isinstance(sharding, NamedSharding):
        return None
    types = dict(zip(sharding.mesh.axis_names, sharding.mesh.axis_types, strict=True))
    used = {name for entry in sharding.spec for name in axis_names(entry)}
    explicit = any(types[name] == jax.sharding.AxisType.Explicit for name in used)
    return sharding if explicit else None


def _dtype_class(dtype: np.dtype) -> str:
    """real floating, complex or other: a gradient's dtype must be of its parameter's class."""
    if jnp.issubdtype(dtype, jnp.complexfloating):
        return "complex"
    return "float" if jnp.issubdtype(dtype, jnp.floating) else str(dtype)


@dataclasses.dataclass(frozen=True)
class _Placement:
    """How a leaf is laid out over devices; ``key`` decides which leaves share a buffer."""

    key: tuple
    mesh: Any = None
    axes: tuple[str, ...] = ()
    spec: P | None = None
    local_shape: tuple[int, ...] | None = None


def _placement(leaf: Any, matrix: bool) -> _Placement:
    """Group key of a leaf's sharding: replicated, or sharded over some mesh axes.

    Tracers (inside ``jit``) have no concrete sharding and count as replicated.
    A flat leaf is packed block by block as it lies; a sharding that cannot be
    (not a ``NamedSharding``, uneven blocks) gets a buffer of its own. A matrix
    leaf ``[L, ..., m, n]`` sharded over some mesh axes is resplit along ``L``
    over those axes (an all-to-all, not a gather), so each device holds whole
    matrices; a 2-D matrix, or ``L`` not divisible, is packed replicated.
    """
    if isinstance(leaf, jax.core.Tracer) or not isinstance(leaf, jax.Array):
        return _Placement(_REPLICATED)
    sharding = leaf.sharding
    if sharding.is_fully_replicated:
        return _Placement(_REPLICATED)
    if not isinstance(sharding, NamedSharding):
        return _Placement(_REPLICATED if matrix else ("alone", id(leaf)))
    mesh, spec = sharding.mesh, tuple(sharding.spec) + (None,) * (leaf.ndim - len(sharding.spec))
    names = [axis_names(entry) for entry in spec]
    used = {name for axes in names for name in axes}
    axes = tuple(name for name in mesh.axis_names if name in used)
    parts = [int(np.prod([mesh.shape[name] for name in dim_axes], dtype=np.int64))
             for dim_axes in names]
    if matrix:
        devices = int(np.prod(parts, dtype=np.int64))
        if leaf.ndim < 3 or leaf.shape[0] % devices:
            return _Placement(_REPLICATED)
        local_shape = (leaf.shape[0] // devices, *leaf.shape[1:])
        return _Placement(("sharded", mesh, axes), mesh, axes, P(*spec), local_shape)
    if any(dim % n for dim, n in zip(leaf.shape, parts, strict=True)):
        return _Placement(("alone", id(leaf)))
    local_shape = tuple(dim // n for dim, n in zip(leaf.shape, parts, strict=True))
    return _Placement(("sharded", mesh, axes), mesh, axes, P(*spec), local_shape)

