"""A soma contour as NEURON's Import3d turns it into a soma section (``contour2centroid``).

Import3d (``import3d_gui.hoc``, ``import3d_sec.hoc``) replaces a closed outline of
the cell body by a cable along the outline's principal axis:

1. the outline is resampled at 101 points equally spaced along its length
   (``contourcenter``; the length is measured in the xy plane, from the first
   point to the last one, not back to the first), and their mean is its centre;
2. the major axis is the eigenvector of the largest eigenvalue of the
   resampled points' scatter matrix about the centre (made to point towards
   its largest component's positive side); the "minor" axis is that of the
   middle eigenvalue, projected on the xy plane and normalised;
3. each point's position along the major axis and its offset along the minor
   one split the outline into two sides, from the point furthest along the
   major axis back to the nearest one and on to the furthest again; points
   that do not advance along the axis are dropped from each side (making it
   convex);
4. 21 stations, equally spaced from the second smallest to the second largest
   position of both sides together, get their diameter as the distance between
   the two sides (each interpolated linearly) and lie on the major axis; the
   two end diameters are averaged with their neighbours', so none is zero.

Every step is NEURON's, in its order of operations (sums accumulated left to
right, as ``Vector.sum`` does), so the 3-D points agree with NEURON's to its
``%.8g`` printing.
"""

from __future__ import annotations

import math

import numpy as np

from jaxlean.errors import MorphologyError

__all__ = ["centroid", "contour_center"]


def _sum(values: np.ndarray) -> float:
    """``Vector.sum``: left to right (numpy's pairwise sum rounds differently)."""
    total = 0.0
    for value in np.asarray(values, dtype=float).tolist():
        total += value
    return total


def _mag(vector) -> float:
    return math.sqrt(_sum(np.asarray(vector, dtype=float) ** 2))


def _interpolate(x_new: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``Vector.interpolate``: linear, ends held, repeated abscissae skipped."""
    out = np.empty(x_new.size)
    i, n_new, n = 0, x_new.size, x.size
    while i < n_new and x_new[i] <= x[0]:
        out[i] = y[0]
        i += 1
    for j in range(1, n):
        if i >= n_new:
            break
        if x[j] <= x[j - 1]:
            continue
        while x_new[i] <= x[j]:
            theta = (x_new[i] - x[j - 1]) / (x[j] - x[j - 1])
            out[i] = (1.0 - theta) * y[j - 1] + theta * y[j]
            i += 1
            if i >= n_new:
                break
    out[i:] = y[-1]
    return out


def _indgen(start: float, stop: float, step: float) -> np.ndarray:
    """``Vector.indgen(start, stop, step)``."""
    count = math.floor((stop - start) / step + 1e-9) + 1
    return np.arange(count) * step + start


def contour_center(xyz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``contourcenter``: the outline resampled at 101 points, ``(101, 3)``, and their mean."""
    xyz = np.asarray(xyz, dtype=float)
    n = xyz.shape[0]
    steps = np.zeros((n, 3))
    closed = np.vstack([xyz[:, :2], xyz[:1, :2]])
    steps[:, :2] = closed[1:] - closed[:-1]         # z is left 0: the length is in xy
    perimeter = np.zeros(n)
    for i in range(1, n):
        perimeter[i] = perimeter[i - 1] + _mag(steps[i - 1])
    stations = np.arange(101) * (perimeter[-1] / 100)
    points = np.stack([_interpolate(stations, perimeter, xyz[:, k]) for k in range(3)], 1)
    return points, np.array([_sum(points[:, k]) / 101 for k in range(3)])


def _convex(position: np.ndarray, offset: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop points that do not advance along the axis, as Import3d's loop does."""
    position, offset = list(position), list(offset)
    j = len(position) - 1
    while j > 0:
        if position[j] <= position[j - 1]:
            del position[j], offset[j]
            if j != len(position):
                j += 1
        j -= 1
    return np.asarray(position), np.asarray(offset)


def centroid(xyz: np.ndarray, where: str) -> tuple[np.ndarray, np.ndarray]:
    """The soma section Import3d makes of a contour: 3-D points ``(k, 3)`` and diameters.

    Raises:
      MorphologyError: an outline with no width (all points on one line), where
        NEURON fails with "Failed to compute soma centroid from contour".
    """
    points, mean = contour_center(xyz)
    centred = points - mean
    scatter = np.empty((3, 3))
    for i in range(3):
        for j in range(i, 3):
            scatter[i, j] = scatter[j, i] = _sum(centred[:, i] * centred[:, j])
    values, vectors = np.linalg.eigh(scatter)
    largest, smallest = int(np.argmax(values)), int(np.argmin(values))
    major = vectors[:, largest].copy()
    if major[int(np.argmax(np.abs(major)))] < 0:
        major = -major
    minor = vectors[:, 3 - largest - smallest].copy()
    minor[2] = 0.0
    if largest == smallest or _mag(minor) / (_mag(major) + 1e-100) < 1e-6:
        raise MorphologyError(f"{where}: the soma contour has no width in the xy plane; "
                              "NEURON's Import3d fails on it (Failed to compute soma centroid "
                              "from contour)")
    minor = minor / _mag(minor)
    along = centred[:, 0] * major[0] + centred[:, 1] * major[1] + centred[:, 2] * major[2]
    across = centred[:, 0] * minor[0] + centred[:, 1] * minor[1] + centred[:, 2] * minor[2]
    first = int(np.argmax(along))
    along, across = np.roll(along, -first), np.roll(across, -first)
    last = int(np.argmin(along))
    side1, offset1 = _convex(along[:last][::-1], across[:last][::-1])
    side2, offset2 = _convex(along[last:], across[last:])
    if side1.size < 2 or side2.size < 2:
        raise MorphologyError(f"{where}: the soma contour is too irregular for NEURON's "
                              "Import3d to find its two sides")
    both = np.sort(np.concatenate([side1, side2]))
    lo, hi = both[1], both[-2]
    stations = _indgen(lo, hi, (hi - lo) / 20)
    diameter = np.abs(_interpolate(stations, side1, offset1)
                      - _interpolate(stations, side2, offset2))
    centres = stations[:, None] * major[None, :] + mean[None, :]
    diameter[0] = (diameter[0] + diameter[1]) / 2
    diameter[-1] = (diameter[-1] + diameter[-2]) / 2
    return centres, diameter
