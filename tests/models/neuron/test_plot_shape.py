"""``plot.shape``: what is drawn, checked on the suite's cells, each rendered to PNG (Agg).

The cells: a hand-written SWC whose sections are straight lines in the xy plane (answers by
hand: each compartment's piece, its outline's area, its centre), the bundled pyramidal SWC,
the ASC pyramid with BluePyOpt's axon stub (MorphIO) and a cell from parents (a layout).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from jaxlean.errors import ConfigError  # noqa: E402
from jaxlean.models.neuron import (  # noqa: E402
    Cell,
    Stimulus,
    expsyn,
    fixture,
    load_morphology,
    replace_axon,
    simulate,
    step_current,
)
from jaxlean.models.neuron.plot import (  # noqa: E402
    REGION_COLORS,
    compartment_geometry,
    project,
    shape,
)
from tests.conftest import ROOT, child_env  # noqa: E402

ASC = ROOT / "tests" / "models" / "neuron" / "fixtures" / "pyramid.asc"
# soma: a 3-point cylinder along x (20 um, diameter 10); dend[0] 100 um along +y, diameter 2;
# apic[0] 60 um along -y then... all straight, in the z = 0 plane
STRAIGHT = """\
1 1 -10 0 0 5 -1
2 1 0 0 0 5 1
3 1 10 0 0 5 2
4 3 0 5 0 1 2
5 3 0 105 0 1 4
6 4 10 0 0 0.5 3
7 4 70 0 0 0.5 6
"""


def png(figure, path) -> None:
    figure.savefig(path, dpi=60)
    assert path.stat().st_size > 1000
    matplotlib.pyplot.close(figure)


def area(polygon: np.ndarray) -> float:
    x, y = polygon[:, 0], polygon[:, 1]
    return 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))


@pytest.fixture
def straight(tmp_path):
    path = tmp_path / "straight.swc"
    path.write_text(STRAIGHT)
    return Cell.from_swc(path, ncomp=4), path


def test_each_compartment_is_its_piece_of_the_section_to_scale(straight, tmp_path):
    cell, path = straight
    drawn = shape(cell, path)
    png(drawn.figure, tmp_path / "straight.png")
    polygons = [p.vertices for p in drawn.collection.get_paths()]
    assert len(polygons) == cell.n == 9                     # soma 1 + 2 sections x 4
    diameters = 2 * np.asarray(cell.radius)
    for c, polygon in enumerate(polygons):                   # cylinders: length x diameter
        assert area(polygon) == pytest.approx(cell.length[c] * diameters[c], rel=1e-9)
    dend = cell.compartments_of("dend[0]")
    centres = drawn.geometry.centres[dend]                   # 5 + 12.5 + 25 j along y
    np.testing.assert_allclose(centres, [[0, 5 + 12.5 + 25 * j, 0] for j in range(4)],
                               atol=1e-12)
    np.testing.assert_allclose([np.ptp(p[:, 0]) for p in [polygons[c] for c in dend]], 2.0)
    colors = drawn.collection.get_facecolors()
    for c, kind in enumerate(np.asarray(cell.kind).tolist()):
        np.testing.assert_allclose(colors[c], matplotlib.colors.to_rgba(REGION_COLORS[kind][1]))
    legend = [t.get_text() for t in drawn.legend.get_texts()]
    assert legend == ["soma", "basal", "apical"]


def test_values_set_the_colours_and_their_range(straight, tmp_path):
    cell, path = straight
    values = np.linspace(-3.0, 7.0, cell.n)
    drawn = shape(cell, path, values=values, label="g (S/cm2)")
    png(drawn.figure, tmp_path / "values.png")
    np.testing.assert_array_equal(drawn.collection.get_array(), values)
    assert (drawn.collection.norm.vmin, drawn.collection.norm.vmax) == (-3.0, 7.0)
    assert drawn.colorbar.ax.get_ylabel() == "g (S/cm2)"
    rgba = drawn.collection.get_facecolors()
    assert np.allclose(rgba[0], drawn.collection.cmap(0.0))
    assert np.allclose(rgba[-1], drawn.collection.cmap(1.0))
    signed = shape(cell, path, values=values, symmetric=True)  # a gradient: 0 in the middle
    assert (signed.collection.norm.vmin, signed.collection.norm.vmax) == (-7.0, 7.0)
    per_section = shape(cell, path, values=[1.0, 2.0, 3.0], colorbar=False)
    np.testing.assert_array_equal(per_section.collection.get_array(),
                                  np.asarray([1.0, 2.0, 3.0])[np.asarray(cell.branch)])
    assert per_section.colorbar is None
    with pytest.raises(ConfigError, match=r"per compartment \(9,\); got shape \(4,\)"):
        shape(cell, path, values=np.ones(4))
    matplotlib.pyplot.close("all")


def test_a_voltage_at_one_time_colours_the_cell(straight, tmp_path):
    cell, path = straight                                     # hh everywhere (the preset)
    dt, t_max = 0.025, 3.0
    out = simulate(cell, cell.params(), [Stimulus(0, step_current(1.0, 0.5, 2.0, dt, t_max))],
                   dt, t_max, record=list(range(cell.n)), progress=False)
    k = int(np.argmax(np.asarray(out["v"])[:, 0]))            # the soma's peak
    drawn = shape(cell, path, values=out["v"][k], label=f"v at {float(out['t'][k]):.2f} ms")
    png(drawn.figure, tmp_path / "voltage.png")
    v = np.asarray(out["v"][k], dtype=float)
    np.testing.assert_array_equal(drawn.collection.get_array(), v)
    assert (drawn.collection.norm.vmin, drawn.collection.norm.vmax) == (v.min(), v.max())
    assert v.max() == v[0]                                    # the stimulated soma is highest


def test_markers_sit_at_the_named_compartments(straight, tmp_path):
    cell, path = straight
    syn = cell.insert(expsyn, compartments=[3, 8])
    tip = cell.location("apic[0]", 1.0)
    drawn = shape(syn, path, stimuli=[Stimulus(0, 0.1)], recordings=[("dend[0]", 0.3), tip],
                  synapses=True)
    png(drawn.figure, tmp_path / "markers.png")
    assert {k: v.tolist() for k, v in drawn.sites.items()} == {
        "stimuli": [0], "recordings": [cell.location("dend[0]", 0.3), tip],
        "synapses": [3, 8]}
    np.testing.assert_allclose(drawn.markers["recordings"].get_offsets(),
                               [[0.0, 5 + 12.5 + 25], [10 + 52.5, 0.0]], atol=1e-12)
    np.testing.assert_allclose(drawn.markers["stimuli"].get_offsets(), [[0.0, 0.0]], atol=1e-12)
    assert shape(syn, path, synapses=expsyn).sites["synapses"].tolist() == [3, 8]
    with pytest.raises(ConfigError, match="recordings names compartment 9"):
        shape(cell, path, recordings=[9])
    matplotlib.pyplot.close("all")


def test_pieces_follow_the_points_of_the_bundled_pyramidal_cell(tmp_path):
    cell = Cell.from_swc(fixture("pyramidal"), ncomp=3)
    geometry = compartment_geometry(cell, fixture("pyramidal"))
    arcs = [float(np.sum(np.linalg.norm(np.diff(p, axis=0), axis=1))) for p in geometry.points]
    # NEURON's L is that of its float32 copy of the points: equal to about 1e-8
    np.testing.assert_allclose(arcs[1:], np.asarray(cell.length)[1:], rtol=1e-6)
    points = np.loadtxt(fixture("pyramidal"))[:, 2:5]
    every = np.concatenate(geometry.points)
    assert every.min(0) == pytest.approx(points.min(0)) and every.max(0) == pytest.approx(
        points.max(0))
    drawn = shape(cell, geometry, widths="lines", linewidth=2.0, plane="xz")
    png(drawn.figure, tmp_path / "lines.png")
    segments = drawn.collection.get_segments()
    assert len(segments) == cell.n
    np.testing.assert_allclose(segments[5], geometry.points[5][:, [0, 2]])
    assert drawn.collection.get_linewidths().tolist() == [2.0]
    assert drawn.ax.get_xlabel() == "x (um)" and drawn.ax.get_ylabel() == "z (um)"


@pytest.mark.skipif(importlib.util.find_spec("morphio") is None, reason="needs morphio")
def test_the_asc_cell_with_its_axon_stub(tmp_path):
    tree = replace_axon(load_morphology(ASC))
    cell = Cell.from_morphology(tree, max_length=20.0)
    drawn = shape(cell, tree)
    png(drawn.figure, tmp_path / "asc.png")
    assert len(drawn.collection.get_paths()) == cell.n
    start = np.round(tree.sections[0].xyz[-1])
    for name, diameter in (("axon[0]", tree.cylinders[-2]), ("axon[1]", tree.cylinders[-1])):
        pieces = cell.compartments_of(name)        # the stub's own nseg, whatever max_length
        for c in pieces:                                       # cylinders along +x
            polygon = drawn.collection.get_paths()[c].vertices
            assert np.ptp(polygon[:, 1]) == pytest.approx(diameter, rel=1e-12)
            assert np.ptp(polygon[:, 0]) == pytest.approx(30.0 / pieces.size)
            assert polygon[:, 0].min() >= start[0] - 1e-9
    stub = cell.compartments_of("axon[1]")
    np.testing.assert_allclose(drawn.geometry.points[stub[-1]][-1], start + np.array([60.0, 0, 0]))
    assert [t.get_text() for t in drawn.legend.get_texts()] == ["soma", "axon", "basal",
                                                                 "apical"]
    with pytest.raises(ConfigError, match="sections and the cell"):
        shape(cell, ASC)                            # the file has the whole axon, not the stub


def test_a_cell_from_parents_is_laid_out_from_its_lengths(tmp_path):
    cell = Cell.from_parents([-1, 0, 1, 1, 3, 0], [20.0, 50, 30, 40, 40, 25],
                             [10.0, 1, 1, 1, 0.5, 1])
    geometry = compartment_geometry(cell)
    assert not geometry.from_points
    lengths = [np.linalg.norm(p[1] - p[0]) for p in geometry.points]
    np.testing.assert_allclose(lengths, cell.length)
    for c, p in enumerate(np.asarray(cell.parents).tolist()):
        if p >= 0:   # attached at the parent's distal end (attach = 1)
            np.testing.assert_allclose(geometry.points[c][0], geometry.points[p][-1])
    drawn = shape(cell)
    png(drawn.figure, tmp_path / "parents.png")
    assert len(drawn.collection.get_paths()) == cell.n


def test_projection_planes():
    xyz = np.array([[1.0, 2.0, 3.0]])
    assert project(xyz, "xy").tolist() == [[1.0, 2.0]]
    assert project(xyz, "yz").tolist() == [[2.0, 3.0]]
    assert project(xyz, [[0, 0, 1], [1, 0, 0]]).tolist() == [[3.0, 1.0]]
    with pytest.raises(ConfigError, match="plane must be one of"):
        project(xyz, "xw")


def test_jaxlean_and_the_plot_package_import_no_matplotlib():
    code = ("import sys, jaxlean, jaxlean.models.neuron.plot; "
            "assert 'matplotlib' not in sys.modules, 'matplotlib imported'; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=child_env(), timeout=120)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]


def test_missing_matplotlib_is_refused_with_the_install_line(straight, monkeypatch):
    cell, path = straight
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ConfigError, match=r"pip install 'jaxlean\[plot\]'"):
        shape(cell, path)
