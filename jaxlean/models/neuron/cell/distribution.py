"""Parameters by region and by path distance from the soma, as per-compartment arrays.

A fitted cell model sets most channel densities per region (soma, axon, basal
and apical dendrites: SWC types 1 to 4, ASC's ``CellBody``, ``Axon``,
``Dendrite``, ``Apical``) and some as functions of the path distance from the
soma (Ih rising exponentially along the apical dendrite). :func:`by_region`
turns such a description into one value per compartment, the form
:func:`~jaxlean.models.neuron.simulation.cable.simulate` takes (``params[name]`` of shape
``(cell.n,)``)::

    gbar_ih = by_region(cell, {"all": 1e-4,
                               "apical": Exponential(-0.8696e-4, 2.087e-4, 0.0031)})

A region's value is a number, or a function of the distance (um) applied to the
distances of its compartments: :class:`Linear`, :class:`Exponential`,
:class:`Sigmoid` or any JAX function (``lambda d: g * jnp.exp(d / 200)``). All are
differentiable in their coefficients (the classes are pytrees; a closure is
differentiable in what it closes over). The distance is NEURON's ``h.distance``
from ``soma(0.5)`` to each segment's centre (:func:`path_distance`).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.morphology.swc import REGIONS

__all__ = ["REGIONS", "Exponential", "Linear", "Sigmoid", "at_distance", "by_region",
           "distribute", "path_distance"]


class Linear(eqx.Module):
    """``intercept + slope * d``."""

    intercept: jax.Array | float
    slope: jax.Array | float

    def __call__(self, d: jax.Array) -> jax.Array:
        return self.intercept + self.slope * d


class Exponential(eqx.Module):
    """``offset + scale * exp(rate * d)`` (Hay et al.'s Ih: ``offset = -0.8696 g``,
    ``scale = 2.087 g``, ``rate = 0.0031`` /um)."""

    offset: jax.Array | float
    scale: jax.Array | float
    rate: jax.Array | float

    def __call__(self, d: jax.Array) -> jax.Array:
        return self.offset + self.scale * jnp.exp(self.rate * d)


class Sigmoid(eqx.Module):
    """``low + (high - low) / (1 + exp((midpoint - d) / width))``: from ``low`` near the
    soma to ``high`` far from it (a negative ``width`` runs the other way)."""

    low: jax.Array | float
    high: jax.Array | float
    midpoint: jax.Array | float
    width: jax.Array | float

    def __call__(self, d: jax.Array) -> jax.Array:
        return self.low + (self.high - self.low) * jax.nn.sigmoid((d - self.midpoint)
                                                                   / self.width)


_DISTANCES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def path_distance(cell, origin: int | None = None) -> np.ndarray:
    """Path length (um) from ``origin`` to each compartment's centre, ``(cell.n,)``.

    ``origin`` is a compartment (default: ``soma(0.5)``, the soma section's middle
    segment, or the root compartment of a cell without section names). The path
    runs along the cable through the nodes NEURON joins sections at, so the
    values are NEURON's ``h.distance(soma(0.5), seg)`` (with an odd ``nseg`` on the
    soma, whose middle is then a segment's centre).
    """
    if origin is None:
        named = bool(cell.section_names) and cell.section_names[0].startswith("soma")
        origin = cell.location(0, 0.5) if named else cell.soma
    if isinstance(origin, bool) or not isinstance(origin, int | np.integer) or not (
            0 <= origin < cell.n):
        raise ConfigError(f"path_distance: origin must be a compartment in [0, {cell.n - 1}]; "
                          f"got {origin!r}")
    cached = _DISTANCES.setdefault(cell, {})
    if int(origin) not in cached:
        cached[int(origin)] = _from(cell, int(origin))
    return cached[int(origin)].copy()


def at_distance(cell, distance: float, region: str | int = "apical") -> tuple[str | int, float]:
    """The point at path distance ``distance`` (um) from ``soma(0.5)`` in ``region``, as
    ``(section, x)`` (``cell.location(*point)``; ``(cell_index, point)`` in a network):
    BluePyOpt's ``NrnSomaDistanceCompLocation``. Of the region's sections (in NEURON's
    order) whose span from their start to their end holds ``distance``, the last one, at
    ``x = (distance - start) / (end - start)``; the distances are :func:`path_distance`'s.

    Raises:
      ConfigError: an unknown region, or no section of it spans ``distance`` (the
        region's range named).
    """
    kind = _types(region, "at_distance")
    centre = path_distance(cell)
    found, span = None, [np.inf, -np.inf]
    for branch in range(cell.n_branches):
        members = np.flatnonzero(cell.branch == branch)
        if kind is not None and cell.kind[members[0]] != kind:
            continue
        start = centre[members[0]] - 0.5 * cell.length[members[0]]
        end = centre[members[-1]] + 0.5 * cell.length[members[-1]]
        span = [min(span[0], start), max(span[1], end)]
        if start <= distance <= end:
            name = cell.section_names[branch] if cell.section_names else branch
            found = (name, float((distance - start) / (end - start)))
    if found is None:
        raise ConfigError(f"at_distance: no section of region {region!r} spans {distance} um "
                          f"from soma(0.5); its sections span {span[0]:.6g} to {span[1]:.6g} um")
    return found


def _from(cell, origin: int) -> np.ndarray:
    parents = cell.tree.parents            # compartments, then junction nodes
    half = np.concatenate([0.5 * cell.length, 0.5 * cell.length, [0.0]])
    edge = half[cell.half_index].sum(axis=1)
    from_root = np.zeros(parents.size)
    for node in cell.tree.order[::-1].tolist():
        from_root[node] = from_root[parents[node]] + edge[node]
    on_path = np.zeros(parents.size, dtype=bool)
    node = origin
    while node >= 0:
        on_path[node] = True
        node = parents[node]
    meet = np.arange(parents.size)      # where the path from each node joins origin's
    for node in cell.tree.order[::-1].tolist():
        if not on_path[node]:
            meet[node] = meet[parents[node]]
    distance = from_root + from_root[origin] - 2 * from_root[meet]
    return distance[: cell.n]


def _types(region: object, argument: str) -> int | None:
    if isinstance(region, str):
        if region not in REGIONS:
            raise ConfigError(f"{argument}: unknown region {region!r}; regions are "
                              f"{', '.join(REGIONS)} or an SWC type (an integer)")
        return REGIONS[region]
    if isinstance(region, bool) or not isinstance(region, int | np.integer):
        raise ConfigError(f"{argument}: a region is a name ({', '.join(REGIONS)}) or an SWC "
                          f"type (an integer); got {region!r}")
    return int(region)


def by_region(cell, values: Mapping[str | int, object], *, fill: float | None = None,
              origin: int | None = None, name: str = "by_region") -> jax.Array:
    """One value per compartment, ``(cell.n,)``, from values given per region.

    Args:
      cell: a :class:`~jaxlean.models.neuron.cell.cell.Cell` (its ``kind`` holds the SWC types).
      values: ``{region: value}``; a region is a name of :data:`REGIONS` or an SWC
        type; a value is a number (a scalar array), an array of one value per
        compartment of the region (in compartment order), or a function of the path
        distance (um, a JAX array of the region's compartments) returning values of
        that shape or a scalar. ``"all"`` is applied first; the others override it.
      fill: the value of compartments no region covers; ``None``: there must be none.
      origin: where distances start (see :func:`path_distance`); default ``soma(0.5)``.
      name: the parameter's name, for messages.

    Raises:
      ConfigError: an unknown region, a region with no compartment in this cell,
        compartments left uncovered without ``fill``, or a function returning a
        wrong shape; each named.
    """
    if not isinstance(values, Mapping) or not values:
        raise ConfigError(f"{name}: values must be a non-empty dict {{region: value}}; "
                          f"got {values!r}")
    kinds = np.asarray(cell.kind)
    ordered = sorted(values.items(), key=lambda item: item[0] != "all")
    selections = []
    for region, value in ordered:
        swc_type = _types(region, f"{name}")
        where = np.arange(cell.n) if swc_type is None else np.flatnonzero(kinds == swc_type)
        if where.size == 0:
            present = sorted(set(kinds.tolist()))
            raise ConfigError(f"{name}: region {region!r} has no compartment in this cell (its "
                              f"SWC types are {present}: "
                              f"{', '.join(_type_name(k) for k in present)})")
        selections.append((region, where, value))
    covered = np.zeros(cell.n, dtype=bool)
    for _, where, _ in selections:
        covered[where] = True
    if fill is None and not covered.all():
        missing = sorted(set(kinds[~covered].tolist()))
        raise ConfigError(f"{name}: no value for the compartments of SWC type(s) {missing} "
                          f"({', '.join(_type_name(k) for k in missing)}); give those regions "
                          f"or fill=")
    dtype = jnp.result_type(float)
    out = jnp.full(cell.n, 0.0 if fill is None else fill, dtype=dtype)
    distance = None
    for region, where, value in selections:
        if callable(value):
            if distance is None:
                distance = jnp.asarray(path_distance(cell, origin), dtype=dtype)
            result = jnp.asarray(value(distance[where]))
        else:
            result = jnp.asarray(value)
        if result.shape not in ((), (where.size,)):
            raise ConfigError(f"{name}: the value of region {region!r} must be a scalar or "
                              f"one value per compartment of the region ({where.size},); "
                              f"got shape {result.shape}")
        if result.ndim == 0:  # a select, not a scatter: one kernel fewer in a compiled run
            out = jnp.where(np.isin(np.arange(cell.n), where), result.astype(dtype), out)
        else:
            out = out.at[where].set(result.astype(dtype))
    return out


def distribute(cell, spec: Mapping[str, Mapping[str | int, object]], *,
               fill: float | None = None, origin: int | None = None) -> dict[str, jax.Array]:
    """:func:`by_region` for several parameters: ``{name: {region: value}}`` to
    ``{name: (cell.n,) array}``, to merge into ``cell.params()``."""
    if not isinstance(spec, Mapping):
        raise ConfigError(f"distribute: spec must be a dict {{parameter: {{region: value}}}}; "
                          f"got {type(spec).__name__}")
    return {key: by_region(cell, rules, fill=fill, origin=origin, name=key)
            for key, rules in spec.items()}


def _type_name(kind: int) -> str:
    return {1: "soma", 2: "axon", 3: "basal", 4: "apical"}.get(int(kind), f"type {kind}")

