"""Where each part of a packed transformation runs: on the buffers, or on per-leaf views of them.

A transformation that treats every element alike (adam, sgd, lion, ...) gives
the per-leaf result on a concatenation of leaves. One that mixes elements (a
global-norm clip, a trust ratio, a per-leaf norm or RMS clip) gives it only if
it sees the leaves, as optax does: such a part runs on views (the buffers split
into leaves, its updates packed back), so its sums are optax's sums, rounding
included. Views need a state that packing does not shape (none, a count): a
part that mixes elements and keeps state per leaf (factored moments,
novograd's per-leaf averages) cannot run on views, and is left to the probe,
which refuses it when it is not exact on the buffers.

No list decides what mixes elements: a probe does (:func:`probe_values`:
changing one gradient element must leave every other update unchanged, bit for
bit). A ``chain`` that mixes elements is split into its components, each
decided alone, and rebuilt; any other transformation is decided whole. The
rebuilt transformation is then checked against the per-leaf one like any other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax

from jaxlean.train._packed_probe import (
    NotExact,
    _head,
    check_state,
    check_values,
    components,
    probe_values,
    refusal,
    unprobeable,
)

BUFFERS = "buffers"
VIEWS = "views"
Decision = str | tuple
"""``BUFFERS``, ``VIEWS``, or for a chain a tuple with one decision per component."""


def decide(tx: Any, tree: Any, buffers: tuple, groups: list[list[int]], where: str) -> Decision:
    """Where ``tx`` runs so that packing it is exact; a ConfigError naming it when nowhere.

    Args:
        tx: the transformation of one part.
        tree: the params tree as shape structs, None at leaves off this part.
        buffers: the part's buffers as shape structs.
        groups: per buffer, the indices of its leaves in ``jax.tree.leaves(tree)``.
        where: "packed" or "group 'x' of packed", for the message.
    """
    try:
        check_state(tx, tree, buffers)
        if not check_values(tx, tree, groups):
            return BUFFERS
        reason = None
    except NotExact as error:
        reason = error
    except (TypeError, ValueError) as error:
        raise unprobeable(tx, error, where) from error
    decision = _plan(tx, tree, buffers, groups, mixes=True)
    if decision != BUFFERS:
        try:
            check_state(tx, tree, buffers,
                        lambda b: build(tx, decision, None, lambda _: _zeros_like(tree)).init(b))
            check_values(tx, tree, groups, lambda pack, unpack: build(tx, decision, pack, unpack))
            return decision
        except NotExact:
            pass
    if reason is None:  # mixes elements, exact on the buffers all the same (up to rounding)
        return BUFFERS
    raise refusal(tx, reason, tree, buffers, groups, where) from None


def build(tx: Any, decision: Decision, pack: Callable[[Any], tuple] | None,
          unpack: Callable[[tuple], Any]) -> optax.GradientTransformationExtraArgs:
    """``tx`` with each part placed per ``decision``; ``pack``/``unpack`` move updates (and
    params) between the params tree and the part's buffers."""
    if decision == BUFFERS:
        return optax.with_extra_args_support(tx)
    if decision == VIEWS:
        return _on_views(tx, pack, unpack)
    return optax.chain(*(build(c, d, pack, unpack)
                         for c, d in zip(components(tx), decision, strict=True)))


def _plan(tx: Any, tree: Any, buffers: tuple, groups: list[list[int]],
          mixes: bool | None = None) -> Decision:
    """Views for a part that mixes elements with a state packing does not shape; a chain's
    components decided one by one; the buffers for anything else (``mixes``: known already)."""
    unshaped = _unshaped_state(tx, tree, buffers)
    parts = components(tx) if _head(tx.init) == "chain" else []
    if not (unshaped or parts):
        return BUFFERS
    if mixes is None:
        try:
            mixes = probe_values(tx, tree, groups, reference=False)[1]
        except (TypeError, ValueError):  # a component that cannot run alone stays as it is
            return BUFFERS
    if not mixes:
        return BUFFERS
    if unshaped:
        return VIEWS
    decisions = tuple(_plan(c, tree, buffers, groups) for c in parts)
    return BUFFERS if all(d == BUFFERS for d in decisions) else decisions


def _unshaped_state(tx: Any, tree: Any, buffers: tuple) -> bool:
    """Whether ``tx``'s state is the same on the leaves as on the buffers (none, a count)."""
    try:
        per_leaf, on_buffers = jax.eval_shape(tx.init, tree), jax.eval_shape(tx.init, buffers)
    except (TypeError, ValueError):
        return False
    return (jax.tree_util.tree_structure(per_leaf) == jax.tree_util.tree_structure(on_buffers)
            and all(a.shape == b.shape and a.dtype == b.dtype for a, b in
                    zip(jax.tree.leaves(per_leaf), jax.tree.leaves(on_buffers), strict=True)))


def _on_views(tx: Any, pack: Callable[[Any], tuple] | None,
              unpack: Callable[[tuple], Any]) -> optax.GradientTransformationExtraArgs:
    tx = optax.with_extra_args_support(tx)

    def init(buffers: tuple) -> Any:  # one program: eagerly, every leaf's slice compiles alone
        return jax.jit(lambda b: tx.init(unpack(b)))(buffers)

    def update(updates: tuple, state: Any, params: tuple | None = None, **extra_args: Any):
        views = None if params is None else unpack(params)
        new, state = tx.update(unpack(updates), state, views, **extra_args)
        return pack(new), state

    return optax.GradientTransformationExtraArgs(init, update)


def _zeros_like(tree: Any) -> Any:
    return jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), tree)
