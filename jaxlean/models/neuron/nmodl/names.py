"""How a ``.mod`` file's names become jaxlean's: parameters ``<name>_<suffix>`` (NEURON's
hoc names, e.g. ``gnabar_hh``) in jaxlean's units, states ``<state>_<suffix>``,
currents ``<current>_<suffix>``, ion reversals ``e_<ion>`` (shared, as in ``hh``)."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp

from jaxlean.models.neuron.nmodl.ions import DEFAULT_REVERSAL, ion_reversals
from jaxlean.models.neuron.nmodl.model import Model
from jaxlean.models.neuron.nmodl.units import canonical_unit

__all__ = ["SPECIAL", "Naming"]

SPECIAL = ("v", "celsius", "dt", "t")
"""Names NEURON provides (a file may declare them in PARAMETER or ASSIGNED)."""


@dataclasses.dataclass(frozen=True)
class Naming:
    """The name plan of one file.

    ``parameters``: ``{mod name: (jaxlean name, factor, default, unit)}``, the jaxlean value
    being ``factor`` times the mod's; ``frozen``: ``{mod name: value}`` of parameters
    fixed at their defaults (folded into the temperature factor); ``reversals``:
    ``{mod name: jaxlean name}``; ``states``: ``{mod name: jaxlean name}``.
    """

    suffix: str
    parameters: dict[str, tuple[str, float, float, str]]
    frozen: dict[str, float]
    reversals: dict[str, str]
    states: dict[str, str]

    @classmethod
    def of(cls, model: Model, frozen: frozenset[str] = frozenset()) -> Naming:
        reversals = ion_reversals(model)
        parameters, fixed = {}, {}
        for name, variable in model.parameters.items():
            if name in SPECIAL or name in reversals:
                continue
            default = 0.0 if variable.default is None else variable.default
            if name in frozen:
                fixed[name] = default
                continue
            unit, factor = canonical_unit(variable.unit)
            parameters[name] = (f"{name}_{model.suffix}", factor,
                                float(f"{default * factor:.15g}"), unit)
        if model.net_receive is not None and model.net_receive.args:
            weight = model.net_receive.args[0]
            parameters[weight] = (f"{weight}_{model.suffix}", 1.0, 0.0, "uS")
        states = {name: f"{name}_{model.suffix}" for name in model.states}
        return cls(model.suffix, parameters, fixed, reversals, states)

    def mechanism_parameters(self) -> dict[str, tuple[float, str]]:
        """``Mechanism.parameters`` (reversals included, at NEURON's defaults)."""
        out = {jax: (default, unit) for jax, _, default, unit in self.parameters.values()}
        for mod, jax in self.reversals.items():
            out[jax] = (DEFAULT_REVERSAL.get(mod[1:], 0.0), "mV")
        return out

    def values(self, p, v, states=None) -> dict:
        """The file's names bound to jaxlean's values (``p``: jaxlean parameters)."""
        out: dict = {"v": v, "celsius": jnp.nan}
        for mod, (jax, factor, _, _) in self.parameters.items():
            if jax in p:
                out[mod] = p[jax] if factor == 1.0 else p[jax] / factor
        out.update(self.frozen)
        out.update({mod: p[jax] for mod, jax in self.reversals.items() if jax in p})
        if states is not None:
            out.update({mod: states[jax] for mod, jax in self.states.items()})
        return out
