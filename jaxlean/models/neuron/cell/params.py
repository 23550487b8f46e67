"""The parameters of a cable simulation: their names, defaults, units, shapes and values.

The cell's own parameters are listed here (:data:`GEOMETRY`, :data:`CELL`);
every other one is declared by the mechanism that uses it
(:class:`~jaxlean.models.neuron.mechanisms.mechanisms.Mechanism`), its one home. A
parameter is a scalar, one value per branch or per compartment; a point
mechanism's (a synapse's) a scalar or one value per instance. All are
differentiable. A dictionary is checked before simulating: an unknown key (a
typo such as ``gnabar``) or a missing one is an error, never silently ignored,
and so are NaN or infinite values and non-positive geometry, named with the
compartment.

Presets (:data:`PRESETS`): a cell with no inserted mechanism runs ``"hh"``
(NEURON's ``hh``, its leak included, everywhere) when its parameters name any
``hh`` parameter, else ``"passive"`` (``pas``, NEURON's defaults).
"""

from __future__ import annotations

import math
from typing import Protocol

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.mechanisms.channels import hh, pas
from jaxlean.models.neuron.mechanisms.mechanisms import Insertion, parameter_table

__all__ = [
    "CELL",
    "GEOMETRY",
    "PRESETS",
    "RENAMED",
    "RENAMED_RECORDINGS",
    "Compartments",
    "Params",
    "check",
    "check_names",
    "defaults",
    "expand",
    "inferred_preset",
    "preset",
    "table",
]

Params = dict[str, jax.Array]

GEOMETRY = {"length": "um", "radius": "um"}
CELL = {"cm": (1.0, "uF/cm2"), "Ra": (35.4, "ohm cm"),
        "v_init": (-65.0, "mV"), "celsius": (6.3, "degC")}
SCALAR_ONLY = ("celsius",)
POSITIVE = ("length", "radius", "cm", "Ra")
PRESETS = {"hh": (hh,), "passive": (pas,)}
RENAMED = {"e_na": "ena", "e_k": "ek", "g_leak": "g_pas", "e_leak": "e_pas",
           "capacitance": "cm", "axial_resistivity": "Ra", "g_na": "gnabar_hh",
           "g_k": "gkbar_hh", "gl": "gl_hh", "el": "el_hh"}
"""jaxlean's former names of values NEURON names otherwise: given, an error names NEURON's."""
RENAMED_RECORDINGS = {"i_l": "il_hh", "i_leak": "i_pas"}
"""The same for currents a run records (``states=``)."""


class Compartments(Protocol):
    """What parameters need to know of a cell (a :class:`~jaxlean.models.neuron.cell.cell.Cell`)."""

    n: int
    n_branches: int
    branch: np.ndarray
    length: np.ndarray
    radius: np.ndarray


_PRESET_INSERTIONS = {name: tuple(Insertion(mechanism, None) for mechanism in mechanisms)
                      for name, mechanisms in PRESETS.items()}


def preset(name: str) -> tuple[Insertion, ...]:
    """The insertions (everywhere) of the preset ``"hh"`` or ``"passive"`` (the same objects
    each time, so programs keyed on them are reused)."""
    if name not in PRESETS:
        raise ConfigError(f"channels must be one of {sorted(PRESETS)}; got {name!r}")
    return _PRESET_INSERTIONS[name]


def inferred_preset(params: Params) -> tuple[Insertion, ...]:
    """``"hh"`` when ``params`` names any ``hh`` parameter, else ``"passive"``."""
    return preset("hh" if set(params) & set(hh.parameters) else "passive")


def table(insertions: tuple[Insertion, ...]) -> dict:
    """``{name: (default, unit, mechanism)}`` of the mechanism parameters (checked for clashes)."""
    return parameter_table(insertions, {**{k: "geometry" for k in GEOMETRY},
                                        **{k: "cell parameter" for k in CELL}})


def defaults(cell: Compartments, insertions: tuple[Insertion, ...]) -> Params:
    """Default parameters of ``cell`` with ``insertions``.

    Scalars are strongly typed (the default float dtype), so a jitted loss of
    these parameters is not compiled again once an update changes them.
    """
    values = {name: value for name, (value, _) in CELL.items()}
    values.update({name: value for name, (value, _, _) in table(insertions).items()
                   if not math.isnan(value)})  # NaN: no default (an NMODL POINTER)
    return {"length": jnp.asarray(cell.length), "radius": jnp.asarray(cell.radius),
            **{name: jnp.asarray(value, dtype=float) for name, value in values.items()}}


def check_names(params: Params, insertions: tuple[Insertion, ...]) -> None:
    """Raise ConfigError for an unknown or a missing parameter."""
    if not isinstance(params, dict):
        raise ConfigError(f"params must be a dict of named parameters; got {type(params)}")
    declared = table(insertions)
    known = {*GEOMETRY, *CELL, *declared}
    unknown = sorted(set(params) - known)
    for old in unknown:
        if old in RENAMED and RENAMED[old] not in params:
            raise ConfigError(f"parameter {old!r} is now called {RENAMED[old]!r}, NEURON's name"
                              f"{_renamed_why(RENAMED[old])}; start from cell.params()")
    if unknown:
        raise ConfigError(f"unknown parameter(s) {unknown}; known: {sorted(known)}")
    missing = [name for name in known if name not in params]
    if missing:
        owners = sorted({declared[name][2].name for name in missing if name in declared})
        why = f" (of {', '.join(owners)}, inserted in this cell)" if owners else ""
        if owners and insertions is _PRESET_INSERTIONS["hh"]:
            why = (f" (of {', '.join(owners)}: this cell has no inserted mechanism, and the "
                   f"preset 'hh' is simulated because "
                   f"{[k for k in hh.parameters if k in params]} were given)")
        unset = sorted(name for name in missing if name in declared
                       and math.isnan(declared[name][0]))
        if unset:
            why += (f"; {unset} have no default: an NMODL POINTER, give the value it points "
                    f"to (NEURON refuses a run whose POINTER was never set)")
        raise ConfigError(f"missing parameter(s) {sorted(missing)}{why}; start from "
                          f"cell.params()")


def _renamed_why(new: str) -> str:
    if new in ("ena", "ek"):
        return (f" (the ion's reversal, one per compartment, read by hh and by every "
                f"mechanism that reads {new})")
    return ""


def check(cell: Compartments, params: Params, insertions: tuple[Insertion, ...]) -> None:
    """Check names, shapes and (when not traced) values, outside any jit.

    Raises:
      ConfigError: an unknown or missing parameter, a shape that is not allowed,
        or a value that is NaN, infinite or (geometry, capacitance, resistivity)
        not positive, named with its compartment, branch or instance.
    """
    check_names(params, insertions)
    declared = table(insertions)
    for name, value in params.items():
        owner = declared[name][2] if name in declared else None
        if owner is not None and owner.point:
            size = next(i.size(cell.n) for i in insertions if i.mechanism is owner)
            shapes = {(): "", (size,): "instance"}
            expected = f"a scalar or one value per instance ({size},)"
            where = f"parameter {name!r} of point mechanism {owner.name!r}"
        elif name in SCALAR_ONLY:
            shapes, expected, where = {(): ""}, "a scalar", f"parameter {name!r}"
        else:
            shapes = {(): "", (cell.n_branches,): "branch", (cell.n,): "compartment"}
            expected = (f"a scalar, one value per branch ({cell.n_branches},) or per "
                        f"compartment ({cell.n},)")
            where = f"parameter {name!r}"
        shape = tuple(np.shape(value))
        if shape not in shapes:
            raise ConfigError(f"{where} must be {expected}; got shape {shape}")
        _check_values(where, name, value, shapes[shape])


def expand(cell: Compartments, params: Params, insertions: tuple[Insertion, ...]) -> Params:
    """Every parameter as one value per compartment, a point mechanism's per instance."""
    declared = table(insertions)
    out = {}
    for name, value in params.items():
        value = jnp.asarray(value)
        if not jnp.issubdtype(value.dtype, jnp.floating):
            value = value.astype(jnp.result_type(float))
        owner = declared[name][2] if name in declared else None
        size = (next(i.size(cell.n) for i in insertions if i.mechanism is owner)
                if owner is not None and owner.point else cell.n)
        if value.ndim == 0:
            value = jnp.broadcast_to(value, (size,))
        elif value.shape != (size,):
            value = value[np.asarray(cell.branch)]
        out[name] = value
    return out


def _check_values(where: str, name: str, raw: object, unit: str) -> None:
    """NaN, infinity or a non-positive geometry value in ``raw``, unless it is traced."""
    if isinstance(raw, jax.core.Tracer):
        return
    values = np.asarray(raw)
    bad = ~np.isfinite(values)
    what = "finite"
    if name in POSITIVE:
        bad |= ~(values > 0)
        what = "finite and positive"
    if bad.any():
        index = int(np.flatnonzero(bad)[0]) if values.ndim else 0
        place = f" at {unit} {index}" if unit else ""
        raise ConfigError(f"{where} must be {what}; got {values.reshape(-1)[index]}{place}")
