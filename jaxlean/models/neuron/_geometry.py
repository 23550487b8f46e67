"""Segment geometry of a section from its 3-D points, as NEURON computes it.

A section of arc length ``L`` cut into ``nseg`` equal segments; each segment has
a node at its centre. The radius varies linearly with arc length between 3-D
points, so each half segment is a chain of frustums: its membrane area is the
sum of their lateral areas ``pi (r1 + r2) sqrt(dl^2 + (r1 - r2)^2)`` and its axial
resistance (per unit resistivity) the sum of ``dl / (pi r1 r2)``.
"""

from __future__ import annotations

import numpy as np


def _half(arc: np.ndarray, radius: np.ndarray, a: float, b: float) -> tuple[float, float]:
    """Area (um2) and resistance per resistivity (1/um) of the cable from arc ``a`` to ``b``."""
    inside = arc[(arc > a) & (arc < b)]
    s = np.concatenate([[a], inside, [b]])
    r = np.interp(s, arc, radius)
    dl, r1, r2 = np.diff(s), r[:-1], r[1:]
    area = float(np.sum(np.pi * (r1 + r2) * np.sqrt(dl**2 + (r1 - r2) ** 2)))
    return area, float(np.sum(dl / (np.pi * r1 * r2)))


def segments(xyz: np.ndarray, radius: np.ndarray, nseg: int) -> dict[str, np.ndarray]:
    """Per segment: ``length`` (um), ``area`` (um2), and the proximal and distal half
    resistances per unit resistivity, ``r_proximal`` and ``r_distal`` (1/um)."""
    arc = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(xyz, axis=0), axis=1))])
    total = max(float(arc[-1]), 1e-3)
    arc = arc if arc[-1] > 0 else np.linspace(0.0, total, arc.size)
    edges = np.linspace(0.0, total, 2 * nseg + 1)
    halves = [_half(arc, radius, edges[k], edges[k + 1]) for k in range(2 * nseg)]
    area = np.array([h[0] for h in halves]).reshape(nseg, 2)
    resistance = np.array([h[1] for h in halves]).reshape(nseg, 2)
    return {"length": np.full(nseg, total / nseg), "area": area.sum(axis=1),
            "r_proximal": resistance[:, 0], "r_distal": resistance[:, 1]}
