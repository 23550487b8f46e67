"""A section of a morphology: an unbranched piece of cable with its 3-D points.

Shared by the SWC reader (:mod:`jaxlean.models.neuron.morphology.swc`) and Import3d's rules
(:mod:`jaxlean.models.neuron.morphology._import3d`), which both build sections; kept apart so
neither imports the other.
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["Section"]


@dataclasses.dataclass(frozen=True, eq=False)
class Section:
    """An unbranched piece of cable: its 3-D points (um) proximal to distal and where it joins.

    Attributes:
      xyz, radius: the points (at least two) and their radii.
      parent: index of the parent section in the list, ``-1`` for the root.
      parent_x: where on the parent it joins: ``0`` (start), ``0.5`` (centre) or ``1`` (end).
      kind: SWC type of its points (1 soma, 2 axon, 3 basal, 4 apical dendrite).
      last_id: SWC id of its distal point, to find it again.
    """

    xyz: np.ndarray
    radius: np.ndarray
    parent: int
    parent_x: float
    kind: int
    last_id: int
