"""Recover 20 region parameters of Hay et al.'s L5 pyramidal cell from its voltage traces.

The model (:mod:`jaxlean.models.neuron.published.l5pc`: Hay's ``.mod`` files, calcium shells, SK,
exponential apical Ih) on the small ASC morphology of the test suite, its axon replaced
by a stub. A "recorded" trace (soma and two dendrites, a hyperpolarising then a
depolarising step, 80 ms) is simulated with Hay's values; the 20 values of
``l5pc.FITTED`` (conductances per region, the somatic calcium shell's ``gamma`` and
``decay``) start 10 % off and are fitted back, each bounded to [1/3, 3] times its
published value by a ``SigmoidTransform`` (:mod:`jaxlean.models.neuron.cell.transforms`).

The optimiser is Levenberg-Marquardt on the exact Jacobian of the traces with respect to
the 20 free values (``jax.jacfwd`` through ``simulate``: 20 tangents per step). The
problem is sloppy (the Jacobian's singular values span about six decades, the somatic
K_Pst conductance being the least determined), and a spiking trace makes the error
rugged: from 10 % off the fit reaches the published values; from 25 % off it stops in a
local minimum with a parameter at its bound. Float64; a few minutes on a laptop CPU.
``JAXLEAN_EXAMPLE_SIZE=small`` (what the test suite sets) runs 2 steps on a 10 ms trace.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import jax
import jax.numpy as jnp

from jaxlean.models.neuron import (
    ParamTransform,
    SigmoidTransform,
    Stimulus,
    l5pc,
    simulate,
    step_current,
)

TESTS = Path(__file__).resolve().parents[1] / "tests" / "models" / "neuron"
ASC, MODS = TESTS / "fixtures" / "pyramid.asc", TESTS / "nmodl" / "mods"
DT = 0.025
SITES = (("soma[0]", 0.5), ("dend[2]", 0.5), ("apic[2]", 0.5))


def main(steps: int = 150, t_max: float = 80.0, every: int = 10) -> dict[str, float]:
    """Fit; return each fitted parameter's relative error."""
    jax.config.update("jax_enable_x64", True)
    model = l5pc.build(ASC, MODS)
    cell = model.cell
    sites = [cell.location(name, x) for name, x in SITES]
    current = (step_current(-0.3, 2.0, 0.25 * t_max, DT, t_max)
               + step_current(0.5, 0.4 * t_max, 0.5 * t_max, DT, t_max))
    stimuli = [Stimulus(cell.location(0, 0.5), current)]
    true = {key: jnp.asarray(l5pc.HAY[key]) for key in l5pc.FITTED}
    bounds = ParamTransform({key: SigmoidTransform(value / 3, 3 * value)
                             for key, value in true.items()})
    keys = list(true)

    def trace(x):
        free = dict(zip(keys, x, strict=True))
        params = model.params(bounds.forward(free))
        return simulate(cell, params, stimuli, DT, t_max, record=sites, progress=False)["v"]

    def as_vector(values):
        free = bounds.inverse(values)
        return jnp.stack([free[key] for key in keys])

    recorded = jax.jit(trace)(as_vector(true))
    residual = jax.jit(lambda x: (trace(x) - recorded).ravel())
    jacobian = jax.jit(jax.jacfwd(residual))    # 20 tangents through the simulation
    start = {key: value * (0.9 if k % 2 else 1.1) for k, (key, value) in enumerate(true.items())}
    x = as_vector(start)
    r = residual(x)
    damping = 1.0
    print(f"{cell.n} compartments, {len(keys)} parameters, {round(t_max / DT)} steps of "
          f"{DT} ms; Levenberg-Marquardt on the exact Jacobian")
    began = time.perf_counter()
    for step in range(steps + 1):
        loss = float(jnp.mean(r**2))
        if step % every == 0 or step == steps or loss < 1e-14:
            worst = max(_errors(_values(bounds, keys, x), true).values())
            print(f"step {step:3d}  loss {loss:12.5g} mV^2  worst parameter {worst:7.2%} off  "
                  f"damping {damping:8.1e}  ({time.perf_counter() - began:.0f} s)")
        if step == steps or loss < 1e-14:
            break
        j = jacobian(x)
        scale = jnp.sqrt(jnp.mean(jnp.sum(j**2, axis=0)))
        for _ in range(20):
            # min |j d + r|^2 + damping scale^2 |d|^2, by least squares (no j.T @ j: it
            # would square the Jacobian's condition number)
            damped = jnp.concatenate([j, jnp.sqrt(damping) * scale * jnp.eye(len(keys))])
            d = jnp.linalg.lstsq(damped, -jnp.concatenate([r, jnp.zeros(len(keys))]))[0]
            trial = x + d * jnp.minimum(1.0, 0.5 / jnp.abs(d).max())   # at most 0.5 a value
            r_trial = residual(trial)
            if float(jnp.mean(r_trial**2)) < loss:     # accept; trust the model more
                x, r, damping = trial, r_trial, max(damping / 3, 1e-15)
                break
            damping *= 4                               # reject; a shorter, steeper step
        else:
            break
    fitted = _values(bounds, keys, x)
    errors = _errors(fitted, true)
    for key, error in errors.items():
        print(f"{key:30s} true {float(true[key]):.4g}  start {float(start[key]):.4g}  "
              f"recovered {float(fitted[key]):.4g}  ({error:.2e} off)")
    return errors


def _values(bounds: ParamTransform, keys: list[str], x: jax.Array) -> dict:
    return bounds.forward(dict(zip(keys, x, strict=True)))


def _errors(fitted: dict, true: dict) -> dict[str, float]:
    return {key: float(abs(fitted[key] - true[key]) / true[key]) for key in true}


if __name__ == "__main__":
    if os.environ.get("JAXLEAN_EXAMPLE_SIZE") == "small":
        main(steps=2, t_max=10.0, every=1)
    else:
        main()
