"""``BEFORE``/``AFTER`` blocks, run where NEURON's ``nrn_ba`` runs them.

NEURON runs, in ``finitialize``: every ``BEFORE INITIAL``, every INITIAL, every ``AFTER
INITIAL``, then the currents (BREAKPOINT at ``t = 0``), then every ``BEFORE STEP``; in
each fixed step: the currents, the solve, every SOLVE (``nrn_state``), every ``AFTER
SOLVE``, every ``BEFORE STEP`` (``t`` at the step's end, ``v`` the new voltage).

A :class:`~jaxlean.models.neuron.nmodl.generated.GeneratedMechanism` runs them in its own
``initial`` and ``step``, in that order. NEURON runs each kind for all mechanisms before
the next kind; the two orders agree where a block's values are the mechanism's own,
so a block that reads or writes an ion variable (which another mechanism may change in
between) is refused. In ``finitialize`` NEURON's ``BEFORE STEP`` comes after the currents
at ``t = 0``: it runs at the end of ``initial`` only where it shares no name with
BREAKPOINT (else refused). ``BEFORE BREAKPOINT`` is refused: NEURON runs it once at ``v``,
while the currents are evaluated at ``v`` and ``v + 0.001``.
"""

from __future__ import annotations

from jaxlean.models.neuron.nmodl import syntax as s
from jaxlean.models.neuron.nmodl.model import Model
from jaxlean.models.neuron.nmodl.variables import assigned_names

__all__ = ["SUPPORTED", "check_before_after", "read_names"]

SUPPORTED = ("BEFORE INITIAL", "AFTER INITIAL", "AFTER SOLVE", "BEFORE STEP")
"""The ``BEFORE``/``AFTER`` blocks jaxlean runs, in NEURON's order within a mechanism."""


def read_names(model: Model, statements, seen: set | None = None) -> set[str]:
    """Every name ``statements`` read, through the PROCEDUREs and FUNCTIONs they call."""
    seen = set() if seen is None else seen
    out: set[str] = set()

    def visit(node):
        if isinstance(node, tuple):
            for item in node:
                visit(item)
            return
        if isinstance(node, s.Name | s.Index):
            out.add(node.id)
        if isinstance(node, s.Call):
            block = model.blocks.get(node.name)
            if block is not None and block.name not in seen:
                seen.add(block.name)
                out.update(read_names(model, block.body, seen))
        for field in getattr(node, "__dataclass_fields__", {}):
            value = getattr(node, field)
            if not isinstance(value, str | int | float):
                visit(value)

    visit(tuple(statements))
    return out


def check_before_after(model: Model, ion_names: frozenset[str]) -> None:
    """Record a problem, with its line, for each ``BEFORE``/``AFTER`` block jaxlean cannot
    run in NEURON's order (see the module docstring)."""
    for kind, block in model.before_after.items():
        if kind not in SUPPORTED:
            model.refuse(block.line, f"{kind} blocks are not supported (supported: "
                         f"{', '.join(SUPPORTED)})")
            continue
        shadow = frozenset(block.locals)
        used = (read_names(model, block.body) - shadow) | assigned_names(model, block.body,
                                                                           shadow)
        ions = sorted(used & ion_names)
        if ions:
            model.refuse(block.line, f"{kind} reads or writes the ion variables {ions}, which "
                         f"other mechanisms may change between NEURON's blocks; not supported")
    step, breakpoint = model.before_after.get("BEFORE STEP"), model.breakpoint
    if step is None or breakpoint is None:
        return
    body = tuple(st for st in breakpoint.body if not isinstance(st, s.Solve))
    mine = assigned_names(model, step.body, frozenset(step.locals))
    theirs = assigned_names(model, body, frozenset(breakpoint.locals))
    shared = sorted((mine & (read_names(model, body) | theirs))
                    | (theirs & read_names(model, step.body)))
    if shared:
        model.refuse(step.line, f"BEFORE STEP shares {shared} with BREAKPOINT: NEURON's "
                     f"finitialize runs it after the currents at t = 0, which jaxlean "
                     f"cannot order; not supported")
