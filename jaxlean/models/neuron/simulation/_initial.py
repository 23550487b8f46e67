"""The state a run starts from: NEURON's ``finitialize`` for a cell's mechanisms and ions.

Kept apart from the step (:mod:`jaxlean.models.neuron.simulation._program`): ``simulate``
and ``simulate_network`` call it once, outside the time loop.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxlean.models.neuron.cell.cell import Cell
from jaxlean.models.neuron.mechanisms.ions import variables
from jaxlean.models.neuron.mechanisms.mechanisms import Insertion
from jaxlean.models.neuron.simulation._ion_pool import (
    concentrations,
    ion_uses,
    reversals,
    view,
    written,
)


def initial_state(cell: Cell, insertions: tuple[Insertion, ...], p: dict[str, jax.Array],
                  dt: float | None = None) -> dict:
    """Voltage ``v_init`` everywhere, states at rest there, step 0; the ions' concentrations
    (``"ions"``, where a cell uses them) at ``<ion>i0``/``<ion>o0``, then as the mechanisms'
    initial values write them, in insertion order (NEURON's ``finitialize``)."""
    v_init = p["v_init"]
    uses = ion_uses(cell.n, insertions)
    pool = {name: p[name + "0"] for name in concentrations(uses)}
    celsius = p["celsius"][0]
    states = {}
    for ins in insertions:
        mechanism = ins.mechanism
        own = {k: p[k] if mechanism.point else ins.gather(p[k]) for k in mechanism.parameters}
        if not (mechanism.ions or mechanism.dstate or mechanism.init):
            states[mechanism.name] = mechanism.initial(ins.gather(v_init), own)
            continue
        values = {**pool, **reversals(uses, pool, p, celsius, lambda use: use.computed),
                  **{variables(u.ion)["current"]: jnp.zeros_like(v_init) for u in uses.values()
                     if u.current}}
        local = {**view(mechanism, values, ins.gather), "celsius": celsius}
        if dt is not None:  # NEURON's dt, which an NMODL INITIAL block may read
            local["dt"] = dt
        start = mechanism.initial(ins.gather(v_init), own, local)
        states[mechanism.name] = {s: start[s] for s in mechanism.own_states()}
        for name in written(mechanism):
            pool[name] = (start[name] if ins.compartments is None
                          else pool[name].at[ins.compartments].set(start[name]))
    out = {"v": jnp.concatenate([v_init, v_init[cell.junction_owner]]), "states": states,
           "step": jnp.zeros((), jnp.int32)}
    if pool:
        out["ions"] = pool
    return out
