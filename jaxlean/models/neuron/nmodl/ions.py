"""``USEION`` lines: which ion variables map onto jaxlean (reversal potentials as
parameters, ion currents as a mechanism's currents) and which need what jaxlean's
simulator does not have yet (concentrations, summed ion currents)."""

from __future__ import annotations

from jaxlean.models.neuron.nmodl.model import Model

__all__ = ["DEFAULT_REVERSAL", "ion_currents", "ion_reversals"]

DEFAULT_REVERSAL = {"na": 50.0, "k": -77.0, "ca": 132.4579341637009}
"""NEURON's default reversal potentials (mV); any other ion's is 0."""


def ion_reversals(model: Model) -> dict[str, str]:
    """``{mod name: jaxlean parameter}`` of the reversal potentials ``model`` reads
    (``ena`` -> ``e_na``, the name ``hh`` and ``pas`` use).

    Raises:
      ConfigError: the file reads or writes a concentration, reads an ion current or
        writes a reversal potential, naming the file, line and variable.
    """
    out = {}
    for ion in model.ions:
        name = ion.name
        concentrations = (f"{name}i", f"{name}o")
        for variable in ion.read:
            if variable == f"e{name}":
                out[variable] = f"e_{name}"
            elif variable in concentrations:
                raise model.error(ion.line, f"USEION {name} READ {variable} needs ion "
                                  f"concentrations, which jaxlean's simulator does not have")
            elif variable == f"i{name}":
                raise model.error(ion.line, f"USEION {name} READ {variable} needs the ion's "
                                  f"total current summed over mechanisms, which jaxlean's "
                                  f"simulator does not provide")
            else:
                raise model.error(ion.line, f"USEION {name} READ {variable}: not a variable "
                                  f"of the ion {name}")
        for variable in ion.write:
            if variable in concentrations:
                raise model.error(ion.line, f"USEION {name} WRITE {variable} needs ion "
                                  f"concentration dynamics, which jaxlean's simulator does "
                                  f"not have")
            if variable != f"i{name}":
                raise model.error(ion.line, f"USEION {name} WRITE {variable} is not "
                                  f"supported (only the current i{name})")
    return out


def ion_currents(model: Model) -> dict[str, int]:
    """``{current: line}`` of the currents ``model`` writes: ion currents and
    ``NONSPECIFIC_CURRENT``s."""
    out = {f"i{ion.name}": ion.line for ion in model.ions if f"i{ion.name}" in ion.write}
    out.update({name: model.suffix_line for name in model.nonspecific})
    return out
