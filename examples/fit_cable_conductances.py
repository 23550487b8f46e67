"""Recover the HH and leak conductances of a 100-branch neuron from one voltage trace.

A "recorded" trace is simulated with known conductances; gradient descent
(optax Adam on log-conductances) then fits them back from a wrong start. Every
gradient goes through ``simulate``, i.e. one ``tree_solve`` and one transposed
solve per time step. Runs in well under a minute on a laptop CPU;
``JAXLEAN_EXAMPLE_SIZE=small`` (what the test suite sets) takes 40 Adam steps
instead of 400.
"""

from __future__ import annotations

import os
import time

import jax
import jax.numpy as jnp
import optax

from jaxlean.models.neuron import Cell, Stimulus, simulate, step_current, swc

NAMES = ("gnabar_hh", "gkbar_hh", "gl_hh")
DT, T_MAX = 0.05, 20.0


def main(steps: int = 400) -> None:
    cell = Cell.from_swc(swc.fixture("binary100"), ncomp=1)
    base = cell.params()
    protocol = step_current(0.3, 1.0, 5.0, DT, T_MAX) + step_current(1.5, 8.0, 10.0, DT, T_MAX)
    stimuli = [Stimulus((0,), protocol)]
    record = (0, cell.n // 2, cell.n - 1)

    def trace(log_g):
        params = {**base, **{name: jnp.exp(log_g[name]) for name in NAMES}}
        return simulate(cell, params, stimuli, DT, T_MAX, record=record)["v"]

    true = {name: jnp.log(base[name]) for name in NAMES}
    recorded = jax.jit(trace)(true)
    loss = jax.jit(jax.value_and_grad(lambda log_g: jnp.mean((trace(log_g) - recorded) ** 2)))

    log_g = {name: value + jnp.log(1.6 if i % 2 else 0.6) for i, (name, value)
             in enumerate(true.items())}
    optimizer = optax.adam(0.1)
    state = optimizer.init(log_g)
    print(f"{cell.n} compartments in {cell.n_branches} branches, "
          f"{round(T_MAX / DT)} steps of {DT} ms")
    start = time.perf_counter()
    for step in range(steps + 1):
        value, grads = loss(log_g)
        if step % 50 == 0:
            print(f"step {step:4d}  loss {float(value):10.4f} mV^2  " + "  ".join(
                f"{name} {float(jnp.exp(log_g[name])):.5f}" for name in NAMES))
        updates, state = optimizer.update(grads, state)
        log_g = optax.apply_updates(log_g, updates)
    print(f"fitted in {time.perf_counter() - start:.1f} s")
    for name in NAMES:
        fitted, wanted = float(jnp.exp(log_g[name])), float(base[name])
        print(f"{name:7s} true {wanted:.5f}  recovered {fitted:.5f}  "
              f"({100 * abs(fitted - wanted) / wanted:.2f}% off)")


if __name__ == "__main__":
    main(40 if os.environ.get("JAXLEAN_EXAMPLE_SIZE") == "small" else 400)
