"""The parameters of a cable simulation: their names, defaults, units and allowed shapes.

Every parameter is a scalar (the whole cell), one value per branch, or one value
per compartment, and is differentiable. A dictionary is checked by name before
simulating: an unknown key (a typo such as ``gnabar``) or a missing one is an
error, never silently ignored. Hodgkin-Huxley channels are simulated when the
HH parameters are present (all four of them); a passive cell has none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.errors import ConfigError

if TYPE_CHECKING:
    from jaxlean.models.neuron.cell import Cell

Params = dict[str, jax.Array]

GEOMETRY = {"length": "um", "radius": "um"}
PASSIVE = {"capacitance": (1.0, "uF/cm2"), "axial_resistivity": (100.0, "ohm cm"),
           "g_leak": (3e-4, "S/cm2"), "e_leak": (-54.3, "mV"), "v_init": (-65.0, "mV"),
           "celsius": (6.3, "degC")}
HH = {"g_na": (0.12, "S/cm2"), "g_k": (0.036, "S/cm2"), "e_na": (50.0, "mV"),
      "e_k": (-77.0, "mV")}
SCALAR_ONLY = ("celsius",)


def defaults(cell: Cell, channels: str = "hh") -> Params:
    """Default parameters of ``cell``: ``"hh"`` (Hodgkin-Huxley + leak) or ``"passive"``.

    Scalars are strongly typed (the default float dtype), so a jitted loss of
    these parameters is not compiled again once an update changes them.
    """
    if channels not in ("hh", "passive"):
        raise ConfigError(f"channels must be 'hh' or 'passive'; got {channels!r}")
    values = {**PASSIVE, **(HH if channels == "hh" else {})}
    return {"length": jnp.asarray(cell.length), "radius": jnp.asarray(cell.radius),
            **{name: jnp.asarray(value, dtype=float) for name, (value, _) in values.items()}}


def has_channels(params: Params) -> bool:
    """Whether ``params`` asks for HH channels (after :func:`check`)."""
    return "g_na" in params


def check(cell: Cell, params: Params) -> Params:
    """Check names and shapes; return every parameter as one value per compartment.

    Raises:
      ConfigError: an unknown or missing parameter, or a shape that is neither a
        scalar, per branch ``(n_branches,)`` nor per compartment ``(n,)``.
    """
    if not isinstance(params, dict):
        raise ConfigError(f"params must be a dict of named parameters; got {type(params)}")
    known = {*GEOMETRY, *PASSIVE, *HH}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ConfigError(f"unknown parameter(s) {unknown}; known: {sorted(known)}")
    hh = [name for name in HH if name in params]
    needed = [*GEOMETRY, *PASSIVE, *(HH if hh else ())]
    missing = [name for name in needed if name not in params]
    if missing:
        why = (f" (HH channels are simulated because {hh} were given)"
               if hh and set(missing) & set(HH) else "")
        raise ConfigError(f"missing parameter(s) {missing}{why}; start from cell.params()")
    return {name: _per_compartment(cell, name, value) for name, value in params.items()}


def _per_compartment(cell: Cell, name: str, value: object) -> jax.Array:
    value = jnp.asarray(value)
    if not jnp.issubdtype(value.dtype, jnp.floating):
        value = value.astype(jnp.result_type(float))
    if value.ndim == 0:
        return jnp.broadcast_to(value, (cell.n,))
    if name not in SCALAR_ONLY:
        if value.shape == (cell.n,):
            return value
        if value.shape == (cell.n_branches,):
            return value[np.asarray(cell.branch)]
    expected = ("a scalar" if name in SCALAR_ONLY else
                f"a scalar, one value per branch ({cell.n_branches},) or per compartment "
                f"({cell.n},)")
    raise ConfigError(f"parameter {name!r} must be {expected}; got shape {value.shape}")
