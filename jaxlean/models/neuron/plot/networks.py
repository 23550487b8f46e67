"""A network's spikes as a raster and its connections as a matrix.

:func:`raster` draws ``simulate_network``'s spike times, one row per detector;
:func:`connection_matrix` counts (or sums a parameter of) the connections from each
cell to each other cell, and :func:`connections` draws that matrix.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from jaxlean.errors import ConfigError
from jaxlean.models.neuron import GapJunction, Network
from jaxlean.models.neuron.plot import _mpl
from jaxlean.models.neuron.plot.recordings import spike_times

__all__ = ["MatrixPlot", "RasterPlot", "connection_matrix", "connections", "raster"]


@dataclasses.dataclass(frozen=True)
class RasterPlot:
    """What :func:`raster` drew: ``figure``, ``ax``, ``events`` (one ``EventCollection`` per
    row, bottom to top) and ``spikes`` (each row's times, ms)."""

    figure: object
    ax: object
    events: list
    spikes: list


@dataclasses.dataclass(frozen=True)
class MatrixPlot:
    """What :func:`connections` drew: ``figure``, ``ax``, ``image`` (``AxesImage``),
    ``colorbar`` (or None), ``texts`` (the entries written on it) and ``matrix``
    ``[pre cell, post cell]``."""

    figure: object
    ax: object
    image: object
    colorbar: object
    texts: list
    matrix: np.ndarray


def raster(spikes: Mapping | Sequence, *, labels: Sequence[str] | None = None,
           t_max: float | None = None, ax=None, color: str = "black") -> RasterPlot:
    """Draw spike times, one row per detector (row 0 at the bottom).

    Args:
      spikes: ``simulate_network``'s (or ``simulate``'s) result, run with ``detect=``, or
        one sequence of times (ms) per row.
      labels: a name per row (default ``cell 0``, ... when given a result, else ``0``, ...).
      t_max: the x axis' end (default: the last spike).
      ax: the axes to draw in (default: a new figure).

    Raises:
      ConfigError: a result without spikes, or labels of another length.
    """
    if isinstance(spikes, Mapping):
        rows = spike_times(spikes)
        default = [f"detector {k}" for k in range(len(rows))]
    else:
        rows = [np.asarray(row, dtype=float).reshape(-1) for row in spikes]
        default = [str(k) for k in range(len(rows))]
    labels = default if labels is None else [str(x) for x in labels]
    if len(labels) != len(rows):
        raise ConfigError(f"raster: {len(labels)} labels for {len(rows)} rows")
    figure, ax = _mpl.axes(ax, (6.0, 0.6 + 0.35 * max(len(rows), 2)))
    events = ax.eventplot(rows, lineoffsets=np.arange(len(rows)), linelengths=0.8,
                          colors=color) if rows else []
    ax.set_yticks(np.arange(len(rows)), labels)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ends = [float(row.max()) for row in rows if row.size]
    ax.set_xlim(0.0, t_max if t_max is not None else (max(ends) if ends else 1.0))
    ax.set(xlabel="t (ms)")
    return RasterPlot(figure, ax, list(events), rows)


def connection_matrix(net: Network, params: Mapping | None = None, value: str | None = None,
                      synapses: Sequence[str] | None = None) -> np.ndarray:
    """``[pre cell, post cell]``: the number of connections, or with ``value`` the sum of
    that parameter (``"weight"``, ``"gS"``, ``"g"``) over them, from ``params["synapses"]``
    (default ``net.params()``). A gap junction joins both ways: it counts in both entries.

    Args:
      synapses: the synapse names to include (default: all).

    Raises:
      ConfigError: an unknown synapse name, or a ``value`` that a selected synapse lacks.
    """
    groups = net.synapse_groups()
    chosen = list(groups) if synapses is None else list(synapses)
    unknown = sorted(set(chosen) - set(groups))
    if unknown:
        raise ConfigError(f"connection_matrix: no synapse named {unknown}; the network's are "
                          f"{sorted(groups)}")
    table = (params if params is not None else net.params())["synapses"] if value else {}
    size = len(net.cells)
    matrix = np.zeros((size, size))
    for name in chosen:
        synapse, numbers = groups[name]
        if value is not None and value not in table.get(name, {}):
            raise ConfigError(f"connection_matrix: synapse {name!r} has no parameter "
                              f"{value!r}; its parameters are {sorted(table.get(name, {}))}")
        entries = (np.broadcast_to(np.asarray(table[name][value], dtype=float), numbers.shape)
                   if value is not None else np.ones(numbers.size))
        for number, entry in zip(numbers.tolist(), entries.tolist(), strict=True):
            c = net.connections[number]
            matrix[c.pre_cell, c.post_cell] += entry
            if isinstance(synapse, GapJunction) and c.pre_cell != c.post_cell:
                matrix[c.post_cell, c.pre_cell] += entry
    return matrix


def connections(net: Network, params: Mapping | None = None, *, value: str | None = None,
                synapses: Sequence[str] | None = None, ax=None, cmap: str = "Greys",
                colorbar: bool = True, annotate: bool | None = None) -> MatrixPlot:
    """Draw :func:`connection_matrix` (rows: presynaptic cells, columns: postsynaptic).

    Args:
      net, params, value, synapses: as :func:`connection_matrix`.
      ax: the axes to draw in (default: a new figure).
      cmap, colorbar: the colour map; a colour bar.
      annotate: write each non-zero entry on the matrix (default: for up to 12 cells).
    """
    matrix = connection_matrix(net, params, value, synapses)
    size = matrix.shape[0]
    figure, ax = _mpl.axes(ax, (4.2, 3.6))
    image = ax.imshow(matrix, cmap=cmap, vmin=min(0.0, float(matrix.min())),
                      vmax=max(float(matrix.max()), 1e-30), interpolation="nearest")
    ax.set(xlabel="postsynaptic cell", ylabel="presynaptic cell")
    ticks = np.arange(size) if size <= 20 else np.linspace(0, size - 1, 6).astype(int)
    ax.set_xticks(ticks)
    ax.set_yticks(ticks)
    bar = figure.colorbar(image, ax=ax, label=value or "connections") if colorbar else None
    texts = []
    if annotate if annotate is not None else size <= 12:
        middle = 0.5 * (float(matrix.max()) + float(matrix.min()))
        for i, j in zip(*np.nonzero(matrix), strict=True):
            texts.append(ax.text(j, i, f"{matrix[i, j]:.3g}", ha="center", va="center",
                                 fontsize=8, color="white" if matrix[i, j] > middle else "black"))
    return MatrixPlot(figure, ax, image, bar, texts, matrix)
