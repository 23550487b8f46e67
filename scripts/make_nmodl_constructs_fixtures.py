"""Write the NEURON fixture of NMODL constructs (tests/models/neuron/nmodl/fixtures/constructs.npz).

The small files of ``tests/models/neuron/nmodl/constructs/`` (a KINETIC scheme with
COMPARTMENT and CONSERVE, its STEADYSTATE in INITIAL, coupled and nonlinear cnexp
equations and euler, a calcium shell
writing ``cai`` by assignment with a file-level LOCAL and an INCLUDE, arrays with FROM
loops, ``t`` in BREAKPOINT and DERIVATIVE with IF/ELSE, a nested block, VERBATIM reading
the ion and ``(faraday) (10000 coulomb)``, a density ELECTRODE_CURRENT, BEFORE/AFTER
blocks) each run alone with ``pas`` in one compartment, as
``scripts/make_migliore_fixtures.py`` runs its cases (same cell, steps and sampling).
Needs ``neuron`` (``pip install neuron==9.0.2``) and a C compiler:

    python scripts/make_nmodl_constructs_fixtures.py [--out DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

from make_migliore_fixtures import ROOT, main  # scripts/ is on sys.path

MODS = ROOT / "tests" / "models" / "neuron" / "nmodl" / "constructs"
OUT = ROOT / "tests" / "models" / "neuron" / "nmodl" / "fixtures"
CASES = {
    "kinetic": {"mechanisms": {"kinetic": {}}, "record": ["C_kinetic", "O_kinetic",
                                                         "I_kinetic"]},
    "steady": {"mechanisms": {"steady": {}}, "record": ["C_steady", "O_steady", "I_steady"]},
    "coupled": {"mechanisms": {"coupled": {}}, "record": ["m_coupled", "c_coupled"]},
    "nonlinear": {"mechanisms": {"nonlinear": {}}, "record": ["m_nonlinear"]},
    "explicit": {"mechanisms": {"explicit": {}}, "record": ["m_explicit"]},
    "shell": {"mechanisms": {"shell": {}}, "record": ["cai", "ca_shell", "ica"]},
    "arrays": {"mechanisms": {"arr": {"gnabar": 0.001}}, "record": ["m_arr", "h_arr"]},
    "timed": {"mechanisms": {"timed": {}}, "record": ["m_timed", "i_timed"]},
    "electrode": {"mechanisms": {"electrode": {}}, "record": []},
    "ba": {"mechanisms": {"ba": {}}, "record": ["m_ba", "w_ba", "n_ba", "q_ba"]},
}

if __name__ == "__main__":
    arguments = sys.argv[1:]
    main(Path(arguments[1]) if arguments[:1] == ["--out"] else OUT, MODS, CASES,
         "constructs.npz")
