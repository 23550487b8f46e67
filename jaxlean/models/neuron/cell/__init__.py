"""A cell: compartments from a morphology, mechanisms inserted, and its parameters.

* :mod:`~jaxlean.models.neuron.cell.cell`: ``Cell`` (``from_swc``, ``from_morphology``,
  ``insert``) and ``build_cell``: sections to compartments and junctions.
* :mod:`~jaxlean.models.neuron.cell.params`: parameter names, defaults, shapes, presets.
* :mod:`~jaxlean.models.neuron.cell.distribution`: parameters by region and by path
  distance from the soma, and the point at a distance (``at_distance``);
  :mod:`~jaxlean.models.neuron.cell.point_distance`: NEURON's ``h.distance`` from any point.
* :mod:`~jaxlean.models.neuron.cell.transforms`: bounded and positive parameters for fitting.
"""

from __future__ import annotations

from jaxlean.models.neuron.cell import distribution, params, point_distance, transforms
from jaxlean.models.neuron.cell.cell import ATTACH, Cell, build_cell
from jaxlean.models.neuron.cell.distribution import (
    REGIONS,
    Exponential,
    Linear,
    Sigmoid,
    at_distance,
    by_region,
    distribute,
    path_distance,
)
from jaxlean.models.neuron.cell.params import (
    CELL,
    GEOMETRY,
    PRESETS,
    Compartments,
    Params,
    check_names,
    defaults,
    expand,
    inferred_preset,
    preset,
    table,
)
from jaxlean.models.neuron.cell.point_distance import distance_from
from jaxlean.models.neuron.cell.transforms import (
    ParamTransform,
    SigmoidTransform,
    SoftplusTransform,
    Transform,
)

__all__ = ["ATTACH", "CELL", "GEOMETRY", "PRESETS", "REGIONS", "Cell", "Compartments",
           "Exponential", "Linear", "ParamTransform", "Params", "Sigmoid", "SigmoidTransform",
           "SoftplusTransform", "Transform", "at_distance", "build_cell", "by_region",
           "check_names", "defaults", "distance_from", "distribute", "distribution", "expand",
           "inferred_preset", "params", "path_distance", "point_distance", "preset", "table",
           "transforms"]
