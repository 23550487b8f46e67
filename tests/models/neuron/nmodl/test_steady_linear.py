"""``SOLVE kinetic STEADYSTATE sparse`` on a linear scheme: NEURON's ``_ss_sparse`` takes one
backward Euler step of 1e9 ms (seven for a nonlinear one), so a slow scheme does not reach
its steady state. ModelDB 267599's Nav16_a.mod (slow inactivation) differed from NEURON by
5.9e-4 mV while jaxlean took seven steps; with one it matches to 3e-10 mV (the corpus test)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxlean.models.neuron.nmodl import load_mod
from jaxlean.models.neuron.nmodl.parser import parse
from jaxlean.models.neuron.nmodl.solve import STEADY_DT, linear

SLOW = """NEURON { SUFFIX slow NONSPECIFIC_CURRENT i RANGE g }
PARAMETER { g = 0.001 (S/cm2) a = 1e-12 (/ms) b = 3e-12 (/ms) }
ASSIGNED { v (mV) i (mA/cm2) }
STATE { C O }
INITIAL { C = 1  O = 0  SOLVE scheme STEADYSTATE sparse }
BREAKPOINT { SOLVE scheme METHOD sparse  i = g*O*(v + 80) }
KINETIC scheme {
    ~ C <-> O (a, b)
    CONSERVE C + O = 1
}"""


def test_a_linear_scheme_takes_one_step_of_1e9_ms():
    mechanism = load_mod(SLOW)
    with jax.enable_x64():
        p = {k: jnp.asarray(d) for k, (d, _) in mechanism.parameters.items()}
        state = mechanism.initial(jnp.array([-65.0]), p, {"celsius": 6.3})
    a, b = 1e-12 * STEADY_DT, 3e-12 * STEADY_DT
    one_step = (1 + b) / (1 + a + b)  # C after C(1 + a + b) = 1 + b (O = 1 - C)
    assert abs(float(state["C_slow"][0]) - one_step) < 1e-12
    assert abs(one_step - 0.75) > 0.2  # far from the steady state b / (a + b) = 0.75


def test_linear_is_decided_by_the_reactions_shape():
    kinetic = parse(SLOW, "<mod>").blocks["scheme"]
    assert linear(kinetic)
    dimer = parse(SLOW.replace("~ C <-> O (a, b)", "~ C + C <-> O (a, b)"), "<mod>")
    assert not linear(dimer.blocks["scheme"])
