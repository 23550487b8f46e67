"""Pictures of cells and networks, as NEURON's ``PlotShape`` and graphs draw them (matplotlib).

Needs the ``plot`` extra (``pip install 'jaxlean[plot]'``); nothing here is imported by
``import jaxlean``, and matplotlib itself only when a function draws.

* :mod:`~jaxlean.models.neuron.plot.geometry`: each compartment's piece of the
  morphology's 3-D points (NEURON's segments), or a layout for a cell without points.
* :mod:`~jaxlean.models.neuron.plot.shapes`: :func:`shape`, the cell projected on a plane,
  diameters to scale or as lines, coloured by region or by any per-compartment value (a
  parameter, a voltage, a gradient), with markers at stimuli, recordings and synapses.
* :mod:`~jaxlean.models.neuron.plot.recordings`: :func:`traces`, recorded traces with their
  spikes, beside a reference (NEURON's) and the difference.
* :mod:`~jaxlean.models.neuron.plot.networks`: :func:`raster` of a network's spikes and
  :func:`connections`, its connection matrix.

Each function returns what it drew (figure, axes, collections, lines) to style further.
"""

from __future__ import annotations

from jaxlean.models.neuron.plot import geometry, networks, recordings, shapes
from jaxlean.models.neuron.plot.geometry import Geometry, compartment_geometry, project
from jaxlean.models.neuron.plot.networks import (
    MatrixPlot,
    RasterPlot,
    connection_matrix,
    connections,
    raster,
)
from jaxlean.models.neuron.plot.recordings import TracePlot, crossings, spike_times, traces
from jaxlean.models.neuron.plot.shapes import (
    MARKERS,
    REGION_COLORS,
    ShapePlot,
    compartment_values,
    shape,
)

__all__ = ["MARKERS", "REGION_COLORS", "Geometry", "MatrixPlot", "RasterPlot", "ShapePlot",
           "TracePlot", "compartment_geometry", "compartment_values", "connection_matrix",
           "connections", "crossings", "geometry", "networks", "project", "raster",
           "recordings", "shape", "shapes", "spike_times", "traces"]
