"""Ions against NEURON: Ca channels (ohmic and GHK), a calcium shell, an SK channel reading it.

The fixture was written by ``scripts/make_ion_fixtures.py`` (NEURON 9, the ``.mod``
files of ``fixtures/ions_mods`` compiled by ``nrnivmodl``): a soma (``hh``, ``hva``,
``cad``, ``sk``, ``cat``) with a dendrite (``pas``, ``hva``, ``sk``: calcium read, not
written) and an apical branch (``pas``, ``hva``: ``eca`` a parameter). Here the
four mechanisms are written by hand as :class:`Mechanism` data and the same cell
is simulated in float64. Live against NEURON when it is installed.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.models.neuron.mechanisms.channels import hh, pas
from jaxlean.models.neuron.mechanisms.ions import (
    FARADAY,
    GAS_CONSTANT,
    SPECIES,
    UseIon,
    ghk,
    nernst,
)
from jaxlean.models.neuron.mechanisms.mechanisms import Mechanism
from jaxlean.models.neuron.simulation.cable import Cell, Stimulus, simulate, step_current
from tests.conftest import needs_nrnivmodl
from tests.models.neuron.neuron_reference import run_fixture_script

FIXTURE = Path(__file__).parent / "fixtures" / "ions_shell.npz"
SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "make_ion_fixtures.py"
SECTIONS = {"soma": 0, "dend": 3, "apic": 7}
"""The centre compartment of each section of the fixture's cell."""
TOLERANCE = {"v": 1e-9, "eca": 1e-9}
"""mV (reached: 2.8e-11 mV); the other quantities: 1e-9 of their range."""


def _hva_gates(v, p):
    return {"m_hva": (1 / (1 + jnp.exp(-(v + 20) / 6)), 0.5 + 2 * jnp.exp(-(v + 30) ** 2 / 400)),
            "h_hva": (1 / (1 + jnp.exp((v + 40) / 7)), 30 + 50 * jnp.exp(-(v + 50) ** 2 / 600))}


HVA = Mechanism(
    "hva", parameters={"gbar_hva": (1e-3, "S/cm2")}, states=("m_hva", "h_hva"),
    steady=_hva_gates, ions=(UseIon("ca", read=("eca",), write=("ica",)),),
    currents={"i_hva": (lambda s, p: p["gbar_hva"] * s["m_hva"] ** 2 * s["h_hva"], "eca")})
"""``hva.mod``: ``ica = gbar m^2 h (v - eca)``."""


def _shell(v, s, p):
    influx = -10000 * (s["ica"] * p["gamma_cad"] / (2 * FARADAY * p["depth_cad"]))
    return {"cai": (influx + p["minCai_cad"] / p["decay_cad"], -1 / p["decay_cad"])}


CAD = Mechanism(
    "cad", parameters={"gamma_cad": (0.05, "1"), "decay_cad": (80.0, "ms"),
                       "depth_cad": (0.1, "um"), "minCai_cad": (1e-4, "mM")},
    states=("cai",), dstate=_shell, ions=(UseIon("ca", read=("ica",), write=("cai",)),),
    currents={})
"""``cad.mod`` (``CaDynamics_E2``): ``cai' = -10000 ica gamma / (2 F depth) - (cai - minCai) /
decay``, i.e. ``a = -10000 ica gamma / (2 F depth) + minCai / decay``, ``b = -1 / decay``."""


def _sk_gate(v, s, p):
    ca = jnp.where(s["cai"] < 1e-7, s["cai"] + 1e-7, s["cai"])
    inf = 1 / (1 + (0.00043 / ca) ** 4.8)
    return {"z_sk": (inf / p["ztau_sk"], -1 / p["ztau_sk"])}


SK = Mechanism(
    "sk", parameters={"gbar_sk": (1e-3, "S/cm2"), "ztau_sk": (1.0, "ms")}, states=("z_sk",),
    dstate=_sk_gate, ions=(UseIon("k", read=("ek",), write=("ik",)), UseIon("ca", read=("cai",))),
    currents={"i_sk": (lambda s, p: p["gbar_sk"] * s["z_sk"], "ek")})
"""``sk.mod`` (``SK_E2``): ``z' = (zinf(cai) - z) / ztau``, ``ik = gbar z (v - ek)``."""


def _cat_gate(v, p):
    return {"m_cat": (1 / (1 + jnp.exp(-(v + 50) / 7.4)), 1 + 3 * jnp.exp(-(v + 60) ** 2 / 200))}


CAT = Mechanism(
    "cat", parameters={"pbar_cat": (2e-5, "cm/s")}, states=("m_cat",), steady=_cat_gate,
    ions=(UseIon("ca", read=("cai", "cao"), write=("ica",)),), voltage_dependent=True,
    currents={"i_cat": (lambda s, p: p["pbar_cat"] * s["m_cat"] ** 2
                        * ghk(s["v"], s["cai"], s["cao"], 2, s["celsius"]), "ica")})
"""``cat.mod``: ``ica = pbar m^2 ghk(v, cai, cao)``, a current function of the voltage."""


def _meta(fixture) -> dict:
    return json.loads(str(fixture["meta"]))


def cell_and_params(case: dict, mechanisms: tuple | None = None):
    """The fixture's cell: soma 0, dendrite 1-5, apical branch 6-8; its values. The ion
    mechanisms (cad, cat, hva, sk: the hand-written ones unless ``mechanisms`` are given,
    e.g. loaded from the .mod files) inserted in NEURON's order."""
    cad, cat, hva, sk = mechanisms or (CAD, CAT, HVA, SK)
    nd, na = case["dend_nseg"], case["apic_nseg"]
    parents = [-1, *range(nd), 0, *range(nd + 1, nd + na)]
    length = [case["soma_L"]] + [case["dend_L"] / nd] * nd + [case["apic_L"] / na] * na
    radius = ([case["soma_diam"] / 2] + [case["dend_diam"] / 2] * nd
              + [case["apic_diam"] / 2] * na)
    kind = [1] + [3] * nd + [4] * na
    cell = (Cell.from_parents(parents, length, radius, kind=kind)
            .insert(hh, types=1).insert(pas, types=[3, 4]).insert(cad, types=1)
            .insert(cat, types=1).insert(hva).insert(sk, types=[1, 3]))
    section = np.asarray([{1: "soma", 3: "dend", 4: "apic"}[k] for k in kind])
    params = {**cell.params(), "celsius": case["celsius"], "v_init": case["v_init"],
              "Ra": case["Ra"], "cm": case["cm"],
              "g_pas": case["pas"]["g"], "e_pas": case["pas"]["e"],
              "gbar_hva": jnp.asarray([case["hva"][s] for s in section]),
              "gbar_sk": jnp.asarray([case["sk"].get(s, 0.0) for s in section]),
              **{f"{k}_cad": v for k, v in case["cad"].items()}}
    return cell, params


RECORDED = {"v": list(SECTIONS), "cai": list(SECTIONS), "ica": list(SECTIONS),
            "eca": list(SECTIONS), "ik": list(SECTIONS), "m_hva": list(SECTIONS),
            "i_k": ["soma"], "z_sk": ["soma", "dend"], "m_cat": ["soma"]}
"""What jaxlean records, in which sections (``hh``'s ``i_k`` on the soma, ``sk`` not on apic)."""


def jaxlean_run(case: dict, params=None, t_max=None, mechanisms: tuple | None = None) -> dict:
    cell, defaults = cell_and_params(case, mechanisms)
    clamp = case["iclamp"]
    t_max = t_max or case["t_max"]
    current = step_current(clamp["amp"], clamp["delay"], clamp["dur"], case["dt"], t_max)
    return simulate(cell, params or defaults, [Stimulus(0, current)], case["dt"], t_max,
                    states={name: [SECTIONS[s] for s in where]
                            for name, where in RECORDED.items()}, progress=False)


def assert_matches(fixture, out: dict) -> dict[str, float]:
    """Every recorded trace within tolerance; returns the largest error of each."""
    errors = {}
    for key in fixture.files:
        if key == "meta":
            continue
        section, quantity = key.split("_", 1)
        column = RECORDED[quantity].index(section)
        ours = out[quantity][:, column]   # ik: the ion's total, hh's and sk's in both
        want = fixture[key]
        error = float(np.max(np.abs(np.asarray(ours) - want)))
        scale = TOLERANCE.get(quantity, 1e-9 * max(float(np.ptp(want)), 1e-12))
        assert error <= scale, f"{key}: max |jaxlean - NEURON| = {error:.3g} > {scale:.3g}"
        errors[key] = error
    return errors


@pytest.fixture(scope="module")
def x64():
    with jax.enable_x64(True):
        yield


def test_constants_and_defaults_are_neurons(x64):
    meta = _meta(np.load(FIXTURE))
    defaults = meta["defaults"]
    assert FARADAY == defaults["faraday_mod"] == defaults["faraday_hoc"]
    assert defaults["R_hoc"] == GAS_CONSTANT
    for ion, species in SPECIES.items():
        assert (species.inside, species.outside) == (defaults[f"{ion}i0"], defaults[f"{ion}o0"])
    assert SPECIES["ca"].reversal == defaults["eca"]
    celsius = meta["case"]["celsius"]
    for (v, ci, co), want_ghk, want_nernst in zip(meta["ghk_samples"], meta["ghk"],
                                                  meta["nernst"], strict=True):
        np.testing.assert_allclose(float(ghk(v, ci, co, 2, celsius)), want_ghk, rtol=1e-13)
        np.testing.assert_allclose(float(nernst(ci, co, 2, celsius)), want_nernst, rtol=1e-13)
    # the shell's state advances before the SK channel's, in NEURON as in jaxlean
    assert meta["order"].index("cad") < meta["order"].index("sk")


def test_matches_committed_neuron_recordings(x64):
    fixture = np.load(FIXTURE)
    errors = assert_matches(fixture, jaxlean_run(_meta(fixture)["case"]))
    assert errors["soma_v"] < 1e-9 and np.ptp(fixture["soma_cai"]) > 1e-3


@needs_nrnivmodl
def test_matches_neuron_live(x64, tmp_path):
    run_fixture_script(SCRIPT, tmp_path)
    fixture = np.load(tmp_path / "ions_shell.npz")
    assert_matches(fixture, jaxlean_run(_meta(fixture)["case"]))


GRADIENT_NAMES = ("gbar_hva", "decay_cad")


@functools.cache
def _scaled_value_and_grad():
    """The loss of :func:`test_gradient_matches_central_differences` with each of
    ``GRADIENT_NAMES`` scaled, and its gradient: one program for both names and for the
    differences (float64)."""
    case = _meta(np.load(FIXTURE))["case"]
    _, params = cell_and_params(case)

    def loss(scales):
        out = jaxlean_run(case, {**params, **{name: params[name] * s
                                              for name, s in scales.items()}}, t_max=15.0)
        return jnp.mean(out["v"][:, 0]) + 1e3 * jnp.mean(out["cai"][:, 0])

    return jax.jit(jax.value_and_grad(loss))


@pytest.mark.parametrize("name", GRADIENT_NAMES)
def test_gradient_matches_central_differences(x64, name):
    """d/ds of the soma's mean voltage and calcium with ``name`` scaled by ``s``, against
    central differences (float64), over 15 ms with two spikes and a calcium transient."""
    value_and_grad = _scaled_value_and_grad()

    def scales(s):
        return {other: jnp.asarray(s if other == name else 1.0) for other in GRADIENT_NAMES}

    grad = float(value_and_grad(scales(1.0))[1][name])
    h = 1e-5
    central = (float(value_and_grad(scales(1.0 + h))[0])
               - float(value_and_grad(scales(1.0 - h))[0])) / (2 * h)
    assert abs(grad) > 1e-4
    np.testing.assert_allclose(grad, central, rtol=1e-5)
