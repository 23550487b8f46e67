"""VERBATIM reads of an ion's value (``carest = _ion_cai;``) as NMODL reads of the ion's
variable.

In NEURON's generated C, ``_ion_cai`` is the ion's value; the mechanism's own copy ``cai``
is set from it when each of its blocks starts. Where the file only READs ``cai`` the two
are equal throughout every block, so ``carest = _ion_cai;`` is ``carest = cai``. Where the
file writes ``cai`` they differ after its first assignment: that VERBATIM line stays
refused, with its line.
"""

from __future__ import annotations

import dataclasses

from jaxlean.models.neuron.nmodl import syntax as s
from jaxlean.models.neuron.nmodl.model import Model

__all__ = ["resolve_ion_reads"]

_PREFIX = "_ion_"


def resolve_ion_reads(model: Model) -> Model:
    """``model`` with each ``_ion_<var>`` name (from a VERBATIM line) read as ``<var>``;
    a variable the file does not only read is recorded as a problem with its line."""
    read = {name for ion in model.ions for name in ion.read}
    written = {name for ion in model.ions for name in ion.write}

    def name(node):
        if not (isinstance(node, s.Name) and node.id.startswith(_PREFIX)):
            return node
        variable = node.id[len(_PREFIX):]
        if variable in read and variable not in written:
            return s.Name(variable, node.line)
        model.refuse(node.line, f"VERBATIM C code is not supported ({node.id} of a variable "
                     f"the file does not only READ: it equals {variable} only where "
                     f"{variable} is not written)")
        return node

    model.blocks = {key: _map(block, name) for key, block in model.blocks.items()}
    for key in ("breakpoint", "initial", "net_receive"):
        setattr(model, key, _map(getattr(model, key), name))
    return model


def _map(node, change):
    """``node`` with ``change`` applied to every syntax node below it, bottom up."""
    if isinstance(node, tuple):
        items = tuple(_map(item, change) for item in node)
        return node if all(a is b for a, b in zip(items, node, strict=True)) else items
    if not dataclasses.is_dataclass(node):
        return node
    fields = {field.name: _map(getattr(node, field.name), change)
              for field in dataclasses.fields(node) if field.init}
    if any(value is not getattr(node, key) for key, value in fields.items()):
        node = dataclasses.replace(node, **fields)
    return change(node)
