"""A cell's shape as NEURON's ``PlotShape`` draws it, coloured by region or by any value.

:func:`shape` projects each compartment's piece of the morphology
(:mod:`~jaxlean.models.neuron.plot.geometry`) onto a plane and draws it, with its
diameter to scale (one polygon per compartment) or as a line of fixed width. The
colour is the compartment's region (soma, axon, basal, apical), or any value with one
entry per compartment or per section: a parameter (``params["gIhbar_Ih"]``), a voltage
at one time (``out["v"][k]`` recorded everywhere), a gradient. Markers show where
stimuli, recordings and synapses are. Everything drawn is returned, to style further.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from jaxlean.errors import ConfigError
from jaxlean.models.neuron import Cell, Mechanism, SectionTree, Stimulus
from jaxlean.models.neuron.plot import _mpl
from jaxlean.models.neuron.plot.geometry import Geometry, compartment_geometry, project

__all__ = ["MARKERS", "REGION_COLORS", "ShapePlot", "compartment_values", "shape"]

REGION_COLORS = {1: ("soma", "black"), 2: ("axon", "tab:blue"), 3: ("basal", "tab:red"),
                 4: ("apical", "tab:green")}
"""SWC type -> (region, colour) of a shape coloured by region; other types are grey."""

MARKERS = {"recordings": dict(marker="s", s=70, color="tab:purple", label="recording"),
           "synapses": dict(marker="^", s=55, color="tab:cyan", label="synapse"),
           "stimuli": dict(marker="o", s=30, color="tab:orange", label="stimulus")}
"""The marker style of each kind of site (passed to ``ax.scatter``), drawn in this order: a
stimulus at a recorded compartment shows on top of the recording's marker."""


@dataclasses.dataclass(frozen=True)
class ShapePlot:
    """What :func:`shape` drew.

    Attributes:
      figure, ax: the figure and axes.
      collection: one polygon (``widths="scale"``) or polyline (``"lines"``) per
        compartment, in compartment order (a ``PolyCollection`` or ``LineCollection``).
      values: the colour values per compartment, or None (coloured by region).
      colorbar: the colour bar, or None.
      legend: the legend (regions, markers), or None.
      markers: kind (``"stimuli"``, ``"recordings"``, ``"synapses"``) -> its scatter.
      sites: kind -> the compartments marked.
      geometry: the compartments' 3-D pieces (reuse it for the next plot of the cell).
    """

    figure: object
    ax: object
    collection: object
    values: np.ndarray | None
    colorbar: object
    legend: object
    markers: dict
    sites: dict
    geometry: Geometry


def compartment_values(cell: Cell, values: object, what: str = "values") -> np.ndarray:
    """``values`` (a scalar, one per section or one per compartment, JAX or NumPy) as one
    float per compartment.

    Raises:
      ConfigError: another shape, or no finite value at all.
    """
    array = np.asarray(values, dtype=float)
    if array.shape == ():
        array = np.full(cell.n, float(array))
    elif array.shape == (cell.n,):
        pass
    elif array.shape == (cell.n_branches,):
        array = array[np.asarray(cell.branch)]
    else:
        raise ConfigError(f"{what} must be a scalar, one value per section ({cell.n_branches},) "
                          f"or per compartment ({cell.n},); got shape {array.shape}")
    if not np.isfinite(array).any():
        raise ConfigError(f"{what} has no finite value to colour by")
    return array


def shape(cell: Cell, morphology: str | Path | SectionTree | Geometry | None = None, *,
          values: object = None, ax=None, plane: str | object = "xy", widths: str = "scale",
          linewidth: float = 1.0, cmap: str | None = None, vmin: float | None = None,
          vmax: float | None = None, symmetric: bool = False, norm=None,
          colorbar: bool = True, label: str | None = None, stimuli: Sequence = (),
          recordings: Sequence = (), synapses: object = (), legend: bool = True,
          ) -> ShapePlot:
    """Draw ``cell``'s compartments in 2-D, as NEURON's ``PlotShape`` does.

    Args:
      cell: the cell.
      morphology: what the cell was built from (a path or a ``SectionTree``, edits such as
        the axon stub included), or the ``geometry`` of an earlier plot; None: a layout of
        straight branches (a cell from parents has no points).
      values: colour by these (a scalar, one per section or per compartment: a parameter,
        a voltage, a gradient); None: by region (:data:`REGION_COLORS`).
      ax: the axes to draw in (default: a new figure).
      plane: the view, ``"xy"`` (NEURON's), ``"xz"``, ``"yz"``, or a ``(2, 3)`` matrix.
      widths: ``"scale"``: diameters to scale (polygons); ``"lines"``: lines of ``linewidth``.
      cmap, vmin, vmax, norm: matplotlib's colour map and limits (default: the values'
        range; ``symmetric``: ``[-m, m]`` with ``m`` the largest magnitude, diverging map).
      colorbar, label: draw a colour bar for ``values``, with this label.
      stimuli, recordings: sites to mark: compartment indices, ``(section, x)`` pairs or
        :class:`~jaxlean.models.neuron.Stimulus` objects.
      synapses: sites to mark: as ``stimuli``, or a point :class:`Mechanism` (its
        instances in the cell), or True (every point mechanism's instances).
      legend: add a legend of the regions (when coloured by region) and the markers.

    Raises:
      ConfigError: values of the wrong shape, an unknown plane or ``widths``, a site that
        is not in the cell, a morphology that is not the cell's.
    """
    if widths not in ("scale", "lines"):
        raise ConfigError(f"shape: widths must be 'scale' (diameters to scale) or 'lines'; got "
                          f"{widths!r}")
    geometry = (morphology if isinstance(morphology, Geometry)
                else compartment_geometry(cell, morphology))
    if len(geometry.points) != cell.n:
        raise ConfigError(f"shape: the geometry has {len(geometry.points)} compartments and "
                          f"the cell {cell.n}")
    plt = _mpl.pyplot()
    from matplotlib import collections, colors, patches

    flat = [project(p, plane) for p in geometry.points]
    figure, ax = _mpl.axes(ax, _figsize(np.concatenate(flat)))
    if widths == "scale":
        # the edge (0.3 pt) keeps branches thinner than a pixel visible
        collection = collections.PolyCollection(
            [_outline(p, d) for p, d in zip(flat, geometry.diameters, strict=True)],
            edgecolors="face", linewidths=0.3)
    else:
        collection = collections.LineCollection(flat, linewidths=linewidth, capstyle="round")
    shown = None
    bar = None
    if values is None:
        kinds = np.asarray(cell.kind).tolist()
        region = [REGION_COLORS.get(k, ("other", "tab:gray"))[1] for k in kinds]
        if widths == "lines":
            collection.set_color(region)
        else:
            collection.set_facecolor(region)
    else:
        shown = compartment_values(cell, values)
        if norm is None:
            finite = shown[np.isfinite(shown)]
            low, high = float(finite.min()), float(finite.max())
            if symmetric:
                high = max(abs(low), abs(high))
                low = -high
            norm = colors.Normalize(low if vmin is None else vmin, high if vmax is None else vmax)
        collection.set_array(shown)
        collection.set_cmap(plt.get_cmap(cmap or ("RdBu_r" if symmetric else "viridis")))
        collection.set_norm(norm)
    ax.add_collection(collection, autolim=True)
    ax.autoscale_view()
    ax.set_aspect("equal")
    names = plane if isinstance(plane, str) else "  "
    ax.set(xlabel=f"{names[0]} (um)".strip(), ylabel=f"{names[1]} (um)".strip())
    if shown is not None and colorbar:
        bar = figure.colorbar(collection, ax=ax, label=label, shrink=0.8)
    markers, sites = {}, {}
    given_sites = {"stimuli": stimuli, "recordings": recordings, "synapses": synapses}
    for kind in MARKERS:
        where = _sites(cell, given_sites[kind], kind)
        if where.size:
            xy = project(geometry.centres[where], plane)
            markers[kind] = ax.scatter(xy[:, 0], xy[:, 1], zorder=3, edgecolors="black",
                                       linewidths=0.6, **MARKERS[kind])
            sites[kind] = where
    drawn_legend = None
    if legend:
        handles = []
        if values is None:
            present = sorted(set(np.asarray(cell.kind).tolist()))
            handles = [patches.Patch(color=REGION_COLORS.get(k, (f"type {k}", "tab:gray"))[1],
                                     label=REGION_COLORS.get(k, (f"type {k}",))[0])
                       for k in present]
        handles += [markers[kind] for kind in ("stimuli", "recordings", "synapses")
                    if kind in markers]
        if handles:
            drawn_legend = ax.legend(handles=handles, fontsize=8, frameon=False,
                                     loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return ShapePlot(figure, ax, collection, shown, bar, drawn_legend, markers, sites, geometry)


def _figsize(xy: np.ndarray) -> tuple[float, float]:
    """A figure of the drawing's aspect, its larger side 5 inches, with room for a legend."""
    width, height = np.ptp(xy, axis=0) + 1e-9
    scale = 5.0 / max(width, height)
    return (max(width * scale, 1.5) + 1.8, max(height * scale, 1.5) + 0.6)


def _sites(cell: Cell, given: object, kind: str) -> np.ndarray:
    """The compartments named by ``given`` (see :func:`shape`)."""
    if given is True and kind == "synapses":
        found = [i.compartments for i in cell.mechanisms if i.mechanism.point]
        return np.concatenate(found).astype(int) if found else np.zeros(0, int)
    if isinstance(given, Mechanism):
        found = [i.compartments for i in cell.mechanisms if i.mechanism is given]
        if not found or not given.point:
            raise ConfigError(f"shape: {kind}={given.name!r} is not a point mechanism inserted "
                              f"in the cell")
        return np.asarray(found[0], dtype=int)
    if given is None or given is False:
        return np.zeros(0, int)
    if isinstance(given, Stimulus | int | np.integer) or (
            isinstance(given, tuple) and len(given) == 2 and isinstance(given[0], str)):
        given = [given]
    out = []
    for item in given:
        if isinstance(item, Stimulus):
            out.extend(np.atleast_1d(np.asarray(item.compartments, dtype=int)).tolist())
        elif isinstance(item, tuple) and len(item) == 2:
            out.append(cell.location(*item))
        elif isinstance(item, int | np.integer) and not isinstance(item, bool):
            out.append(int(item))
        else:
            raise ConfigError(f"shape: each of {kind} must be a compartment index, a (section, "
                              f"x) pair or a Stimulus; got {item!r}")
    where = np.asarray(out, dtype=int)
    bad = where[(where < 0) | (where >= cell.n)]
    if bad.size:
        raise ConfigError(f"shape: {kind} names compartment {int(bad[0])}; the cell has "
                          f"compartments 0 to {cell.n - 1}")
    return where


def _outline(points: np.ndarray, diameters: np.ndarray) -> np.ndarray:
    """The outline of a polyline with a diameter at each point (a ribbon polygon)."""
    steps = np.diff(points, axis=0)
    size = np.hypot(steps[:, 0], steps[:, 1])
    scale = max(float(np.abs(points).max()), 1.0)
    unit = np.full_like(steps, np.nan)
    ok = size > 1e-9 * scale
    unit[ok] = steps[ok] / size[ok, None]
    if not ok.any():
        unit[:] = (1.0, 0.0)
    else:  # a step seen end-on takes its neighbour's direction
        index = np.where(ok, np.arange(ok.size), -1)
        index = np.maximum.accumulate(index)
        index[index < 0] = np.flatnonzero(ok)[0]
        unit = unit[index]
    tangent = np.concatenate([unit[:1], unit[:-1] + unit[1:], unit[-1:]])
    length = np.hypot(tangent[:, 0], tangent[:, 1])
    folded = length < 1e-6
    tangent[folded] = np.concatenate([unit[:1], unit])[folded]
    tangent /= np.hypot(tangent[:, 0], tangent[:, 1])[:, None]
    normal = np.stack([-tangent[:, 1], tangent[:, 0]], axis=1) * (0.5 * diameters[:, None])
    return np.concatenate([points + normal, (points - normal)[::-1]])
