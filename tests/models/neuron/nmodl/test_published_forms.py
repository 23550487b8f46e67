"""Forms of published files beyond the core language: ``IF``/``ELSE``, nested blocks,
VERBATIM reads of an ion (``carest = _ion_cai;``) and C comments, ``(faraday) (10000
coulomb)``, ``t`` outside INITIAL, ELECTRODE_CURRENT, BEFORE/AFTER blocks, and the
refusals that stay, each naming its line. Their values against NEURON:
``test_constructs.py`` (``timed``, ``electrode``, ``ba``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.nmodl import load_mod
from jaxlean.models.neuron.nmodl import syntax as s
from jaxlean.models.neuron.nmodl.generated import generate
from jaxlean.models.neuron.nmodl.parser import parse
from jaxlean.models.neuron.nmodl.units import unit_constant
from tests.models.neuron.nmodl.test_refusals import channel

SHELL_TEMPLATE = """NEURON {{ SUFFIX p USEION ca READ cai {write} NONSPECIFIC_CURRENT i RANGE c }}
ASSIGNED {{ v (mV) i (mA/cm2) cai (mM) c (mM) }}
INITIAL {{
VERBATIM
{verbatim}
ENDVERBATIM
}}
BREAKPOINT {{ i = 1e-4*c*(v + 70) }}
"""
SHELL = SHELL_TEMPLATE.format(write="", verbatim="")


def test_upper_case_if_else_and_a_nested_block_parse_as_statements():
    model = parse("NEURON { SUFFIX x }\nASSIGNED { v i }\nBREAKPOINT {\n"
                  "IF (v > 0) {\n { LOCAL y\n y = 2\n i = y }\n} ELSE { i = 1 }\n}")
    (branch,) = model.breakpoint.body
    assert isinstance(branch, s.If) and [type(x) for x in branch.then] == [s.Assign, s.Assign]
    assert model.breakpoint.locals == ("y",) and branch.otherwise[0].target == "i"


@pytest.mark.parametrize("text, line, words", [
    ("NEURON { SUFFIX x }\nASSIGNED { v i }\nBREAKPOINT {\n{ LOCAL v\n v = 1 }\n}", 4,
     "LOCAL v in a nested block hides the name v"),
    ("NEURON { SUFFIX x POINTER p NONSPECIFIC_CURRENT i }\nASSIGNED { p i }\n"
     "BREAKPOINT { p = 1 i = 0 }\n", 1, "a block assigns POINTER p"),
    ("NEURON { SUFFIX x }\nINITIAL { LOCAL a }\nINITIAL { LOCAL a }\n", 3,
     "LOCAL a in two INITIAL blocks"),
    (SHELL + "BEFORE BREAKPOINT { c = 1 }\n", 9, "BEFORE BREAKPOINT blocks are not supported"),
    (SHELL + "AFTER SOLVE { c = cai }\n", 9, "AFTER SOLVE reads or writes the ion variables "
     "\\['cai'\\]"),
    (SHELL + "BEFORE STEP { c = 2 }\n", 9, "BEFORE STEP shares \\['c'\\] with BREAKPOINT"),
    (SHELL_TEMPLATE.format(write="WRITE cai", verbatim="c = _ion_cai;"), 5,
     "VERBATIM C code is not supported \\(_ion_cai of a variable the file does not only READ"),
])
def test_what_stays_refused_names_its_line(text, line, words):
    with pytest.raises(ConfigError, match=rf"<mod text>:{line}: {words}"):
        load_mod(text)


def test_diam_read_is_refused_and_diam_declared_only_loads():
    """NEURON gives ``diam`` the segment's diameter; jaxlean's mechanisms do not get it."""
    text = SHELL.replace("c (mM) }", "c (mM) diam (um) }")
    load_mod(text)
    with pytest.raises(ConfigError, match=r"<mod text>:2: diam is read: NEURON gives the "
                                          r"mechanism its segment's diam"):
        load_mod(text.replace("1e-4*c*(v + 70)", "1e-4*c*diam*(v + 70)"))


def test_two_initial_blocks_run_in_order_as_nocmodl_joins_them():
    mechanism = generate(parse("NEURON { SUFFIX x NONSPECIFIC_CURRENT i RANGE a, b }\n"
                               "ASSIGNED { v i a b }\nINITIAL { a = 1 }\n"
                               "BREAKPOINT { i = 0 }\nINITIAL { b = a + 1 }\n"))
    with jax.enable_x64():
        start = mechanism.initial(jnp.array([-65.0]), {}, {"celsius": 6.3})
    assert float(start["b_x"][0]) == 2.0


def test_verbatim_ion_read_is_the_ion_variable_and_c_comments_are_ignored():
    mechanism = load_mod(SHELL_TEMPLATE.format(write="", verbatim="// a comment\nc = _ion_cai;"))
    with jax.enable_x64():
        start = mechanism.initial(jnp.array([-65.0]), {}, {"cai": jnp.array([3e-4]),
                                                           "celsius": 6.3})
    assert float(start["c_p"][0]) == 3e-4


def test_a_unit_may_start_with_a_number():
    assert unit_constant("faraday", "10000coulomb", "f", 1) == unit_constant(
        "faraday", "coulomb", "f", 1) / 1e4
    with pytest.raises(ConfigError, match=r"f:3: .*each after an optional number"):
        unit_constant("faraday", "10000furlong", "f", 3)


def test_t_is_the_step_time_neuron_has_there():
    """BREAKPOINT sees ``t`` half a step on, a SOLVEd block the step's end."""
    mechanism = load_mod(channel(neuron="USEION k READ ek WRITE ik RANGE tb", assigned="tb",
                                 current="gbar*m*(v - ek)\n tb = t",
                                 derivative="m' = t"))
    with jax.enable_x64():
        v, p = jnp.array([-65.0]), {"gbar_x": 0.01, "a0_x": 0.1, "b0_x": 0.1}
        states = {**mechanism.initial(v, p, {"celsius": 6.3}), "celsius": 6.3, "ek": -77.0}
        kept = mechanism.currents_kept(v, {**states, "t": 1.25}, p)
        stepped = mechanism.step({**states, "t": 2.5}, v, 0.5, 1.0, p)
    assert float(kept["tb_x"][0]) == 1.25
    assert float(stepped["m_x"][0] - states["m_x"][0]) == pytest.approx(0.5 * 2.5)


def test_an_electrode_current_enters_as_an_inward_current():
    text = ("NEURON { SUFFIX e ELECTRODE_CURRENT i RANGE amp }\nPARAMETER { amp = 0.1 }\n"
            "ASSIGNED { v i }\nBREAKPOINT { i = amp*v }\n")
    mechanism = load_mod(text)
    with jax.enable_x64():
        out = mechanism.currents_at(jnp.array([-65.0]), {"celsius": 6.3}, {"amp_e": 0.1})
    assert float(out["i_e"][0]) == pytest.approx(6.5)  # -i: NEURON adds i to the rhs
