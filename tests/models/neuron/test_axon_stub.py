"""BluePyOpt's axon stub on its own L5PC morphology (C060114A7.asc), per BluePyOpt release,
and the tapered stub of published templates against BluePyEModel's.

The fixture ``fixtures/bluepyopt_l5pc/bluepyopt_stub.npz`` was written by
``scripts/make_bluepyopt_fixtures.py`` with BluePyOpt itself: its ``NrnFileMorphology``
(``python_*``: the Python ``replace_axon`` of the installed release, which measures the
60 um from ``soma(0.5)``) and the cell template of its ``create_hoc`` (``hoc_*``: the HOC
``replace_axon``, which measures it from ``soma(0)``). On this cell the two rules pick
different second diameters (0.92 and 1.38 um). Required: the same sections, ``nseg`` and
every segment's diameter (1e-6 relative, the stub exactly as NEURON stores ``sec.diam``)
from :func:`axon_stub.replace_axon` with the default release and with ``"hoc"``.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jaxlean.models.neuron import Cell, discretize, morphology_io
from jaxlean.models.neuron.morphology import axon_stub

FOLDER = Path(__file__).parent / "fixtures" / "bluepyopt_l5pc"
pytestmark = pytest.mark.skipif(importlib.util.find_spec("morphio") is None,
                                reason="morphio not installed (jaxlean[morphology])")


@pytest.fixture(scope="module")
def tree() -> morphology_io.SectionTree:
    return morphology_io.load_morphology(FOLDER / "C060114A7.asc")


def _diameters(stub: morphology_io.SectionTree, cell: Cell) -> np.ndarray:
    out = []
    for k, (section, own) in enumerate(zip(stub.sections, stub.cylinders, strict=True)):
        n = cell.compartments_of(k).size
        out.append(morphology_io.segment_diameters(section, n) if own is None
                   else np.broadcast_to(np.asarray(own, dtype=float), (n,)))
    return np.concatenate(out)


def check_stub(tree, path: Path, prefix: str, release: str) -> None:
    fx = np.load(path)
    stub = axon_stub.replace_axon(tree, bluepyopt=release)
    cell = Cell.from_morphology(stub, nseg=discretize.PerLength(40))
    assert cell.section_names == tuple(str(n) for n in fx[f"{prefix}_names"])
    np.testing.assert_array_equal([cell.compartments_of(n).size for n in cell.section_names],
                                  fx[f"{prefix}_nseg"])
    np.testing.assert_allclose(_diameters(stub, cell), fx[f"{prefix}_diam"], rtol=1e-6)
    np.testing.assert_array_equal(np.float32(stub.cylinders[-2:]),
                                  np.float32(fx[f"{prefix}_diam"][-2:]))


RULES = [("python", axon_stub.CURRENT), ("hoc", "hoc"), ("hoc", "1.9")]


@pytest.mark.parametrize(("prefix", "release"), RULES)
def test_stub_matches_bluepyopt_itself(tree, prefix, release):
    check_stub(tree, FOLDER / "bluepyopt_stub.npz", prefix, release)


@pytest.mark.skipif(importlib.util.find_spec("bluepyopt") is None
                    or importlib.util.find_spec("neuron") is None,
                    reason="bluepyopt and neuron not installed (jaxlean[bluepyopt-parity])")
def test_stub_matches_bluepyopt_live(tree, tmp_path):
    script = Path(__file__).resolve().parents[3] / "scripts" / "make_bluepyopt_fixtures.py"
    subprocess.run([sys.executable, str(script), "--out", str(tmp_path), "bluepyopt_stub"],
                   check=True, capture_output=True)
    for prefix, release in RULES:
        check_stub(tree, tmp_path / "bluepyopt_stub.npz", prefix, release)


def test_the_two_rules_differ_on_this_cell(tree):
    """The case the suite could not see before: 0.92 um from soma(0.5), 1.38 from soma(0)."""
    new = axon_stub.stub_diameters(tree)
    old = axon_stub.stub_diameters(tree, bluepyopt="1.9")
    assert new[0] == old[0] and abs(new[1] - old[1]) > 0.4


@pytest.mark.parametrize("prefix", ["python", "hoc"])
def test_tapered_stub_matches_bluepyemodel_itself(tree, prefix):
    """``bluepyemodel_taper.npz``: BluePyEModel's ``replace_axon_legacy`` (Python, as a
    BluePyOpt morphology modifier) and ``replace_axon_legacy_hoc`` (the HOC of published
    templates, in a ``create_hoc`` template), run by the fixture script on C060114A7.asc."""
    fx = np.load(FOLDER / "bluepyemodel_taper.npz")
    stub = axon_stub.replace_axon_tapered(tree)
    cell = Cell.from_morphology(stub, nseg=discretize.PerLength(40))
    assert cell.section_names == tuple(str(n) for n in fx[f"{prefix}_names"])
    np.testing.assert_array_equal([cell.compartments_of(n).size for n in cell.section_names],
                                  fx[f"{prefix}_nseg"])
    np.testing.assert_allclose(_diameters(stub, cell), fx[f"{prefix}_diam"], rtol=1e-6)
    assert len(set(np.round(fx[f"{prefix}_diam"][-10:], 6))) > 2      # tapered, not two values
