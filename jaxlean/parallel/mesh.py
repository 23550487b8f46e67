"""Place a model and its batches on a device mesh: data, FSDP and tensor parallelism by rules.

A mesh has a ``data`` axis (replicas of the parameters, each on its own slice
of the batch), an ``fsdp`` axis (the parameters themselves split, ZeRO-3
style, and gathered layer by layer when used) and a ``tensor`` axis (each
layer's heads and MLP features split, Megatron style: every device of the axis
sees the same examples and computes its share of every layer). Which array is split how is
decided by *partition rules*: ``(regex, PartitionSpec)`` pairs matched against
each leaf's pytree path (``jax.tree_util.keystr``, e.g.
``.layers.attn.q_proj.weight``); the first rule whose regex ``re.search``-es
the path wins. A spec shorter than the array's rank leaves the remaining
dimensions unsplit. A leaf no rule matches, a mesh axis the mesh lacks or a
dimension the axis does not divide is an error naming the path.

Stacked layers (``[layers, in, out]``) keep the layer axis unsplit, so the
layer scan slices one layer per step and the scanned body stays one trace.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import equinox as eqx
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxlean._pytree import is_array
from jaxlean.errors import ConfigError

__all__ = ["BATCH_AXES", "DATA", "FSDP", "MESH_AXES", "SEQ", "TENSOR", "Rules", "axis_names",
           "batch_spec", "constrain", "init_sharded", "make_mesh", "named_shardings",
           "partition_specs", "shard_batch", "shard_model"]

Rules = Sequence[tuple[str, P]]
"""Partition rules: ``(regex on the leaf's path, PartitionSpec)``; the first match wins."""

DATA, FSDP, SEQ, TENSOR = "data", "fsdp", "seq", "tensor"
BATCH_AXES = (DATA, FSDP)
"""Mesh axes the batch is split over: every device sees its own examples (FSDP is data parallel).
The ``tensor`` axis is not among them: its devices share their examples and split the layers."""
MESH_AXES = (DATA, FSDP, SEQ, TENSOR)
"""The axes of :func:`make_mesh`, outermost first: ``tensor`` innermost, so its devices (which
exchange activations twice per layer) are neighbours, e.g. on one host's fast links; ``seq``
(a sequence split over devices, exchanging ``q, k, v`` and attention's output once per layer)
next to it."""


def make_mesh(data: int = -1, fsdp: int = 1, tensor: int = 1, *, seq: int = 1,
              devices: Sequence[Any] | None = None) -> Mesh:
    """A ``(data, fsdp, seq, tensor)`` mesh over ``devices`` (default: all devices of all
    processes).

    Every axis is present, of size 1 where not asked for, so one set of partition rules
    (:func:`jaxlean.models.lm.rules.transformer_rules`) fits every layout.

    Args:
        data: size of the ``data`` axis; ``-1`` takes the devices the other axes leave.
        fsdp: size of the ``fsdp`` axis; ``-1`` takes the devices the other axes leave.
        tensor: size of the ``tensor`` axis (Megatron-style splitting of heads and MLP
            features; the model's heads and kv-heads must be divisible by it).
        seq: size of the ``seq`` axis (each sequence split over devices; attention runs
            :func:`jaxlean.parallel.context.context_parallel_attention` under
            ``jax.set_mesh``; :func:`shard_batch` splits axis 1 over it).
        devices: the devices to use, e.g. ``jax.devices()[:4]``.
    """
    devices = list(jax.devices() if devices is None else devices)
    count = len(devices)
    sizes = {DATA: data, FSDP: fsdp, SEQ: seq, TENSOR: tensor}
    for name, size in sizes.items():
        fill = name in (DATA, FSDP)  # the axes that may take the devices the others leave
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or (
                size < 1 and size != -1) or (size == -1 and not fill):
            raise ConfigError(f"make_mesh: {name} must be a positive int"
                              + (" or -1" if fill else "") + f", got {size!r}")
    if data == -1 and fsdp == -1:
        raise ConfigError("make_mesh: at most one of data and fsdp may be -1")
    if -1 in (data, fsdp):
        rest = int(np.prod([s for s in sizes.values() if s != -1]))
        fill = count // rest if count % rest == 0 else 0
        sizes = {name: fill if s == -1 else s for name, s in sizes.items()}
    if min(sizes.values()) < 1 or int(np.prod(list(sizes.values()))) != count:
        given = ", ".join(f"{name}={s}" for name, s in
                          {DATA: data, FSDP: fsdp, SEQ: seq, TENSOR: tensor}.items())
        raise ConfigError(f"make_mesh: data x fsdp x seq x tensor must use all {count} devices "
                          f"(got {given}); pass devices=... to use fewer")
    shape = tuple(sizes[name] for name in MESH_AXES)
    return Mesh(np.array(devices).reshape(shape), MESH_AXES)


def axis_names(entry: Any) -> tuple[str, ...]:
    """The mesh axes of one ``PartitionSpec`` entry: ``None``, a name or a tuple of names."""
    if entry is None:
        return ()
    return tuple(entry) if isinstance(entry, tuple) else (entry,)


def constrain(x: Any, sharding: NamedSharding) -> Any:
    """Lay ``x`` out as ``sharding`` inside a traced function, on any mesh ``jax.make_mesh`` makes.

    Over Auto axes that is ``with_sharding_constraint``; where a mesh has Explicit
    axes, arrays carry the sharding in their type, so there it is ``jax.sharding.reshard``.
    """
    if jax.sharding.AxisType.Explicit in sharding.mesh.axis_types:
        return jax.sharding.reshard(x, sharding)
    return jax.lax.with_sharding_constraint(x, sharding)


def _checked_spec(path: str, leaf: Any, spec: P, mesh: Mesh, rule: str) -> P:
    """``spec`` padded to the leaf's rank, after checking it fits the leaf and the mesh."""
    shape = tuple(leaf.shape)
    if len(spec) > len(shape):
        raise ConfigError(f"{path}: rule {rule!r} gives {spec} ({len(spec)} dims) to an array "
                          f"of shape {list(shape)}")
    for dim, (size, entry) in enumerate(zip(shape, spec, strict=False)):
        names = axis_names(entry)
        missing = [name for name in names if name not in mesh.shape]
        if missing:
            raise ConfigError(f"{path}: rule {rule!r} uses mesh axis {missing[0]!r}, but the "
                              f"mesh has axes {list(mesh.axis_names)}")
        parts = int(np.prod([mesh.shape[name] for name in names], dtype=np.int64))
        if size % parts:
            raise ConfigError(f"{path}: dimension {dim} of shape {list(shape)} has size {size}, "
                              f"not divisible by the {parts} devices of mesh axes {names} "
                              f"(rule {rule!r}); change the rule or the size")
    return P(*spec, *([None] * (len(shape) - len(spec))))


def partition_specs(model: Any, mesh: Mesh, rules: Rules) -> Any:
    """The ``PartitionSpec`` of every array leaf of ``model`` (``None`` for other leaves).

    Raises:
        ConfigError: a leaf no rule matches, an unknown mesh axis, or a
            dimension the mesh axes do not divide; the message names the leaf's path.
    """
    compiled = [(re.compile(pattern), pattern, spec) for pattern, spec in rules]

    def spec_of(path: tuple, leaf: Any) -> P | None:
        if not is_array(leaf) and not isinstance(leaf, jax.ShapeDtypeStruct):
            return None
        name = jax.tree_util.keystr(path)
        for regex, pattern, spec in compiled:
            if regex.search(name):
                return _checked_spec(name, leaf, spec, mesh, pattern)
        raise ConfigError(f"no partition rule matches {name} (shape {list(leaf.shape)}); add "
                          "a rule for it, or (r'.*', PartitionSpec()) to replicate the rest")

    return jax.tree_util.tree_map_with_path(spec_of, model)


def named_shardings(model: Any, mesh: Mesh, rules: Rules) -> Any:
    """``NamedSharding`` per array leaf of ``model`` (``None`` for other leaves)."""
    return jax.tree.map(lambda spec: NamedSharding(mesh, spec), partition_specs(model, mesh, rules),
                        is_leaf=lambda x: isinstance(x, P))


def shard_model(model: Any, mesh: Mesh, rules: Rules) -> Any:
    """``model`` with every array leaf placed on ``mesh`` as ``rules`` say.

    Works across processes when every process holds the same values (same
    seed or the same checkpoint): each keeps only its own devices' blocks. For
    a model too big for one device, build it with :func:`init_sharded` instead.
    A leaf already placed as asked is returned as it is, not copied, so a step
    that donates the result also consumes ``model``'s buffer.
    """
    shardings = named_shardings(model, mesh, rules)
    arrays, static = eqx.partition(model, is_array)
    placed = jax.tree.map(lambda x, s: x if x is None else jax.device_put(x, s), arrays,
                          shardings, is_leaf=lambda x: x is None)
    return eqx.combine(placed, static)


def init_sharded(make: Callable[[], Any], mesh: Mesh, rules: Rules) -> Any:
    """Build ``make()`` directly in its sharded layout, never whole on one device.

    ``make`` is traced once (``eqx.filter_eval_shape``) to learn the shapes,
    then run under ``jit`` with the rules' output shardings, so each device
    only ever holds its own blocks.
    """
    shapes = eqx.filter_eval_shape(make)
    arrays, static = eqx.partition(shapes, lambda x: isinstance(x, jax.ShapeDtypeStruct))
    shardings = named_shardings(arrays, mesh, rules)
    build = jax.jit(lambda: eqx.filter(make(), eqx.is_array), out_shardings=shardings)
    return eqx.combine(build(), static)


def batch_spec(ndim: int = 1, batch_axes: str | tuple[str, ...] | None = BATCH_AXES,
               seq_axis: str | None = None) -> P:
    """``PartitionSpec`` splitting axis 0 over ``batch_axes``, axis 1 over ``seq_axis`` (when
    given and ``ndim >= 2``) and nothing else."""
    if seq_axis is not None and ndim >= 2:
        return P(batch_axes, seq_axis, *([None] * (ndim - 2)))
    return P(batch_axes, *([None] * (ndim - 1)))


def shard_batch(batch: Any, mesh: Mesh, batch_axes: str | tuple[str, ...] | None = BATCH_AXES,
                *, process_local: bool = False) -> Any:
    """Place every array of ``batch`` with its leading (example) axis split over ``batch_axes``,
    and, on a mesh whose ``seq`` axis is larger than 1, its axis 1 (the sequence) over it.

    Args:
        batch: a pytree of arrays whose axis 0 is the example axis.
        mesh: the device mesh.
        batch_axes: mesh axes the examples are split over.
        process_local: the arrays hold only this process's examples (as a
            per-host data loader gives them); by default every process passes the
            whole global batch.

    Raises:
        ConfigError: a batch size the batch axes do not divide, or a sequence length the
            ``seq`` axis does not divide, naming the leaf.
    """
    parts = int(np.prod([mesh.shape[name] for name in axis_names(batch_axes)], dtype=np.int64))
    seq = mesh.shape[SEQ] if SEQ in mesh.shape and mesh.shape[SEQ] > 1 else 1
    scale = jax.process_count() if process_local else 1

    def place(path: tuple, x: Any) -> Any:
        x = np.asarray(x) if not isinstance(x, jax.Array) else x
        examples = x.shape[0] * scale if x.ndim else 0
        if examples == 0 or examples % parts:
            raise ConfigError(f"batch{jax.tree_util.keystr(path)}: {examples} examples cannot "
                              f"be split over the {parts} devices of mesh axes "
                              f"{axis_names(batch_axes)}")
        if seq > 1 and x.ndim >= 2 and x.shape[1] % seq:
            raise ConfigError(f"batch{jax.tree_util.keystr(path)}: its sequence length "
                              f"{x.shape[1]} cannot be split over the {seq} devices of the "
                              f"{SEQ!r} mesh axis")
        spec = batch_spec(x.ndim, batch_axes, SEQ if seq > 1 else None)
        sharding = NamedSharding(mesh, spec)
        if process_local:
            return jax.make_array_from_process_local_data(sharding, np.asarray(x))
        return jax.device_put(x, sharding)

    return jax.tree_util.tree_map_with_path(place, batch)
