"""Ion .mod files loaded by ``load_mod_dir`` against NEURON running the same files.

The fixture is the hand-written ion mechanisms' (``tests/models/neuron/test_ions_parity.py``,
written by ``scripts/make_ion_fixtures.py`` from ``fixtures/ions_mods``): an ohmic HVA Ca
channel (``READ eca WRITE ica``), a GHK T-type channel (``READ cai, cao WRITE ica``), a
``CaDynamics_E2``-style shell (``READ ica WRITE cai``) and an SK channel reading ``cai``.
Here the four files are translated and the same cell is simulated, within the same
tolerance.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxlean.models.neuron.nmodl import load_mod_dir
from tests.models.neuron.test_ions_parity import FIXTURE, assert_matches
from tests.models.neuron.test_ions_parity import jaxlean_run as ions_run

MODS = Path(__file__).parents[1] / "fixtures" / "ions_mods"


def jaxlean_run(case: dict) -> dict:
    """The fixture's cell with the four ion mechanisms loaded from their .mod files."""
    mechanisms = load_mod_dir(MODS)
    return ions_run(case, mechanisms=tuple(mechanisms[k] for k in ("cad", "cat", "hva", "sk")))


def test_translated_ion_files_declare_neurons_ions():
    mechanisms = load_mod_dir(MODS)
    assert list(mechanisms) == ["cad", "cat", "hva", "sk"]
    cad, cat, hva, sk = mechanisms.values()
    assert cad.states == ("cai",) and cad.ion_writes() == ("cai",) and cad.dstate is not None
    assert cat.voltage_dependent and cat.currents["ica_cat"][1] == "ica"
    assert not hva.voltage_dependent and hva.currents["ica_hva"][1] == "eca"
    assert sk.ion_reads() == ("ek", "cai") and sk.dstate is not None


def test_matches_committed_neuron_recordings():
    with jax.enable_x64(True):
        fixture = np.load(FIXTURE)
        errors = assert_matches(fixture, jaxlean_run(json.loads(str(fixture["meta"]))["case"]))
    assert errors["soma_v"] < 1e-9 and np.ptp(fixture["soma_cai"]) > 1e-3


@pytest.mark.parametrize("name", ["cad", "sk"])
def test_mechanism_order_is_neurons(name):
    meta = json.loads(str(np.load(FIXTURE)["meta"]))
    order = [m for m in meta["order"] if m in ("cad", "cat", "hva", "sk")]
    assert list(load_mod_dir(MODS)) == order and name in order
