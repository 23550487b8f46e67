"""How a ``.mod`` file's names become jaxlean's: parameters ``<name>_<suffix>`` (NEURON's
hoc names, e.g. ``gnabar_hh``) with the value and unit the file declares, states
``<state>_<suffix>``, currents ``<current>_<suffix>``; ion variables keep NEURON's names
(``eca``, ``cai``, ``ica``) and are read from the states mapping
(:mod:`~jaxlean.models.neuron.nmodl.ions`)."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp

from jaxlean.models.neuron.nmodl.ions import IonPlan, ion_plan
from jaxlean.models.neuron.nmodl.model import Model

__all__ = ["SPECIAL", "Naming", "parameter_default"]

SPECIAL = ("v", "celsius", "dt", "t")
"""Names NEURON provides (a file may declare them in PARAMETER or ASSIGNED)."""


def parameter_default(variable) -> float:
    """A PARAMETER's value as NEURON 9 runs it: the declared default to 6 significant digits
    (``nocmodl`` writes it with ``%g``: ``15.87301587302`` runs as ``15.873``), 0 if none."""
    return 0.0 if variable.default is None else float(f"{variable.default:.6g}")


@dataclasses.dataclass(frozen=True)
class Naming:
    """The name plan of one file.

    ``parameters``: ``{mod name: (jaxlean name, default, unit)}``: NEURON never rescales a
    PARAMETER's value by its declared unit (a unit factor acts only where the file writes
    it in an expression), so neither does jaxlean: ``lmin = 2 (mS)`` is 2; ``frozen``:
    ``{mod name: value}`` of parameters fixed at their defaults (folded into the temperature
    factor); ``reversals``:
    ``{mod name: default}`` of reversals that are plain parameters (the ``derivimplicit``
    fallback); ``ions``: the file's ion plan (ion variables read from the states mapping);
    ``states``: ``{mod name: jaxlean name}`` (a written concentration keeps its name).
    """

    suffix: str
    parameters: dict[str, tuple[str, float, str]]
    frozen: dict[str, float]
    reversals: dict[str, float]
    states: dict[str, str]
    ions: IonPlan

    @classmethod
    def of(cls, model: Model, frozen: frozenset[str] = frozenset(),
           method: str = "cnexp") -> Naming:
        ions = ion_plan(model, method)
        reversals = ions.reversal_parameters
        parameters, fixed = {}, {}
        for name, variable in model.parameters.items():
            if name in SPECIAL or name in reversals or name in ions.read:
                continue
            default = parameter_default(variable)
            if name in frozen:
                fixed[name] = default
                continue
            parameters[name] = (f"{name}_{model.suffix}", float(default),
                                variable.unit.replace(" ", ""))
        if model.net_receive is not None and model.net_receive.args:
            weight = model.net_receive.args[0]
            parameters[weight] = (f"{weight}_{model.suffix}", 0.0, "uS")
        states = {name: name if name in ions.written else f"{name}_{model.suffix}"
                  for name in model.states}
        return cls(model.suffix, parameters, fixed, reversals, states, ions)

    def mechanism_parameters(self) -> dict[str, tuple[float, str]]:
        """``Mechanism.parameters`` (reversals included, at NEURON's defaults)."""
        out = {jax: (default, unit) for jax, default, unit in self.parameters.values()}
        for name, default in self.reversals.items():
            out[name] = (default, "mV")
        return out

    def values(self, p, v, states=None, celsius=jnp.nan) -> dict:
        """The file's names bound to jaxlean's values (``p``: jaxlean parameters; ``states``:
        the mechanism's states and the ion variables it reads)."""
        out: dict = {"v": v, "celsius": celsius}
        for mod, (jax, _, _) in self.parameters.items():
            if jax in p:
                out[mod] = p[jax]
        out.update(self.frozen)
        out.update({name: p[name] for name in self.reversals if name in p})
        if states is not None:
            out.update({name: states[name] for name in self.ions.read if name in states})
            out.update({mod: states[jax] for mod, jax in self.states.items() if jax in states})
        return out
