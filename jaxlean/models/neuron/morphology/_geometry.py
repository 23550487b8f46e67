"""Segment geometry of a section from its 3-D points, as NEURON computes it (``diam_from_list``).

A section of arc length ``L`` is cut into ``nseg`` equal segments, each with a
node at its centre. Between 3-D points the diameter varies linearly with arc
length, so each half segment is a chain of frustums: its membrane area sums
their lateral areas ``pi (r1 + r2) sqrt(dl^2 + (r1 - r2)^2)`` and its axial
resistance (per unit resistivity) sums ``dl / (pi r1 r2)``. A repeated point
with a new radius (``dl = 0``) adds the ring ``pi (r1 + r2) |r1 - r2|`` and no
resistance; the cable before it keeps the earlier radius. Like NEURON, the walk
goes past a point lying exactly on a half-segment boundary, so such a ring
belongs to the half before the boundary, and a ring at a section's last point
counts only if the last boundary, summed half by half, reaches its arc length.
Which side of such a point a boundary falls on depends on the last bit, so the
points are rounded as NEURON stores them (8 significant digits, then float32)
and the arc lengths summed in its order.
"""

from __future__ import annotations

import math

import numpy as np

_TINY = 1e-15   # NEURON's floor for a piece's length and its conductance


def _walk(arc: np.ndarray, diam: np.ndarray, nseg: int) -> np.ndarray:
    """``(2 nseg, 2)``: area (um2) and resistance per resistivity (1/um) of each half segment."""
    halves = np.zeros((2 * nseg, 2))
    ds = arc[-1] / nseg
    last = arc.size - 1
    j, x1, y1, end = 0, float(arc[0]), float(diam[0]), 0.0
    for half in range(2 * nseg):
        end = (half // 2) * ds + ds / 2 if half % 2 == 0 else end + ds / 2
        area = resistance = 0.0
        while True:
            xj, xn = arc[j], arc[j + 1]
            if xn > end or j + 1 == last:
                frac = 1.0 if abs(xn - xj) < 1e-10 else (end - xj) / (xn - xj)
                x2, y2, step = end, (1 - frac) * diam[j] + frac * diam[j + 1], 0
            else:
                x2, y2, step = xn, diam[j + 1], 1
            dl = max(x2 - x1, _TINY)
            resistance += 1.0 / max(y1 * y2 / dl, _TINY)
            area += (y1 + y2) * math.hypot(dl, 0.5 * (y2 - y1))
            x1, y1 = x2, y2
            if not step:
                break
            j += 1
        halves[half] = (0.5 * math.pi * area, 4.0 / math.pi * resistance)
    return halves


def _as_stored(values: np.ndarray) -> np.ndarray:
    """Values as Import3d passes them to NEURON (``%.8g``) and NEURON keeps them (float32)."""
    flat = np.asarray(values, dtype=float).ravel()
    return np.array([float(f"{v:.8g}") for v in flat], dtype=np.float32).reshape(np.shape(values))


def segments(xyz: np.ndarray, radius: np.ndarray, nseg: int) -> dict[str, np.ndarray]:
    """Per segment: ``length`` (um), ``area`` (um2), and the proximal and distal half
    resistances per unit resistivity, ``r_proximal`` and ``r_distal`` (1/um).

    ``xyz`` and ``radius`` are the section's 3-D points (at least two, of
    positive total length), proximal to distal.
    """
    xyz, diam = _as_stored(xyz), _as_stored(2 * np.asarray(radius, dtype=float))
    steps = np.diff(xyz, axis=0).astype(float)
    arc = np.concatenate([[0.0], np.cumsum(np.sqrt(np.sum(steps * steps, axis=1)))])
    halves = _walk(arc, diam.astype(float), nseg).reshape(nseg, 2, 2)
    return {"length": np.full(nseg, arc[-1] / nseg), "area": halves[:, :, 0].sum(axis=1),
            "r_proximal": halves[:, 0, 1], "r_distal": halves[:, 1, 1]}
