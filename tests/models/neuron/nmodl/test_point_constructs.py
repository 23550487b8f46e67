"""Point-process constructs of the ModelDB corpus, each on a minimal file against a
reference written out here: one compartment with ``pas``, backward Euler as NEURON steps it
(``cm/dt (v' - v) = g (e - v') + i``, a point current of ``i`` nA entering as ``i * 1e-3 /
area`` uA/cm2, at BREAKPOINT's ``t = (n + 1/2) dt``).

* an ``ELECTRODE_CURRENT`` of a POINT_PROCESS depolarises (``rhs += i``), the opposite
  sign of a ``NONSPECIFIC_CURRENT``; a current BREAKPOINT leaves unassigned keeps its last
  value, as NEURON's range variable does (``LinClamp.mod``, ModelDB 267499);
* ``net_send`` from INITIAL queues a self-event at ``t = delay`` (``ipulse1.mod``);
* ``FROM`` loops whose bound is a PARAMETER, and a file-level ``LOCAL a[2]``
  (``ampacin.mod``);
* a ``POINTER`` is a parameter without a default (``ampa13.mod``): a run without it is
  refused, as NEURON refuses a pointer never set; the gradient through it matches central
  differences;
* a POINTER to a NEURON ``Random`` drawn from in Blue Brain's VERBATIM idiom
  (``ProbUDFsyn2.mod``) draws NEURON's values of the instance's ``Random``, one per draw
  the C code makes (none in the right side of a false ``&&``), and C that differs from
  the idiom stays refused.

The corpus files themselves are checked against NEURON in ``test_modeldb_points.py``.
"""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.mechanisms.channels import pas
from jaxlean.models.neuron.nmodl import Random, load_mod, random_parameters
from jaxlean.models.neuron.simulation.cable import Cell, simulate

PROB = Path(__file__).parent / "corpus" / "249463" / "almog" / "ProbUDFsyn2.mod"

DT, STEPS = 0.025, 120
L = DIAM = 20.0  # um
G, E, CM = 5e-5, -65.0, 1.0  # S/cm2, mV, uF/cm2

HELD = """NEURON { POINT_PROCESS Held ELECTRODE_CURRENT i RANGE amp, t1 }
PARAMETER { amp = 0.01 (nA/ms) t1 = 1.01 (ms) }
ASSIGNED { i (nA) }
BREAKPOINT { if (t < t1) { i = amp*t } }
"""
PULSE = """NEURON { POINT_PROCESS Pulse ELECTRODE_CURRENT i RANGE amp, del, dur }
PARAMETER { amp = 0.01 (nA) del = 1.01 (ms) dur = 0.5 (ms) }
ASSIGNED { i (nA) on }
INITIAL { on = 0  net_send(del, 1) }
BREAKPOINT { i = on*amp }
NET_RECEIVE (w) {
  if (flag == 1) { on = 1  net_send(dur, 2) } else { if (flag == 2) { on = 0 } }
}
"""
LOOP = """NEURON { POINT_PROCESS Loop NONSPECIFIC_CURRENT i RANGE amp, n }
PARAMETER { amp = -0.002 (nA) n = 3 }
ASSIGNED { i (nA) }
LOCAL a[2]
BREAKPOINT { i = 0  FROM j = 1 TO n { i = i + part(j) } }
FUNCTION part(j) { a[0] = amp  a[1] = j  part = a[0]*a[1] }
"""
BATH = """NEURON { POINT_PROCESS Bath POINTER C NONSPECIFIC_CURRENT i RANGE gmax }
PARAMETER { gmax = 0.001 (uS) }
ASSIGNED { v (mV) i (nA) C (mM) }
STATE { o }
INITIAL { o = 0 }
BREAKPOINT { SOLVE states METHOD cnexp  i = gmax*o*(v - 0) }
DERIVATIVE states { o' = C*(1 - o) - o }
"""


@functools.cache
def _load(text: str):
    return load_mod(text)


def _run(mechanism, given: dict | None = None, spikes: dict | None = None):
    """jaxlean's voltage, every step, float64."""
    with jax.enable_x64():
        cell = Cell.from_parents(np.array([-1]), [L], [DIAM / 2], kind=[1]).insert(
            pas).insert(mechanism, compartments=[0])
        params = {**cell.params(), "v_init": E, "cm": CM, "g_pas": G, "e_pas": E,
                  **{k: jnp.asarray([v]) for k, v in (given or {}).items()}}
        return np.asarray(simulate(cell, params, [], DT, STEPS * DT,
                                   spikes=spikes or {})["v"][:, 0])


def _reference(current) -> np.ndarray:
    """Backward Euler with the point current ``current(n)`` (nA, inward positive) of step
    ``n``."""
    area = np.pi * DIAM * L * 1e-8  # cm2
    v = [E]
    for n in range(STEPS):
        drive = CM / DT * v[-1] + 1e3 * G * E + 1e-3 * current(n) / area
        v.append(drive / (CM / DT + 1e3 * G))
    return np.asarray(v)


def test_a_point_electrode_current_depolarises_and_keeps_its_last_value():
    last = max((n + 0.5) * DT for n in range(STEPS) if (n + 0.5) * DT < 1.01)
    expected = _reference(lambda n: 0.01 * min((n + 0.5) * DT, last))
    v = _run(_load(HELD))
    np.testing.assert_allclose(v, expected, atol=1e-9)
    assert v[-1] > E + 0.1
    nonspecific = _run(_load(HELD.replace("ELECTRODE_CURRENT", "NONSPECIFIC_CURRENT")))
    np.testing.assert_allclose(nonspecific - E, -(v - E), atol=1e-9)


def test_net_send_from_initial_queues_a_self_event():
    mechanism = _load(PULSE)
    assert mechanism.initial_sends
    # on at the step whose half-step reaches 1.01 ms (n = 40), off at 1.51 ms (n = 60)
    expected = _reference(lambda n: 0.01 if 40 <= n < 60 else 0.0)
    v = _run(mechanism, spikes={"Pulse": [[np.inf]]})
    np.testing.assert_allclose(v, expected, atol=1e-9)


def test_a_loop_bound_known_during_the_run_and_a_file_level_local_array():
    mechanism = _load(LOOP)
    for n in (3.0, 0.0):
        total = -sum(-0.002 * j for j in range(1, int(n) + 1))  # nonspecific: outward
        v = _run(mechanism, {"n_Loop": n})
        np.testing.assert_allclose(v, _reference(lambda _, total=total: total),
                                   atol=1e-9)


def test_a_pointer_must_be_given_and_its_gradient_matches_central_differences():
    mechanism = _load(BATH)
    assert np.isnan(mechanism.parameters["C_Bath"][0])
    with pytest.raises(ConfigError, match=r"C_Bath.*POINTER"):
        _run(mechanism)

    def mean_v(c):
        with jax.enable_x64():
            cell = Cell.from_parents(np.array([-1]), [L], [DIAM / 2], kind=[1]).insert(
                pas).insert(mechanism, compartments=[0])
            params = {**cell.params(), "C_Bath": c, "v_init": E, "g_pas": G, "e_pas": E}
            return simulate(cell, params, [], DT, STEPS * DT)["v"].mean()

    with jax.enable_x64():
        # one program for the gradient and the values of the central differences
        value_and_grad = jax.jit(jax.value_and_grad(mean_v))
        c = np.asarray([0.5])  # NumPy inputs: no eager operation
        grad = value_and_grad(c)[1]
        h = 1e-4
        numeric = (value_and_grad(c + h)[0] - value_and_grad(c - h)[0]) / (2 * h)
    assert float(grad[0]) > 0.0  # more open channels, reversal 0: depolarised
    np.testing.assert_allclose(np.asarray(grad), np.asarray(numeric), rtol=1e-6)


def _prob_synapses(text: str, n: int):
    """``n`` instances of ``ProbUDFsyn2`` (from ``text``), instance ``k`` with NEURON's
    ``Random(k + 1).negexp(1)``, release probability 0.3 at each event (Fac 0, Dep 1 us);
    their states after INITIAL and a jitted ``deliver(states, t, flag)``."""
    mechanism = load_mod(text)
    randoms = [Random(k + 1).negexp(1) for k in range(n)]
    v = jnp.full((n,), -65.0)
    p = {name: jnp.full((n,), d) for name, (d, _) in mechanism.parameters.items()
         if not np.isnan(d)}
    p.update(random_parameters(mechanism, "rng", randoms))
    p.update({"Use_ProbUDFsyn2": jnp.full((n,), 0.3), "Fac_ProbUDFsyn2": jnp.zeros(n),
              "Dep_ProbUDFsyn2": jnp.full((n,), 1e-3), mechanism.weight: jnp.ones(n)})
    states = {**mechanism.initial(v, p, {"celsius": 34.0, "dt": 0.025}), "celsius": 34.0}
    args = mechanism.initial_args(states, v, p)

    @jax.jit
    def deliver(states, t, flag):
        return mechanism.deliver(states, args, jnp.full((n,), t), jnp.full((n,), flag),
                                 v, p)[0]

    return randoms, states, deliver


def test_a_random_pointer_draws_neurons_values_one_per_draw_made():
    """Each event draws the next value of the instance's NEURON Random (negexp(1) here, as
    the published hoc sets it) and releases where it is below the release probability."""
    n = 64
    with jax.enable_x64():
        randoms, states, deliver = _prob_synapses(PROB.read_text(), n)
        first = deliver(states, 21.0, 0.0)
        second = deliver(first, 41.0, 0.0)
        draws = np.stack([r.picks(2) for r in randoms])  # what NEURON's erand() returns
        picks = [np.asarray(x["rng_ProbUDFsyn2.picks"]) for x in (states, first, second)]
        released = [np.asarray(first["B_ProbUDFsyn2"]) > 0,
                    np.asarray(second["B_ProbUDFsyn2"] - first["B_ProbUDFsyn2"]) > 0]
    assert [x.tolist() for x in picks] == [[0.0] * n, [1.0] * n, [2.0] * n]
    for k in range(2):
        assert (released[k] == (draws[:, k] < 0.3)).all(), k
    assert 0 < released[0].sum() < n and (released[0] != released[1]).any()


@pytest.mark.parametrize("guarded", ["if (flag == 1 && erand() < Pr)",
                                     "if (flag == 1) { Pr = Pr*(erand() < 2) } if (Pr > 0)"])
def test_a_draw_c_would_not_make_is_not_made(guarded):
    """As in C, ``erand()`` in the right side of ``&&`` or in an ``if`` branch runs only
    where the left side or the condition holds, so the stream moves only there."""
    text = PROB.read_text().replace("if (erand() < Pr)", guarded)
    assert text != PROB.read_text()
    with jax.enable_x64():
        _, states, deliver = _prob_synapses(text, 2)
        skipped, drawn = (deliver(states, 21.0, flag) for flag in (0.0, 1.0))
        counts = [np.asarray(x["rng_ProbUDFsyn2.picks"]).tolist() for x in (skipped, drawn)]
    assert counts == [[0.0, 0.0], [1.0, 1.0]]


def test_random_draws_outside_the_idiom_or_net_receive_are_refused():
    text = PROB.read_text()
    with pytest.raises(ConfigError, match=r"VERBATIM"):
        load_mod(text.replace("return value;", "return 2*value;"))
    with pytest.raises(ConfigError, match=r"nrn_random_pick.*NET_RECEIVE"):
        load_mod(text.replace("g = gmax*(B-A)", "g = gmax*(B-A)*erand()"))
