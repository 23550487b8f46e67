"""Ions as data: declarations and their errors, ion parameters, NEURON's linearisation of a
voltage-dependent current, the ion state carried across a continued run."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.mechanisms.channels import hh, pas
from jaxlean.models.neuron.mechanisms.ions import UseIon, ghk, nernst
from jaxlean.models.neuron.mechanisms.mechanisms import Mechanism
from jaxlean.models.neuron.simulation.cable import Cell, Stimulus, rest_state, simulate

from .test_ions_parity import CAD, HVA, SK


def _cell() -> Cell:
    return Cell.from_parents([-1, 0, 1], [20.0, 50.0, 50.0], [5.0, 1.0, 1.0], kind=[1, 3, 3])


@pytest.mark.parametrize("make,match", [
    (lambda: UseIon("ca", read=("cai", "nai")), r"read \['nai'\] are not variables of the ion"),
    (lambda: UseIon("ca", write=("eca",)), "writing the reversal 'eca' is not supported"),
    (lambda: UseIon("h", read=("eh",)), r"give its valence \(known ions"),
    (lambda: UseIon("ca", valence=1), "differs from the ion's charge 2.0"),
    (lambda: Mechanism("x", {"g_x": (1.0, "S/cm2")}, {"i_x": (lambda s, p: p["g_x"], "eca")},
                       ions=(UseIon("ca", read=("eca",)),)),
     r"current 'i_x' is carried by 'ca' \(reversal 'eca'\); declare UseIon\('ca', "
     r"write=\('ica',\)\)"),
    (lambda: Mechanism("x", {}, {}, ions=(UseIon("ca", read=("ica",), write=("cai",)),)),
     "it writes 'cai'; list it in its states"),
    (lambda: Mechanism("x", {"p_x": (1.0, "cm/s")}, {"i_x": (lambda s, p: p["p_x"], "ica")},
                       ions=(UseIon("ca", write=("ica",)),)),
     "given as a function of the voltage .* set voltage_dependent=True"),
    (lambda: Mechanism("x", {"g_x": (1.0, "S/cm2")}, {"ica": (lambda s, p: p["g_x"], "eca")},
                       ions=(UseIon("ca", read=("eca",), write=("ica",)),)),
     r"current names \['ica'\] are ion variables"),
    (lambda: Mechanism("x", {"g_x": (1.0, "uS")}, {"i_x": (lambda s, p: p["g_x"], "eca")},
                       ions=(UseIon("ca", read=("eca",), write=("ica",)),), point=True),
     "ions are not supported in point mechanisms"),
    (lambda: Mechanism("x", {"e_x": (0.0, "mV")}, {"i_x": (lambda s, p: 1.0, "e_x")},
                       states=("a",), steady=lambda v, p: {}, dstate=lambda v, s, p: {}),
     "give exactly one of rates"),
])
def test_bad_ion_declarations_are_named(make, match):
    with pytest.raises(ConfigError, match=match):
        make()


def test_ion_parameters_have_neurons_defaults_and_are_checked():
    cell = _cell().insert(hh, types=1).insert(pas, types=3).insert(CAD).insert(HVA)
    params = cell.params()
    assert float(params["eca"]) == float(np.float32(132.4579341637009))
    assert (float(params["cai0"]), float(params["cao0"])) == (float(np.float32(5e-5)), 2.0)
    assert {"ena", "ek"} <= set(params) and "cai" not in params   # hh reads ena and ek
    assert {"ek", "eca", "cai0"} <= set(cell.insert(SK, types=1).params())
    with pytest.raises(ConfigError, match=r"missing parameter\(s\) \['cai0'\]"):
        simulate(cell, {k: v for k, v in params.items() if k != "cai0"}, [], 0.1, 1.0)
    with pytest.raises(ConfigError, match=r"cannot record \['cai'\]"):
        simulate(_cell().insert(HVA), _cell().insert(HVA).params(), [], 0.1, 1.0,
                 states=["cai"])


def test_reversal_follows_the_concentration_only_where_it_is_used():
    """``eca`` is Nernst's of the shell's calcium where the shell is, the parameter elsewhere
    (no concentration in use there); ``ica`` is the sum of the ion's currents."""
    cell = _cell().insert(hh, types=1).insert(pas, types=3).insert(CAD, types=1).insert(HVA)
    params = {**cell.params(), "gbar_hva": 5e-3, "eca": 120.0}
    out = simulate(cell, params, [Stimulus(0, 0.3)], 0.025, 10.0, record=[0, 2],
                   states=["eca", "cai", "ica", "i_hva"], progress=False)
    out = {name: np.asarray(out[name]) for name in ("eca", "cai", "ica", "i_hva")}
    want = nernst(out["cai"][:-1, 0], params["cao0"], 2, params["celsius"])
    np.testing.assert_allclose(out["eca"][1:, 0], want, rtol=1e-5)
    np.testing.assert_array_equal(out["eca"][:, 1], 120.0)
    np.testing.assert_array_equal(out["ica"], out["i_hva"])
    assert float(out["cai"][-1, 0]) > 1e-4
    np.testing.assert_allclose(out["cai"][:, 1], 5e-5, rtol=1e-6)


def _mg_block(s, p):
    return p["g_nmda"] / (1 + jnp.exp(-0.062 * s["v"]) * (1.0 / 3.57))


NMDA = Mechanism("nmda", {"g_nmda": (1e-3, "S/cm2"), "e_nmda": (0.0, "mV")},
                 {"i_nmda": (_mg_block, "e_nmda")}, voltage_dependent=True)


def test_voltage_dependent_conductance_is_linearised_as_neuron_does():
    """One step of one compartment: ``(C/dt + G) v1 = C/dt v0 + G v0 - i(v0)`` with NEURON's
    slope ``G = (i(v0 + 0.001) - i(v0)) / 0.001`` (mA/cm2, scaled by 1e3 to uF/cm2 ms)."""
    with jax.enable_x64(True):
        cell = Cell.from_parents([-1], 20.0, 5.0).insert(NMDA)
        params = {**cell.params(), "v_init": -40.0}
        out = simulate(cell, params, [], 0.025, 0.025, states=["v", "i_nmda"], progress=False)

        def current(v):
            return float(_mg_block({"v": v}, {"g_nmda": 1e-3})) * (v - 0.0)

        v0, dt = -40.0, 0.025
        slope = (current(v0 + 0.001) - current(v0)) / 0.001
        v1 = (1.0 / dt * v0 + 1e3 * (slope * v0 - current(v0))) / (1.0 / dt + 1e3 * slope)
        np.testing.assert_allclose(float(np.asarray(out["v"])[1, 0]), v1, rtol=1e-12)
        np.testing.assert_allclose(float(np.asarray(out["i_nmda"])[0, 0]), current(v0),
                                   rtol=1e-12)


def test_voltage_dependent_point_mechanism_and_ghk_gradient():
    """A Mg-blocked synapse (a point mechanism) runs; ``ghk`` is smooth through ``v = 0``."""
    block = Mechanism("blocked", {"g_blocked": (1e-3, "uS"), "e_blocked": (0.0, "mV")},
                      {"i_blocked": (lambda s, p: p["g_blocked"] / (1 + jnp.exp(-0.062 * s["v"])),
                                     "e_blocked")}, voltage_dependent=True, point=True)
    cell = _cell().insert(pas).insert(block, compartments=[1, 2])
    out = simulate(cell, cell.params(), [], 0.1, 2.0, states=["i_blocked"], progress=False)
    assert out["i_blocked"].shape == (21, 2) and bool(np.all(np.asarray(out["i_blocked"]) < 0))
    slope = np.asarray(jax.jit(jax.vmap(jax.grad(lambda v: ghk(v, 1e-4, 2.0, 2, 6.3))))(
        np.asarray([-1e-5, 0.0, 1e-5], np.float32)))  # one program, not eager operations
    assert bool(np.all(np.isfinite(slope))) and float(np.ptp(slope)) < 1e-3 * abs(
        float(slope[1]))


def test_a_continued_run_carries_the_concentrations():
    cell = _cell().insert(hh, types=1).insert(pas, types=3).insert(CAD, types=1).insert(HVA)
    params = {**cell.params(), "gbar_hva": 5e-3}
    stimulus = [Stimulus(0, 0.3)]
    whole = simulate(cell, params, stimulus, 0.025, 10.0, states=["v", "cai"], progress=False)
    first = simulate(cell, params, stimulus, 0.025, 5.0, states=["v", "cai"], progress=False)
    second = simulate(cell, params, stimulus, 0.025, 5.0, states=["v", "cai"], progress=False,
                      initial=first["final"])
    assert set(first["final"]["ions"]) == {"cai", "cao"}
    np.testing.assert_array_equal(second["cai"], np.asarray(whole["cai"])[201:])
    np.testing.assert_array_equal(second["v"], np.asarray(whole["v"])[201:])
    start = rest_state(cell, params)
    np.testing.assert_allclose(start["ions"]["cai"], 5e-5, rtol=1e-6)


KDR = Mechanism("kdr", {"gbar_kdr": (0.03, "S/cm2")}, states=("n_kdr",),
                steady=lambda v, p: {"n_kdr": (1.0 / (1.0 + jnp.exp(-(v + 40.0) / 10.0)), 5.0)},
                ions=(UseIon("k", read=("ek",), write=("ik",)),),
                currents={"i_kdr": (lambda s, p: p["gbar_kdr"] * s["n_kdr"] ** 4, "ek")})
"""A delayed rectifier reading the ion's ``ek``, as ``USEION k READ ek WRITE ik``."""


def test_hh_and_every_channel_read_one_reversal_per_ion():
    """NEURON's ``hh.mod`` reads ``ena``/``ek`` as any ``.mod`` does: one value per ion per
    compartment, so ``ek = -90`` changes ``hh``'s potassium current and ``kdr``'s alike, and
    both add to ``ik``; jaxlean's former ``e_k`` is refused, naming ``ek``."""
    cell = Cell.from_parents([-1], 20.0, 10.0).insert(hh).insert(KDR)
    record = ("v", "n", "n_kdr", "i_k", "i_kdr", "ik", "ek")
    stimuli = [Stimulus(0, 0.2)]
    with jax.enable_x64():
        params = cell.params()
        assert {"ena", "ek"} <= set(params) and not {"e_na", "e_k"} & set(params)
        runs = {ek: simulate(cell, {**params, "ek": ek}, stimuli, 0.025, 3.0, record=[0],
                             states=record, progress=False) for ek in (-77.0, -90.0)}
    for ek, out in runs.items():
        x = {k: np.asarray(out[k])[1:, 0] for k in record}
        np.testing.assert_allclose(x["ek"], ek)
        # the currents of a step are computed at its start: the previous sample's states
        start = {k: np.asarray(out[k])[:-1, 0] for k in ("v", "n", "n_kdr")}
        np.testing.assert_allclose(x["i_k"], 0.036 * start["n"] ** 4 * (start["v"] - ek),
                                   rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(x["i_kdr"], 0.03 * start["n_kdr"] ** 4 * (start["v"] - ek),
                                   rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(x["ik"], x["i_k"] + x["i_kdr"], rtol=1e-12, atol=1e-15)
    assert np.abs(np.asarray(runs[-90.0]["v"]) - np.asarray(runs[-77.0]["v"])).max() > 1.0
    for old, new in (("e_k", "ek"), ("e_na", "ena")):
        renamed = {**{k: v for k, v in params.items() if k != new}, old: params[new]}
        with pytest.raises(ConfigError, match=rf"parameter '{old}' is now called '{new}'"):
            simulate(cell, renamed, stimuli, 0.025, 1.0, progress=False)
