"""Compartments, junctions and morphology helpers of a Cell, from SWC and from parents."""

from __future__ import annotations

import numpy as np
import pytest

from jaxlean.errors import ConfigError, MorphologyError
from jaxlean.models.neuron import _geometry, swc
from jaxlean.models.neuron.cell import Cell


def test_same_labels_from_swc_and_from_parents():
    for name in ("y", "pyramidal"):
        cell = Cell.from_swc(swc.fixture(name), ncomp=2)
        again = Cell.from_parents(cell.parents, cell.length, cell.radius, cell.attach)
        np.testing.assert_array_equal(again.branch, cell.branch)
        assert again.soma == cell.soma == 0
        np.testing.assert_array_equal(again.tips, cell.tips)
        np.testing.assert_allclose(again.path_distance, cell.path_distance)


def test_helpers_on_the_y():
    cell = Cell.from_swc(swc.fixture("y"), ncomp=2)
    assert cell.n == 7 and cell.n_branches == 4 and cell.tree.n == 8  # one junction at the fork
    np.testing.assert_array_equal(cell.compartments_of(0), [0])
    np.testing.assert_array_equal(cell.compartments_of(2), [3, 4])
    np.testing.assert_array_equal(cell.tips, [4, 6])
    sections = swc.sections(swc.read_swc(swc.fixture("y")))
    trunk = np.linalg.norm(np.diff(sections[1].xyz, axis=0), axis=1).sum()
    left = np.linalg.norm(np.diff(sections[2].xyz, axis=0), axis=1).sum()
    np.testing.assert_allclose(cell.path_distance[[1, 2, 3]],
                               [trunk / 4, 3 * trunk / 4, trunk + left / 4])
    with pytest.raises(ConfigError, match="branch must be in"):
        cell.compartments_of(4)
    kinds = [section.kind for section in sections]  # each compartment has its section's type
    np.testing.assert_array_equal(cell.kind, np.repeat(kinds, [1, 2, 2, 2]))


def test_frustum_geometry_of_a_cone():
    """Area and resistance of a cone cut in two equal halves, against the closed forms."""
    xyz = np.array([[0.0, 0, 0], [5, 0, 0], [10, 0, 0]])
    radius = np.array([2.0, 1.5, 1.0])
    got = _geometry.segments(xyz, radius, 1)
    slant = np.hypot(10.0, 1.0)
    np.testing.assert_allclose(got["area"], np.pi * (2 + 1) * slant)
    np.testing.assert_allclose(got["r_proximal"], 5 / (np.pi * 2 * 1.5))
    np.testing.assert_allclose(got["r_distal"], 5 / (np.pi * 1.5 * 1))


def test_swc_options_and_bad_cells():
    with pytest.raises(ConfigError, match="exactly one"):
        Cell.from_swc(swc.fixture("y"))
    with pytest.raises(ConfigError, match="ncomp must be"):
        Cell.from_swc(swc.fixture("y"), ncomp=0)
    with pytest.raises(MorphologyError, match="compartment 1: radius"):
        Cell.from_parents([-1, 0], 10.0, [1.0, -1.0])
    with pytest.raises(MorphologyError, match="one root"):
        Cell.from_parents([-1, -1], 10.0, 1.0)
    with pytest.raises(MorphologyError, match="compartment 2: attach"):
        Cell.from_parents([-1, 0, 1], 10.0, 1.0, attach=[1, 1, 0])
    with pytest.raises(MorphologyError, match="length must be a scalar or one value"):
        Cell.from_parents([-1, 0, 1], [10.0, 2.0], 1.0)
