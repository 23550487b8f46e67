"""NMODL constructs against NEURON 9 running the same small files (``constructs/``): a
KINETIC scheme with COMPARTMENT and CONSERVE (an initial state that breaks the
conservation, which NEURON enforces through the equation it replaces; its STEADYSTATE
sparse in INITIAL), coupled and
nonlinear cnexp equations, METHOD euler, a calcium shell writing ``cai`` by assignment
with a file-level LOCAL and an INCLUDE, arrays with FROM loops, ``t`` in BREAKPOINT and a
DERIVATIVE with ``IF``/``ELSE``, a nested block with a LOCAL, VERBATIM ``cref = _ion_cai;``
and a C comment, ``(faraday) (10000 coulomb)``, a density ELECTRODE_CURRENT, BEFORE
INITIAL, AFTER INITIAL, AFTER SOLVE and BEFORE STEP (``n`` counts its runs). Fixture:
``scripts/make_nmodl_constructs_fixtures.py``; the cell and steps are the Migliore tests'.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conftest import needs_nrnivmodl
from tests.models.neuron.neuron_reference import run_fixture_script
from tests.models.neuron.nmodl.test_migliore import compare

HERE = Path(__file__).parent
MODS, FIXTURE = HERE / "constructs", HERE / "fixtures" / "constructs.npz"
SCRIPT = HERE.parents[3] / "scripts" / "make_nmodl_constructs_fixtures.py"
CASES = ["kinetic", "steady", "coupled", "nonlinear", "explicit", "shell", "arrays", "timed",
         "electrode", "ba"]


@pytest.mark.parametrize("name", CASES)
def test_matches_committed_neuron_recordings(name):
    compare(np.load(FIXTURE), name, MODS)


@needs_nrnivmodl
def test_matches_neuron_live(tmp_path):
    run_fixture_script(SCRIPT, tmp_path)
    fixture = np.load(tmp_path / "constructs.npz")
    for name in CASES:
        compare(fixture, name, MODS)
