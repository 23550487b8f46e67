"""Units: NMODL's named constants (``FARADAY``, ``R``).

A declared unit never rescales a value: ``gbar = 10 (mS/cm2)`` is 10, as in NEURON
(``nocmodl`` checks units but generates code with the numbers as written); a factor
acts only where the file writes one in an expression (``(1e-4)``, ``FARADAY``).

NEURON 9's values (``nrnunits.lib``, CODATA 2018): ``(faraday)`` is
96485.3321233100184 C/mol and ``(k-mole)`` 8.31446261815324 J/(K mol).
"""

from __future__ import annotations

import math
import re

from jaxlean.errors import ConfigError

__all__ = ["unit_constant"]

_CONSTANTS = {"faraday": 96485.3321233100184, "k-mole": 8.31446261815324,
              "pi": math.pi, "e": 1.602176634e-19}

_SCALES = {"": 1.0, "1": 1.0, "coulomb": 1.0, "coulombs": 1.0, "coul": 1.0, "kilocoulombs": 1e3,
           "kilocoulomb": 1e3, "joule/degC": 1.0, "joule/K": 1.0, "millijoule/degC": 1e-3}


_FACTOR = re.compile(r"(\d+\.?\d*(?:[eE][+-]?\d+)?)?(.*)")


def unit_constant(definition: str, unit: str, where: str, line: int) -> float:
    """The value of a ``UNITS`` constant such as ``FARADAY = (faraday) (coulomb)``; a unit
    may start with a number (``(10000 coulomb)``: the value in units of 10000 C, as
    NEURON's units table divides by it)."""
    if definition not in _CONSTANTS:
        raise ConfigError(f"{where}:{line}: the unit constant ({definition}) is not known; "
                          f"known: {sorted(_CONSTANTS)}")
    factor, name = _FACTOR.fullmatch(unit).groups()
    if name not in _SCALES:
        raise ConfigError(f"{where}:{line}: ({definition}) in ({unit}) is not supported; "
                          f"units: {sorted(_SCALES)}, each after an optional number")
    return _CONSTANTS[definition] / (float(factor or 1.0) * _SCALES[name])
