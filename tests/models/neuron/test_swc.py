"""SWC reading, validation (errors name the line) and compartmentalisation."""

from __future__ import annotations

import numpy as np
import pytest

from jaxlean.errors import ConfigError, MorphologyError
from jaxlean.models.neuron import swc

Y_TEXT = """# a tiny Y
1 1 0 0 0 5 -1
2 3 10 0 0 1 1
3 3 20 0 0 1 2
4 3 30 10 0 0.5 3
5 3 30 -10 0 0.5 3
"""


@pytest.mark.parametrize("name,branches", [("y", 3), ("binary100", 100), ("pyramidal", 63)])
def test_fixtures_parse_and_split(name, branches):
    morphology = swc.read_swc(swc.fixture(name))
    parts = swc.compartments(morphology, ncomp=2)
    assert parts["branch"].max() + 1 == branches
    assert parts["parents"].size == 1 + 2 * branches
    assert (parts["parents"][1:] < np.arange(1, parts["parents"].size)).all()
    segments = np.linalg.norm(morphology.xyz[1:] - morphology.xyz[morphology.parents[1:]], axis=1)
    np.testing.assert_allclose(parts["length"][1:].sum(), segments.sum(), rtol=1e-12)


def test_compartments_of_a_small_y():
    parts = swc.compartments(swc.read_swc(Y_TEXT), max_length=12.0)
    np.testing.assert_array_equal(parts["parents"], [-1, 0, 1, 2, 3, 2, 5])
    np.testing.assert_allclose(parts["length"], [10, 10, 10] + [np.hypot(10, 10) / 2] * 4)
    np.testing.assert_array_equal(parts["branch"], [-1, 0, 0, 1, 1, 2, 2])
    np.testing.assert_allclose(parts["radius"][:3], [5, 1, 1])
    np.testing.assert_allclose(parts["radius"][3:], 0.5)


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


def test_bad_options():
    morphology = swc.read_swc(Y_TEXT)
    with pytest.raises(ConfigError, match="exactly one"):
        swc.compartments(morphology)
    with pytest.raises(ConfigError, match="ncomp must be"):
        swc.compartments(morphology, ncomp=0)
    with pytest.raises(ConfigError, match="no bundled morphology"):
        swc.fixture("octopus")
