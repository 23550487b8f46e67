"""Neurolucida (ASC) and HDF5 morphologies against NEURON's Import3d: fixtures, and NEURON live.

The fixtures were written by ``scripts/make_asc_fixtures.py`` from the hand-written
``fixtures/pyramid.asc`` (a soma contour, a basal and an apical dendrite that branch,
an axon) loaded by ``Import3d_Neurolucida3``. Required: the same sections (names,
order, parents), ``nseg`` by the d_lambda rule, lengths and segment ``diam`` and
areas within 1e-9, the soma's 3-D points as NEURON stores them (float32, equal),
voltages within 1e-3 mV and spike times within 1e-4 ms at the soma and every tip
(float64), and the same after BluePyOpt's ``replace_axon`` (run by BluePyOpt
itself). The region and distance
rules of ``asc_pyramid`` are checked in ``test_distribution.py``.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxlean.errors import ConfigError, MorphologyError
from jaxlean.models.neuron.cell import distribution
from jaxlean.models.neuron.mechanisms.channels import hh
from jaxlean.models.neuron.morphology import (
    _contour,
    _geometry,
    axon_stub,
    discretize,
    morph_edit,
    morphology_io,
)
from jaxlean.models.neuron.morphology.swc import fixture
from jaxlean.models.neuron.simulation.cable import Cell, Stimulus, simulate, step_current
from tests.models.neuron.neuron_reference import run_fixture_script, spike_times

FIXTURES = Path(__file__).parent / "fixtures"
ASC = FIXTURES / "pyramid.asc"
SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "make_asc_fixtures.py"
CASES = ["asc_pyramid", "asc_pyramid_stub"]
V_TOL, SPIKE_TOL, RTOL = 1e-3, 1e-4, 1e-9
needs_morphio = pytest.mark.skipif(importlib.util.find_spec("morphio") is None,
                                   reason="morphio not installed (jaxlean[morphology])")
needs_neuron = pytest.mark.skipif(importlib.util.find_spec("neuron") is None,
                                  reason="neuron not installed")
needs_bluepyopt = pytest.mark.skipif(importlib.util.find_spec("bluepyopt") is None,
                                     reason="bluepyopt not installed (the stub case runs it)")


def tree_of(case: dict) -> morphology_io.SectionTree:
    tree = morphology_io.load_morphology(ASC)
    if not case.get("replace_axon"):
        return tree
    # BluePyOpt's stub (this release's rule, the default), then d_lambda everywhere: the
    # stub's own nseg goes back to the rule, as the case's later forall nseg = ... does
    return morph_edit.set_nseg(axon_stub.replace_axon(tree), {"axon[0]": None, "axon[1]": None})


def check_against(fixture_file: Path) -> None:
    """Everything the fixture holds, from jaxlean's reading of the same file."""
    fx = np.load(fixture_file)
    case = json.loads(str(fx["case"]))
    tree = tree_of(case)
    rule = discretize.DLambda(case["Ra"], d_lambda=case["d_lambda"], freq=case["frequency"])
    cell = Cell.from_morphology(tree, nseg=rule)
    names = tuple(str(n) for n in fx["names"])
    assert tree.names == names and cell.section_names == names
    parents = [tree.names[s.parent] if s.parent >= 0 else "" for s in tree.sections]
    assert parents == [str(n) for n in fx["parent_names"]]
    np.testing.assert_array_equal([s.parent_x if s.parent >= 0 else -1.0
                                   for s in tree.sections], fx["parent_x"])
    counts = np.array([cell.compartments_of(name).size for name in names])
    np.testing.assert_array_equal(counts, fx["nseg"])
    np.testing.assert_allclose([tree.length(k) for k in range(len(tree))], fx["length"],
                               rtol=RTOL)
    diam = np.concatenate([morphology_io.segment_diameters(s, int(n)) if d is None
                           else np.full(int(n), d)
                           for s, n, d in zip(tree.sections, counts, tree.cylinders,
                                              strict=True)])
    np.testing.assert_allclose(diam, fx["diam"], rtol=RTOL)
    np.testing.assert_allclose(2 * np.pi * cell.radius * cell.length, fx["area"], rtol=RTOL)
    soma = tree.sections[0]
    np.testing.assert_array_equal(_geometry._as_stored(soma.xyz), fx["soma_3d"][:, :3]
                                  .astype(np.float32))
    np.testing.assert_array_equal(_geometry._as_stored(2 * soma.radius),
                                  fx["soma_3d"][:, 3].astype(np.float32))
    if "stub_diameters" in fx:
        np.testing.assert_allclose(axon_stub.stub_diameters(morphology_io.load_morphology(ASC)),
                                   fx["stub_diameters"], rtol=1e-12)
    with jax.enable_x64():
        cell = cell.insert(hh)
        params = {**cell.params(), "Ra": case["Ra"], "celsius": case["celsius"]}
        for name, rules in case.get("rules", {}).items():
            key = {"gnabar_hh": "gnabar_hh", "gl_hh": "gl_hh"}[name]
            params[key] = distribution.by_region(cell, {r: _rule(v) for r, v in rules.items()})
        sites = [cell.location(str(n), float(x))
                 for n, x in zip(fx["site_names"], fx["site_x"], strict=True)]
        current = step_current(case["amp"], case["delay"], case["dur"], case["dt"],
                               case["t_max"])
        trace = simulate(cell, params, [Stimulus(cell.location(0, 0.5), current)], case["dt"],
                         case["t_max"], record=sites)
        v = np.asarray(trace["v"])
    np.testing.assert_allclose(np.asarray(trace["t"]), fx["t"], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_less(np.abs(v - fx["v"]).max(), V_TOL)
    ours, theirs = spike_times(v, case["dt"]), spike_times(fx["v"], case["dt"])
    assert sum(t.size for t in theirs) > 0      # it does spike
    for a, b in zip(ours, theirs, strict=True):
        assert a.size == b.size
        np.testing.assert_allclose(a, b, atol=SPIKE_TOL)


def _rule(rule: list):
    kind, *c = rule
    return {"constant": lambda: c[0], "linear": lambda: distribution.Linear(*c),
            "exponential": lambda: distribution.Exponential(*c),
            "sigmoid": lambda: distribution.Sigmoid(*c)}[kind]()


@needs_morphio
@pytest.mark.parametrize("name", CASES)
def test_matches_committed_neuron_fixture(name):
    check_against(FIXTURES / f"{name}.npz")


@needs_morphio
@needs_neuron
@pytest.mark.parametrize("name", ["asc_pyramid",
                                  pytest.param("asc_pyramid_stub", marks=needs_bluepyopt)])
def test_matches_neuron_live(name, tmp_path):
    run_fixture_script(SCRIPT, tmp_path, name)
    check_against(tmp_path / f"{name}.npz")


@needs_morphio
def test_hdf5_is_read_as_the_same_cell(tmp_path):
    import morphio.mut

    morphio.mut.Morphology(str(ASC)).write(str(tmp_path / "pyramid.h5"))
    asc, h5 = (morphology_io.load_morphology(p) for p in (ASC, tmp_path / "pyramid.h5"))
    assert asc.names == h5.names
    for a, b in zip(asc.sections, h5.sections, strict=True):
        np.testing.assert_array_equal(a.xyz, b.xyz)
        np.testing.assert_array_equal(a.radius, b.radius)
        assert (a.parent, a.parent_x, a.kind) == (b.parent, b.parent_x, b.kind)


@needs_morphio
def test_tree_sections_keep_the_file_points():
    """A tree keeps its own first point (a wire to soma(0.5)); a branch starts with a copy of
    its parent's last point carrying the branch's own first diameter."""
    tree = morphology_io.load_morphology(ASC)
    dend0, dend1 = tree.sections[1], tree.sections[2]
    np.testing.assert_array_equal(dend0.xyz[0], [-8.5, 1.0, 0.0])
    assert (dend0.parent, dend0.parent_x, dend0.kind) == (0, 0.5, 3)
    np.testing.assert_array_equal(dend1.xyz[:2], [[-47.5, 15.0, 1.5], [-60.0, 30.0, 2.0]])
    np.testing.assert_array_equal(2 * dend1.radius[:2], [1.2, 1.2])
    assert (dend1.parent, dend1.parent_x) == (1, 1.0)
    assert [tree.sections[k].kind for k in range(len(tree))] == [1] + [3] * 5 + [4] * 5 + [2] * 3


@needs_morphio
def test_a_repeated_branch_point_is_not_copied_again(tmp_path):
    path = tmp_path / "repeat.asc"
    path.write_text('("CellBody" (CellBody) (5 0 0 0) (0 5 0 0) (-5 0 0 0) (0 -5 0 0))\n'
                    "((Dendrite) (0 0 0 2) (10 0 0 2)\n"
                    " ( (10 0 0 1.5) (20 5 0 1) | (20 -5 0 1) ) )\n")
    tree = morphology_io.load_morphology(path)
    np.testing.assert_array_equal(tree.sections[2].xyz, [[10, 0, 0], [20, 5, 0]])
    np.testing.assert_array_equal(2 * tree.sections[2].radius, [1.5, 1.0])
    np.testing.assert_array_equal(2 * tree.sections[3].radius, [1.0, 1.0])


def test_contour_centroid_of_an_ellipse_lies_on_its_major_axis():
    angle = np.linspace(0, 2 * np.pi, 40, endpoint=False)
    tilt = 0.3
    x, y = 10 * np.cos(angle), 4 * np.sin(angle)
    outline = np.stack([np.cos(tilt) * x - np.sin(tilt) * y + 3,
                        np.sin(tilt) * x + np.cos(tilt) * y - 2, np.zeros_like(x)], 1)
    centres, diameters = _contour.centroid(outline, "ellipse")
    assert centres.shape == (21, 3) and diameters.shape == (21,)
    direction = centres[-1] - centres[0]
    np.testing.assert_allclose(direction[:2] / np.linalg.norm(direction),
                               [np.cos(tilt), np.sin(tilt)], atol=1e-3)
    np.testing.assert_allclose(centres.mean(0), [3, -2, 0], atol=0.05)
    assert 7.8 < diameters.max() <= 8.0 and np.all(diameters > 0)


def test_contour_without_width_is_refused():
    line = np.stack([np.arange(6.0), 2 * np.arange(6.0), np.zeros(6)], 1)
    with pytest.raises(MorphologyError, match="no width"):
        _contour.centroid(line, "flat.asc")


def test_swc_goes_through_import3d_swc_rules():
    path = fixture("y")
    via = Cell.from_morphology(path, ncomp=2)
    direct = Cell.from_swc(path, ncomp=2)
    assert via.section_names == direct.section_names
    np.testing.assert_array_equal(via.radius, direct.radius)
    np.testing.assert_array_equal(via.parents, direct.parents)


def test_unknown_suffix_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"\.swc, \.asc, \.h5"):
        morphology_io.load_morphology(tmp_path / "cell.neuroml")


def test_missing_morphio_is_refused_with_the_install_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "morphio", None)
    with pytest.raises(ConfigError, match=r"pip install 'jaxlean\[morphology\]'"):
        morphology_io.load_morphology(ASC)


@needs_morphio
def test_malformed_files_are_refused_by_name(tmp_path):
    with pytest.raises(MorphologyError, match="no such file"):
        morphology_io.load_morphology(tmp_path / "missing.asc")
    two = tmp_path / "two_somata.asc"
    body = '("CellBody" (CellBody) (5 0 0 0) (0 5 0 0) (-5 0 0 0))\n'
    two.write_text(body + body.replace(" 0 0)", " 9 0)"))
    with pytest.raises(MorphologyError, match=r"two_somata\.asc"):
        morphology_io.load_morphology(two)
    no_soma = tmp_path / "no_soma.asc"
    no_soma.write_text("((Dendrite) (0 0 0 2) (10 0 0 2) (20 0 0 1))\n")
    with pytest.raises(MorphologyError, match="soma contour"):
        morphology_io.load_morphology(no_soma)
