"""Optax state packed per (dtype, sharding): a few flat buffers instead of one array per leaf.

An optimizer over N parameter leaves keeps ~2N state arrays and emits N small
updates; inside a training loop that is a carry of ~4N arrays, and trace and
compile time grow with N. :func:`packed` concatenates the trainable leaves
into one flat buffer per (dtype, sharding) group, so the wrapped optax
transformation sees a handful of buffers whatever the model size. Unlike
``optax.flatten`` it never promotes dtypes (bf16 stays bf16), and leaves
sharded over a mesh are packed shard by shard (``shard_map``), so packing
moves no data between devices.

:func:`pack_params` / :func:`unpack_params` expose the same packing for
training loops (``fit``) that carry packed parameters themselves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxlean._pytree import is_array
from jaxlean.errors import StructureError
from jaxlean.parallel.mesh import axis_names

Trainable = Any | Callable[[tuple], bool] | None
"""A pytree of bools (a prefix of the params tree), a predicate on a leaf's key path, or None."""

_REPLICATED = ("replicated",)


@dataclasses.dataclass(frozen=True)
class _Leaf:
    """Where one parameter leaf lives: frozen (``group == -1``) or a slice of a buffer."""

    path: str
    shape: tuple[int, ...]
    dtype: np.dtype
    group: int
    start: int = 0
    local_shape: tuple[int, ...] = ()
    spec: P | None = None

    @property
    def local_size(self) -> int:
        return int(np.prod(self.local_shape, dtype=np.int64))


@dataclasses.dataclass(frozen=True)
class _Group:
    """One buffer: the leaves of one dtype and one placement, concatenated.

    ``mesh``/``axes`` are set for leaves sharded over a mesh: the buffer is then
    1-D, split over ``axes`` and holds, on every device, that device's blocks.
    """

    dtype: np.dtype
    size: int
    mesh: Any = None
    axes: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Layout:
    """The static packing plan of a params pytree (hashable: it travels as pytree aux data).

    Attributes:
        treedef: structure of the params pytree.
        leaves: one entry per leaf, in ``jax.tree.leaves`` order; ``None`` for
            non-array leaves, which are kept as static values in ``static``.
        groups: one entry per buffer.
        static: the non-array leaves, by leaf index.
    """

    treedef: Any
    leaves: tuple[_Leaf | None, ...]
    groups: tuple[_Group, ...]
    static: tuple[tuple[int, Any], ...]

    def members(self, group: int) -> list[int]:
        return [i for i, leaf in enumerate(self.leaves) if leaf is not None and leaf.group == group]

    def frozen(self) -> list[int]:
        return [i for i, leaf in enumerate(self.leaves) if leaf is not None and leaf.group < 0]

    def pack(self, leaves: Sequence[Any]) -> tuple[jax.Array, ...]:
        """Concatenate the trainable entries of a flat leaf list into one buffer per group.

        ``leaves`` is indexed by leaf index (a list, or a dict holding at least
        the trainable indices).
        """
        return tuple(self._pack_group(g, [leaves[i] for i in self.members(g)])
                     for g in range(len(self.groups)))

    def unpack(self, buffers: Sequence[jax.Array]) -> dict[int, jax.Array]:
        """Split buffers back into trainable leaves, keyed by leaf index."""
        out: dict[int, jax.Array] = {}
        for g, buffer in enumerate(buffers):
            members = self.members(g)
            out.update(zip(members, self._unpack_group(g, members, buffer), strict=True))
        return out

    def assemble(self, trainable: dict[int, Any], frozen: Sequence[Any]) -> Any:
        """The params pytree from trainable leaves (by leaf index), frozen leaves and statics."""
        leaves: list[Any] = [None] * len(self.leaves)
        for index, value in (*self.static, *zip(self.frozen(), frozen, strict=True),
                             *trainable.items()):
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

    def _pack_group(self, g: int, values: list[Any]) -> jax.Array:
        group = self.groups[g]
        specs = [self.leaves[i].spec for i in self.members(g)]
        concat = lambda *blocks: jnp.concatenate([jnp.ravel(b) for b in blocks])
        if group.mesh is None:
            return concat(*values)
        return jax.shard_map(concat, mesh=group.mesh, in_specs=tuple(specs),
                             out_specs=P(group.axes))(*values)

    def _unpack_group(self, g: int, members: list[int], buffer: jax.Array) -> tuple:
        group = self.groups[g]
        leaves = [self.leaves[i] for i in members]

        def split(flat: jax.Array) -> tuple:
            return tuple(flat[leaf.start:leaf.start + leaf.local_size].reshape(leaf.local_shape)
                         for leaf in leaves)

        if group.mesh is None:
            return split(buffer)
        return jax.shard_map(split, mesh=group.mesh, in_specs=P(group.axes),
                             out_specs=tuple(leaf.spec for leaf in leaves))(buffer)


@dataclasses.dataclass(frozen=True)
class _Placement:
    """How a leaf is laid out over devices; ``key`` decides which leaves share a buffer."""

    key: tuple
    mesh: Any = None
    axes: tuple[str, ...] = ()
    spec: P | None = None
    local_shape: tuple[int, ...] | None = None


def _placement(leaf: Any) -> _Placement:
    """Group key of a leaf's sharding: replicated, or sharded over some mesh axes.

    Tracers (inside ``jit``) have no concrete sharding and count as replicated;
    a sharding that cannot be packed shard by shard (not a ``NamedSharding``,
    or uneven blocks) gets a group of its own, keyed by the leaf's identity.
    """
    if isinstance(leaf, jax.core.Tracer) or not isinstance(leaf, jax.Array):
        return _Placement(_REPLICATED)
    sharding = leaf.sharding
    if sharding.is_fully_replicated:
        return _Placement(_REPLICATED)
    if not isinstance(sharding, NamedSharding):
        return _Placement(("alone", id(leaf)))
    mesh, spec = sharding.mesh, tuple(sharding.spec) + (None,) * (leaf.ndim - len(sharding.spec))
    names = [axis_names(entry) for entry in spec]
    local_shape = []
    for dim, axes in zip(leaf.shape, names, strict=True):
        parts = int(np.prod([mesh.shape[name] for name in axes], dtype=np.int64))
        if dim % parts:
            return _Placement(("alone", id(leaf)))
        local_shape.append(dim // parts)
    used = {name for axes in names for name in axes}
    axes = tuple(name for name in mesh.axis_names if name in used)
    return _Placement(("sharded", mesh, axes), mesh, axes, P(*spec), tuple(local_shape))


def _trainable_flags(paths: list[tuple], params: Any, trainable: Trainable) -> list[bool]:
    """One bool per leaf path from a bool pytree (prefix of params), a predicate, or None."""
    if trainable is None:
        return [True] * len(paths)
    # A mask built from an Equinox model (``eqx.filter``-style) is callable too: it is a pytree.
    if callable(trainable) and not isinstance(trainable, bool | eqx.Module):
        return [bool(trainable(path)) for path in paths]
    flags = dict(jax.tree_util.tree_flatten_with_path(trainable)[0])
    for path, flag in flags.items():
        if not isinstance(flag, (bool, np.bool_)):
            raise StructureError(
                f"trainable{jax.tree_util.keystr(path)} is {flag!r}; expected True or False"
            )
    out, used = [], set()
    for path in paths:
        covering = [path[:k] for k in range(len(path) + 1) if path[:k] in flags]
        if not covering:
            raise StructureError(
                f"params{jax.tree_util.keystr(path)} has no entry in `trainable` "
                "(it must be a pytree of bools with the structure of params, or a prefix of it)"
            )
        used.add(covering[-1])
        out.append(bool(flags[covering[-1]]))
    extra = [p for p in flags if p not in used]
    if extra:
        raise StructureError(
            f"trainable{jax.tree_util.keystr(extra[0])} does not match any leaf of params"
        )
    return out


def make_layout(params: Any, trainable: Trainable = None) -> Layout:
    """Plan how ``params`` is packed: which leaves train, their group, offset and shape.

    Array leaves of inexact dtype for which ``trainable`` holds are packed;
    other array leaves are frozen; non-array leaves (functions, Python scalars)
    are kept as static values.

    Raises:
        StructureError: ``trainable`` does not match the structure of ``params``.
    """
    with_paths, treedef = jax.tree_util.tree_flatten_with_path(params)
    paths = [path for path, _ in with_paths]
    flags = _trainable_flags(paths, params, trainable)
    group_keys: dict[tuple, int] = {}
    sizes: list[int] = []
    groups: list[_Group] = []
    leaves: list[_Leaf | None] = []
    static = []
    for index, ((path, value), flag) in enumerate(zip(with_paths, flags, strict=True)):
        if not is_array(value):
            leaves.append(None)
            static.append((index, value))
            continue
        dtype, shape = np.dtype(value.dtype), tuple(value.shape)
        name = jax.tree_util.keystr(path)
        if not (flag and jnp.issubdtype(dtype, jnp.inexact)):
            leaves.append(_Leaf(name, shape, dtype, -1))
            continue
        place = _placement(value)
        key = (dtype, place.key)
        if key not in group_keys:
            group_keys[key] = len(groups)
            groups.append(_Group(dtype, 0, place.mesh, place.axes))
            sizes.append(0)
        g = group_keys[key]
        local_shape = shape if place.local_shape is None else place.local_shape
        leaf = _Leaf(name, shape, dtype, g, sizes[g], local_shape, place.spec)
        sizes[g] += leaf.local_size
        leaves.append(leaf)
    groups = [dataclasses.replace(g, size=size) for g, size in zip(groups, sizes, strict=True)]
    return Layout(treedef, tuple(leaves), tuple(groups), tuple(static))


def _check_structure(layout: Layout, tree: Any, what: str) -> list[Any]:
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    if treedef != layout.treedef:
        raise StructureError(
            f"{what} has structure {treedef}, but the params the optimizer was initialised "
            f"with have {layout.treedef}"
        )
    return leaves


@jax.tree_util.register_pytree_node_class
class PackedParams:
    """A params pytree as packed buffers, frozen array leaves and the static layout.

    Attributes:
        buffers: one flat array per (dtype, sharding) group of trainable leaves.
        frozen: the frozen array leaves, in leaf order.
        layout: the static packing plan (pytree aux data).
    """

    def __init__(self, buffers: tuple, frozen: tuple, layout: Layout):
        self.buffers = tuple(buffers)
        self.frozen = tuple(frozen)
        self.layout = layout

    def tree_flatten(self):
        return (self.buffers, self.frozen), self.layout

    @classmethod
    def tree_unflatten(cls, layout, children):
        return cls(*children, layout)

    def replace_buffers(self, buffers: Sequence[jax.Array]) -> PackedParams:
        """The same parameters with new trainable buffers (e.g. after an optimizer step)."""
        return PackedParams(tuple(buffers), self.frozen, self.layout)

    def __repr__(self) -> str:
        shapes = ", ".join(f"{b.dtype}[{b.size}]" for b in self.buffers)
        return f"PackedParams(buffers=({shapes}), frozen={len(self.frozen)} leaves)"


def pack_params(params: Any, trainable: Trainable = None) -> PackedParams:
    """Pack the trainable leaves of ``params`` into one flat buffer per (dtype, sharding).

    Call it outside ``jit`` on concrete arrays so shardings are seen; the layout
    is static and travels with the result through ``jit`` and loops.

    Args:
        params: a pytree of arrays (non-array leaves are kept as static values).
        trainable: pytree of bools (params or a prefix of it), a predicate
            ``trainable(key_path) -> bool``, or None (every inexact leaf trains).

    Returns:
        A :class:`PackedParams` pytree; :func:`unpack_params` inverts it.
    """
    layout = make_layout(params, trainable)
    leaves = jax.tree_util.tree_leaves(params)
    return PackedParams(layout.pack(leaves), tuple(leaves[i] for i in layout.frozen()), layout)


def unpack_params(packed_params: PackedParams) -> Any:
    """The ordinary params pytree of a :class:`PackedParams` (works inside ``jit``)."""
    layout = packed_params.layout
    return layout.assemble(layout.unpack(packed_params.buffers), packed_params.frozen)


@jax.tree_util.register_pytree_node_class
class PackedState:
    """State of :func:`packed`: the inner transformation's state over the buffers.

    The layout is static aux data, so the state's array leaves are only the
    inner state's, i.e. O(number of groups).
    """

    def __init__(self, inner: optax.OptState, layout: Layout):
        self.inner = inner
        self.layout = layout

    def tree_flatten(self):
        return (self.inner,), self.layout

    @classmethod
    def tree_unflatten(cls, layout, children):
        return cls(children[0], layout)


def packed(
    tx: optax.GradientTransformation, trainable: Trainable = None
) -> optax.GradientTransformation:
    """Run ``tx`` on a few packed buffers instead of on every parameter leaf.

    Trainable leaves are grouped by (dtype, sharding) and each group is
    concatenated into one flat buffer; ``tx`` sees those buffers (and packed
    params, for weight decay), so its state is a few arrays. Elementwise
    transformations give the same updates as on the pytree; global-norm
    clipping too (the norm of the buffers is the norm of the leaves).
    Frozen leaves get no state and exactly-zero updates. Transformations that
    need per-leaf structure (``optax.masked``/``multi_transform`` masks over
    the params tree) must be applied outside ``packed``.

    Args:
        tx: any optax transformation (adam, adamw, chains with clipping and schedules).
        trainable: pytree of bools (params or a prefix of it), a predicate
            ``trainable(key_path) -> bool``, or None (every inexact leaf trains).

    Returns:
        An ``optax.GradientTransformation`` over the ordinary params pytree.
    """

    def init_fn(params: Any) -> PackedState:
        layout = make_layout(params, trainable)
        return PackedState(tx.init(layout.pack(jax.tree_util.tree_leaves(params))), layout)

    def update_fn(updates: Any, state: PackedState, params: Any = None):
        layout = state.layout
        grads = _check_structure(layout, updates, "updates")
        packed_params = None
        if params is not None:
            packed_params = layout.pack(_check_structure(layout, params, "params"))
        new_buffers, inner = tx.update(layout.pack(grads), state.inner, packed_params)
        out = list(grads)
        for index, value in layout.unpack(new_buffers).items():
            out[index] = value
        for index in layout.frozen():
            leaf = layout.leaves[index]
            same = is_array(grads[index]) and grads[index].dtype == leaf.dtype
            out[index] = jnp.zeros_like(grads[index]) if same else jnp.zeros(leaf.shape, leaf.dtype)
        return jax.tree_util.tree_unflatten(layout.treedef, out), PackedState(inner, layout)

    return optax.GradientTransformation(init_fn, update_fn)
