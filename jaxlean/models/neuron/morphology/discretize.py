"""How many segments each section gets (NEURON's ``nseg``), and NEURON's default parameters.

A rule maps a section to its ``nseg``, as a NEURON user sets it with ``forall``:

* :class:`Fixed` ``(n)``: every section ``n`` segments;
* :class:`MaxLength` ``(um)``: ``ceil(L / um)`` segments, none longer than ``um``;
* :class:`PerLength` ``(um=40)``: ``1 + 2 int(L / um)`` segments, Hay et al.'s (2011) and
  BluePyOpt's rule (``nseg_frequency``);
* :class:`DLambda` ``(Ra, d_lambda=0.1, freq=100, cm=1)``: NEURON's
  standard recipe (``stdlib.hoc``'s ``lambda_f`` and the CellBuilder's d_lambda
  rule), an odd number of segments each at most ``d_lambda`` of the AC length
  constant at ``freq`` Hz: ``nseg = int((L / (d_lambda lambda_f) + 0.9) / 2) * 2 + 1``,
  with ``lambda_f`` integrated over the 3-D points.

jaxlean's cable defaults are NEURON's (:data:`NEURON_DEFAULTS`); NEURON's ``nseg`` is 1
for every section (``Fixed(1)``), while ``Cell.from_swc`` asks for a rule.
"""

from __future__ import annotations

import dataclasses
import math
import numbers

import jax.numpy as jnp
import numpy as np

from jaxlean._args import as_int
from jaxlean.errors import ConfigError, MorphologyError
from jaxlean.models.neuron.morphology import _geometry

__all__ = ["NEURON_DEFAULTS", "DLambda", "Fixed", "MaxLength", "PerLength", "compartments",
           "neuron_defaults", "section_nseg"]

#: NEURON's values of the cable parameters a NEURON user gets without asking (NEURON
#: 9.0.2: ``h.Section()``, ``h.celsius``, ``h.v_init``): ``Ra = 35.4`` ohm cm, ``cm = 1``
#: uF/cm2, ``v_init = -65`` mV, ``celsius = 6.3`` degC. jaxlean's defaults
#: (``cell.params.CELL``) are the same values, and so are the channels': ``hh`` (its leak
#: ``gl_hh = 3e-4`` S/cm2, ``el_hh = -54.3`` mV included) and ``pas`` (``g_pas = 1e-3``
#: S/cm2, ``e_pas = -70`` mV). NEURON's default ``nseg`` is 1 for every section
#: (``Fixed(1)``); jaxlean's ``Cell.from_swc`` asks for a rule.
NEURON_DEFAULTS = {"Ra": 35.4, "cm": 1.0, "v_init": -65.0,
                   "celsius": 6.3}


def neuron_defaults(params: dict) -> dict:
    """``params`` with NEURON's defaults (:data:`NEURON_DEFAULTS`) for the keys it has: the
    values a NEURON user gets without setting them (jaxlean's defaults are the same)."""
    return {**params, **{name: jnp.asarray(value, dtype=float)
                         for name, value in NEURON_DEFAULTS.items() if name in params}}


def _arc(section) -> np.ndarray:
    return np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(section.xyz, axis=0),
                                                           axis=1))])


@dataclasses.dataclass(frozen=True)
class Fixed:
    """``n`` segments in every section."""

    n: int

    def __post_init__(self):
        object.__setattr__(self, "n", as_int(self.n, "Fixed(n): n", minimum=1))

    def nseg(self, section) -> int:
        return int(self.n)


@dataclasses.dataclass(frozen=True)
class MaxLength:
    """The fewest equal segments no longer than ``um``: ``ceil(L / um)``."""

    um: float

    def __post_init__(self):
        if not (self.um > 0 and math.isfinite(self.um)):
            raise ConfigError(f"MaxLength(um): um must be positive; got {self.um!r}")

    def nseg(self, section) -> int:
        return max(1, math.ceil(_arc(section)[-1] / self.um))


@dataclasses.dataclass(frozen=True)
class PerLength:
    """An odd count growing with length: ``1 + 2 int(L / um)`` (Hay et al. 2011's
    ``geom_nseg``, BluePyOpt's ``nseg_frequency``; ``L`` as NEURON stores it)."""

    um: float = 40.0

    def __post_init__(self):
        if not (self.um > 0 and math.isfinite(self.um)):
            raise ConfigError(f"PerLength(um): um must be positive; got {self.um!r}")

    def nseg(self, section) -> int:
        steps = np.diff(_geometry._as_stored(section.xyz).astype(float), axis=0)
        length = float(np.sum(np.sqrt(np.sum(steps * steps, 1))))
        return 1 + 2 * int(length / self.um)


_DLAMBDA_RENAMED = {"axial_resistivity": "Ra", "frequency": "freq", "capacitance": "cm"}


@dataclasses.dataclass(frozen=True, init=False)
class DLambda:
    """NEURON's d_lambda rule (``stdlib.hoc``'s ``geom_nseg``): ``d_lambda`` of the AC length
    constant at ``freq`` Hz, for ``Ra`` (ohm cm) and ``cm`` (uF/cm2), the values the cell
    will be simulated with. The names are NEURON's (``freq``, ``d_lambda``, ``Ra``, ``cm``);
    jaxlean's former ``axial_resistivity``, ``frequency`` and ``capacitance`` are refused
    with an error naming NEURON's."""

    Ra: float
    d_lambda: float
    freq: float
    cm: float

    def __init__(self, Ra: float | None = None, d_lambda: float = 0.1, freq: float = 100.0,
                 cm: float = 1.0, **renamed: float):
        for old in renamed:
            if old in _DLAMBDA_RENAMED:
                raise ConfigError(f"DLambda: {old!r} is now called "
                                  f"{_DLAMBDA_RENAMED[old]!r}, NEURON's name")
            raise ConfigError(f"DLambda: unknown argument {old!r}; it takes Ra, d_lambda, "
                              f"freq and cm")
        if Ra is None:
            raise ConfigError("DLambda: Ra (ohm cm) is required: the axial resistivity the "
                              "cell will be simulated with")
        for name, value in (("Ra", Ra), ("d_lambda", d_lambda), ("freq", freq), ("cm", cm)):
            if not (value > 0 and math.isfinite(value)):
                raise ConfigError(f"DLambda: {name} must be positive; got {value!r}")
            object.__setattr__(self, name, float(value))

    def lambda_f(self, section) -> float:
        """Length (um) of one AC length constant, averaged over the 3-D points (``lambda_f``)."""
        arc, diam = _arc(section), 2 * section.radius
        electrotonic = np.sum(np.diff(arc) / np.sqrt(diam[:-1] + diam[1:]))
        electrotonic *= math.sqrt(2) * 1e-5 * math.sqrt(
            4 * math.pi * self.freq * self.Ra * self.cm)
        return float(arc[-1] / electrotonic)

    def nseg(self, section) -> int:
        length = _arc(section)[-1]
        return int((length / (self.d_lambda * self.lambda_f(section)) + 0.9) / 2) * 2 + 1


def section_nseg(sections: list, ncomp: int | None = None, max_length: float | None = None,
                 nseg: Fixed | MaxLength | PerLength | DLambda | None = None) -> np.ndarray:
    """``nseg`` of every section from exactly one of: ``ncomp`` (somatic sections 1, the
    others ``ncomp``), ``max_length`` (somatic 1, the others ``MaxLength``) or a rule
    ``nseg`` applied to every section, the soma included (NEURON's ``forall``)."""
    if sum(option is not None for option in (ncomp, max_length, nseg)) != 1:
        raise ConfigError("give exactly one of ncomp (per section), max_length (um) or nseg "
                          "(a rule: Fixed, MaxLength, PerLength, DLambda)")
    if ncomp is not None:
        ncomp = as_int(ncomp, "ncomp", minimum=1)
    if max_length is not None and not (isinstance(max_length, numbers.Real)
                                       and 0 < max_length < math.inf):
        raise ConfigError(f"max_length must be a positive number of um; got {max_length!r}")
    if nseg is not None and not isinstance(nseg, Fixed | MaxLength | PerLength | DLambda):
        raise ConfigError(f"nseg must be a Fixed, MaxLength, PerLength or DLambda rule; got "
                          f"{nseg!r}")
    for section in sections:
        if not _arc(section)[-1] > 0:
            raise MorphologyError(f"the section ending at SWC id {section.last_id} has zero "
                                  "length (all its points coincide); NEURON cannot simulate it")
    if nseg is None:
        rule = Fixed(ncomp) if ncomp is not None else MaxLength(max_length)
        return np.array([1 if s.kind == 1 else rule.nseg(s) for s in sections])
    return np.array([nseg.nseg(s) for s in sections])


def compartments(sections: list, counts: np.ndarray):
    """Parents, lengths, radii, attachments, tapers and SWC types of every section's segments.

    Section ``k``'s segments are compartments ``offsets[k] .. offsets[k] + counts[k] - 1``
    (``offsets = cumsum`` of the counts), proximal to distal. A section joins the
    node of its parent that NEURON joins: the first segment's start (``x = 0`` of
    the root), the segment holding an interior ``x`` at its centre, the last
    segment's end; ``x = 0`` of any other section is its parent's own joining node.
    """
    parents, attach, length, area, proximal, distal, kind = [], [], [], [], [], [], []
    first_of = []
    for section, nseg in zip(sections, counts.tolist(), strict=True):
        geometry = _geometry.segments(section.xyz, section.radius, nseg)
        first = len(parents)
        p, x = section.parent, section.parent_x
        if p < 0:
            parents.append(-1)
            attach.append(1.0)
        elif x == 0.0 and sections[p].parent >= 0:
            parents.append(parents[first_of[p]])
            attach.append(attach[first_of[p]])
        elif x in (0.0, 1.0):
            parents.append(first_of[p] + (counts[p] - 1 if x == 1.0 else 0))
            attach.append(x)
        else:
            parents.append(first_of[p] + min(int(counts[p] * x), counts[p] - 1))
            attach.append(0.5)
        parents.extend(range(first, first + nseg - 1))
        attach.extend([1.0] * (nseg - 1))
        length.extend(geometry["length"])
        area.extend(geometry["area"])
        proximal.extend(geometry["r_proximal"])
        distal.extend(geometry["r_distal"])
        kind.extend([section.kind] * nseg)
        first_of.append(first)
    length, area = np.asarray(length), np.asarray(area)
    radius = area / (2 * np.pi * length)
    cylinder_half = 0.5 * length / (np.pi * radius**2)
    taper = np.stack([np.asarray(proximal), np.asarray(distal)], 1) / cylinder_half[:, None]
    return np.asarray(parents), length, radius, np.asarray(attach), taper, np.asarray(kind)
