"""BluePyOpt's ``parameters.json`` and ``mechanisms.json``, read and checked.

``parameters.json`` (BluePyOpt's ``examples/l5pc/config``) is a list of entries, each one
BluePyOpt parameter object:

* ``type``: ``"global"`` (``NrnGlobalParameter``: ``v_init``, ``celsius``), ``"section"``
  (``NrnSectionParameter``: ``cm``, ``Ra``, ``ena``, ... set per section) or ``"range"``
  (``NrnRangeParameter``: set per segment, e.g. ``gIhbar_Ih``);
* ``param_name``, ``sectionlist`` (``all``, ``somatic``, ``axonal``, ``basal``, ``apical``,
  ``myelinated``), and ``value`` (frozen) or ``bounds`` (free: its value comes from the
  parameter set, keyed ``"param_name.sectionlist"``);
* ``dist_type``, the scaler: ``"uniform"`` (``NrnSegmentLinearScaler``: ``multiplier *
  value + offset``, both optional), ``"exp"`` (``NrnSegmentSomaDistanceScaler``: the
  expression ``dist`` in ``{distance}`` and ``{value}``, the distance from
  ``soma[0](soma_ref_location)``, 0.5 by default; with ``ref_section`` and ``ref_location``
  the ``NrnSegmentSectionDistanceScaler`` instead) or ``"step"``
  (``NrnSegmentSomaDistanceStepScaler``: ``dist`` may also use ``{step_begin}`` and
  ``{step_end}``);
* ``mech`` and ``mech_param``: informative (``param_name`` is ``mech_param + "_" + mech``).

Any other key, type, scaler or section list is an error naming the entry.
``mechanisms.json`` maps section lists to the mechanism suffixes inserted there.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
from collections.abc import Callable, Mapping
from pathlib import Path

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.formats.bluepyopt_expression import compile_distribution

__all__ = ["SECTION_LISTS", "Entry", "Scaler", "read_mechanisms", "read_parameters"]

#: BluePyOpt's section lists and the SWC types they hold (``None``: every compartment).
SECTION_LISTS = {"all": None, "somatic": 1, "axonal": 2, "basal": 3, "apical": 4,
                 "myelinated": 5}
_COMMON = {"param_name", "type", "value", "bounds"}
_LOCATED = _COMMON | {"sectionlist", "dist_type", "mech", "mech_param"}
_SCALER_KEYS = {"uniform": {"multiplier", "offset"},
                "exp": {"dist", "soma_ref_location", "ref_section", "ref_location"},
                "step": {"dist", "step_begin", "step_end", "soma_ref_location"}}


@dataclasses.dataclass(frozen=True)
class Scaler:
    """How a value becomes per-segment values: ``kind`` ``"linear"`` (``multiplier * value +
    offset``) or ``"distance"`` (``function`` of ``distance`` and the placeholders, the
    distance from ``origin``: ``(section name, x)``)."""

    kind: str
    multiplier: float = 1.0
    offset: float = 0.0
    function: Callable | None = None
    origin: tuple[str, float] = ("soma[0]", 0.5)
    constants: Mapping[str, float] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Entry:
    """One entry of ``parameters.json``: BluePyOpt's ``name`` (``"gIhbar_Ih.apical"``; a
    global's is its ``param_name``), ``kind`` (``global``/``section``/``range``), its
    section list, ``value`` (``None`` when free) and ``bounds``, and its scaler."""

    index: int
    name: str
    param_name: str
    kind: str
    sectionlist: str | None
    value: float | None
    bounds: tuple[float, float] | None
    scaler: Scaler


def _load_json(source: object, what: str):
    if isinstance(source, str | Path):
        path = Path(source)
        if not path.is_file():
            raise ConfigError(f"BluePyOpt {what}: no such file {str(path)!r}")
        try:
            return json.loads(path.read_text()), str(path)
        except json.JSONDecodeError as error:
            raise ConfigError(f"{path}: not JSON ({error})") from None
    return source, f"<{what}>"


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(
            value):
        raise ConfigError(f"{where} must be a finite number; got {value!r}")
    return float(value)


def _scaler(entry: Mapping, where: str) -> Scaler:
    kind = entry.get("dist_type", "uniform")
    if kind not in _SCALER_KEYS:
        raise ConfigError(f"{where}: unknown dist_type {kind!r}; BluePyOpt's are "
                          f"{sorted(_SCALER_KEYS)}")
    extra = sorted(set(entry) - _LOCATED - _SCALER_KEYS[kind])
    if extra:
        raise ConfigError(f"{where}: unknown key(s) {extra} for dist_type {kind!r}; allowed "
                          f"{sorted(_LOCATED | _SCALER_KEYS[kind])}")
    if kind == "uniform":
        return Scaler("linear", _number(entry.get("multiplier", 1.0), f"{where}: multiplier"),
                      _number(entry.get("offset", 0.0), f"{where}: offset"))
    if "dist" not in entry:
        raise ConfigError(f"{where}: dist_type {kind!r} needs 'dist', the distribution string")
    known = ("distance", "value") + (("step_begin", "step_end") if kind == "step" else ())
    function = compile_distribution(entry["dist"], known, where)
    constants = {}
    if kind == "step":
        for key in ("step_begin", "step_end"):
            if key not in entry:
                raise ConfigError(f"{where}: dist_type 'step' needs {key!r}")
            constants[key] = _number(entry[key], f"{where}: {key}")
    if "ref_section" in entry:
        if "soma_ref_location" in entry:
            raise ConfigError(f"{where}: give soma_ref_location or ref_section, not both")
        section = entry["ref_section"]
        if not isinstance(section, str):
            raise ConfigError(f"{where}: ref_section must be a section name; got {section!r}")
        x = _number(entry.get("ref_location", 0.0), f"{where}: ref_location")
    else:
        if "ref_location" in entry:
            raise ConfigError(f"{where}: ref_location needs ref_section")
        section, x = "soma[0]", _number(entry.get("soma_ref_location", 0.5),
                                        f"{where}: soma_ref_location")
    if not 0.0 <= x <= 1.0:
        raise ConfigError(f"{where}: the reference location must be in [0, 1]; got {x}")
    return Scaler("distance", function=function, origin=(section, x), constants=constants)


def read_parameters(source: str | Path | list) -> tuple[Entry, ...]:
    """The entries of a ``parameters.json`` (a path, or the list it holds), checked.

    Raises:
      ConfigError: anything BluePyOpt's example loader would not build, or an unknown
        key, type, scaler or section list; named with the file and the entry.
    """
    data, origin = _load_json(source, "parameters")
    if not isinstance(data, list) or not data:
        raise ConfigError(f"{origin}: parameters must be a non-empty list of entries")
    out, seen = [], {}
    for index, entry in enumerate(data):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("param_name"), str):
            raise ConfigError(f"{origin}: entry {index} must be an object with a "
                              f"'param_name'; got {entry!r}")
        where = f"{origin}: entry {index} ({entry['param_name']})"
        kind = entry.get("type")
        if kind not in ("global", "section", "range"):
            raise ConfigError(f"{where}: type must be 'global', 'section' or 'range'; got "
                              f"{kind!r}")
        if ("value" in entry) == ("bounds" in entry) and "value" not in entry:
            raise ConfigError(f"{where}: give 'value' (frozen) or 'bounds' (free)")
        value = _number(entry["value"], f"{where}: value") if "value" in entry else None
        bounds = None
        if "bounds" in entry:
            pair = entry["bounds"]
            if not isinstance(pair, list | tuple) or len(pair) != 2:
                raise ConfigError(f"{where}: bounds must be [low, high]; got {pair!r}")
            bounds = (_number(pair[0], f"{where}: bounds"), _number(pair[1], f"{where}: bounds"))
        if kind == "global":
            extra = sorted(set(entry) - _COMMON)
            if extra:
                raise ConfigError(f"{where}: unknown key(s) {extra} for a global parameter; "
                                  f"allowed {sorted(_COMMON)}")
            name, sectionlist, scaler = entry["param_name"], None, Scaler("linear")
        else:
            sectionlist = entry.get("sectionlist")
            if sectionlist not in SECTION_LISTS:
                raise ConfigError(f"{where}: sectionlist must be one of {list(SECTION_LISTS)}; "
                                  f"got {sectionlist!r}")
            scaler = _scaler(entry, where)
            if kind == "section" and scaler.kind != "linear":
                raise ConfigError(f"{where}: a section parameter takes one value per section; "
                                  "BluePyOpt scales it only with dist_type 'uniform'")
            _check_mech(entry, where)
            name = f"{entry['param_name']}.{sectionlist}"
        if name in seen:
            raise ConfigError(f"{where}: a second parameter named {name!r} (entry "
                              f"{seen[name]}); BluePyOpt's CellModel would keep only the "
                              "last, in the first one's place")
        seen[name] = index
        out.append(Entry(index, name, entry["param_name"], kind, sectionlist, value, bounds,
                         scaler))
    return tuple(out)


def _check_mech(entry: Mapping, where: str) -> None:
    mech, mech_param = entry.get("mech"), entry.get("mech_param")
    if mech is None and mech_param is None:
        return
    if f"{mech_param}_{mech}" != entry["param_name"]:
        raise ConfigError(f"{where}: mech {mech!r} and mech_param {mech_param!r} do not make "
                          f"param_name {entry['param_name']!r} (mech_param + '_' + mech)")


def read_mechanisms(source: str | Path | Mapping) -> dict[str, tuple[str, ...]]:
    """``{section list: (suffix, ...)}`` of a ``mechanisms.json`` (a path or its dict).

    Raises:
      ConfigError: an unknown section list or an entry that is not a list of names.
    """
    data, origin = _load_json(source, "mechanisms")
    if not isinstance(data, Mapping) or not data:
        raise ConfigError(f"{origin}: mechanisms must be an object {{section list: [suffix, "
                          "...]}}")
    out = {}
    for sectionlist, names in data.items():
        if sectionlist not in SECTION_LISTS:
            raise ConfigError(f"{origin}: unknown section list {sectionlist!r}; BluePyOpt's "
                              f"are {list(SECTION_LISTS)}")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ConfigError(f"{origin}: {sectionlist!r} must list mechanism suffixes; got "
                              f"{names!r}")
        out[sectionlist] = tuple(names)
    return out
