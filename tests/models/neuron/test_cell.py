"""Compartments, junctions and morphology helpers of a Cell, from SWC and from parents."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from jaxlean.errors import ConfigError, MorphologyError
from jaxlean.models.neuron.cell.cell import Cell
from jaxlean.models.neuron.mechanisms.channels import hh
from jaxlean.models.neuron.morphology import _geometry, swc
from jaxlean.models.neuron.simulation.cable import simulate

CORPUS = Path(__file__).parent / "fixtures" / "corpus"


def test_same_labels_from_swc_and_from_parents():
    """Where every section is an unbranched run (these two cells), the sections of the SWC
    file and the runs of its parent array are the same branches."""
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


def test_branches_are_neurons_sections():
    """A child on a later line and a type change start a section in NEURON without a fork:
    they start a branch too, so per-branch values and ncomp are per NEURON section (names and
    counts against NEURON itself: test_neuron_parity)."""
    cell = Cell.from_swc(CORPUS / "line_order.swc", ncomp=3)
    assert cell.section_names == ("soma[0]", "dend[0]", "dend[1]", "dend[2]", "dend[3]")
    assert cell.n_branches == 5
    assert [cell.compartments_of(name).size for name in cell.section_names] == [1, 3, 3, 3, 3]
    runs = Cell.from_parents(cell.parents, cell.length, cell.radius, cell.attach)
    assert runs.n_branches == 3   # dend[0] and dend[2] are one unbranched run of compartments
    params = {**cell.params(), "gl_hh": np.array([1e-4, 2e-4, 3e-4, 4e-4, 5e-4])}
    v = simulate(cell, params, [], 0.1, 0.2, record=cell.location("dend[2]", 0.5))["v"]
    assert v.shape == (3, 1)
    mixed = Cell.from_swc(swc.fixture("pyramidal"), ncomp=2)
    assert mixed.section_names[:2] == ("soma[0]", "apic[0]") and mixed.section_names[-1] == \
        "axon[0]"


def test_location_is_neurons_sec_x():
    cell = Cell.from_swc(CORPUS / "line_order.swc", ncomp=3)
    first = int(cell.compartments_of("dend[2]")[0])
    assert cell.location("soma[0]", 0.5) == cell.location(0) == 0
    for x, segment in ((0.0, 0), (0.1, 0), (1 / 3, 1), (0.5, 1), (5 / 6, 2), (1.0, 2)):
        assert cell.location("dend[2]", x) == first + segment, x
    assert cell.location(3, 0.5) == first + 1
    for section, x, match in (("dend[9]", 0.5, r"no section named 'dend\[9\]'; this cell's "
                                                r"sections are soma\[0\], dend\[0\]"),
                              (5, 0.5, r"section must be in \[0, 4\] \(a branch index\)"),
                              ("dend[0]", 1.5, r"x must be a number in \[0, 1\]"),
                              ("dend[0]", "0.5", r"x must be a number")):
        with pytest.raises(ConfigError, match=match):
            cell.location(section, x)
    plain = Cell.from_parents([-1, 0, 1], 10.0, 1.0)
    assert plain.location(1, 0.9) == 2
    with pytest.raises(ConfigError, match=r"no section named 'soma\[0\]'; this cell's sections "
                                          r"are sec\[0\], sec\[1\]"):
        plain.location("soma[0]")   # built without types: its sections are sec[0], sec[1]


def test_insert_on_sections_by_name():
    cell = Cell.from_swc(CORPUS / "line_order.swc", ncomp=2)
    on = cell.insert(hh, branches=["soma[0]", "dend[2]"]).mechanisms[0].compartments
    np.testing.assert_array_equal(on, [0, *cell.compartments_of("dend[2]")])
    np.testing.assert_array_equal(cell.insert(hh, branches="dend[0]").mechanisms[0].compartments,
                                  cell.compartments_of(1))
    with pytest.raises(ConfigError, match=r"insert 'hh': branches: no section named 'axon\[0\]'"):
        cell.insert(hh, branches="axon[0]")


def test_insert_takes_region_names_as_by_region_does():
    cell = Cell.from_swc(swc.fixture("pyramidal"), ncomp=2)
    by_name = cell.insert(hh, types="apical").mechanisms[0].compartments
    np.testing.assert_array_equal(by_name, np.flatnonzero(cell.kind == 4))
    both = cell.insert(hh, types=["somatic", 4]).mechanisms[0].compartments
    np.testing.assert_array_equal(both, np.flatnonzero(np.isin(cell.kind, [1, 4])))
    assert cell.insert(hh, types="all").mechanisms[0].compartments is None
    with pytest.raises(ConfigError, match=r"unknown region\(s\) \['apicall'\]"):
        cell.insert(hh, types="apicall")


def test_cells_from_parents_have_neurons_section_names():
    """Named by type as Import3d names sections; ``"dend"`` alone is the only dend section,
    as NEURON's ``h.Section(name="dend")``."""
    ball = Cell.from_parents(np.arange(6) - 1, [20.0] + [40.0] * 5, [10.0] + [1.0] * 5,
                             kind=[1] + [3] * 5)
    assert ball.section_names == ("soma[0]", "dend[0]")
    assert ball.location("dend", 0.3) == ball.location("dend[0]", 0.3) == 2
    assert ball.location("soma", 0.5) == 0
    fork = Cell.from_parents([-1, 0, 1, 1], 10.0, 1.0, kind=[1, 3, 3, 4])
    assert fork.section_names == ("soma[0]", "dend[0]", "dend[1]", "apic[0]")
    with pytest.raises(ConfigError, match=r"no section named 'dend'"):
        fork.location("dend", 0.5)     # two dend sections: say which
    assert Cell.from_parents([-1, 0], 10.0, 1.0).section_names == ("sec[0]", "sec[1]")
