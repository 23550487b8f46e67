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
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.models.neuron.cable import Cell, Stimulus, simulate, step_current
from jaxlean.models.neuron.channels import hh, pas
from jaxlean.models.neuron.nmodl import load_mod_dir
from tests.models.neuron.test_ions_parity import FIXTURE, RECORDED, SECTIONS, assert_matches

MODS = Path(__file__).parents[1] / "fixtures" / "ions_mods"
WHERE = {"cad": 1, "cat": 1, "hva": None, "sk": [1, 3]}
"""The region types of each mechanism in the fixture's cell (``None``: everywhere)."""


def jaxlean_run(case: dict) -> dict:
    mechanisms = load_mod_dir(MODS)
    nd, na = case["dend_nseg"], case["apic_nseg"]
    parents = [-1, *range(nd), 0, *range(nd + 1, nd + na)]
    length = [case["soma_L"]] + [case["dend_L"] / nd] * nd + [case["apic_L"] / na] * na
    radius = ([case["soma_diam"] / 2] + [case["dend_diam"] / 2] * nd
              + [case["apic_diam"] / 2] * na)
    kind = [1] + [3] * nd + [4] * na
    cell = Cell.from_parents(parents, length, radius, kind=kind).insert(hh, types=1).insert(
        pas, types=[3, 4])
    for name, mechanism in mechanisms.items():  # NEURON's order: cad, cat, hva, sk
        cell = cell.insert(mechanism, **({} if WHERE[name] is None else {"types": WHERE[name]}))
    section = np.asarray([{1: "soma", 3: "dend", 4: "apic"}[k] for k in kind])
    params = {**cell.params(), "celsius": case["celsius"], "v_init": case["v_init"],
              "axial_resistivity": case["Ra"], "capacitance": case["cm"],
              "g_leak": case["pas"]["g"], "e_leak": case["pas"]["e"],
              "gbar_hva": jnp.asarray([case["hva"][s] for s in section]),
              "gbar_sk": jnp.asarray([case["sk"].get(s, 0.0) for s in section]),
              **{f"{k}_cad": v for k, v in case["cad"].items()}}
    clamp = case["iclamp"]
    current = step_current(clamp["amp"], clamp["delay"], clamp["dur"], case["dt"],
                           case["t_max"])
    return simulate(cell, params, [Stimulus(0, current)], case["dt"], case["t_max"],
                    states={name: [SECTIONS[s] for s in where]
                            for name, where in RECORDED.items()}, progress=False)


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
    order = [m for m in meta["order"] if m in WHERE]
    assert list(load_mod_dir(MODS)) == order and name in order
