"""A network's cells grouped by type, their parameters stacked: a fixed number of operations.

Cells given as the same :class:`~jaxlean.models.neuron.cell.cell.Cell` object form one *type*
(``Network([hidden] * 64)``: one type of 64 cells). A type's parameters are one dict whose
every leaf has a leading axis over the type's cells (``params["types"]``, built by
:func:`stacked`). Laying them over the forest takes a few operations per type and
parameter (a ``vmap`` of the one-cell expansion, one concatenation, one gather with a
static permutation), so the program, its gradient and its compile time do not grow with the
number of cells, only with the number of types. A per-cell list (``params["cells"]``) is
first stacked type by type (:func:`stack`): the same numbers, one stack per type and
parameter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.cell import params as parameters
from jaxlean.models.neuron.cell.cell import Cell
from jaxlean.models.neuron.mechanisms.mechanisms import Insertion

__all__ = ["cell_types", "merged_stacked", "stack", "stacked"]


def cell_types(cells: Sequence[Cell]) -> list[tuple[Cell, np.ndarray]]:
    """``[(cell, the numbers of the network's cells that are this object)]``, in order of
    first appearance."""
    found: dict[int, tuple[Cell, list[int]]] = {}
    for index, cell in enumerate(cells):
        found.setdefault(id(cell), (cell, []))[1].append(index)
    return [(cell, np.asarray(ix, dtype=np.int64)) for cell, ix in found.values()]


def stacked(cells: Sequence[Cell], per_cell: Sequence[Mapping]) -> list[dict]:
    """One dict per type, each leaf the type's cells' values stacked (leading axis)."""
    return stack(cell_types(cells), per_cell)


def stack(types: list[tuple[Cell, np.ndarray]], per_cell: Sequence[Mapping]) -> list[dict]:
    """``per_cell`` (one dict per cell) as one dict per type of ``types``. Where the cells of
    a type give a parameter in different shapes (a scalar here, one per compartment there),
    each is expanded to one value per compartment (instance) first."""
    out = []
    for cell, ix in types:
        names = per_cell[int(ix[0])].keys()
        for i in ix:
            if per_cell[int(i)].keys() != names:
                raise ConfigError(f"params['cells'][{int(i)}] must have the names of "
                                  f"params['cells'][{int(ix[0])}] (the same cell): "
                                  f"{sorted(names)}; got {sorted(per_cell[int(i)])}")
        insertions = cell.insertions(per_cell[int(ix[0])])
        values = {}
        for name in names:
            column = [jnp.asarray(per_cell[int(i)][name]) for i in ix]
            if len({c.shape for c in column}) > 1:
                column = [parameters.expand(cell, {name: c}, insertions)[name]
                          for c in column]
            values[name] = jnp.stack(column)
        out.append(values)
    return out


def _check_type(t: int, cell: Cell, ix: np.ndarray, values: Mapping,
                insertions: tuple[Insertion, ...]) -> None:
    """Each leaf has the type's cells as leading axis; each cell's slice passes the one-cell
    check (its values too, unless traced); errors name the type and the network's cell."""
    if not isinstance(values, Mapping):
        raise ConfigError(f"params['types'][{t}] must be a dict of stacked parameters; got "
                          f"{type(values).__name__}")
    for name, value in values.items():
        if np.ndim(value) < 1 or np.shape(value)[0] != ix.size:
            raise ConfigError(f"params['types'][{t}][{name!r}] must have a leading axis of "
                              f"the type's {ix.size} cells; got shape {np.shape(value)}")
    traced = {name for name, value in values.items() if isinstance(value, jax.core.Tracer)}
    rows = {name: _traced_stub(value) if name in traced else np.asarray(value)
            for name, value in values.items()}
    for j in range(1 if len(traced) == len(values) else ix.size):
        try:
            parameters.check(cell, {name: row[j] for name, row in rows.items()}, insertions)
        except ConfigError as error:
            raise ConfigError(f"params['types'][{t}] (cell {int(ix[j])}): {error}") from None


def _traced_stub(value: jax.Array) -> np.ndarray:
    """A finite, positive stand-in of a traced leaf, for the shape check alone."""
    return np.ones(value.shape, value.dtype)


def merged_stacked(cells: Sequence[Cell], types: list[tuple[Cell, np.ndarray]],
                   values: Sequence[Mapping], insertions: tuple[Insertion, ...],
                   checked: bool = False, label: str = "types") -> dict[str, jax.Array]:
    """The types' stacked parameters laid out over the forest of ``cells`` (per compartment,
    a point mechanism's per instance): a cell's value where it has the mechanism, the
    default elsewhere. ``checked``: the values were already checked cell by cell;
    ``label``: the key of ``params`` that errors name.

    Raises:
      ConfigError: a leaf without the type's cells as leading axis, a value a cell would
        reject (named with its type and cell), or different ``celsius`` values.
    """
    if len(values) != len(types):
        raise ConfigError(f"params['types'] must have one dict per cell type ({len(types)}, "
                          f"cells given as the same Cell object are one type); got "
                          f"{len(values)}")
    own = [cell.insertions(v) for (cell, _), v in zip(types, values, strict=True)]
    for t, ((cell, ix), v, ins) in enumerate(zip(types, values, own, strict=True)):
        if not checked:
            _check_type(t, cell, ix, v, ins)
    celsius = [v["celsius"] for v in values]
    concrete = sorted({float(c) for t in celsius if not isinstance(t, jax.core.Tracer)
                       for c in np.asarray(t).reshape(-1)})
    if len(concrete) > 1:
        raise ConfigError(f"params[{label!r}][k]['celsius'] must be the same for every cell "
                          f"of a network; got {concrete}")
    expanded = [jax.vmap(lambda p, cell=cell, ins=ins: parameters.expand(cell, p, ins))(v)
                for (cell, _), v, ins in zip(types, values, own, strict=True)]
    table = parameters.table(insertions)
    owners = {name: mechanism for name, (_, _, mechanism) in table.items()}
    first_type = next(t for t, (_, ix) in enumerate(types) if ix[0] == 0)
    out = {"celsius": jnp.asarray(celsius[first_type][0]).reshape(())}
    order = _forest_order(cells, types, [[c.n] * ix.size for c, ix in types])
    for name in (*parameters.GEOMETRY, *parameters.CELL, *table):
        if name == "celsius":
            continue
        owner = owners.get(name)
        if owner is not None and owner.point:
            sizes = [[next(i.size(cell.n) for i in ins if i.mechanism is owner)
                      if name in e else 0] * ix.size
                     for (cell, ix), e, ins in zip(types, expanded, own, strict=True)]
            blocks = [e[name].reshape(-1) for e in expanded if name in e]
            out[name] = jnp.concatenate(blocks)[_forest_order(cells, types, sizes)]
            continue
        default = table[name][0] if name in table else None
        blocks = [e[name].reshape(-1) if name in e else
                  jnp.full((ix.size * cell.n,), default, jnp.result_type(float))
                  for (cell, ix), e in zip(types, expanded, strict=True)]
        out[name] = jnp.concatenate(blocks)[order]
    return out


def _forest_order(cells: Sequence[Cell], types: list[tuple[Cell, np.ndarray]],
                  sizes: list[list[int]]) -> np.ndarray:
    """Positions in the types' concatenated blocks (type by type, a type's cells in order,
    ``sizes[t][j]`` entries for its ``j``-th cell) of the entries in the network's cell order."""
    start, base = {}, 0
    for (_, ix), size in zip(types, sizes, strict=True):
        for i, s in zip(ix, size, strict=True):
            start[int(i)] = (base, s)
            base += s
    return np.concatenate([np.arange(start[i][0], start[i][0] + start[i][1])
                           for i in range(len(cells))] or [np.zeros(0)]).astype(np.int64)
