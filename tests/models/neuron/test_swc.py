"""SWC reading, validation (errors name the line) and sections cut as NEURON's Import3d does."""

from __future__ import annotations

import numpy as np
import pytest

from jaxlean.errors import ConfigError, MorphologyError
from jaxlean.models.neuron import swc

Y_TEXT = """# a tiny Y on a one-point soma
1 1 0 0 0 5 -1
2 3 10 0 0 1 1
3 3 20 0 0 1 2
4 3 30 10 0 0.5 3
5 3 30 -10 0 0.5 3
"""


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
    three = Y_TEXT.replace("2 3 10 0 0 1 1", "6 1 0 -5 0 5 1\n7 1 0 5 0 5 1\n2 3 10 0 0 1 1")
    one, other = swc.sections(swc.read_swc(Y_TEXT)), swc.sections(swc.read_swc(three))
    assert len(one) == len(other)
    for a, b in zip(one, other, strict=True):
        np.testing.assert_allclose(a.xyz, b.xyz)
        assert (a.parent, a.parent_x) == (b.parent, b.parent_x)


def test_multi_point_soma_is_a_stack_of_frustums():
    text = "1 1 0 0 0 4 -1\n2 1 8 0 0 5 1\n3 1 16 0 0 3 2\n4 3 26 0 0 1 3\n5 3 -10 0 0 1 1\n"
    soma, end, start = swc.sections(swc.read_swc(text))
    np.testing.assert_allclose(soma.radius, [4, 5, 3])
    assert end.parent_x == 1.0 and start.parent_x == 0.0
    np.testing.assert_allclose(end.xyz[0], [16, 0, 0])
    np.testing.assert_allclose(end.radius, [1, 1])


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
    ("1 1 0 0 0 5 -1\n2 1 9 0 0 5 -1\n", "one root point"),
    ("1 1 0 0 0 5 -1\n2 1 9 0 0 5 1\n3 1 0 9 0 5 1\n4 1 0 0 9 5 1\n", "soma forks at id 1"),
])
def test_bad_topologies(text, match):
    with pytest.raises(MorphologyError, match=match):
        swc.sections(swc.read_swc(text))


def test_unknown_fixture():
    with pytest.raises(ConfigError, match="no bundled morphology"):
        swc.fixture("octopus")
