"""Optax state packed per (group, dtype, sharding): a few buffers instead of one array per leaf.

An optimizer over N parameter leaves keeps ~2N state arrays and emits N small
updates; inside a training loop that is a carry of ~4N arrays, and trace and
compile time grow with N. :func:`packed` concatenates the trainable leaves
into one buffer per (group, dtype, sharding), so each wrapped transformation
sees a handful of buffers whatever the model size. Unlike ``optax.flatten`` it
never promotes dtypes (bf16 stays bf16), and leaves sharded over a mesh are
packed shard by shard (``shard_map``), so packing moves no data between devices.

Groups (``labels=``, as in ``optax.multi_transform``) give leaves their own
transformation: a learning rate for embeddings, no weight decay on norms, or a
matrix optimizer (:mod:`jaxlean.train.muon`) whose buffers are ``[B, m, n]``
stacks of every same-shape matrix, batch axis sharded over the mesh.

:class:`Layout` is the packing plan; training loops that carry packed
parameters themselves (``fit``) use it directly.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxlean._pytree import is_array
from jaxlean.errors import ConfigError, StructureError
from jaxlean.parallel.mesh import axis_names, constrain
from jaxlean.train._groups import (
    Labels,
    Trainable,
    describe_trainable,
    leaf_labels,
    trainable_flags,
)
from jaxlean.train._packed_probe import name
from jaxlean.train._packed_views import BUFFERS, Decision, build, decide
from jaxlean.train._split import split as split_buffer
from jaxlean.train.muon import MatrixTransformation

__all__ = ["Labels", "Layout", "PackedState", "Trainable", "packed", "update_buffers"]

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
class Layout:
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
    def plan(cls, params: Any, trainable: Trainable = None, labels: Labels = None,
             transforms: Mapping[str | None, Any] | None = None) -> Layout:
        """Plan how ``params`` is packed: which leaves train, their buffer, offset and shape.

        Array leaves of inexact dtype for which ``trainable`` holds are packed;
        other array leaves are frozen; non-array leaves (functions, Python
        scalars) are kept as static values. With ``labels``, each trainable
        leaf goes to the group its label names in ``transforms``; a group whose
        transformation is a :class:`MatrixTransformation` packs its leaves of
        two or more axes into ``[B, m, n]`` buffers by matrix shape.

        Args:
            params: the params pytree, concrete arrays (their shardings are read).
            trainable: see :func:`packed`.
            labels: see :func:`packed`.
            transforms: group name -> transformation; ``None`` (one group) when
                ``labels`` is None.

        Raises:
            StructureError: ``trainable``/``labels`` do not match ``params``, a
                label names no group, or a matrix group without fallback gets a
                leaf with fewer than two axes.
        """
        with_paths, treedef = jax.tree_util.tree_flatten_with_path(params)
        paths = [path for path, _ in with_paths]
        flags = trainable_flags(paths, trainable)
        names = leaf_labels(paths, params, labels)
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
                    f"labels{name} is {label!r}, which names no group; the groups are "
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


@jax.tree_util.register_pytree_node_class
class PackedState:
    """State of :func:`packed`: one inner state per part, over that part's buffers.

    The layout is static aux data, so the state's array leaves are only the
    inner states', i.e. O(groups x dtypes x shardings).

    Attributes:
        inner: a tuple with, per part of ``layout.parts``, its transformation's state.
        layout: the packing plan.
    """

    def __init__(self, inner: tuple, layout: Layout):
        self.inner = tuple(inner)
        self.layout = layout

    def tree_flatten(self):
        return (self.inner,), self.layout

    @classmethod
    def tree_unflatten(cls, layout, children):
        return cls(children[0], layout)


def checked_init(tx: Any, layout: Layout, buffers: tuple, part: int = 0) -> Any:
    """``tx.init`` on one part's packed ``buffers``, after deciding how packing ``tx`` is exact.

    A :class:`MatrixTransformation` is exact by its declaration; any other
    transformation is probed (:mod:`jaxlean.train._packed_views`): its parts
    that mix elements run on per-leaf views, and it is refused with a
    ConfigError naming it when it computes something per leaf that views cannot.
    """
    where = _where(layout, part)
    if isinstance(tx, MatrixTransformation) and tx.sees_params:
        raise ConfigError(f"{where}: {tx.sees_params} would see the packed buffers, not your "
                          "params; give the leaves that differ their own group with labels= "
                          "(e.g. {'decay': muon(...), 'no_decay': muon(..., weight_decay=0)})")
    runs = tx if isinstance(tx, MatrixTransformation) else _placed(tx, layout, part)
    try:
        return runs.init(buffers)
    except (ValueError, TypeError) as error:
        raise ConfigError(f"{where}: initialising {name(tx)} on the packed buffers failed "
                          f"({error})") from error


_DECISIONS: OrderedDict[tuple, tuple[Any, Decision]] = OrderedDict()
_DECISIONS_KEPT = 64


def _placed(tx: Any, layout: Layout, part: int) -> Any:
    """``tx`` with its parts on the buffers or on per-leaf views, as decided for this part
    (probed once per transformation object, layout and part; the last 64 decisions are kept)."""
    key = (id(tx), layout, part)  # the entry holds tx, so no other object takes its id
    if key not in _DECISIONS:
        _DECISIONS[key] = (tx, decide(tx, *_probe_shapes(layout, part), _where(layout, part)))
        if len(_DECISIONS) > _DECISIONS_KEPT:
            _DECISIONS.popitem(last=False)
    _DECISIONS.move_to_end(key)
    decision = _DECISIONS[key][1]
    if decision == BUFFERS:
        return tx
    ids = layout.part_buffers(part)
    return build(tx, decision, lambda tree: layout.pack_part(ids, tree),
                 lambda buffers: layout.unpack_part(ids, buffers))


def _where(layout: Layout, part: int) -> str:
    """How messages name one part: "packed", or "group 'x' of packed"."""
    label = layout.parts[part][0]
    return "packed" if label is None else f"group {label!r} of packed"


def _probe_shapes(layout: Layout, part: int) -> tuple:
    """What :func:`decide` needs of a part: its leaves (shape structs, None off the part), its
    buffers (shape structs) and each buffer's leaf indices among the part's."""
    ids = layout.part_buffers(part)
    members = [layout._members(b) for b in ids]
    on_part = sorted(i for m in members for i in m)
    rank = {i: k for k, i in enumerate(on_part)}
    structs = [None] * len(layout.leaves)
    for i in on_part:
        leaf = layout.leaves[i]
        structs[i] = jax.ShapeDtypeStruct(leaf.shape, leaf.dtype)
    tree = jax.tree_util.tree_unflatten(layout.treedef, structs)
    shells = tuple(jax.ShapeDtypeStruct((layout.buffers[b].size,), layout.buffers[b].dtype)
                   for b in ids)
    return tree, shells, [[rank[i] for i in m] for m in members]


def _transforms(tx: Any, labels: Labels) -> dict[str | None, Any]:
    if labels is None:
        if isinstance(tx, Mapping):
            raise ConfigError("packed was given a dict of transformations but no labels=; "
                              "give labels (a pytree of group names or a function of params)")
        return {None: tx}
    if not isinstance(tx, Mapping):
        raise ConfigError("packed(tx, labels=...) needs tx to be a dict from group name to "
                          f"transformation, got {type(tx).__name__}")
    return dict(tx)


def packed(
    tx: optax.GradientTransformation | Mapping[str, optax.GradientTransformation],
    trainable: Trainable = None,
    *,
    labels: Labels = None,
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
    share one compiled kernel as they do per leaf: a jitted AdamW step over 32 to
    192 unstacked leaves compiles in 0.62-0.92x the per-leaf time on XLA:CPU
    (``jaxlean bench optim``).
    A :class:`~jaxlean.train.muon.MatrixTransformation` (``muon``) gets
    ``[B, m, n]`` buffers of all its same-shape matrices, layers and modules
    together, and its fallback the leaves with fewer than two axes. Frozen
    leaves get no state and exactly-zero updates. Extra arguments of ``update``
    (``value=`` for line searches, ...) go to every transformation.

    Args:
        tx: one optax transformation for every leaf, or with ``labels`` a dict
            from group name to transformation (like ``optax.multi_transform``).
        trainable: pytree of bools (params or a prefix of it), a predicate
            ``trainable(key_path) -> bool``, or None (every inexact leaf trains).
        labels: pytree of group names (params or a prefix of it), or a function
            ``labels(params)`` returning one.

    Returns:
        An ``optax.GradientTransformationExtraArgs`` over the ordinary params pytree.

    Raises:
        ConfigError: a dict without labels or labels without a dict; (at
            ``init``) a transformation that is not exact on packed buffers (it
            computes per leaf, or masks leaves by the params tree: use groups).
        StructureError: (at ``init``) a label that names no group, a leaf with
            fewer than two axes in a matrix group without fallback, masks that do
            not fit the params, a ``trainable`` that selects no leaf; (at
            ``update``) gradients of another tree, shape or dtype class than the
            params (naming the path and both).
    """
    transforms = _transforms(tx, labels)

    def init_fn(params: Any) -> PackedState:
        layout = Layout.plan(params, trainable, labels, transforms)
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


def _given_tx(transforms: dict, layout: Layout, part: int) -> Any:
    """The transformation the user gave for one part (a group's, or its fallback)."""
    label, fallback = layout.parts[part]
    return transforms[label].fallback if fallback else transforms[label]


def _part_tx(transforms: dict, layout: Layout, part: int) -> Any:
    """What runs on one part's buffers: :func:`_given_tx`, placed as decided at ``init``."""
    tx = _given_tx(transforms, layout, part)
    return tx if isinstance(tx, MatrixTransformation) else _placed(tx, layout, part)


def _take(buffers: tuple, ids: list[int]) -> tuple:
    return tuple(buffers[b] for b in ids)
