"""Where each part of a packed transformation runs, probed once and remembered.

Probing a transformation (:func:`~jaxlean.train._packed_views.decide`) compiles
a small program, so its decision is kept per (transformation object, layout,
part): ``init`` decides, every later ``update`` of the same transformation finds
the decision. The last :data:`KEPT` decisions are kept; each entry holds its
transformation, so no other object can take its ``id`` while it is kept.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import jax

from jaxlean.train._layout import PackedLayout
from jaxlean.train._packed_views import BUFFERS, Decision, build, decide

__all__ = ["KEPT", "placed", "where"]

KEPT = 64
"""How many decisions are kept (least recently used dropped first)."""

_DECISIONS: OrderedDict[tuple, tuple[Any, Decision]] = OrderedDict()


def placed(tx: Any, layout: PackedLayout, part: int) -> Any:
    """``tx`` with its parts on the buffers or on per-leaf views, as decided for this part
    (probed once per transformation object, layout and part; the last 64 decisions are kept)."""
    key = (id(tx), layout, part)  # the entry holds tx, so no other object takes its id
    if key not in _DECISIONS:
        _DECISIONS[key] = (tx, decide(tx, *_probe_shapes(layout, part), where(layout, part)))
        if len(_DECISIONS) > KEPT:
            _DECISIONS.popitem(last=False)
    _DECISIONS.move_to_end(key)
    decision = _DECISIONS[key][1]
    if decision == BUFFERS:
        return tx
    ids = layout.part_buffers(part)
    return build(tx, decision, lambda tree: layout.pack_part(ids, tree),
                 lambda buffers: layout.unpack_part(ids, buffers))


def where(layout: PackedLayout, part: int) -> str:
    """How messages name one part: "packed", or "group 'x' of packed"."""
    label = layout.parts[part][0]
    return "packed" if label is None else f"group {label!r} of packed"


def _probe_shapes(layout: PackedLayout, part: int) -> tuple:
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
