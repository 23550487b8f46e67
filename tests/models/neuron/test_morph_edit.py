"""Morphology edits: BluePyOpt's axon stub, subtree deletion, diameter scaling.

The ASC cell's stub is checked against NEURON running BluePyOpt's ``replace_axon`` in
``test_asc.py``; here the rules are checked on small SWC cells whose answers are
worked out by hand, without MorphIO.
"""

from __future__ import annotations

import numpy as np
import pytest

from jaxlean.errors import ConfigError, MorphologyError
from jaxlean.models.neuron import discretize, morph_edit, morphology_io
from jaxlean.models.neuron.cell.cell import Cell
from jaxlean.models.neuron.morphology.swc import fixture

# A one-point soma (a 10 um cylinder, Import3d's sphere) with the axon wired to its centre:
# axon[0] 40 um of diameter 2 (middle at 5 + 20 = 25 um from soma(0)); axon[1] 100 um whose
# diameter falls from 2 to 1.2 over 20 um, then linearly to 0.4 (middle at 5 + 40 + 50 =
# 95 um > 60; nseg 1 + 2 int(100 / 40) = 5, middle segment 40..60 um: mean diameter 0.9,
# while the whole section's is 0.888); axon[2] on the same fork; one basal dendrite.
AXON_SWC = """\
1 1 0 0 0 5 -1
2 2 5 0 0 1 1
3 2 45 0 0 1 2
4 2 65 0 0 0.6 3
5 2 145 0 0 0.2 4
6 2 45 50 0 0.5 3
7 3 -5 0 0 1 1
8 3 -100 0 0 0.5 7
"""


@pytest.fixture
def axon_tree(tmp_path) -> morphology_io.SectionTree:
    path = tmp_path / "axon.swc"
    path.write_text(AXON_SWC)
    return morphology_io.load_morphology(path)


def test_stub_diameters_follow_bluepyopt(axon_tree):
    assert axon_tree.names == ("soma[0]", "axon[0]", "axon[1]", "axon[2]", "dend[0]")
    first, second = morph_edit.stub_diameters(axon_tree)
    np.testing.assert_allclose([first, second], [2.0, 0.9], rtol=1e-6)
    # with no section beyond 60 um the second diameter is the first
    short = morph_edit.delete_subtree(morph_edit.delete_subtree(axon_tree, "axon[1]"), "axon[2]")
    assert morph_edit.stub_diameters(short) == pytest.approx((2.0, 2.0), rel=1e-6)
    # no axon at all: 1 um both
    assert morph_edit.stub_diameters(morph_edit.delete_subtree(axon_tree, "axon[0]")) == (1, 1)


def test_stub_distance_is_measured_from_soma_0_as_bluepyopt_sets_it(tmp_path):
    # axon[0] (114 um) has its middle 5 + 57 = 62 um from soma(0) but 57 um from soma(0.5):
    # BluePyOpt's h.distance(sec=soma) puts the origin at soma(0), so axon[0] is "beyond 60"
    path = tmp_path / "long.swc"
    path.write_text("1 1 0 0 0 5 -1\n2 2 5 0 0 1 1\n3 2 119 0 0 1 2\n4 2 200 0 0 0.25 3\n"
                    "5 2 119 40 0 0.25 3\n")
    assert morph_edit.stub_diameters(morphology_io.load_morphology(path)) == pytest.approx(
        (2.0, 2.0), rel=1e-6)


def test_replace_axon_makes_two_30um_cylinders_at_soma_1(axon_tree):
    stub = morph_edit.replace_axon(axon_tree)
    assert stub.names == ("soma[0]", "dend[0]", "axon[0]", "axon[1]")
    _, dend, a0, a1 = stub.sections
    assert (a0.parent, a0.parent_x, a0.kind) == (0, 1.0, 2)
    assert (a1.parent, a1.parent_x, a1.kind) == (2, 1.0, 2)
    assert (dend.parent, dend.parent_x) == (0, 0.5)
    assert stub.length(2) == stub.length(3) == 30.0
    assert stub.cylinders[:2] == (None, None)
    np.testing.assert_allclose(stub.cylinders[2:], [2.0, 0.9], rtol=1e-6)
    cell = Cell.from_morphology(stub, nseg=discretize.Fixed(3))
    for name, diameter in (("axon[0]", stub.cylinders[2]), ("axon[1]", stub.cylinders[3])):
        where = cell.compartments_of(name)
        np.testing.assert_array_equal(cell.radius[where], diameter / 2)   # exact, as sec.diam
        np.testing.assert_array_equal(cell.length[where], 10.0)
        np.testing.assert_array_equal(cell.taper[where], 1.0)
    assert cell.parents[cell.compartments_of("axon[0]")[0]] == cell.compartments_of("soma[0]")[-1]
    assert len(axon_tree) == 5 and axon_tree.cylinders == (None,) * 5   # the input is unchanged


def test_replace_axon_refuses_a_dendrite_on_the_axon(tmp_path):
    path = tmp_path / "odd.swc"
    path.write_text(AXON_SWC + "9 3 145 10 0 0.3 5\n")
    with pytest.raises(MorphologyError, match=r"dend\[1\].*hangs from the axon"):
        morph_edit.replace_axon(morphology_io.load_morphology(path))


def test_delete_subtree_removes_descendants_and_keeps_names():
    tree = morphology_io.load_morphology(fixture("pyramidal"))
    top = tree.index("apic[0]")
    below = {top}
    for k, s in enumerate(tree.sections):
        if s.parent in below:
            below.add(k)
    cut = morph_edit.delete_subtree(tree, "apic[0]")
    assert len(cut) == len(tree) - len(below)
    assert cut.names == tuple(n for k, n in enumerate(tree.names) if k not in below)
    for section, name in zip(cut.sections, cut.names, strict=True):
        if section.parent >= 0:      # every parent is the same section as before, renumbered
            old = tree.sections[tree.index(name)]
            assert cut.names[section.parent] == tree.names[old.parent]
    cell = Cell.from_morphology(cut, ncomp=1)
    assert cell.section_names == cut.names and cell.n_branches == len(cut)
    kept = next(n for n in cut.names if n.startswith("dend"))
    assert cell.compartments_of(kept).size == 1


def test_delete_subtree_refusals():
    tree = morphology_io.load_morphology(fixture("y"))
    with pytest.raises(ConfigError, match="root"):
        morph_edit.delete_subtree(tree, 0)
    with pytest.raises(ConfigError, match=r"no section named 'dend\[99\]'"):
        morph_edit.delete_subtree(tree, "dend[99]")


def test_scale_diameters_by_section_region_or_all(axon_tree):
    stub = morph_edit.replace_axon(axon_tree)
    everything = morph_edit.scale_diameters(stub, 2.0)
    for old, new in zip(stub.sections, everything.sections, strict=True):
        np.testing.assert_array_equal(new.radius, 2 * old.radius)
    assert everything.cylinders[2:] == tuple(2 * d for d in stub.cylinders[2:])
    basal = morph_edit.scale_diameters(stub, 0.5, regions="basal")
    for k, (old, new) in enumerate(zip(stub.sections, basal.sections, strict=True)):
        factor = 0.5 if stub.names[k].startswith("dend") else 1.0
        np.testing.assert_array_equal(new.radius, factor * old.radius)
    one = morph_edit.scale_diameters(stub, 3.0, sections=["axon[1]"])
    assert one.cylinders[3] == 3 * stub.cylinders[3] and one.cylinders[2] == stub.cylinders[2]
    cell = Cell.from_morphology(one, nseg=discretize.Fixed(1))
    assert cell.radius[cell.compartments_of("axon[1]")][0] == 3 * stub.cylinders[3] / 2


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"factor": 0.0}, "positive"), ({"factor": -1.0}, "positive"), ({"factor": True}, "positive"),
    ({"factor": 2.0, "sections": "dend[0]", "regions": "basal"}, "not both"),
    ({"factor": 2.0, "regions": "dendrites"}, "unknown region 'dendrites'"),
    ({"factor": 2.0, "regions": "apical"}, "no section"),
    ({"factor": 2.0, "sections": "dend[7]"}, r"no section named 'dend\[7\]'"),
])
def test_scale_diameters_refusals(axon_tree, kwargs, match):
    with pytest.raises(ConfigError, match=match):
        morph_edit.scale_diameters(axon_tree, **kwargs)
