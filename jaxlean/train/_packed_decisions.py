"""Where each part of a packed transformation runs, probed once and remembered.

Probing a transformation (:func:`~jaxlean.train._packed_views.decide`) compiles
a small program, so its decision is kept per (transformation object, layout,
part): ``init`` decides, every later ``update`` of the same transformation finds
the decision. The last :data:`KEPT` decisions are kept; each entry holds its
transformation, so no other object can take its ``id`` while it is kept.

Inside :func:`assumed_on_buffers` a transformation not decided yet runs on its
buffers without its probe, and is listed; :func:`confirm` then probes the listed
ones. ``fit`` uses this to compile its loop while the probes run
(:mod:`jaxlean.train._first_compile`), and keeps what it compiled only when every
probe decided the buffers, as without the assumption.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

import jax

from jaxlean.train._layout import PackedLayout
from jaxlean.train._packed_views import BUFFERS, Decision, build, decide

__all__ = ["KEPT", "assumed_on_buffers", "confirm", "placed", "where"]

KEPT = 64
"""How many decisions are kept (least recently used dropped first)."""

_DECISIONS: OrderedDict[tuple, tuple[Any, Decision]] = OrderedDict()
_ASSUMED: ContextVar[list | None] = ContextVar("assumed_on_buffers", default=None)


@contextlib.contextmanager
def assumed_on_buffers() -> Iterator[list[tuple[Any, PackedLayout, int]]]:
    """Inside: each transformation not decided yet runs on its buffers, unprobed, and its
    ``(tx, layout, part)`` is added (once) to the list this yields, for :func:`confirm`."""
    assumed: list[tuple[Any, PackedLayout, int]] = []
    token = _ASSUMED.set(assumed)
    try:
        yield assumed
    finally:
        _ASSUMED.reset(token)


def confirm(assumed: list[tuple[Any, PackedLayout, int]]) -> bool:
    """Probe what :func:`assumed_on_buffers` assumed: whether each runs on its buffers
    (decisions kept as :func:`placed` keeps them; a ConfigError naming one packing cannot
    run exactly, as at ``init``)."""
    return all(_decision(tx, layout, part) == BUFFERS for tx, layout, part in assumed)


def _decision(tx: Any, layout: PackedLayout, part: int) -> Decision:
    """The decision for ``tx`` on ``part`` of ``layout``: kept, or probed now and kept."""
    key = (id(tx), layout, part)  # the entry holds tx, so no other object takes its id
    if key not in _DECISIONS:
        _DECISIONS[key] = (tx, decide(tx, *_probe_shapes(layout, part), where(layout, part)))
        if len(_DECISIONS) > KEPT:
            _DECISIONS.popitem(last=False)
    _DECISIONS.move_to_end(key)
    return _DECISIONS[key][1]


def placed(tx: Any, layout: PackedLayout, part: int) -> Any:
    """``tx`` with its parts on the buffers or on per-leaf views, as decided for this part
    (probed once per transformation object, layout and part; the last 64 decisions are kept),
    or on its buffers unprobed inside :func:`assumed_on_buffers`."""
    assumed = _ASSUMED.get()
    if assumed is not None and (id(tx), layout, part) not in _DECISIONS:
        if not any(t is tx and lay == layout and p == part for t, lay, p in assumed):
            assumed.append((tx, layout, part))
        return tx
    decision = _decision(tx, layout, part)
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
