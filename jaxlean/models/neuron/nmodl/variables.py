"""Where each name of a ``.mod`` file lives, as in the C code ``nocmodl`` generates.

* A PARAMETER that no block assigns is a parameter of the mechanism
  (``<name>_<suffix>``, its declared value to 6 significant digits and its declared
  unit, never rescaled).
* Everything else a block may assign and a later block read is kept per compartment
  between blocks and steps (INITIAL -> BREAKPOINT -> SOLVE -> next step), as NEURON
  keeps its range variables: STATEs, ASSIGNEDs (``minf``, ``tadj``, ``cmax``) and
  PARAMETERs a block assigns (``gk`` in ``gk = gbar*m``; kept from their declared
  value). These are the mechanism's states, ``<name>_<suffix>``. A GLOBAL ASSIGNED is
  kept per compartment too: the same values wherever a block sets it before reading
  it (``rates(v)`` filling ``minf``), which is what published files do.
* Ion variables keep NEURON's names (``ena``, ``cai``, ``ica``): read from the ion each
  block; a concentration the file writes (a STATE ``cai' = ...``, or assigned:
  ``cai = ca``) is its state, kept by the ion (other mechanisms read it).
* A file-level ``LOCAL`` is kept per compartment (NEURON keeps one value per thread;
  the same wherever a block sets it before reading it).
* A ``NONSPECIFIC_CURRENT`` (or ``ELECTRODE_CURRENT``) that BREAKPOINT does not assign on
  every path (``IF (t < del) {i = 0} ELSE {IF (t < tf) {i = ...}}``) is kept too, as
  ``<name>_<suffix>_held``: NEURON's range variable keeps its last value where the
  block leaves it alone.
* A ``POINTER`` is a parameter ``<name>_<suffix>`` with no default (NaN; ``cell.params()``
  leaves it out, so a run without it is refused, as NEURON refuses a pointer never set):
  the value it points to, which NEURON's ``setpointer`` names and the run does not
  change (a variable the run changes, another mechanism's state, is not followed).
  A POINTER to a NEURON ``Random`` (:mod:`~.random_streams`) is instead the parameters
  ``<name>_<suffix>.<field>`` of :data:`~.neuron_random.FIELDS` (no defaults) and the
  state ``<name>_<suffix>.picks``, the values drawn so far.
* ``v``, ``celsius``, ``dt`` and ``t`` are NEURON's (``t``: see generated).
"""

from __future__ import annotations

import dataclasses
import math

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.mechanisms.ions import UseIon, variables
from jaxlean.models.neuron.nmodl import syntax as s
from jaxlean.models.neuron.nmodl.model import Model
from jaxlean.models.neuron.nmodl.names import SPECIAL, parameter_default
from jaxlean.models.neuron.nmodl.neuron_random import FIELDS

__all__ = ["Variables", "always_assigns", "assigned_names", "plan_variables"]


def _hoc(name: str, suffix: str) -> str:
    """NEURON's hoc name: ``gbar_kdr``, an array element ``inf_nahh[0]``."""
    base, bracket, index = name.partition("[")
    return f"{base}_{suffix}{bracket}{index}"


def assigned_names(model: Model, statements, shadow: frozenset = frozenset(),
                   seen: set | None = None) -> set[str]:
    """The mechanism-wide names ``statements`` assign, through the PROCEDUREs and FUNCTIONs
    they call (a block's LOCALs and arguments, ``shadow``, excluded)."""
    seen = set() if seen is None else seen
    out: set[str] = set()

    def calls(expr):
        if isinstance(expr, s.Call):
            block = model.blocks.get(expr.name)
            if block is not None and block.kind in ("PROCEDURE", "FUNCTION") and (
                    block.name not in seen):
                seen.add(block.name)
                out.update(assigned_names(model, block.body, frozenset(
                    {*block.locals, *block.args, block.name}), seen))
            for arg in expr.args:
                calls(arg)
        elif isinstance(expr, s.Binary):
            calls(expr.left)
            calls(expr.right)
        elif isinstance(expr, s.Unary):
            calls(expr.operand)

    for statement in statements:
        if isinstance(statement, s.Assign):
            if statement.target in model.vectors:
                out.add(statement.target)
            elif statement.index is not None:  # every element of the array may be assigned
                out.update(f"{statement.target}[{k}]"
                           for k in range(model.arrays.get(statement.target, 0)))
            elif statement.target not in shadow:
                out.add(statement.target)
            calls(statement.value)
        elif isinstance(statement, s.Loop):
            out |= assigned_names(model, statement.body, shadow | {statement.var}, seen)
        elif isinstance(statement, s.Derivative):
            calls(statement.value)
        elif isinstance(statement, s.If):
            calls(statement.condition)
            out |= assigned_names(model, (*statement.then, *statement.otherwise), shadow, seen)
        elif isinstance(statement, s.CallStatement):
            calls(statement.call)
    return out


def always_assigns(statements, name: str) -> bool:
    """Whether ``statements`` assign ``name`` on every path (an ``if`` counts when both of
    its branches do; a loop or a call does not)."""
    for statement in statements:
        if isinstance(statement, s.Assign) and statement.target == name and (
                statement.index is None):
            return True
        if isinstance(statement, s.If) and always_assigns(statement.then, name) and (
                always_assigns(statement.otherwise, name)):
            return True
    return False


@dataclasses.dataclass(frozen=True)
class Variables:
    """The name plan of a file (see the module docstring).

    ``parameters``: ``{mod name: (jaxlean name, default, unit)}``; ``kept``: ``{mod name:
    (jaxlean name, start)}``, ``start`` the value before INITIAL runs (a PARAMETER's
    declared value, else 0; ``None``: the ion's concentration); ``ions``: the USEION lines;
    ``ion_names``: every ion variable they name; ``currents``: ``{current: (jaxlean name,
    the ion current carrying it or None)}``; ``breakpoint_kept``: kept names BREAKPOINT
    assigns.
    """

    suffix: str
    parameters: dict[str, tuple[str, float, str]]
    kept: dict[str, tuple[str, float | None]]
    ions: tuple[UseIon, ...]
    ion_names: frozenset[str]
    currents: dict[str, tuple[str, str | None]]
    breakpoint_kept: frozenset[str]


def _uses(model: Model) -> tuple[tuple[UseIon, ...], frozenset[str]]:
    uses, names = [], set()
    for ion in model.ions:
        known = variables(ion.name)
        unknown = [(kind, x) for kind, given in (("READ", ion.read), ("WRITE", ion.write))
                   for x in given if x not in known.values()]
        for kind, variable in unknown:
            model.refuse(ion.line, f"USEION {ion.name} {kind} {variable}: not a variable of "
                         f"the ion {ion.name} (its variables: {list(known.values())})")
        if known["e"] in ion.write:
            model.refuse(ion.line, f"USEION {ion.name} WRITE {known['e']}: writing a reversal "
                         f"potential is not supported (write a concentration and the reversal "
                         f"follows from Nernst)")
        if unknown or known["e"] in ion.write:
            continue
        try:
            uses.append(UseIon(ion.name, read=ion.read, write=ion.write, valence=ion.valence))
        except ConfigError as error:
            model.refuse(ion.line, f"USEION {ion.name}: {error}")
            continue
        names |= {*ion.read, *ion.write}
    if model.ions and model.point:
        model.refuse(model.ions[0].line, f"USEION {model.ions[0].name} in a POINT_PROCESS: "
                     f"jaxlean's simulator gives ions to density mechanisms only")
    return tuple(uses), frozenset(names)


def plan_variables(model: Model) -> Variables:
    """The :class:`Variables` of ``model``; problems are recorded on ``model``."""
    uses, ion_names = _uses(model)
    currents: dict[str, tuple[str, str | None]] = {}
    for ion in model.ions:  # every USEION line, refused or not: no spurious "no current"
        current = variables(ion.name)["current"]
        if current in ion.write:
            currents[current] = (f"{current}_{model.suffix}", current)
    for name in model.nonspecific:
        currents[name] = (_hoc(name, model.suffix), None)
    blocks = [b for b in (model.initial, model.breakpoint, model.net_receive,
                          *model.before_after.values()) if b is not None]
    blocks += [b for b in model.blocks.values() if b.kind in ("DERIVATIVE", "KINETIC")]
    written = set()
    for block in blocks:
        written |= assigned_names(model, block.body, frozenset(block.locals) | set(block.args))
    free = set(SPECIAL) | set(ion_names)
    parameters, kept = {}, {}
    for name in model.pointers:
        if name in written:
            model.refuse(model.suffix_line, f"a block assigns POINTER {name} (NEURON writes "
                         f"the variable it points to); not supported")
        if name in model.random_pointers:  # a NEURON Random: its fields, its draws so far
            for field in FIELDS:
                parameters[f"{name}.{field}"] = (f"{_hoc(name, model.suffix)}.{field}",
                                                 math.nan, "")
            kept[f"{name}.picks"] = (f"{_hoc(name, model.suffix)}.picks", 0.0)
            continue
        variable = model.assigned.get(name) or model.parameters.get(name)
        parameters[name] = (_hoc(name, model.suffix), math.nan,
                            variable.unit.replace(" ", "") if variable else "")
    free |= set(model.pointers)
    for name, variable in model.parameters.items():
        if name in free:
            continue
        if name in written:
            kept[name] = (_hoc(name, model.suffix), parameter_default(variable))
        else:
            parameters[name] = (_hoc(name, model.suffix), parameter_default(variable),
                                variable.unit.replace(" ", ""))
    concentrations = {x for use in uses for x in use.write
                      if x in (variables(use.ion)["i"], variables(use.ion)["o"])}
    for name in sorted(concentrations - set(model.states)):  # written by assignment
        kept[name] = (name, None)
    for name in model.file_locals:
        kept[name] = (_hoc(name, model.suffix), 0.0)
    for name in model.nonspecific:  # NEURON's range variable keeps its last value
        if model.breakpoint is not None and not always_assigns(model.breakpoint.body, name):
            kept[name] = (f"{_hoc(name, model.suffix)}_held", 0.0)
    for name in model.states:
        if name in ion_names:
            kept[name] = (name, None)
        else:
            start = model.parameters.get(f"{name}0")
            kept[name] = (_hoc(name, model.suffix),
                          0.0 if start is None else parameter_default(start))
    for name in model.assigned:
        if name not in free and name not in currents and name not in kept:
            kept[name] = (_hoc(name, model.suffix), 0.0)
    breakpoint_kept = frozenset()
    if model.breakpoint is not None:
        breakpoint_kept = frozenset(assigned_names(
            model, model.breakpoint.body, frozenset(model.breakpoint.locals)) & (
            set(kept) - set(model.states)))
    return Variables(model.suffix, parameters, kept, uses, ion_names, currents,
                     breakpoint_kept)
