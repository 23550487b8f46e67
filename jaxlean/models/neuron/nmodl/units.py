"""Units: NMODL's named constants (``FARADAY``, ``R``) and the conversion of parameter
units to jaxlean's (S/cm2, mV, ms, uS, nA, um).

NEURON 9's values (``nrnunits.lib``, CODATA 2018): ``(faraday)`` is
96485.3321233100184 C/mol and ``(k-mole)`` 8.31446261815324 J/(K mol).
"""

from __future__ import annotations

import math

from jaxlean.errors import ConfigError

__all__ = ["CANONICAL", "canonical_unit", "unit_constant"]

_CONSTANTS = {"faraday": 96485.3321233100184, "k-mole": 8.31446261815324,
              "pi": math.pi, "e": 1.602176634e-19}

CANONICAL: dict[str, tuple[str, float]] = {
    # conductance density -> S/cm2
    "S/cm2": ("S/cm2", 1.0), "mho/cm2": ("S/cm2", 1.0), "siemens/cm2": ("S/cm2", 1.0),
    "mS/cm2": ("S/cm2", 1e-3), "mmho/cm2": ("S/cm2", 1e-3), "uS/cm2": ("S/cm2", 1e-6),
    "umho/cm2": ("S/cm2", 1e-6), "pS/um2": ("S/cm2", 1e-4),
    # point conductance -> uS
    "uS": ("uS", 1.0), "umho": ("uS", 1.0), "nS": ("uS", 1e-3), "pS": ("uS", 1e-6),
    "S": ("uS", 1e6), "mS": ("uS", 1e3),
    # voltage, time, current, length
    "mV": ("mV", 1.0), "millivolt": ("mV", 1.0), "V": ("mV", 1e3), "volt": ("mV", 1e3),
    "ms": ("ms", 1.0), "s": ("ms", 1e3), "nA": ("nA", 1.0), "pA": ("nA", 1e-3),
    "um": ("um", 1.0), "micron": ("um", 1.0),
}
"""``{mod unit: (jaxlean unit, factor)}``: a value ``x`` in the mod's unit is ``x * factor``
in jaxlean's."""


def canonical_unit(unit: str) -> tuple[str, float]:
    """jaxlean's unit for a parameter declared in ``unit`` and the factor to it; a unit
    not in :data:`CANONICAL` is kept as written (factor 1)."""
    compact = unit.replace(" ", "")
    return CANONICAL.get(compact, (compact, 1.0))


_SCALES = {"": 1.0, "1": 1.0, "coulomb": 1.0, "coulombs": 1.0, "coul": 1.0, "kilocoulombs": 1e3,
           "kilocoulomb": 1e3, "joule/degC": 1.0, "joule/K": 1.0, "millijoule/degC": 1e-3}


def unit_constant(definition: str, unit: str, where: str, line: int) -> float:
    """The value of a ``UNITS`` constant such as ``FARADAY = (faraday) (coulomb)``."""
    if definition not in _CONSTANTS:
        raise ConfigError(f"{where}:{line}: the unit constant ({definition}) is not known; "
                          f"known: {sorted(_CONSTANTS)}")
    if unit not in _SCALES:
        raise ConfigError(f"{where}:{line}: ({definition}) in ({unit}) is not supported; "
                          f"units: {sorted(_SCALES)}")
    return _CONSTANTS[definition] / _SCALES[unit]
