"""What is known only during the run: ``FROM i = a TO b`` whose bounds are a PARAMETER or
an ASSIGNED (a count of received events), as the C loop ``nocmodl`` writes, ``for (i =
(int) a; i <= (int) b; i++)``; and an array element whose index is such a value
(``tspike[numpulses] = t``, ``t0 = tspike[ijk - 1]``), C's ``a[(int) k]``.

The body runs in a ``lax.while_loop`` from the smallest start to the largest stop over
the instances; an instance whose own bounds leave ``i`` out keeps its values (a masked
step), so each compartment or point process runs its own count. The loop carries the
names the body changes (found by running it once, outside the loop, on the values
before it). A ``while_loop`` has a forward derivative but no reverse one: a gradient
through such a loop is refused by JAX. A POINT_PROCESS's large ASSIGNED array
(``tspike[5000]``, :data:`~.parser.VECTOR_FROM`) is kept whole, one value ``(instances,
size)``, so an event writes one element of it without a value per element in the run.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from jax import lax

from jaxlean.models.neuron.nmodl import syntax as s

__all__ = ["read_element", "run_loop", "write_element"]


def _whole(x: Any) -> Any:
    """C's ``(int) x``: toward zero."""
    return jnp.trunc(jnp.asarray(x, jnp.result_type(float)))


def run_loop(interpreter, statement: s.Loop, bounds: list, local: dict, names: dict) -> None:
    """Run ``statement`` (bounds ``[a, b]`` evaluated, some traced) on ``local`` and
    ``names``, updated in place."""
    start, stop = (_whole(b) for b in bounds)
    dtype = jnp.result_type(start, stop)

    def body_of(i, local_in: dict, names_in: dict) -> tuple[dict, dict]:
        inner_local, inner_names = {**local_in, statement.var: i}, dict(names_in)
        interpreter.run(statement.body, inner_local, inner_names)
        return inner_local, inner_names

    trial_local, trial_names = body_of(start.min().astype(dtype), local, names)
    changed = {}  # (scope, key): (shape, dtype) of the values the body sets
    for scope, before, after in (("local", local, trial_local), ("names", names, trial_names)):
        for key, value in after.items():
            if key == statement.var and scope == "local":
                continue
            if key not in before or value is not before[key]:
                old = before.get(key, 0.0)
                shape = jnp.broadcast_shapes(jnp.shape(old), jnp.shape(value),
                                             jnp.shape(start), jnp.shape(stop))
                changed[(scope, key)] = (shape, jnp.result_type(old, value))

    def pick(scope_local: dict, scope_names: dict) -> dict:
        out = {}
        for (scope, key), (shape, kind) in changed.items():
            source = scope_local if scope == "local" else scope_names
            out[(scope, key)] = jnp.broadcast_to(jnp.asarray(source.get(key, 0.0), kind),
                                                 shape)
        return out

    def step(carry):
        i, values = carry
        inner_local = {**local, **{k: v for (sc, k), v in values.items() if sc == "local"}}
        inner_names = {**names, **{k: v for (sc, k), v in values.items() if sc == "names"}}
        new = pick(*body_of(i, inner_local, inner_names))
        inside = (i >= start) & (i <= stop)
        return i + 1, {key: jnp.where(inside, new[key], values[key]) for key in values}

    _, values = lax.while_loop(lambda carry: carry[0] <= stop.max(), step,
                               (start.min().astype(dtype), pick(local, names)))
    for (scope, key), value in values.items():
        (local if scope == "local" else names)[key] = value


def _elements(size: int, name: str) -> list[str]:
    return [f"{name}[{j}]" for j in range(size)]


def read_element(model, name: str, k: Any, local: dict, names: dict) -> Any:
    """``name[(int) k]``, ``k`` traced (per instance) or an array kept whole; an index
    outside the array reads its nearest end (C reads memory beyond it)."""
    size = model.arrays[name]
    if name in model.vectors:
        whole = names[name]
    else:
        whole = jnp.stack([(local if key in local else names)[key]
                           for key in _elements(size, name)], axis=-1)
    shape = jnp.broadcast_shapes(jnp.shape(k), whole.shape[:-1])
    index = jnp.clip(_whole(k), 0, size - 1).astype(jnp.int32)
    return jnp.take_along_axis(jnp.broadcast_to(whole, (*shape, size)),
                               jnp.broadcast_to(index, shape)[..., None], -1)[..., 0]


def write_element(model, name: str, k: Any, value: Any, local: dict, names: dict) -> None:
    """``name[(int) k] = value``, ``k`` traced (per instance) or an array kept whole; an
    index outside the array writes nothing (C writes memory beyond it)."""
    index = _whole(k)
    if name in model.vectors:
        hit = jnp.arange(model.arrays[name]) == jnp.expand_dims(index, -1)
        names[name] = jnp.where(hit, jnp.expand_dims(jnp.asarray(value), -1), names[name])
        return
    for j, key in enumerate(_elements(model.arrays[name], name)):
        scope = local if key in local else names
        scope[key] = jnp.where(index == j, value, scope[key])
