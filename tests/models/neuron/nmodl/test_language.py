"""NMODL constructs of published files that NEURON accepts: INCLUDE, file-level LOCAL, a
file without a NEURON block, a concentration written by assignment, SOLVE of a PROCEDURE."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.models.neuron.nmodl import load_mod
from jaxlean.models.neuron.nmodl.generated import GeneratedMechanism, generate
from jaxlean.models.neuron.nmodl.parser import parse
from tests.models.neuron.nmodl.test_refusals import channel


def test_include_splices_the_file_beside_it(tmp_path):
    (tmp_path / "rates.inc").write_text("FUNCTION minf(v) { minf = 1/(1 + exp(-v/10)) }\n")
    text = channel(initial="m = minf(v)", derivative="m' = (minf(v) - m)/5")
    (tmp_path / "x.mod").write_text(text.replace("INITIAL", 'INCLUDE "rates.inc"\nINITIAL'))
    assert load_mod(tmp_path / "x.mod").states == ("m_x",)


def test_file_level_local_is_kept_per_compartment():
    text = "LOCAL q\n" + channel(initial="q = 2  m = 1/(1 + exp(-v/10))",
                                 derivative="m' = (1/(1 + exp(-v/10)) - m)/(5*q)")
    mechanism = load_mod(text)
    assert isinstance(mechanism, GeneratedMechanism) and "q_x" in mechanism.states
    with jax.enable_x64():
        start = mechanism.initial(jnp.array([-65.0]), {"gbar_x": 0.01, "a0_x": 0.1,
                                                      "b0_x": 0.1}, {"celsius": 6.3})
    assert float(start["q_x"][0]) == 2.0


def test_a_file_without_neuron_block_is_named_after_the_file(tmp_path):
    """NEURON names it after the file; without a NEURON block nothing is a current (``i`` is
    a value it keeps)."""
    (tmp_path / "leak.mod").write_text(
        "PARAMETER { g = 1e-4 (S/cm2) e = -70 (mV) }\nASSIGNED { v (mV) i (mA/cm2) }\n"
        "BREAKPOINT { i = g*(v - e) }\n")
    mechanism = load_mod(tmp_path / "leak.mod")
    assert mechanism.name == "leak" and not mechanism.currents and mechanism.states == ("i_leak",)


def test_a_concentration_written_by_assignment_is_kept_by_the_ion():
    """Destexhe's cad.mod: STATE ca, ``cai = ca`` in INITIAL and DERIVATIVE."""
    text = """NEURON { SUFFIX cad USEION ca READ ica, cai WRITE cai RANGE ca }
PARAMETER { depth = .1 (um) taur = 200 (ms) cainf = 100e-6 (mM) }
STATE { ca (mM) }
ASSIGNED { ica (mA/cm2) cai (mM) drive (mM/ms) }
INITIAL { ca = cainf cai = ca }
BREAKPOINT { SOLVE state METHOD derivimplicit }
DERIVATIVE state {
    drive = -(10000)*ica/(2*96485.3*depth)
    if (drive <= 0.) { drive = 0. }
    ca' = drive + (cainf - ca)/taur
    cai = ca
}"""
    mechanism = load_mod(text)
    assert "cai" in mechanism.states and "cai" in mechanism.ion_writes()
    with jax.enable_x64():
        p = {k: jnp.asarray(d) for k, (d, _) in mechanism.parameters.items()}
        v = jnp.array([-65.0])
        state = mechanism.initial(v, p, {"cai": v * 0 + 5e-5, "ica": v * 0, "celsius": 6.3})
        assert float(state["cai"][0]) == 1e-4
        given = {**state, "ica": jnp.array([-1e-3]), "celsius": 6.3}
        new = mechanism.step(given, v, 0.025, 1.0, p)
    drive = 10000 * 1e-3 / (2 * 96485.3 * 0.1)
    expected = (1e-4 + 0.025 * (drive + 100e-6 / 200)) / (1 + 0.025 / 200)  # backward Euler
    np.testing.assert_allclose(float(new["cai"][0]), expected, rtol=1e-12)
    assert float(new["ca_cad"][0]) == float(new["cai"][0])


ARRAYS = """NEURON { SUFFIX arr USEION na READ ena WRITE ina RANGE gnabar }
DEFINE NGATE 2
PARAMETER { gnabar = 0.1 (S/cm2) }
ASSIGNED { v (mV) ena (mV) ina (mA/cm2) inf[NGATE] tau[NGATE] }
STATE { m h }
INITIAL { rates(v) m = inf[0] h = inf[1] }
BREAKPOINT { SOLVE states METHOD cnexp  ina = gnabar*m*m*m*h*(v - ena) }
DERIVATIVE states { rates(v) m' = (inf[0] - m)/tau[0]  h' = (inf[1] - h)/tau[1] }
PROCEDURE rates(v) { LOCAL a, b
    FROM i = 0 TO NGATE - 1 {
        a = alpha(v, i)  b = beta(v, i)
        tau[i] = 1/(a + b)  inf[i] = a/(a + b)
    }
}
FUNCTION alpha(v, i) { if (i == 0) { alpha = 0.1*exp(v/20) } else { alpha = 0.07*exp(-v/20) } }
FUNCTION beta(v, i) { if (i == 0) { beta = 0.2*exp(-v/18) } else { beta = 1/(1 + exp(-v/10)) } }
"""


def test_arrays_and_from_loops_run_as_the_same_file_written_without_them():
    scalar = (ARRAYS.replace("inf[NGATE] tau[NGATE]", "inf0 inf1 tau0 tau1")
              .replace("inf[0]", "inf0").replace("inf[1]", "inf1")
              .replace("tau[0]", "tau0").replace("tau[1]", "tau1")
              .replace("""    FROM i = 0 TO NGATE - 1 {
        a = alpha(v, i)  b = beta(v, i)
        tau[i] = 1/(a + b)  inf[i] = a/(a + b)
    }""", """    a = alpha(v, 0)  b = beta(v, 0)  tau0 = 1/(a + b)  inf0 = a/(a + b)
    a = alpha(v, 1)  b = beta(v, 1)  tau1 = 1/(a + b)  inf1 = a/(a + b)"""))
    with_arrays, without = load_mod(ARRAYS), generate(parse(scalar))  # both general form
    assert "inf_arr[1]" in with_arrays.states
    with jax.enable_x64():
        v, p = jnp.array([-70.0, -20.0, 10.0]), {"gnabar_arr": 0.1}
        ions = {"ena": v * 0 + 50.0, "celsius": 6.3}
        a, b = with_arrays.initial(v, p, ions), without.initial(v, p, ions)
        for _ in range(3):
            a = with_arrays.step({**a, **ions}, v + 5.0, 0.025, 1.0, p)
            b = without.step({**b, **ions}, v + 5.0, 0.025, 1.0, p)
    for x in ("m_arr", "h_arr"):  # equal to round-off (the loop's i is a float)
        np.testing.assert_allclose(np.asarray(a[x]), np.asarray(b[x]), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(a["tau_arr[1]"]), np.asarray(b["tau1_arr"]),
                               rtol=1e-14)
