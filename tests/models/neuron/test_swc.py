"""SWC reading, validation (errors name the line), Import3d's sections, geometry and nseg rules.

The same rules are checked against NEURON itself, cell by cell, in
``test_neuron_parity.py`` (the SWC corpus); these tests pin each rule on a
small file without NEURON.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from jaxlean.errors import ConfigError, MorphologyError
from jaxlean.models.neuron.cell.cell import Cell
from jaxlean.models.neuron.morphology import _geometry, discretize, swc

Y_TEXT = """# a tiny Y on a one-point soma
1 1 0 0 0 5 -1
2 3 10 0 0 1 1
3 3 20 0 0 1 2
4 3 30 10 0 0.5 3
5 3 30 -10 0 0.5 3
"""


def _layout(text: str) -> list[tuple]:
    """(kind, parent, parent_x, number of points) of each section."""
    return [(s.kind, s.parent, s.parent_x, len(s.xyz)) for s in swc.sections(swc.read_swc(text))]


@pytest.mark.parametrize("name,count", [("y", 4), ("binary100", 101), ("pyramidal", 64)])
def test_fixtures_parse_into_sections(name, count):
    morphology = swc.read_swc(swc.fixture(name))
    sections = swc.sections(morphology)
    assert len(sections) == count
    assert all(s.parent < i for i, s in enumerate(sections))
    soma_radius = morphology.radius[0]
    np.testing.assert_allclose(np.ptp(sections[0].xyz[:, 0]), 2 * soma_radius)
    ids = list(morphology.ids)
    for section in sections[1:]:
        last = ids.index(section.last_id)
        np.testing.assert_allclose(section.xyz[-1], morphology.xyz[last])


def test_soma_attached_dendrite_starts_at_its_own_first_point():
    soma, trunk, left, right = swc.sections(swc.read_swc(Y_TEXT))
    np.testing.assert_allclose(soma.xyz, [[-5, 0, 0], [0, 0, 0], [5, 0, 0]])
    np.testing.assert_allclose(trunk.xyz, [[10, 0, 0], [20, 0, 0]])
    assert (trunk.parent, trunk.parent_x) == (0, 0.5)
    for child in (left, right):
        np.testing.assert_allclose(child.xyz[0], [20, 0, 0])   # the fork point
        np.testing.assert_allclose(child.radius, [1.0, 0.5])   # with the parent's radius
        assert (child.parent, child.parent_x) == (1, 1.0)


def test_three_point_soma_reads_as_the_sphere():
    three = ("1 1 0 0 0 5 -1\n2 1 0 -5 0 5 1\n3 1 0 5 0 5 1\n4 3 10 0 0 1 1\n5 3 20 0 0 1 4\n"
             "6 3 30 10 0 0.5 5\n7 3 30 -10 0 0.5 5\n")
    one, other = swc.sections(swc.read_swc(Y_TEXT)), swc.sections(swc.read_swc(three))
    assert len(one) == len(other)
    for a, b in zip(one, other, strict=True):
        np.testing.assert_allclose(a.xyz, b.xyz)
        assert (a.parent, a.parent_x) == (b.parent, b.parent_x)
    off_by_4_percent = three.replace("2 1 0 -5 0", "2 1 0 -5.4 0")
    assert _layout(off_by_4_percent)[:2] == [(1, -1, 0.5, 2), (1, 0, 0.0, 2)]  # soma sections


def test_fork_at_a_dendrites_first_point():
    """On line 2, NEURON keeps a stub from the soma centre; further down, no stub: the
    second branch joins the dendrite's start (x = 0)."""
    on_line_2 = "1 1 0 0 0 5 -1\n2 3 8 0 0 1 1\n3 3 50 0 0 1 2\n4 3 40 -30 0 1 2\n"
    assert _layout(on_line_2) == [(1, -1, 0.5, 3), (3, 0, 0.5, 2), (3, 1, 1.0, 2),
                                  (3, 1, 1.0, 2)]
    stub = swc.sections(swc.read_swc(on_line_2))[1]
    np.testing.assert_allclose(stub.xyz, [[0, 0, 0], [8, 0, 0]])   # from the soma centre
    np.testing.assert_allclose(stub.radius, [1, 1])
    further = ("1 1 0 0 0 5 -1\n2 3 -8 0 0 1 1\n3 3 -60 0 0 1 2\n4 3 8 0 0 1 1\n"
               "5 3 50 0 0 1 4\n6 3 40 -30 0 1 4\n")
    assert _layout(further) == [(1, -1, 0.5, 3), (3, 0, 0.5, 2), (3, 0, 0.5, 2),
                                (3, 2, 0.0, 2)]


def test_a_child_on_a_later_line_starts_a_section():
    text = "1 1 0 0 0 5 -1\n2 3 8 0 0 1 1\n3 3 50 0 0 1 2\n7 3 -8 0 0 1 1\n9 3 90 0 0 1 3\n"
    assert _layout(text) == [(1, -1, 0.5, 3), (3, 0, 0.5, 2), (3, 0, 0.5, 2), (3, 1, 1.0, 2)]
    in_order = "1 1 0 0 0 5 -1\n2 3 8 0 0 1 1\n3 3 50 0 0 1 2\n9 3 90 0 0 1 3\n"
    assert _layout(in_order) == [(1, -1, 0.5, 3), (3, 0, 0.5, 3)]


def test_zero_length_section_is_dropped_and_its_children_move_up():
    text = ("1 1 0 0 0 5 -1\n2 3 8 0 0 1 1\n3 3 50 0 0 1 2\n4 3 50 0 0 0.5 3\n"
            "5 3 90 9 0 0.5 4\n6 3 90 -9 0 0.5 4\n7 3 60 -30 0 0.5 3\n")
    with pytest.warns(UserWarning, match=r":4: id 4 makes a section of zero length"):
        assert _layout(text) == [(1, -1, 0.5, 3), (3, 0, 0.5, 2), (3, 1, 1.0, 2),
                                 (3, 1, 1.0, 2), (3, 1, 1.0, 2)]
        assert [s.last_id for s in swc.sections(swc.read_swc(text))] == [1, 3, 5, 6, 7]


def test_one_point_wire_on_the_roots_first_point_is_dropped():
    """A dendrite point on the root's first point, cut by a child of another type: Import3d
    wires it and leaves it no point; its children join the root at x = 0."""
    text = ("1 1 0 0 0 5 -1\n2 1 0 -5 0 5 1\n3 1 0 6 0 4 1\n4 3 -8 0 0 1 1\n"
            "5 3 -30 10 0 0.8 4\n6 4 -30 -10 0 0.8 4\n")
    with pytest.warns(UserWarning, match=r":4: id 4 makes a section of one point"):
        assert _layout(text) == [(1, -1, 0.5, 2), (1, 0, 0.0, 2), (3, 0, 0.0, 2), (4, 0, 0.0, 2)]


def test_soma_branching_at_its_root_and_later_gives_soma_sections():
    text = ("1 1 0 0 0 5 -1\n2 1 5 0 0 5 1\n3 1 9 4 0 3 2\n4 1 9 -4 0 3 2\n"
            "5 1 -5 0 0 4 1\n6 3 20 9 0 1 3\n")
    assert _layout(text) == [(1, -1, 0.5, 2), (1, 0, 1.0, 2), (1, 0, 1.0, 2), (1, 0, 0.0, 2),
                             (3, 1, 1.0, 2)]


def test_soma_chain_joins_dendrites_by_wire_inside_and_by_copy_at_its_ends():
    text = ("1 1 0 0 0 4 -1\n2 1 8 0 0 5 1\n3 1 16 0 0 3 2\n4 3 26 0 0 1 3\n"
            "5 3 8 9 0 1 2\n6 3 8 30 0 1 5\n7 3 -10 0 0 1 1\n")
    soma, end, inside, start = swc.sections(swc.read_swc(text))
    np.testing.assert_allclose(soma.radius, [4, 5, 3])
    assert (end.parent_x, inside.parent_x, start.parent_x) == (1.0, 0.5, 0.0)
    np.testing.assert_allclose(end.xyz[0], [16, 0, 0])               # copy of the soma's end
    np.testing.assert_allclose(end.radius, [1, 1])                   # with its own radius
    np.testing.assert_allclose(inside.xyz, [[8, 9, 0], [8, 30, 0]])  # wire: own points only


@pytest.mark.parametrize("text,match", [
    ("1 1 0 0 0 5 -1\n2 3 1 0 0 1\n", r":2: expected 7 fields"),
    ("1 1 0 0 0 5 -1\n2 3 x 0 0 1 1\n", r":2: could not convert"),
    ("1 1 0 0 0 5 -1\n2 3 1 0 0 -1 1\n", r":2: radius must be positive"),
    ("1 1 0 0 0 5 -1\n1 3 1 0 0 1 1\n", r":2: duplicate id 1"),
    ("1 1 0 0 0 5 -1\n\n2 3 1 0 0 1 7\n", r":3: parent 7 of id 2"),
    ("1 1 0 0 0 5 -1\n2 3 1 0 0 1 3\n3 3 1 0 0 1 2\n", r":[23]: this point is on a cycle"),
    ("# only a comment\n", "no points"),
])
def test_bad_files_name_the_line(text, match):
    with pytest.raises(MorphologyError, match=match):
        swc.read_swc(text)


@pytest.mark.parametrize("text,match", [
    ("1 1 0 0 0 5 -1\n2 1 9 0 0 5 -1\n", r"one root point.*lines \[1, 2\]"),
    ("1 1 0 0 0 5 -1\n3 3 9 0 0 1 1\n2 3 9 9 0 1 1\n", r":3: id 2 is not above.*unsorted"),
    ("1 1 0 0 0 5 -1\n2 3 9 0 0 1 3\n3 3 9 9 0 1 1\n", r":2: parent 3 of id 2 comes later"),
    ("# one point\n1 1 0 0 0 5 -1\n", r":2: a single point"),
])
def test_files_import3d_cannot_read_are_refused(text, match):
    with pytest.raises(MorphologyError, match=match):
        swc.sections(swc.read_swc(text))


def test_unknown_fixture():
    with pytest.raises(ConfigError, match="no bundled morphology"):
        swc.fixture("octopus")


def _frustum(length, r1, r2):
    return math.pi * (r1 + r2) * math.hypot(length, r1 - r2)


def test_repeated_point_adds_the_ring_and_keeps_the_radius_before_it():
    """A radius step at a repeated point: ring pi (r1 + r2) |r1 - r2|, the cable before the
    point at the earlier radius; the step is placed off and on a half-segment boundary.
    (Tolerances 1e-6: points are kept in float32, as NEURON keeps them.)"""
    rng = np.random.default_rng(0)
    for step_at in (3.0, 5.0):     # 5 = the boundary between the two halves
        r = rng.uniform(0.5, 2.0, 3)
        xyz = np.array([[0.0, 0, 0], [step_at, 0, 0], [step_at, 0, 0], [10, 0, 0]])
        got = _geometry.segments(xyz, np.array([r[0], r[0], r[1], r[2]]), 1)
        expected = (_frustum(step_at, r[0], r[0]) + math.pi * (r[0] + r[1]) * abs(r[0] - r[1])
                    + _frustum(10 - step_at, r[1], r[2]))
        np.testing.assert_allclose(got["area"], expected, rtol=1e-6)
        if step_at == 5.0:
            np.testing.assert_allclose(got["r_proximal"], 5 / (math.pi * r[0] ** 2), rtol=1e-6)


def test_geometry_sums_frustums_over_random_sections():
    """Segment areas sum to the section's frustums; resistances of a cylinder are closed-form."""
    rng = np.random.default_rng(1)
    xyz = np.cumsum(rng.normal(size=(7, 3)) * 5, axis=0)
    radius = rng.uniform(0.3, 2.0, 7)
    dl = np.linalg.norm(np.diff(xyz, axis=0), axis=1)
    total = sum(_frustum(d, a, b) for d, a, b in zip(dl, radius[:-1], radius[1:], strict=True))
    for nseg in (1, 2, 5):
        got = _geometry.segments(xyz, radius, nseg)
        np.testing.assert_allclose(got["area"].sum(), total, rtol=1e-6)
        np.testing.assert_allclose(got["length"].sum(), dl.sum(), rtol=1e-6)
    got = _geometry.segments(np.array([[0.0, 0, 0], [9, 0, 0], [30, 0, 0]]), np.full(3, 1.5), 3)
    np.testing.assert_allclose(got["r_proximal"], 5 / (math.pi * 1.5**2))
    np.testing.assert_allclose(got["area"], 2 * math.pi * 1.5 * 10)


def test_d_lambda_matches_neurons_cylinder_formula():
    """On a cylinder, lambda_f over 3-D points equals NEURON's 1e5 sqrt(d / (4 pi f Ra cm))."""
    rng = np.random.default_rng(2)
    for _ in range(5):
        length, diam = rng.uniform(20, 2000), rng.uniform(0.2, 5)
        ra, cm, f = rng.uniform(30, 300), rng.uniform(0.5, 2), rng.uniform(10, 1000)
        section = swc.Section(np.array([[0.0, 0, 0], [length / 3, 0, 0], [length, 0, 0]]),
                              np.full(3, diam / 2), -1, 0.5, 3, 1)
        rule = discretize.DLambda(ra, d_lambda=0.1, freq=f, cm=cm)
        lam = 1e5 * math.sqrt(diam / (4 * math.pi * f * ra * cm))
        np.testing.assert_allclose(rule.lambda_f(section), lam, rtol=1e-9)
        assert rule.nseg(section) == int((length / (0.1 * lam) + 0.9) / 2) * 2 + 1
        assert rule.nseg(section) % 2 == 1
        assert discretize.MaxLength(length / 2.5).nseg(section) == 3


def test_nseg_options_and_neuron_defaults():
    sections = swc.sections(swc.read_swc(Y_TEXT))
    np.testing.assert_array_equal(discretize.section_nseg(sections, ncomp=3), [1, 3, 3, 3])
    np.testing.assert_array_equal(discretize.section_nseg(sections, nseg=discretize.Fixed(2)),
                                  [2, 2, 2, 2])
    cell = Cell.from_swc(Y_TEXT, nseg=discretize.Fixed(3))
    assert cell.n == 12
    with pytest.raises(ConfigError, match="exactly one"):
        discretize.section_nseg(sections, ncomp=2, nseg=discretize.Fixed(2))
    with pytest.raises(ConfigError, match="must be a Fixed"):
        discretize.section_nseg(sections, nseg=3)
    for bad in (lambda: discretize.Fixed(0), lambda: discretize.MaxLength(-1.0),
                lambda: discretize.DLambda(float("nan"))):
        with pytest.raises(ConfigError):
            bad()
    flat = "1 1 0 0 0 5 -1\n2 3 8 0 0 1 1\n3 3 8 0 0 1 2\n4 3 8 0 0 1 3\n"
    with pytest.raises(MorphologyError, match="ending at SWC id 4 has zero length"):
        Cell.from_swc(flat, ncomp=1)
    params = discretize.neuron_defaults(cell.params())
    assert float(params["Ra"]) == pytest.approx(35.4)
    assert set(params) == set(cell.params())
