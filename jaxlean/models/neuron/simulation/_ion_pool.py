"""The ions of a cell inside a simulation: what each compartment keeps, by NEURON's rules.

:func:`ion_uses` reads the mechanisms' ``USEION`` declarations once per program
(static); the simulator then keeps the concentrations of ions whose
concentrations are used as state (``{"cai": vector, "cao": vector}``), computes
the reversals at the start of each step (:func:`reversals`) and gives each
mechanism the ion variables it declared (:func:`view`). See
:mod:`~jaxlean.models.neuron.mechanisms.ions` for the rules.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.models.neuron.mechanisms.ions import nernst, variables
from jaxlean.models.neuron.mechanisms.mechanisms import Insertion, Mechanism

__all__ = ["IonUse", "concentrations", "ion_uses", "reversals", "view", "written"]


@dataclasses.dataclass(frozen=True, eq=False)
class IonUse:
    """How a cell uses one ion.

    Attributes:
      ion, charge: the ion.
      concentrations: its concentrations are used somewhere (kept as state).
      computed: ``(n,)`` bool: compartments whose reversal is computed from the
        concentrations (a mechanism there reads or writes one).
      reversal: some mechanism reads the reversal (the parameter ``e<ion>`` exists).
      current: some mechanism writes the ion's current.
    """

    ion: str
    charge: float
    concentrations: bool
    computed: np.ndarray
    reversal: bool
    current: bool


def ion_uses(n: int, insertions: tuple[Insertion, ...]) -> dict[str, IonUse]:
    """``{ion: IonUse}`` of the ions the inserted mechanisms declare, in first-use order."""
    found: dict[str, dict] = {}
    for ins in insertions:
        for use in ins.mechanism.ions:
            names = variables(use.ion)
            entry = found.setdefault(use.ion, {"charge": use.species.charge,
                                               "computed": np.zeros(n, bool),
                                               "reversal": False, "current": False})
            if {names["i"], names["o"]} & set(use.variables):
                where = slice(None) if ins.compartments is None else ins.compartments
                entry["computed"][where] = True
            entry["reversal"] |= names["e"] in use.read
            entry["current"] |= names["current"] in use.variables
    return {ion: IonUse(ion, entry["charge"], bool(entry["computed"].any()), entry["computed"],
                        entry["reversal"], entry["current"]) for ion, entry in found.items()}


def concentrations(uses: Mapping[str, IonUse]) -> tuple[str, ...]:
    """Names of the concentrations kept as state (``"cai"``, ``"cao"``, ...)."""
    return tuple(variables(u.ion)[kind] for u in uses.values() if u.concentrations
                 for kind in ("i", "o"))


def reversals(uses: Mapping[str, IonUse], pool: Mapping[str, jax.Array], p: Mapping,
              celsius: jax.Array, computed: Callable[[IonUse], np.ndarray]) -> dict:
    """``{"e<ion>": vector}`` of each ion used: Nernst of ``pool`` where ``computed(use)``
    (a mask shaped like the vectors) holds, the parameter ``e<ion>`` elsewhere."""
    out = {}
    for use in uses.values():
        names = variables(use.ion)
        if use.concentrations:
            value = nernst(pool[names["i"]], pool[names["o"]], use.charge, celsius)
            if use.reversal:
                value = jnp.where(computed(use), value, p[names["e"]])
        elif use.reversal:
            value = p[names["e"]]
        else:
            continue
        out[names["e"]] = value
    return out


def view(mechanism: Mechanism, ions: Mapping[str, jax.Array],
         gather: Callable[[jax.Array], jax.Array]) -> dict[str, jax.Array]:
    """The ion variables ``mechanism`` reads or writes, at its compartments (``gather``)."""
    return {name: gather(ions[name]) for use in mechanism.ions for name in use.variables
            if name in ions}


def written(mechanism: Mechanism) -> tuple[str, ...]:
    """The concentrations ``mechanism`` writes (its states kept by the ion)."""
    currents = set(mechanism.ion_currents())
    return tuple(name for name in mechanism.ion_writes() if name not in currents)
