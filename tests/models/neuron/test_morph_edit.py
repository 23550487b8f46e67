"""Morphology edits: BluePyOpt's axon stub (per release), subtree deletion, diameter scaling.

The ASC cell's stub is checked against NEURON running BluePyOpt's ``replace_axon`` in
``test_asc.py``; here the rules are checked on small SWC cells whose answers are
worked out by hand, without MorphIO.
"""

from __future__ import annotations

import numpy as np
import pytest

from jaxlean.errors import ConfigError, MorphologyError
from jaxlean.models.neuron import axon_stub, discretize, morph_edit, morphology_io
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
    first, second = axon_stub.stub_diameters(axon_tree)
    np.testing.assert_allclose([first, second], [2.0, 0.9], rtol=1e-6)
    # with no section beyond 60 um the second diameter is the first
    short = morph_edit.delete_subtree(morph_edit.delete_subtree(axon_tree, "axon[1]"), "axon[2]")
    assert axon_stub.stub_diameters(short) == pytest.approx((2.0, 2.0), rel=1e-6)
    # no axon at all: 1 um both
    assert axon_stub.stub_diameters(morph_edit.delete_subtree(axon_tree, "axon[0]")) == (1, 1)


def test_stub_distance_origin_follows_the_bluepyopt_release(tmp_path):
    # axon[0] (114 um) has its middle 5 + 57 = 62 um from soma(0) but 57 um from soma(0.5).
    # BluePyOpt before 1.10 (and create_hoc's HOC procedure) measure from soma(0), so axon[0]
    # is "beyond 60"; from 1.10 on, from soma(0.5), so the answer is axon[1] (81 um, from
    # 2 um at its fork to 0.5 at its tip: its middle segment's mean diameter is 1.25)
    path = tmp_path / "long.swc"
    path.write_text("1 1 0 0 0 5 -1\n2 2 5 0 0 1 1\n3 2 119 0 0 1 2\n4 2 200 0 0 0.25 3\n"
                    "5 2 119 40 0 0.25 3\n")
    tree = morphology_io.load_morphology(path)
    for old in ("1.9", "hoc"):
        assert axon_stub.stub_diameters(tree, bluepyopt=old) == pytest.approx((2.0, 2.0),
                                                                              rel=1e-6)
    for new in ("1.10", "1.14.26", axon_stub.CURRENT):
        assert axon_stub.stub_diameters(tree, bluepyopt=new) == pytest.approx((2.0, 1.25),
                                                                              rel=1e-6)
    assert axon_stub.stub_diameters(tree) == axon_stub.stub_diameters(tree, bluepyopt="1.10")
    with pytest.raises(ConfigError, match="release"):
        axon_stub.stub_diameters(tree, bluepyopt="latest")
    with pytest.raises(ConfigError, match=r"1\.14\.15"):
        axon_stub.replace_axon(tree, bluepyopt="1.13", stub_length=40.0)


def test_replace_axon_makes_two_30um_cylinders_at_soma_1(axon_tree):
    stub = axon_stub.replace_axon(axon_tree)
    assert stub.names == ("soma[0]", "dend[0]", "axon[0]", "axon[1]")
    _, dend, a0, a1 = stub.sections
    assert (a0.parent, a0.parent_x, a0.kind) == (0, 1.0, 2)
    assert (a1.parent, a1.parent_x, a1.kind) == (2, 1.0, 2)
    assert (dend.parent, dend.parent_x) == (0, 0.5)
    assert stub.length(2) == stub.length(3) == 30.0
    assert stub.cylinders[:2] == (None, None)
    np.testing.assert_allclose(stub.cylinders[2:], [2.0, 0.9], rtol=1e-6)
    assert stub.nseg == (None, None, 1, 1)     # replace_axon sets the stub's own nseg
    cell = Cell.from_morphology(stub, nseg=discretize.Fixed(3))
    for name, diameter in (("axon[0]", stub.cylinders[2]), ("axon[1]", stub.cylinders[3])):
        where = cell.compartments_of(name)
        np.testing.assert_array_equal(cell.radius[where], diameter / 2)   # exact, as sec.diam
        np.testing.assert_array_equal(cell.length[where], 30.0)      # nseg 1, not the rule's
        np.testing.assert_array_equal(cell.taper[where], 1.0)
    assert cell.parents[cell.compartments_of("axon[0]")[0]] == cell.compartments_of("soma[0]")[-1]
    assert len(axon_tree) == 5 and axon_tree.cylinders == (None,) * 5   # the input is unchanged


def test_replace_axon_refuses_a_dendrite_on_the_axon(tmp_path):
    path = tmp_path / "odd.swc"
    path.write_text(AXON_SWC + "9 3 145 10 0 0.3 5\n")
    with pytest.raises(MorphologyError, match=r"dend\[1\].*hangs from the axon"):
        axon_stub.replace_axon(morphology_io.load_morphology(path))


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
    stub = axon_stub.replace_axon(axon_tree)
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


def test_set_nseg_overrides_the_rule_per_section():
    tree = morphology_io.load_morphology(fixture("y"))
    name = tree.names[1]
    own = morph_edit.set_nseg(tree, {"soma[0]": 3, name: 7})
    cell = Cell.from_morphology(own, nseg=discretize.Fixed(1))
    assert cell.compartments_of("soma[0]").size == 3 and cell.compartments_of(name).size == 7
    assert all(cell.compartments_of(n).size == 1 for n in tree.names[2:])
    back = Cell.from_morphology(morph_edit.set_nseg(own, {name: None}), nseg=discretize.Fixed(1))
    assert back.compartments_of(name).size == 1
    with pytest.raises(ConfigError, match=r"nseg of dend\[0\] must be >= 1"):
        morph_edit.set_nseg(tree, {name: 0})
    with pytest.raises(ConfigError, match=r"no section named 'dend\[99\]'"):
        morph_edit.set_nseg(tree, {"dend[99]": 3})


def test_replace_axon_tapered_reads_ten_segment_diameters(axon_tree):
    # chunk 60 / 10 = 6 um: axon[0] (40 um, diameter 2) is cut into 1 + 2 int(40 / 12) = 7
    # segments, all 2 um; axon[1] (100 um) into 17, whose first three means lie on the
    # straight fall from 2 to 1.2 um over the first 20 um
    stub = axon_stub.replace_axon_tapered(axon_tree)
    assert stub.names[-2:] == ("axon[0]", "axon[1]") and stub.nseg[-2:] == (5, 5)
    fall = [2 - 0.04 * (j + 0.5) * 100 / 17 for j in range(3)]
    np.testing.assert_allclose(stub.cylinders[-2], [2.0] * 5, rtol=1e-6)
    np.testing.assert_allclose(stub.cylinders[-1], [2.0, 2.0, *fall], rtol=1e-6)
    cell = Cell.from_morphology(stub, nseg=discretize.PerLength(40))
    where = cell.compartments_of("axon[1]")
    np.testing.assert_allclose(cell.radius[where], np.asarray(stub.cylinders[-1]) / 2)
    np.testing.assert_allclose(cell.length[where], 6.0)
    alone = morph_edit.delete_subtree(morph_edit.delete_subtree(axon_tree, "axon[1]"), "axon[2]")
    with pytest.raises(MorphologyError, match=r"reads 10 segment diameters.*has 7"):
        axon_stub.replace_axon_tapered(alone)
