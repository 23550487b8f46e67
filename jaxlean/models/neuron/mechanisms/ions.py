"""Ions as NEURON handles them: species, ``USEION`` declarations, Nernst and GHK.

A mechanism that uses an ion declares it as NEURON's ``USEION`` does
(:class:`UseIon`): which of the ion's variables it reads and which it writes,
by NEURON's names: ``eca`` (reversal, mV), ``cai``/``cao`` (concentration inside
and outside, mM) and ``ica`` (current, mA/cm2). The simulator keeps, per
compartment, what NEURON's ``ca_ion`` keeps, by NEURON's rules (``ion_style``):

* ``ica`` is the sum of the currents of every mechanism that writes it; a
  mechanism that reads it (a calcium shell) sees that sum, computed at the start
  of the step.
* The concentrations are states of the ion where a mechanism writes them (a shell
  writing ``cai``): they start at ``cai0``/``cao0`` (NEURON's ``cai0_ca_ion``) and
  change only by that mechanism. Where they are only read they stay at
  ``cai0``/``cao0``.
* The reversal ``eca`` is computed from the concentrations (:func:`nernst`, at the
  start of every step) in every compartment where some mechanism reads or writes a
  concentration of the ion; elsewhere it is the parameter ``eca`` (NEURON's default
  for calcium is 132.4579341637009 mV, for an ion without concentrations in use).
  NEURON computes it at ``finitialize`` only where concentrations are only read;
  they do not change there, so it is the same value.

Parameters of the ions used by a cell join its parameter dict: ``e<ion>`` where a
mechanism reads the reversal, ``<ion>i0`` and ``<ion>o0`` where the
concentrations are used. Writing a reversal (``WRITE eca``) is not supported.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxlean._args import as_names
from jaxlean.errors import ConfigError

__all__ = ["FARADAY", "GAS_CONSTANT", "SPECIES", "Species", "UseIon", "ghk", "nernst",
           "variables"]

FARADAY = 96485.33212331001
"""Faraday's constant (C/mol) as NEURON 9 defines it (CODATA 2018): ``FARADAY`` in ``.mod``."""
GAS_CONSTANT = 8.3144626181532395
"""The molar gas constant (J/(mol K)) as NEURON 9 defines it (CODATA 2018): ``R`` in ``.mod``."""


@dataclasses.dataclass(frozen=True)
class Species:
    """An ion's valence and NEURON's defaults: concentrations (mM) and reversal (mV)."""

    charge: float
    inside: float
    outside: float
    reversal: float


SPECIES = {"na": Species(1.0, 10.0, 140.0, 50.0),
           "k": Species(1.0, 54.4, 2.5, -77.0),
           "ca": Species(2.0, 5e-5, 2.0, 132.4579341637009)}
"""NEURON's ions and their defaults (``DEF_nai`` ... in ``eion.cpp``); any other ion needs a
``valence`` and starts at 1 mM inside and out, reversal 0 mV, as in NEURON."""


def variables(ion: str) -> dict[str, str]:
    """NEURON's names of an ion's variables: ``{"e": "eca", "i": "cai", "o": "cao",
    "current": "ica"}`` for ``"ca"``."""
    return {"e": f"e{ion}", "i": f"{ion}i", "o": f"{ion}o", "current": f"i{ion}"}


@dataclasses.dataclass(frozen=True)
class UseIon:
    """``USEION ion READ ... WRITE ... VALENCE z`` of a ``.mod`` file.

    Attributes:
      ion: the ion's name (``"ca"``).
      read: variables read, among ``e<ion>``, ``<ion>i``, ``<ion>o``, ``i<ion>``.
      write: variables written: ``i<ion>`` (a current of the mechanism carried by the ion)
        or a concentration ``<ion>i``/``<ion>o`` (a state of the mechanism).
      valence: the charge; needed for ions other than ``na``, ``k`` and ``ca``.
    """

    ion: str
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    valence: float | None = None

    def __post_init__(self):
        where = f"UseIon({self.ion!r})"
        if not isinstance(self.ion, str) or not self.ion.isidentifier():
            raise ConfigError(f"{where}: the ion's name must be an identifier; got {self.ion!r}")
        object.__setattr__(self, "read", as_names(self.read, f"{where}: read"))
        object.__setattr__(self, "write", as_names(self.write, f"{where}: write"))
        names = variables(self.ion)
        allowed = [names["e"], names["i"], names["o"], names["current"]]
        for kind, given in (("read", self.read), ("write", self.write)):
            unknown = [name for name in given if name not in allowed]
            if unknown:
                raise ConfigError(f"{where}: {kind} {unknown} are not variables of the ion; "
                                  f"its variables are {allowed}")
        if names["e"] in self.write:
            raise ConfigError(f"{where}: writing the reversal {names['e']!r} is not supported; "
                              f"write a concentration and the reversal follows (Nernst)")
        species = SPECIES.get(self.ion)
        if species is None and self.valence is None:
            raise ConfigError(f"{where}: give its valence (known ions: {sorted(SPECIES)}); "
                              f"NEURON needs it too: nrniv refuses such a file with "
                              f"'{self.ion}_ion USEION CHARGE (or VALENCE) must be defined in "
                              f"at least one model using this ion'")
        if species is not None and self.valence is not None and self.valence != species.charge:
            raise ConfigError(f"{where}: valence {self.valence} differs from the ion's charge "
                              f"{species.charge}")

    @property
    def species(self) -> Species:
        """Charge and defaults of the ion (NEURON's for ions it does not know)."""
        return SPECIES.get(self.ion) or Species(float(self.valence), 1.0, 1.0, 0.0)

    @property
    def variables(self) -> tuple[str, ...]:
        """Every variable read or written, in declaration order."""
        return tuple(dict.fromkeys((*self.read, *self.write)))


def nernst(inside: jax.Array, outside: jax.Array, charge: float,
           celsius: jax.Array) -> jax.Array:
    """The reversal potential (mV) of concentrations ``inside`` and ``outside`` (mM), as
    NEURON's ``nernst``: ``1000 R (celsius + 273.15) / F / charge * log(outside / inside)``."""
    ktf = 1000.0 * GAS_CONSTANT * (celsius + 273.15) / FARADAY
    return ktf / charge * jnp.log(outside / inside)


def _efun(x: jax.Array) -> jax.Array:
    """``x / (exp(x) - 1)``, ``1 - x / 2`` for ``|x| < 1e-4`` as NEURON's ``efun``."""
    small = jnp.abs(x) < 1e-4
    safe = jnp.where(small, 1.0, x)
    return jnp.where(small, 1.0 - x / 2.0, safe / (jnp.exp(safe) - 1.0))


def ghk(v: jax.Array, inside: jax.Array, outside: jax.Array, charge: float,
        celsius: jax.Array) -> jax.Array:
    """NEURON's ``ghk(v, ci, co, z)`` (``eion.cpp``): the Goldman-Hodgkin-Katz flux factor,
    ``0.001 z F (ci efun(-u) - co efun(u))`` with ``u = z v / ktf``, in mA/cm2 per cm/s of
    permeability. A current is ``permeability * ghk(...)``; temperature is an argument,
    as NEURON reads its global ``celsius``."""
    ktf = 1000.0 * GAS_CONSTANT * (celsius + 273.15) / FARADAY
    u = charge * v / ktf
    return 0.001 * charge * FARADAY * (inside * _efun(-u) - outside * _efun(u))
