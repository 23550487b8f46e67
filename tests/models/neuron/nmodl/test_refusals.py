"""Constructs that do not map exactly onto a Mechanism are refused, naming file, line and
construct."""

from __future__ import annotations

from pathlib import Path

import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.nmodl import ModFileError, load_mod

REFUSED = Path(__file__).parent / "refused"

CHANNEL = """NEURON {{ SUFFIX x {neuron} }}
PARAMETER {{ gbar = 0.01 (S/cm2) a0 = 0.1 (/ms) b0 = 0.1 (/ms) }}
ASSIGNED {{ v (mV) celsius (degC) ek (mV) ik (mA/cm2) {assigned} }}
STATE {{ m {states} }}
BREAKPOINT {{
    SOLVE states METHOD {method}
    ik = {current}
}}
INITIAL {{ {initial} }}
DERIVATIVE states {{
    {derivative}
}}
"""


def channel(neuron="USEION k READ ek WRITE ik", assigned="", states="",
            method="cnexp", current="gbar*m*(v - ek)", initial="m = 1/(1 + exp(-v/10))",
            derivative="m' = (1/(1 + exp(-v/10)) - m)/5") -> str:
    return CHANNEL.format(neuron=neuron, assigned=assigned, states=states, method=method,
                          current=current, initial=initial, derivative=derivative)


def test_the_template_itself_loads():
    mechanism = load_mod(channel())
    assert mechanism.states == ("m_x",) and list(mechanism.currents) == ["ik_x"]


def test_a_kinetic_file_once_refused_loads():
    """``refused/cabuf_kinetic.mod`` (a KINETIC calcium buffer) was refused before KINETIC
    blocks were translated; it now loads in the general form."""
    from jaxlean.models.neuron.nmodl.generated import GeneratedMechanism

    mechanism = load_mod(REFUSED / "cabuf_kinetic.mod")
    assert isinstance(mechanism, GeneratedMechanism) and "cai" in mechanism.states


@pytest.mark.parametrize("text, line, words", [
    (channel(neuron="USEION k READ ek WRITE ik, ek"), 1, "USEION k WRITE ek: writing a "
     "reversal potential is not supported"),
    (channel(neuron="USEION k READ ek WRITE ik USEION mg READ mgo"), 1,
     "USEION mg: .*give its valence"),
    (channel(neuron="USEION k READ ek WRITE ik USEION ca READ cai VALENCE 1"), 1,
     "USEION ca: .*valence 1.0 differs from the ion's charge 2.0"),
    (channel(neuron="USEION k READ ek WRITE ik USEION ca READ cax"), 1,
     "USEION ca READ cax: not a variable of the ion ca"),
    ("NEURON { POINT_PROCESS y USEION ca READ eca WRITE ica }\nPARAMETER { g = 1 (uS) }\n"
     "BREAKPOINT {\n ica = g*(v - eca)\n}", 1, "USEION ca in a POINT_PROCESS"),
    (channel(neuron="USEION k READ ek WRITE ik BBCOREPOINTER p"), 1,
     "BBCOREPOINTER variables are not supported"),
    ("NEURON { SUFFIX x }\nLINEAR scheme { ~ c = 1 }", 2, "LINEAR blocks are not supported"),
    ("NEURON { SUFFIX x }\nVERBATIM\nstatic int x;\nENDVERBATIM", 2,
     r"VERBATIM C code is not supported \(line 3: 'static int x;'\)"),
    ("NEURON { SUFFIX x }\nPARAMETER { g = 1 (S/cm2) }\nFOO { }", 3,
     "FOO is not a supported NMODL block"),
    ("NEURON { SUFFIX x }\nPARAMETER { g = (S/cm2) }", 2, "expected a number"),
])
def test_refusals_name_the_line_and_construct(text, line, words):
    with pytest.raises(ConfigError, match=rf"<mod text>:{line}: ({words})"):
        load_mod(text)


@pytest.mark.parametrize("text", [
    channel(neuron="USEION k READ ek, ki WRITE ik", method="derivimplicit"),
    channel(method="euler"),
    channel(neuron="USEION k READ ek WRITE ik, ko"),  # ko written by assignment (here none)
    channel(derivative="m' = -m*m/5"),  # nonlinear: cnexp as nocmodl writes it
    channel(states="c", initial="m = 0 c = 1", derivative="m' = a0*c - b0*m  c' = b0*m - a0*c"),
    channel(assigned="tadj", current="tadj*gbar*m*(v - ek)",  # an ASSIGNED kept from DERIVATIVE
            derivative="tadj = 3^((celsius - 23)/10)\n m' = (1/(1 + exp(-v/10)) - m)/5"),
    channel(initial="m = 0"),  # not the steady state: NEURON starts where INITIAL says
    channel(derivative="m' = 3^((celsius - 6.3)/10)*(1/(1 + exp(-v/10)) - m)/5 + celsius"),
    channel(neuron="USEION k READ ek WRITE ik RANGE gk", assigned="gk",  # celsius in g
            current="gk*(v - ek)").replace(
        "    ik = gk*(v - ek)", "    gk = 3^((celsius - 23)/10)*gbar*m\n    ik = gk*(v - ek)"),
    channel(states="h", initial="m = 1/(1 + exp(-v/10)) h = 1/(1 + exp(v/10))",
            derivative="m' = 3^((celsius - 23)/10)*(1/(1 + exp(-v/10)) - m)/5\n"
                       "h' = 2^((celsius - 23)/10)*(1/(1 + exp(v/10)) - h)/5"),
])
def test_what_neuron_accepts_loads_in_the_general_form(text):
    """Constructs outside the compact Mechanism form that NEURON runs load as NEURON's
    generated code (:mod:`~jaxlean.models.neuron.nmodl.generated`)."""
    from jaxlean.models.neuron.nmodl.generated import GeneratedMechanism

    assert isinstance(load_mod(text), GeneratedMechanism)


def test_missing_files_and_directories_are_named(tmp_path):
    from jaxlean.models.neuron.nmodl import load_mod_dir

    with pytest.raises(ConfigError, match=r"no such \.mod file"):
        load_mod(tmp_path / "absent.mod")
    with pytest.raises(ConfigError, match=r"no \.mod file in"):
        load_mod_dir(tmp_path)
    for name in ("a.mod", "b.mod"):
        (tmp_path / name).write_text(channel())
    with pytest.raises(ConfigError, match=r"b\.mod and a\.mod both define the mechanism"):
        load_mod_dir(tmp_path)


def test_every_problem_of_a_file_is_named_at_once():
    """One error lists each refused construct at its own line (not the first only)."""
    text = ("NEURON { SUFFIX x BBCOREPOINTER p NONSPECIFIC_CURRENT i }\n"
            "PARAMETER { g = 1 (S/cm2) }\n"
            "ASSIGNED { v (mV) i (mA/cm2) p }\n"
            "VERBATIM\n#include <math.h>\nstatic double q;\nENDVERBATIM\n"
            "BREAKPOINT {\n i = g*(v + 70)\n WATCH (v > 0) 2\n}\n"
            "NONLINEAR scheme { ~ c = 1 }\n")
    with pytest.raises(ModFileError) as caught:
        load_mod(text)
    assert [line for line, _ in caught.value.problems] == [1, 4, 10, 12]
    message = str(caught.value)
    for words in ("<mod text>:1: BBCOREPOINTER", "<mod text>:4: VERBATIM C code is not supported "
                  "(line 6: 'static double q;')", "<mod text>:10: WATCH",
                  "<mod text>:12: NONLINEAR"):
        assert words in message


def test_verbatim_idioms_that_change_nothing_are_accepted():
    text = channel().replace("INITIAL {", "VERBATIM\n#include <math.h>\nENDVERBATIM\n"
                             "FUNCTION one() {\n one = 1\nVERBATIM\n return 0;\nENDVERBATIM\n}"
                             "\nINITIAL {") + "\x1a"
    assert load_mod(text).states == ("m_x",)


def test_a_directory_loads_what_it_can_and_names_every_refused_file(tmp_path):
    from jaxlean.models.neuron.nmodl import ModDirError, load_mod_dir

    (tmp_path / "good.mod").write_text(channel())
    (tmp_path / "bad1.mod").write_text(channel(neuron="USEION k READ ek WRITE ik "
                                               "BBCOREPOINTER p"))
    (tmp_path / "bad2.mod").write_text("NEURON { SUFFIX y }\nLINEAR s { ~ a = 1 }")
    with pytest.raises(ModDirError, match=r"2 of 3 \.mod files") as caught:
        load_mod_dir(tmp_path)
    error = caught.value
    assert sorted(error.refused) == ["bad1.mod", "bad2.mod"] and list(error.loaded) == ["x"]
    assert "bad1.mod:1: BBCOREPOINTER" in str(error) and "bad2.mod:2: LINEAR" in str(error)
    with pytest.warns(UserWarning, match="bad1.mod, bad2.mod"):
        loaded = load_mod_dir(tmp_path, skip_refused=True)
    assert list(loaded) == ["x"] and sorted(loaded.refused) == ["bad1.mod", "bad2.mod"]
