"""Translation of .mod files: hh.mod against jaxlean's hand-written hh, names, units and
q10, the parsed language, and gradients through a translated mechanism."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.models.neuron.mechanisms.channels import hh, pas
from jaxlean.models.neuron.mechanisms.mechanisms import ion_parameters
from jaxlean.models.neuron.nmodl import load_mod, load_mod_dir
from jaxlean.models.neuron.nmodl.parser import parse
from jaxlean.models.neuron.simulation.cable import Cell, Stimulus, simulate, step_current

MODS = Path(__file__).parent / "mods"
DT, T_MAX = 0.025, 20.0


def _ball_and_stick() -> Cell:
    return Cell.from_parents(np.arange(6) - 1, [20.0] + [40.0] * 5, [10.0] + [1.0] * 5,
                             kind=[1] + [3] * 5)


def test_hh_mod_matches_the_hand_written_hh():
    cell = _ball_and_stick()
    stimuli = [Stimulus(0, step_current(0.5, 1.0, 15.0, DT, T_MAX))]
    with jax.enable_x64():
        leak = {} if len(hh.currents) > 2 else {"g_pas": 3e-4, "e_pas": -54.3}
        hand = cell.insert(hh) if not leak else cell.insert(pas).insert(hh)  # hh.mod's leak
        hand_params = {**hand.params(), **leak, "celsius": 16.3, "gnabar_hh": 0.12,
                       "gkbar_hh": 0.036, "ena": 50.0, "ek": -77.0}
        mod = cell.insert(load_mod(MODS / "hh.mod"))
        mod_params = {**mod.params(), "celsius": 16.3}
        a = simulate(hand, hand_params, stimuli, DT, T_MAX, record=[0, 5], states=("v", "m"))
        b = simulate(mod, mod_params, stimuli, DT, T_MAX, record=[0, 5],
                     states=("v", "m_hh"))
        assert np.ptp(np.asarray(a["v"][:, 0])) > 80.0  # it spikes
        np.testing.assert_allclose(np.asarray(b["v"]), np.asarray(a["v"]), rtol=0, atol=1e-9)
        np.testing.assert_allclose(np.asarray(b["m_hh"]), np.asarray(a["m"]), rtol=0,
                                   atol=1e-11)


def test_names_units_and_temperature_factor():
    mechanisms = load_mod_dir(MODS)
    hh_mod = mechanisms["hh"]
    assert set(hh_mod.parameters) == {"gnabar_hh", "gkbar_hh", "gl_hh", "el_hh"}
    # the reversals are the ions' parameters, NEURON's ena and ek, at hh's defaults
    assert ion_parameters(hh_mod) == ion_parameters(hh) == {"ena": (50.0, "mV"),
                                                            "ek": (-77.0, "mV")}
    assert hh_mod.currents["ina_hh"][1] == "ena" and hh_mod.ion_writes() == ("ina", "ik")
    assert (hh_mod.q10, hh_mod.q10_celsius) == (3.0, 6.3)
    kdr = mechanisms["kdrq"]  # q10 = 2.3 and temp = 23 are PARAMETERs folded into the factor
    assert (kdr.q10, kdr.q10_celsius) == (2.3, 23.0)
    assert "q10_kdrq" not in kdr.parameters and "temp_kdrq" not in kdr.parameters
    assert kdr.parameters["gbar_kdrq"] == (300.0, "pS/um2")  # as declared: never rescaled
    assert mechanisms["Ih"].parameters["ehcn_Ih"] == (-45.0, "mV")
    assert list(mechanisms["Ih"].currents) == ["ihcn_Ih"]
    assert mechanisms["NaTa_t"].q10 == 1.0  # Hay's files fix qt at 34 degC
    assert mechanisms["kslow"].advance is not None  # derivimplicit: backward Euler
    # advance cannot be combined with ions: ek is a plain parameter, shared with the ion's
    assert mechanisms["kslow"].ions == () and mechanisms["kslow"].parameters["ek"] == (
        -77.0, "mV")
    synapse = mechanisms["ExpSynM"]
    assert synapse.point and synapse.on_spike({"weight_ExpSynM": 0.5}) == {"g_ExpSynM": 0.5}


LANGUAGE = """
TITLE a channel exercising the parsed language
NEURON {
    SUFFIX lang  ? a comment
    USEION na READ ena WRITE ina VALENCE 1
    RANGE gbar
    GLOBAL vh
    THREADSAFE
}
DEFINE NSTEP 4
UNITS { (mV) = (millivolt) FARADAY = (faraday) (kilocoulombs) R = (k-mole) (joule/degC) }
CONSTANT { c0 = 2 }
PARAMETER { gbar = 10 (mS/cm2) <0, 1e9> vh = -40 (mV) }
ASSIGNED { v (mV) ena (mV) ina (mA/cm2) minf mtau (ms) }
STATE { m }
INITIAL { settle(v) m = minf }
BREAKPOINT {
    SOLVE states METHOD cnexp
    ina = gbar*pow(m, 3)*(v - ena)
}
DERIVATIVE states { settle(v) m' = (minf - m)/mtau }
PROCEDURE settle(v (mV)) {
    LOCAL x
    TABLE minf, mtau FROM -100 TO 100 WITH 200
    x = (v - vh)/NSTEP
    minf = 1/(1 + exp(-x))
    if (v < -60) {
        mtau = c0 * 2
    } else if (v < 0 && v >= -60) {
        mtau = c0 + FARADAY/R/100
    } else {
        mtau = -v^2/1000 + c0*3 + fabs(v)/100
    }
}
"""


def test_the_parsed_language_evaluates_as_written():
    model = parse(LANGUAGE)
    assert model.constants["FARADAY"] == pytest.approx(96.4853321233100184)
    assert model.constants["R"] == pytest.approx(8.31446261815324)
    mechanism = load_mod(LANGUAGE)
    assert mechanism.parameters["gbar_lang"] == (10.0, "mS/cm2")  # as NEURON: not rescaled
    with jax.enable_x64():
        v = jnp.array([-80.0, -30.0, 20.0])
        steady = mechanism.steady(v, {"gbar_lang": 0.01, "vh_lang": -40.0, "e_na": 50.0})
        inf, tau = (np.asarray(x) for x in steady["m_lang"])
    x = (np.asarray(v) + 40.0) / 4
    np.testing.assert_allclose(inf, 1 / (1 + np.exp(-x)), rtol=1e-14)
    np.testing.assert_allclose(
        tau, [4.0, 2.0 + 96.4853321233100184 / 8.31446261815324 / 100, -400 / 1000 + 6 + 0.2],
        rtol=1e-12)


def test_gradient_through_a_translated_mechanism_matches_finite_differences():
    mechanisms = load_mod_dir(MODS)
    cell = (_ball_and_stick().insert(mechanisms["lk"]).insert(mechanisms["NaTa_t"], types=1)
            .insert(mechanisms["kdrq"]))
    stimuli = [Stimulus(0, step_current(0.3, 1.0, 8.0, DT, 10.0))]

    def loss(values, params):
        out = simulate(cell, {**params, **values}, stimuli, DT, 10.0, record=[0, 5])
        return jnp.mean(out["v"] ** 2)

    with jax.enable_x64():
        params = {**cell.params(), "celsius": 30.0, "gNaTa_tbar_NaTa_t": 1.0,
                  "g_lk": 1e-4, "e_lk": -70.0}
        values = {"tha_kdrq": jnp.asarray(25.0), "gbar_kdrq": jnp.asarray(400.0)}
        value_and_grad = jax.jit(jax.value_and_grad(loss))  # one program for all four runs
        grad = value_and_grad(values, params)[1]
        for name, step in (("tha_kdrq", 1e-4), ("gbar_kdrq", 1e-3)):
            up = value_and_grad({**values, name: values[name] + step}, params)[0]
            down = value_and_grad({**values, name: values[name] - step}, params)[0]
            finite = (up - down) / (2 * step)
            assert abs(float(finite)) > 0
            np.testing.assert_allclose(float(grad[name]), float(finite), rtol=1e-5)


def test_powers_of_literals_follow_c():
    from jaxlean.models.neuron.nmodl import syntax
    from jaxlean.models.neuron.nmodl.interpret import JaxBackend

    power = syntax.Binary("^", syntax.Number(-2.0, 1), syntax.Number(0.5, 1), 1)
    assert np.isnan(JaxBackend().binary(power, -2.0, 0.5))  # C's pow, not a complex number
    assert JaxBackend().binary(power, 2.0, 3.0) == 8.0


@pytest.mark.parametrize("current, reversal, expected", [
    ("gbar*m*(v - ek)/(1 + exp(-0.062*v))", "ek",
     lambda v, m: 0.01 * m * (v + 77.0) / (1 + np.exp(-0.062 * v))),  # a Mg-block-like g(v)
    ("gbar*m*v*v", "ik", lambda v, m: 0.01 * m * v * v),  # a current function carried by k
])
def test_voltage_dependent_currents_are_translated(current, reversal, expected):
    """A conductance that reads v, or a current not written g * (v - e), becomes a
    voltage_dependent mechanism (NEURON linearises every current the same way)."""
    from tests.models.neuron.nmodl.test_refusals import channel

    mechanism = load_mod(channel(current=current))
    assert mechanism.voltage_dependent and mechanism.currents["ik_x"][1] == reversal
    v, m = jnp.linspace(-80.0, 40.0, 7), jnp.full(7, 0.3)
    got = mechanism.currents_at(v, {"m_x": m, "ek": jnp.full(7, -77.0), "celsius": 6.3},
                                {"gbar_x": 0.01}, {"ek": jnp.full(7, -77.0)})["ik_x"]
    np.testing.assert_allclose(np.asarray(got), expected(np.asarray(v), 0.3), rtol=1e-6)


def test_declared_units_never_rescale_a_parameter():
    """NEURON runs a PARAMETER at the value written, whatever its unit says: Migliore's
    kadist.mod declares ``lmin = 2 (mS)`` (a typo for ms) and NEURON's taul floor is 2 ms."""
    from tests.models.neuron.nmodl.test_refusals import channel

    text = channel(derivative="m' = (1/(1 + exp(-v/10)) - m)/lmin").replace(
        "b0 = 0.1 (/ms) }", "b0 = 0.1 (/ms) lmin = 2 (mS) }")
    mechanism = load_mod(text)
    assert mechanism.parameters["lmin_x"] == (2.0, "mS")
    with jax.enable_x64():
        _, tau = mechanism.steady(jnp.array([-20.0]), {"lmin_x": 2.0})["m_x"]
    assert float(tau[0]) == 2.0
