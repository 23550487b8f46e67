"""Is an optax transformation exact on packed buffers? Checked at ``init``, refused by name if not.

Running a transformation on a concatenation of leaves gives the per-leaf
result only if it treats every element alike: an update that reduces over a
leaf (a norm, a trust ratio, an RMS clip) or keeps state shaped by a leaf's
shape (a factored second moment) computes something else on a buffer. No
list of known transformations decides this; checks on the transformation
itself do, for any transformation, at ``init``:

1. state structure, at the real shapes and free (``jax.eval_shape``): the
   per-leaf state must be the packed state with every params-shaped subtree in
   place of the buffers; anything shaped by a leaf otherwise (``v_row``) fails;
2. a probe: two steps on small random data, per leaf (on the params tree) and
   packed, compared, as one small jitted program (eagerly, every operation at every probe
   shape would compile a program of its own). A few leaves per buffer
   (at their tree positions, the others None) keep their number of axes (each
   axis at most 2 long) and get a scale of their own, so a per-leaf reduction
   changes the result;
3. in the same program, whether it mixes elements: two packed runs on large
   gradients that differ in one element must agree everywhere else, bit for
   bit. :mod:`jaxlean.train._packed_views` runs what mixes on per-leaf views.

On failure the error names the transformation and, by probing its
components (``chain``, ``masked``, wrappers that hold a transformation), the
part that computes per leaf. The probe also runs when ``init`` is traced.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxlean.compile.quick import probe_compile_options
from jaxlean.errors import ConfigError, NonFiniteError

_PROBE_DIM = 2
_PROBE_STEPS = 2
_PROBE_RTOL = 1e-4
_PROBE_LEAVES = 4
# Probe gradients this large make a clip clip unless its threshold is above ~1e4x their norm;
# such a clip is taken for elementwise and runs on the buffers (same result up to rounding).
_MIXING_SCALE = 1e4


class NotExact(Exception):
    """Why a transformation is not exact on packed buffers (internal)."""


_GENERIC = ("init_empty_state", "with_extra_args_support")


def _head(function: Any) -> str | None:
    qualname = getattr(function, "__qualname__", None)
    if qualname is None:
        return None
    head = qualname.split(".<locals>")[0]
    return head[: -len(".init")] if head.endswith(".init") else head  # a class (MultiSteps)


def _unwrap(tx: Any) -> Any:
    """``tx`` without ``with_extra_args_support`` wrappers around it."""
    while _head(tx.update) == "with_extra_args_support":
        held = [v for v in _cells(tx.update) if _is_tx(v)]
        if len(held) != 1:
            break
        tx = held[0]
    return tx


def name(tx: Any) -> str:
    """A readable name: the optax factory (``scale_by_adam``), with a chain's components."""
    tx = _unwrap(tx)
    head = _head(getattr(tx, "init", None))
    if head is None:
        return type(tx).__name__
    if head in _GENERIC:
        head = _head(tx.update) or head
    inner = components(tx)
    return f"{head}({', '.join(name(t) for t in inner)})" if inner else head


def _cells(function: Any) -> list[Any]:
    out = []
    for cell in getattr(function, "__closure__", None) or ():
        try:
            out.append(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
    return out


def _is_tx(value: Any) -> bool:
    return callable(getattr(value, "init", None)) and callable(getattr(value, "update", None))


def _held(tx: Any) -> list[Any]:
    """Transformations held in the closures of ``tx``'s functions (directly or in a list)."""
    cells = _cells(getattr(tx, "init", None)) + _cells(getattr(tx, "update", None))
    return [v for cell in cells
            for v in ([cell] if _is_tx(cell) or not isinstance(cell, list | tuple) else cell)
            if _is_tx(v)]


def components(tx: Any) -> list[Any]:
    """The transformations ``tx`` is built from, read from its closures (none when opaque).

    A wrapper holds its inner transformation (``masked``, ``schedule_free``); a
    ``chain`` holds its components' ``init`` and ``update`` functions in order.
    """
    tx = _unwrap(tx)
    seen, held = {id(tx.init), id(tx.update)}, []
    for value in map(_unwrap, _held(tx)):  # a wrapper may hold its inner one twice
        if not {id(value.init), id(value.update)} & seen:
            seen |= {id(value.init), id(value.update)}
            held.append(value)
    if held:
        return held
    functions = lambda cells: [c for c in cells if isinstance(c, list | tuple) and c
                               and not _is_tx(c) and all(callable(f) for f in c)]
    init_lists = functions(_cells(getattr(tx, "init", None)))
    update_lists = functions(_cells(getattr(tx, "update", None)))
    if len(init_lists) == 1 and len(update_lists) == 1 and \
            len(init_lists[0]) == len(update_lists[0]):
        return [_unwrap(optax.GradientTransformationExtraArgs(i, u))
                for i, u in zip(init_lists[0], update_lists[0], strict=True)]
    return []


def _path(path: tuple) -> str:
    return jax.tree_util.keystr(path) or "<root>"


def check_state(tx: Any, tree: Any, buffers: tuple, packed_init: Callable | None = None) -> None:
    """Raise NotExact unless ``tx``'s state on ``buffers`` is its state on ``tree``, packed.

    ``tree`` is the params tree (shape structs, None off this part); ``buffers``
    the part's buffers (shape structs); ``packed_init`` what initialises the
    packed side (default ``tx.init``). Evaluated abstractly: nothing runs.
    """
    treedef = jax.tree_util.tree_structure(tree)
    shapes = [tuple(x.shape) for x in jax.tree.leaves(tree)]
    buffer_def = jax.tree_util.tree_structure(buffers)
    buffer_shapes = [tuple(b.shape) for b in buffers]

    def like(node: Any, definition: Any, expected: list[tuple]) -> bool:
        if jax.tree_util.tree_structure(node) != definition:
            return False
        if definition.num_nodes == 1:  # params is a single array: match it by shape too
            return tuple(getattr(node, "shape", ())) == expected[0] and \
                jnp.issubdtype(node.dtype, jnp.inexact)
        return True

    per_leaf = jax.eval_shape(tx.init, tree)
    packed = jax.eval_shape(packed_init or tx.init, buffers)
    ref, ref_def = jax.tree_util.tree_flatten_with_path(
        per_leaf, is_leaf=lambda x: like(x, treedef, shapes))
    got, got_def = jax.tree.flatten(packed, is_leaf=lambda x: like(x, buffer_def, buffer_shapes))
    if ref_def != got_def:
        raise NotExact("its state has another structure on the packed buffers than on the "
                       "params: it keeps state per leaf")
    for (path, r), g in zip(ref, got, strict=True):
        if like(r, treedef, shapes) != like(g, buffer_def, buffer_shapes):
            raise NotExact(f"its state{_path(path)} is not the params' shape per leaf and the "
                           "buffers' when packed")
        if like(r, treedef, shapes):
            wrong = [(leaf_path, tuple(x.shape), want) for (leaf_path, x), want in
                     zip(jax.tree_util.tree_leaves_with_path(r), shapes, strict=True)
                     if tuple(x.shape) != want]
            if wrong:
                leaf_path, shape, want = wrong[0]
                raise NotExact(f"its state{_path(path)} holds an array of shape {shape} for "
                               f"params{_path(leaf_path)} of shape {want}: state shaped by "
                               "each leaf's shape (e.g. a factored moment)")
        elif tuple(r.shape) != tuple(g.shape) or r.dtype != g.dtype:
            raise NotExact(f"its state{_path(path)} is {r.dtype}{list(r.shape)} per leaf but "
                           f"{g.dtype}{list(g.shape)} on the packed buffers")


def _probe_data(tree: Any, seed: int) -> tuple[Any, Any]:
    """Small random params and gradients shaped like ``tree`` (each axis at most
    ``_PROBE_DIM`` long), f32, a different scale per leaf."""
    rng = np.random.default_rng(seed)
    leaves, treedef = jax.tree.flatten(tree)

    def draw(x: Any) -> np.ndarray:
        shape = tuple(min(d, _PROBE_DIM) for d in x.shape)
        scale = 10.0 ** rng.uniform(-1.5, 1.5)
        return np.asarray(rng.standard_normal(shape) * scale, np.float32)

    params = [draw(x) for x in leaves]
    grads = [[draw(x) for x in leaves] for _ in range(_PROBE_STEPS)]
    return (jax.tree.unflatten(treedef, params),
            [jax.tree.unflatten(treedef, g) for g in grads])


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    scale = float(np.max(np.abs(b))) if b.size else 0.0
    return float(np.max(np.abs(a - b))) / max(scale, 1e-30) if a.size else 0.0


def _sample(tree: Any, groups: list[list[int]]) -> tuple[Any, list[list[int]]]:
    """``tree`` with at most ``_PROBE_LEAVES`` leaves per buffer (other positions None), those
    of different numbers of axes first, and the buffers' index lists for it."""
    leaves, treedef = jax.tree.flatten(tree)
    keep = []
    for group in groups:
        by_ndim = {}
        for i in group:
            by_ndim.setdefault(leaves[i].ndim, i)
        first = list(by_ndim.values())
        keep += (first + [i for i in group if i not in first])[:_PROBE_LEAVES]
    kept = sorted(keep)
    rank = {i: k for k, i in enumerate(kept)}
    sampled = jax.tree.unflatten(treedef, [x if i in rank else None
                                           for i, x in enumerate(leaves)])
    return sampled, [[rank[i] for i in group if i in rank] for group in groups]


_COMPILED: OrderedDict[tuple, Any] = OrderedDict()
_COMPILED_KEPT = 32


def _compiled(lowered: Any) -> Any:
    """``lowered`` compiled, reused for the same program text and argument and result trees
    (every ``init`` of the same optimizer on the same probe shapes traces a new function but
    the same program). The probe runs for microseconds: XLA does not optimise its kernels
    (and emits them directly, without its slower-to-compile MLIR fusion emitters) and
    generates its code in one part (:func:`~jaxlean.compile.quick.probe_compile_options`)."""
    # the text prints every constant (no elision), so equal keys are equal programs
    key = (lowered.as_text(), lowered.in_tree, lowered.out_tree)
    if key not in _COMPILED:
        _COMPILED[key] = lowered.compile(compiler_options=probe_compile_options())
        if len(_COMPILED) > _COMPILED_KEPT:
            _COMPILED.popitem(last=False)
    _COMPILED.move_to_end(key)
    return _COMPILED[key]


def _one_device() -> Any:
    """A context in which the probe is one device's program whatever mesh the caller set.

    Under ``jax.set_mesh`` the probe's small unplaced arrays would be typed on the mesh and
    the probe compiled for all its devices (on 4 CPU devices, packed(optax.lamb)'s largest
    probes took about twice the compile time of one device's program). ``set_mesh``
    cannot be used inside a trace (``init`` under ``jit``): there the probe stays as the
    context makes it."""
    try:
        return jax.set_mesh(None)
    except ValueError:  # inside a trace
        return contextlib.nullcontext()


def probe_values(tx: Any, tree: Any, groups: list[list[int]],
                 build: Callable[[Callable, Callable], Any] | None = None,
                 reference: bool = True) -> tuple[str | None, bool]:
    """Two probe steps of ``tx`` per leaf and packed: how they differ, and whether ``tx`` mixes
    elements.

    ``tree`` is the params tree (shape structs, None off this part); ``groups``
    lists, per buffer, the indices (in ``jax.tree.leaves(tree)`` order) of its
    leaves; ``build(pack, unpack)`` gives what runs on the packed side (default
    ``tx``). The probe keeps a few leaves per buffer and runs as one jitted program.
    Returns the reason the packed steps differ (None when equal; not compared
    without ``reference``, which then skips the per-leaf steps) and whether
    changing one gradient element (of gradients scaled up, so that clipping
    clips) changed the packed update of any other element.
    """
    tree, groups = _sample(tree, groups)
    params, grads_seq = _probe_data(tree, seed=len(groups))
    leaves_def = jax.tree_util.tree_structure(params)
    shapes = [np.shape(x) for x in jax.tree.leaves(params)]
    tx = optax.with_extra_args_support(tx)

    def pack(t: Any) -> tuple:
        leaves = jax.tree.leaves(t)
        return tuple(jnp.concatenate([leaves[i].ravel() for i in g]) for g in groups)

    def unpack(buffers: tuple) -> Any:
        out = [None] * len(shapes)
        for group, buffer in zip(groups, buffers, strict=True):
            sizes = [int(np.prod(shapes[i])) for i in group]
            for i, start, size in zip(group, np.cumsum([0, *sizes[:-1]]), sizes, strict=True):
                out[i] = buffer[start:start + size].reshape(shapes[i])
        return jax.tree.unflatten(leaves_def, out)

    packed_tx = tx if build is None else optax.with_extra_args_support(build(pack, unpack))

    def run(transformation: Any, start: Any, steps: list, packing: Callable) -> list:
        p = packing(start)
        state, updates = transformation.init(p), []
        for step, grads in enumerate(steps):
            value = jnp.float32(1.0 / (step + 1))
            u, state = transformation.update(packing(grads), state, p, value=value)
            updates.append(u)
            p = optax.apply_updates(p, u)
        return updates

    def probe(params: Any, grads_seq: list) -> tuple:
        big = [jax.tree.map(lambda g: g * _MIXING_SCALE, grads) for grads in grads_seq]
        nudged = [jax.tree.unflatten(leaves_def, [
            x.at[(0,) * x.ndim].multiply(3.0) if i == groups[0][0] and step == 0 else x
            for i, x in enumerate(jax.tree.leaves(grads))]) for step, grads in enumerate(big)]
        mixing = (run(packed_tx, params, big, pack), run(packed_tx, params, nudged, pack))
        if not reference:
            return [], [], *mixing
        ref = run(tx, params, grads_seq, lambda t: t)
        if any(jax.tree_util.tree_structure(u) != leaves_def for u in ref):
            return None
        return ref, run(packed_tx, params, grads_seq, pack), *mixing

    # Compiled and called, it runs now also when ``init`` is being traced.
    with _one_device():
        results = _compiled(jax.jit(probe).lower(params, grads_seq))(params, grads_seq)
    if results is None:
        return "its updates have another structure than the params", False
    ref_steps, packed_steps, big_steps, nudged_steps = results
    for step, ref_updates in enumerate(ref_steps):  # broken before packing: say so, not "per leaf"
        for leaf_path, want in jax.tree_util.tree_leaves_with_path(ref_updates):
            if not np.all(np.isfinite(np.asarray(want, np.float32))):
                raise NonFiniteError(
                    f"packed: optax transformation {name(tx)} gives a non-finite update at "
                    f"params{_path(leaf_path)} in probe step {step + 1} on finite gradients, per "
                    "leaf and without packing: one of its hyperparameters (the learning rate?) "
                    "is NaN or infinite")
    mixes = False
    for big, nudged in zip(big_steps, nudged_steps, strict=True):
        for b, (a, c) in enumerate(zip(big, nudged, strict=True)):
            a, c = np.asarray(a, np.float32), np.asarray(c, np.float32)
            if b == 0:
                a, c = a[1:], c[1:]
            mixes |= not np.array_equal(a, c, equal_nan=True)
    for step, (ref_updates, pk_updates) in enumerate(zip(ref_steps, packed_steps, strict=True)):
        with_paths = jax.tree_util.tree_leaves_with_path(ref_updates)
        for group, buffer in zip(groups, pk_updates, strict=True):
            flat, start = np.asarray(buffer, np.float32), 0
            for i in group:
                leaf_path, want = with_paths[i]
                got = flat[start:start + want.size].reshape(want.shape)
                start += want.size
                error = _relative(got, np.asarray(want, np.float32))
                if not error <= _PROBE_RTOL:
                    return (f"a probe step ({step + 1}) on the packed buffers differs from the "
                            f"per-leaf result by {error:.1e} (relative) at params"
                            f"{_path(leaf_path)}: it computes something per leaf (a norm, an "
                            "RMS, a trust ratio) that packing computes over the whole buffer",
                            mixes)
    return None, mixes


def check_values(tx: Any, tree: Any, groups: list[list[int]],
                 build: Callable[[Callable, Callable], Any] | None = None) -> bool:
    """Raise NotExact unless two probe steps packed equal those per leaf (:func:`probe_values`);
    return whether ``tx`` mixes elements."""
    reason, mixes = probe_values(tx, tree, groups, build)
    if reason is not None:
        raise NotExact(reason)
    return mixes


def _fails(tx: Any, checks: list[Callable[[Any], None]]) -> bool:
    try:
        for check in checks:
            check(tx)
    except NotExact:
        return True
    except Exception:  # a component that cannot run alone is not blamed
        return False
    return False


def _culprits(tx: Any, checks: list[Callable[[Any], None]]) -> list[Any]:
    """The innermost components of ``tx`` that fail ``checks`` alone; ``[tx]`` if none does."""
    failing = [c for c in components(tx) if _fails(c, checks)]
    return [x for c in failing for x in _culprits(c, checks)] or [tx]


def refusal(tx: Any, reason: NotExact, tree: Any, buffers: tuple, groups: list[list[int]],
            where: str) -> ConfigError:
    """The ConfigError refusing ``tx``, naming it and the components of it that compute per leaf.

    Args:
        tx: the transformation of one part.
        reason: why it is not exact on the packed buffers.
        tree: the params tree as shape structs, None at leaves off this part.
        buffers: the part's buffers as shape structs.
        groups: per buffer, the indices of its leaves in ``jax.tree.leaves(tree)``.
        where: "packed" or "group 'x' of packed", for the message.
    """
    checks = [lambda t: check_state(t, tree, buffers), lambda t: check_values(t, tree, groups)]
    culprits = [name(c) for c in _culprits(tx, checks)]
    blamed = "" if culprits == [name(tx)] else f"; per leaf: {', '.join(culprits)}"
    return ConfigError(
        f"{where}: optax transformation {name(tx)} is not exact on packed buffers: "
        f"{reason}{blamed}. Use it per leaf (plain optax, outside packed), or a "
        "transformation that treats every element alike")


def unprobeable(tx: Any, error: Exception, where: str) -> ConfigError:
    """The ConfigError for a transformation whose probe step raised ``error``."""
    return ConfigError(
        f"{where}: optax transformation {name(tx)} could not be checked on packed "
        f"buffers: a probe step raised {type(error).__name__}: {error}. If it holds a "
        "mask or labels over the params tree, give packed a dict of transformations and "
        "param_labels= instead (optax.masked / multi_transform / adamw(mask=...) "
        "cannot select leaves of a packed buffer)")
