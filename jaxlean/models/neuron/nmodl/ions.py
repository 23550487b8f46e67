"""``USEION`` lines as :class:`~jaxlean.models.neuron.mechanisms.ions.UseIon` declarations.

Every ion variable keeps NEURON's name: a reversal read (``eca``), a concentration
read (``cai``, ``cao``) or the ion's total current read (``ica``) is an entry of
the states mapping the mechanism's functions receive; a current written
(``ica = ...``) is carried by the ion and adds to its total; a concentration
written (``cai' = ...``) is a state of the mechanism kept by the ion. The
simulator keeps the ion by NEURON's rules (:mod:`~jaxlean.models.neuron.mechanisms.ions`).

The one exception: ``Mechanism.advance`` (``METHOD derivimplicit``) cannot be
combined with ions in the simulator, so such a file may only read reversals and
write currents (``USEION k READ ek WRITE ik``); its reversal is then the plain
parameter ``ek`` (shared with the ion's parameter of that name, same default) and
its current is not added to the ion's total.
"""

from __future__ import annotations

import dataclasses

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.mechanisms.ions import SPECIES, UseIon, variables
from jaxlean.models.neuron.nmodl.model import Model

__all__ = ["IonPlan", "ion_currents", "ion_plan"]


@dataclasses.dataclass(frozen=True)
class IonPlan:
    """How a file uses ions.

    ``uses``: its :class:`UseIon` declarations (empty in the ``derivimplicit`` fallback);
    ``read``: ion variables read from the states mapping (``eca``, ``cai``, ``ica``);
    ``written``: concentrations it writes (its states, kept by the ion);
    ``reversal_parameters``: ``{ek: default}`` of reversals read as plain parameters
    (the ``derivimplicit`` fallback).
    """

    uses: tuple[UseIon, ...] = ()
    read: frozenset[str] = frozenset()
    written: frozenset[str] = frozenset()
    reversal_parameters: dict[str, float] = dataclasses.field(default_factory=dict)

    @property
    def dynamic(self) -> bool:
        """It reads a concentration or an ion current, or writes a concentration: its kinetics
        read the states mapping (``Mechanism.dstate``)."""
        currents = {variables(u.ion)["current"] for u in self.uses}
        reversals = {variables(u.ion)["e"] for u in self.uses}
        return bool(self.written) or bool(self.read - reversals - currents) or bool(
            self.read & currents)


def ion_plan(model: Model, method: str = "cnexp") -> IonPlan:
    """The :class:`IonPlan` of ``model``'s ``USEION`` lines.

    Raises:
      ConfigError: an unknown ion variable, a reversal written, an ion other than
        na, k, ca without VALENCE (or a VALENCE that differs from the ion's charge), a
        point process using ions, or ``derivimplicit`` with concentrations or ion
        currents read; naming the file, line and variable.
    """
    if not model.ions:
        return IonPlan()
    if model.point:
        raise model.error(model.ions[0].line, f"USEION {model.ions[0].name} in a "
                          f"POINT_PROCESS: jaxlean's simulator gives ions to density "
                          f"mechanisms only")
    uses, read, written = [], set(), set()
    for ion in model.ions:
        names = variables(ion.name)
        known = (names["e"], names["i"], names["o"], names["current"])
        for kind, given in (("READ", ion.read), ("WRITE", ion.write)):
            for variable in given:
                if variable not in known:
                    raise model.error(ion.line, f"USEION {ion.name} {kind} {variable}: not a "
                                      f"variable of the ion {ion.name} (its variables: "
                                      f"{list(known)})")
        if names["e"] in ion.write:
            raise model.error(ion.line, f"USEION {ion.name} WRITE {names['e']}: writing a "
                              f"reversal potential is not supported (write a concentration "
                              f"and the reversal follows from Nernst)")
        for variable in ion.write:
            if variable in (names["i"], names["o"]) and variable not in model.states:
                raise model.error(ion.line, f"USEION {ion.name} WRITE {variable}: {variable} is "
                                  f"not a STATE; jaxlean supports concentrations written as "
                                  f"a STATE with an equation {variable}' = ...")
        try:
            use = UseIon(ion.name, read=ion.read, write=ion.write, valence=ion.valence)
        except ConfigError as error:
            raise model.error(ion.line, f"USEION {ion.name}: {error}") from None
        uses.append(use)
        read |= set(ion.read)
        written |= {x for x in ion.write if x in (names["i"], names["o"])}
    plan = IonPlan(tuple(uses), frozenset(read), frozenset(written))
    if method != "derivimplicit":
        return plan
    for ion in model.ions:
        names = variables(ion.name)
        extra = sorted(set(ion.read) - {names["e"]}) + sorted(set(ion.write) - {
            names["current"]})
        if extra:
            raise model.error(ion.line, f"USEION {ion.name} uses {extra} with METHOD "
                              f"derivimplicit; jaxlean's Mechanism.advance cannot be combined "
                              f"with ions (use cnexp, or read only e{ion.name})")
    return IonPlan(reversal_parameters={
        variables(ion.name)["e"]: _default_reversal(ion.name) for ion in model.ions
        if variables(ion.name)["e"] in ion.read})


def _default_reversal(ion: str) -> float:
    species = SPECIES.get(ion)
    return species.reversal if species is not None else 0.0


def ion_currents(model: Model) -> dict[str, int]:
    """``{current: line}`` of the currents ``model`` writes: ion currents and
    ``NONSPECIFIC_CURRENT``s."""
    out = {f"i{ion.name}": ion.line for ion in model.ions if f"i{ion.name}" in ion.write}
    out.update({name: model.suffix_line for name in model.nonspecific})
    return out
