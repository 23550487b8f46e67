"""A BluePyOpt cell model from BluePyOpt's own files, in one call.

BluePyOpt describes a cell with a morphology, ``mechanisms.json``, ``parameters.json`` (see
:mod:`~jaxlean.models.neuron.formats.bluepyopt_parameters`), the ``.mod`` files, and a
parameter set (the fitted values of the free parameters). :func:`load` builds what
BluePyOpt's ``CellModel`` instantiates in NEURON::

    model = bluepyopt.load("C060114A7.asc", "mechanisms.json", "parameters.json", "mechanisms/")
    params = model.params("release_params.json")      # or a dict; JAX values: differentiable
    simulate(model.cell, params, ...)

as BluePyOpt does it: the morphology read as Import3d reads it, ``nseg = 1 + 2 int(L /
40)`` in every section (``nseg_frequency``), the axon replaced by the ``replace_axon`` of
the BluePyOpt release named (:func:`~jaxlean.models.neuron.morphology.axon_stub.replace_axon`;
``bluepyopt="hoc"`` for the procedure of ``create_hoc``'s templates) or by any function of
the tree (``replace_axon=axon_stub.replace_axon_tapered``, a published template's);
mechanisms inserted in NEURON's order (``pas``, then ``nrnivmodl``'s); parameters applied
in the file's order, a later entry overriding an earlier one where both apply; what the
files leave unset has NEURON's value (``Ra = 35.4``, ``celsius = 6.3``, ...:
:data:`~jaxlean.models.neuron.morphology.discretize.NEURON_DEFAULTS`, jaxlean's defaults too).
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Callable, Mapping
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.cell import params as cell_params
from jaxlean.models.neuron.cell.cell import Cell
from jaxlean.models.neuron.cell.point_distance import distance_from
from jaxlean.models.neuron.formats.bluepyopt_parameters import (
    SECTION_LISTS,
    Entry,
    _load_json,
    read_mechanisms,
    read_parameters,
)
from jaxlean.models.neuron.mechanisms.channels import pas
from jaxlean.models.neuron.morphology import axon_stub, discretize, morphology_io
from jaxlean.models.neuron.nmodl.load import load_mod_dir

__all__ = ["BluePyOptModel", "load"]

_GLOBALS = ("v_init", "celsius")
_BUILT_IN = {"pas": pas}


@dataclasses.dataclass(frozen=True, eq=False)
class BluePyOptModel:
    """A loaded BluePyOpt cell model: its :class:`~jaxlean.models.neuron.cell.cell.Cell`
    (mechanisms inserted), the morphology it was built from, and the parameter entries.

    Attributes:
      free: BluePyOpt's names of the free parameters (``"gNaTs2_tbar_NaTs2_t.apical"``):
        the keys a parameter set must give.
      frozen: ``{name: value}`` of the parameters ``parameters.json`` fixes.
    """

    cell: Cell
    tree: morphology_io.SectionTree
    entries: tuple[Entry, ...]
    keys: tuple[str, ...]
    where: tuple[np.ndarray, ...]
    distances: Mapping[tuple[str, float], np.ndarray]

    @property
    def free(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.entries if e.value is None)

    @property
    def frozen(self) -> dict[str, float]:
        return {e.name: e.value for e in self.entries if e.value is not None}

    def params(self, values: Mapping[str, object] | str | Path | None = None) -> dict:
        """``simulate``'s parameters with the free parameters set from ``values`` (a dict
        ``{"name.sectionlist": value}``, JAX scalars allowed, or a JSON file of one).

        Raises:
          ConfigError: a free parameter missing, an unknown or frozen one given, or a
            concrete value outside its bounds (BluePyOpt refuses it), each named.
        """
        given, origin = _load_json(values if values is not None else {}, "parameter set")
        if not isinstance(given, Mapping):
            raise ConfigError(f"{origin}: a parameter set is a dict {{name: value}}")
        free = set(self.free)
        unknown = sorted(set(given) - free - set(self.frozen))
        frozen = sorted(set(given) & set(self.frozen))
        missing = sorted(free - set(given))
        for names, why in ((unknown, f"unknown; the free ones are {sorted(free)}"),
                           (frozen, "frozen by parameters.json ('value'); BluePyOpt refuses "
                                    "to set them"),
                           (missing, "free ('bounds') and not given")):
            if names:
                raise ConfigError(f"{origin}: parameter(s) {names}: {why}")
        out = discretize.neuron_defaults(self.cell.params())   # what the files leave unset
        n = self.cell.n
        for entry, key, where in zip(self.entries, self.keys, self.where, strict=True):
            value = entry.value if entry.value is not None else given[entry.name]
            _in_bounds(entry, value, origin)
            if entry.kind == "global":
                out[key] = jnp.asarray(value, dtype=float)
                continue
            if where.size == 0:          # BluePyOpt sets nothing on an empty section list
                continue
            current = jnp.broadcast_to(jnp.asarray(out[key], dtype=float), (n,))
            inside = np.zeros(n, bool)
            inside[where] = True
            # a select over every compartment, not a scatter at ``where``: the gradient's
            # program then has no scatter (nor its JVP's index scatters) per entry
            out[key] = jnp.where(inside, self._scaled(entry, value, where, inside), current)
        return out

    def _scaled(self, entry: Entry, value: object, where: np.ndarray,
                inside: np.ndarray) -> jax.Array:
        """The entry's value at ``where``: a scalar, or one per compartment (``inside``:
        ``where`` as a mask; elsewhere the value at ``where[0]``, to be masked out)."""
        scaler = entry.scaler
        if scaler.kind == "linear":
            return scaler.multiplier * jnp.asarray(value, dtype=float) + scaler.offset
        # outside ``where`` the distance of a compartment inside it: finite wherever the
        # function is, so the masked-out values never put NaN in a gradient
        distances = self.distances[scaler.origin]
        distance = jnp.asarray(np.where(inside, distances, distances[where[0]]))
        return jnp.asarray(scaler.function({"distance": distance, "value": value,
                                            **scaler.constants}), dtype=float)


def _in_bounds(entry: Entry, value: object, origin: str) -> None:
    if entry.bounds is None or isinstance(value, jax.core.Tracer):
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real | np.ndarray | jax.Array):
        raise ConfigError(f"{origin}: {entry.name} must be a number; got {value!r}")
    low, high = entry.bounds
    if not low <= float(value) <= high:
        raise ConfigError(f"{origin}: {entry.name} = {float(value)} is outside its bounds "
                          f"[{low}, {high}] (parameters.json entry {entry.index})")


def _types(sectionlist: str) -> int | None:
    return SECTION_LISTS[sectionlist]


def _compartments(cell: Cell, sectionlist: str) -> np.ndarray:
    kind = _types(sectionlist)
    return np.arange(cell.n) if kind is None else np.flatnonzero(cell.kind == kind)


def _insert(cell: Cell, table: Mapping[str, tuple[str, ...]], mods: str | Path | None) -> Cell:
    """The mechanisms of ``mechanisms.json`` on their section lists, in NEURON's order."""
    wanted = {name for names in table.values() for name in names}
    loaded = load_mod_dir(mods) if mods is not None else {}
    clash = sorted(set(loaded) & set(_BUILT_IN))
    if clash:
        raise ConfigError(f"the folder {str(mods)!r} defines {clash}, which NEURON has built "
                          "in; jaxlean would not know which one BluePyOpt's cell uses")
    available = {**_BUILT_IN, **loaded}
    missing = sorted(wanted - set(available))
    if missing:
        where = f"the folder {str(mods)!r}" if mods is not None else "no mods folder (mods=None)"
        raise ConfigError(f"mechanisms.json names {missing}, and {where} has no .mod file for "
                          f"them (built in: {sorted(_BUILT_IN)})")
    for name, mechanism in available.items():        # built-ins first, then nrnivmodl's order
        lists = [s for s, names in table.items() if name in names]
        if not lists:
            continue
        if "all" in lists:
            cell = cell.insert(mechanism)
            continue
        types = sorted({_types(s) for s in lists} & set(cell.kind.tolist()))
        if types:                                    # an empty section list inserts nothing
            cell = cell.insert(mechanism, types=types)
    return cell


def _key(entry: Entry, known: Mapping[str, object], origin: str) -> str:
    name = entry.param_name
    key = name                                       # jaxlean's names are NEURON's
    if entry.kind == "global" and name not in _GLOBALS:
        raise ConfigError(f"{origin}: entry {entry.index}: global parameter {name!r} is not one "
                          f"jaxlean simulates (it has {list(_GLOBALS)})")
    if key not in known:
        raise ConfigError(f"{origin}: entry {entry.index}: parameter {name!r} belongs to no "
                          f"mechanism inserted in this cell and is not one of the cell's "
                          f"({sorted(cell_params.CELL)})")
    return key


def _check_located(cell: Cell, entry: Entry, key: str, where: np.ndarray, origin: str) -> None:
    """NEURON refuses a mechanism's variable where the mechanism (or the ion) is absent."""
    if key in cell_params.CELL or where.size == 0:
        return
    present = np.zeros(cell.n, dtype=bool)
    for insertion in cell.mechanisms:
        mechanism = insertion.mechanism
        owns = key in mechanism.parameters or any(
            key == f"e{ion.ion}" for ion in mechanism.ions)
        if owns:
            present[np.arange(cell.n) if insertion.compartments is None
                    else insertion.compartments] = True
    if not present[where].all():
        raise ConfigError(f"{origin}: entry {entry.index}: {entry.name} is set on section list "
                          f"{entry.sectionlist!r}, where no inserted mechanism has "
                          f"{entry.param_name!r} (NEURON would refuse it)")


def load(morphology: str | Path | morphology_io.SectionTree, mechanisms: object,
         parameters: object, mods: str | Path | None, *,
         replace_axon: bool | Callable[[morphology_io.SectionTree], morphology_io.SectionTree]
         = True, bluepyopt: str = axon_stub.CURRENT, nseg_frequency: float = 40.0,
         stub_length: float = 60.0, stub_segment_length: float = 40.0) -> BluePyOptModel:
    """BluePyOpt's ``CellModel`` of these files, built as BluePyOpt instantiates it.

    Args:
      morphology: ``.asc``, ``.swc``, ``.h5`` or a tree.
      mechanisms: ``mechanisms.json`` (path or dict); ``parameters``: ``parameters.json``
        (path or list); ``mods``: the folder of the ``.mod`` files (``None``: only ``pas``).
      replace_axon: ``True``: BluePyOpt's stub of release ``bluepyopt`` (``stub_length``,
        ``stub_segment_length``: ``axon_stub_length``, ``axon_nseg_frequency``); ``False``:
        keep the axon (``do_replace_axon=False``); a function of the tree: that stub.
      nseg_frequency: BluePyOpt's ``nseg = 1 + 2 int(L / nseg_frequency)``.

    Raises:
      ConfigError: an unknown key, type, scaler, section list, mechanism or parameter in
        the files, a mechanism without a ``.mod`` file, a parameter on a section list
        where its mechanism is not inserted; each named with its file and entry.
    """
    table = read_mechanisms(mechanisms)
    entries = read_parameters(parameters)
    origin = str(parameters) if isinstance(parameters, str | Path) else "<parameters>"
    tree = morphology if isinstance(morphology, morphology_io.SectionTree) else (
        morphology_io.load_morphology(morphology))
    if replace_axon is True:
        tree = axon_stub.replace_axon(tree, nseg_frequency, bluepyopt=bluepyopt,
                                      stub_length=stub_length,
                                      stub_segment_length=stub_segment_length)
    elif callable(replace_axon):
        tree = replace_axon(tree)
    elif replace_axon is not False:
        raise ConfigError(f"load: replace_axon must be True, False or a function of the "
                          f"tree; got {replace_axon!r}")
    cell = Cell.from_morphology(tree, nseg=discretize.PerLength(nseg_frequency))
    cell = _insert(cell, table, mods)
    known = cell.params()
    keys, wheres, distances = [], [], {}
    for entry in entries:
        key = _key(entry, known, origin)
        where = (np.zeros(0, dtype=np.int64) if entry.kind == "global"
                 else _compartments(cell, entry.sectionlist))
        _check_located(cell, entry, key, where, origin)
        if entry.scaler.kind == "distance" and entry.scaler.origin not in distances:
            section, x = entry.scaler.origin
            if section not in tree.names:
                raise ConfigError(f"{origin}: entry {entry.index}: the reference section "
                                  f"{section!r} is not in the morphology")
            distances[entry.scaler.origin] = distance_from(cell, tree, section, x)
        keys.append(key)
        wheres.append(where)
    return BluePyOptModel(cell, tree, entries, tuple(keys), tuple(wheres), distances)
