"""Gradients through translated NMODL constructs against central differences (float64).

One small cell per construct, the gradient of a loss on the voltage (and the calcium
concentration where the mechanism writes it) with respect to the mechanisms' parameters,
each scaled by ``s`` at ``s = 1``; ``jax.grad`` must agree with central differences to
1e-4 relative:

* ``SOLVE ... METHOD derivimplicit`` with a concentration: Migliore et al.'s ``cacum``
  (writes ``cai``) fed by ``cal``, read by ``kca`` (itself ``derivimplicit``);
* a ``KINETIC`` scheme solved ``METHOD sparse``, with ``COMPARTMENT``, ``CONSERVE`` and
  a one-way reaction (``constructs/kinetic.mod``);
* ``NET_RECEIVE`` weights: a point process (``mods/ExpSynM.mod``, NEURON's ExpSyn) whose
  ``g`` jumps by ``weight`` at each event of a spike train.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.models.neuron.mechanisms.channels import pas
from jaxlean.models.neuron.nmodl import load_mod
from jaxlean.models.neuron.simulation.cable import Cell, Stimulus, simulate, step_current

HERE = Path(__file__).parent
DT, RTOL, STEP = 0.025, 1e-4, 1e-5


def soma(*files: Path, compartments=None) -> Cell:
    """One compartment (L = diam = 20 um) with ``pas`` and the mechanisms of ``files``
    (given in NEURON's order: nrnivmodl's, by file name), each checked to be loaded."""
    cell = Cell.from_parents(np.array([-1]), [20.0], [10.0], kind=[1]).insert(pas)
    for file in files:
        mechanism = load_mod(file)
        where = {"compartments": compartments} if mechanism.point else {}
        cell = cell.insert(mechanism, **where)
    return cell


def check_gradient(loss, keys: list[str]) -> np.ndarray:
    """``jax.grad`` of ``loss(s)`` at ``s = 1`` against central differences; returns the
    relative errors."""
    value_and_grad = jax.jit(jax.value_and_grad(loss))  # one program: the gradient and
    ones = np.ones(len(keys))                           # every shifted loss (NumPy inputs:
    grad = np.asarray(value_and_grad(ones)[1])          # no eager operation to compile)
    shifts = np.concatenate([ones + STEP * np.eye(ones.size), ones - STEP * np.eye(ones.size)])
    values = np.array([float(value_and_grad(shift)[0]) for shift in shifts])
    fd = (values[: ones.size] - values[ones.size:]) / (2 * STEP)
    assert np.all(np.abs(fd) > 1e-8 * np.abs(fd).max()), dict(zip(keys, fd, strict=True))
    error = np.abs(grad - fd) / np.abs(fd)
    assert np.all(error < RTOL), dict(zip(keys, error, strict=True))
    return error


def scaled(base: dict, keys: list[str], s) -> dict:
    return {**base, **{key: s[i] * jnp.asarray(base[key]) for i, key in enumerate(keys)}}


def test_derivimplicit_calcium_and_kca():
    files = [HERE / "migliore" / name for name in ("cacumm.mod", "cal2.mod", "kca.mod")]
    assert all("derivimplicit" in files[k].read_text() for k in (0, 2))
    cell = soma(*files)
    keys = ["gcalbar_cal", "gbar_kca", "depth_cacum", "tau_cacum", "cai0_cacum"]
    t_max = 20.0
    with jax.enable_x64():
        base = {**cell.params(), "celsius": 34.0, "v_init": -65.0, "g_pas": 5e-5,
                "e_pas": -65.0, "ek": -90.0, "gcalbar_cal": 0.02, "gbar_kca": 5e-3,
                "depth_cacum": 0.01}     # cai rises to 2.5 uM, kca opens fully
        current = step_current(0.1, 2.0, 15.0, DT, t_max)

        def loss(s):
            out = simulate(cell, scaled(base, keys, s), [Stimulus(0, current)], DT, t_max,
                           states=("v", "cai"), progress=False)
            return jnp.mean((out["v"] + 60.0) ** 2) + 1e6 * jnp.mean(out["cai"])

        check_gradient(loss, keys)


def test_kinetic_scheme_with_compartment_and_conserve():
    assert "KINETIC" in (HERE / "constructs" / "kinetic.mod").read_text()
    cell = soma(HERE / "constructs" / "kinetic.mod")
    keys = ["g_kinetic", "e_kinetic", "vol_kinetic", "g_pas"]
    t_max = 15.0
    with jax.enable_x64():
        base = {**cell.params(), "v_init": -65.0, "g_pas": 5e-5, "e_pas": -65.0,
                "g_kinetic": 1e-3}
        current = step_current(0.1, 2.0, 8.0, DT, t_max)

        def loss(s):
            v = simulate(cell, scaled(base, keys, s), [Stimulus(0, current)], DT, t_max,
                         progress=False)["v"]
            return jnp.mean((v + 40.0) ** 2)

        check_gradient(loss, keys)


def test_net_receive_weight_of_an_event_driven_synapse():
    assert "NET_RECEIVE" in (HERE / "mods" / "ExpSynM.mod").read_text()
    cell = soma(HERE / "mods" / "ExpSynM.mod", compartments=[0])
    keys = ["weight_ExpSynM", "tau_ExpSynM", "e_ExpSynM"]
    spikes = {"ExpSynM": [[2.0, 7.5, 8.0, 15.0]]}
    t_max = 25.0
    with jax.enable_x64():
        base = {**cell.params(), "v_init": -65.0, "g_pas": 1e-4, "e_pas": -65.0,
                "weight_ExpSynM": 0.002, "tau_ExpSynM": 2.0, "e_ExpSynM": -10.0}

        def loss(s):
            v = simulate(cell, scaled(base, keys, s), [], DT, t_max, spikes=spikes,
                         progress=False)["v"]
            return jnp.mean((v + 50.0) ** 2)

        check_gradient(loss, keys)
