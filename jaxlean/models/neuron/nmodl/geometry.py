"""``diam`` and ``area`` in a ``.mod`` file: refused where a block reads them.

NEURON gives a mechanism that declares ``diam`` (um) or ``area`` (um2) in PARAMETER or
ASSIGNED its segment's diameter and area. jaxlean's mechanisms do not receive the
geometry, so such a name would be a plain value (0, or the declared default) and the
result would differ from NEURON's without a sign: a file whose blocks read either is
refused, naming the line of its declaration. Declared and never read, they change
nothing and load.
"""

from __future__ import annotations

from jaxlean.models.neuron.nmodl.before_after import read_names
from jaxlean.models.neuron.nmodl.model import Model

__all__ = ["GEOMETRY", "refuse_geometry"]

GEOMETRY = ("diam", "area")
"""The segment's values NEURON gives a mechanism that declares them."""


def refuse_geometry(model: Model) -> Model:
    """``model``, with a problem recorded for each of :data:`GEOMETRY` that it declares and
    some block reads."""
    declared = {name: model.parameters.get(name) or model.assigned.get(name)
                for name in GEOMETRY}
    declared = {name: variable for name, variable in declared.items() if variable is not None}
    if not declared:
        return model
    blocks = [b for b in (model.initial, model.breakpoint, model.net_receive,
                          *model.before_after.values(), *model.blocks.values()) if b is not None]
    read = set()
    for block in blocks:
        read |= read_names(model, block.body) - {*block.locals, *block.args}
    for name, variable in declared.items():
        if name in read:
            model.refuse(variable.line, f"{name} is read: NEURON gives the mechanism its "
                         f"segment's {name}, jaxlean does not; not supported")
    return model
