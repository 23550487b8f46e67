"""Morphology files as NEURON's Import3d builds them: SWC, Neurolucida ASC and HDF5.

:func:`load_morphology` reads a file into a :class:`SectionTree`, the sections a
NEURON user gets from the same file, which :meth:`Cell.from_morphology
<jaxlean.models.neuron.cell.cell.Cell.from_morphology>` discretises:

* ``.swc``: Import3d's SWC rules (:mod:`jaxlean.models.neuron.morphology.swc`); no extra needed.
* ``.asc`` (Neurolucida) and ``.h5`` (Blue Brain's HDF5): read with MorphIO
  (``pip install 'jaxlean[morphology]'``) and built as ``Import3d_Neurolucida3``
  builds an ASC file: the soma contour becomes a soma section along its
  principal axis (:mod:`jaxlean.models.neuron.morphology._contour`, Import3d's
  ``contour2centroid``); each tree is a section joined to the soma's centre
  (``soma(0.5)``) by a wire, so it keeps its own points; a branch starts with a
  copy of its parent's last point carrying the branch's own first diameter (no
  copy when the file repeats the point, as MorphIO and Import3d both do);
  sections keep the file's order (trees in file order, each depth first);
  sections left with one point or two equal points are dropped, their children
  joining the parent in their place. An HDF5 file is built as the ASC file MorphIO
  would write from it.

MorphIO stores coordinates as float32; each is read back as the shortest decimal
that float32 holds (the file's own number when it has at most 7 significant
digits), which is what NEURON parses, in double, from the text.
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np

from jaxlean.errors import ConfigError, MorphologyError
from jaxlean.models.neuron.morphology import _contour, _geometry, swc
from jaxlean.models.neuron.morphology.swc import Section

__all__ = ["SUFFIXES", "SectionTree", "load_morphology", "segment_diameters"]

SUFFIXES = (".swc", ".asc", ".h5")
_INSTALL = "pip install 'jaxlean[morphology]'"


@dataclasses.dataclass(frozen=True, eq=False)
class SectionTree:
    """A morphology as NEURON's sections: what :meth:`Cell.from_morphology` discretises.

    Attributes:
      sections: the sections in Import3d's order; the first is the root (the soma).
      names: NEURON's name of each (``"soma[0]"``, ``"dend[3]"``); an edit keeps the
        names of the sections it leaves, as NEURON's ``delete_section`` does.
      source: the file it came from (for messages).
      cylinders: for each section, ``None`` (its 3-D points give its shape), the
        exact diameter (um) of a cylinder set by length and diameter without 3-D
        points, as ``sec.L = ...; sec.diam = ...`` does in NEURON (the axon stub of
        :func:`~jaxlean.models.neuron.morphology.axon_stub.replace_axon`), or one
        diameter per segment (``seg.diam = ...`` on each of ``nseg`` segments; then
        ``nseg`` is fixed).
      nseg: for each section, ``None`` (the discretisation rule decides) or its own
        ``nseg``, as ``sec.nseg = n`` sets it in NEURON after the rule
        (:func:`~jaxlean.models.neuron.morphology.morph_edit.set_nseg`, the stubs).
    """

    sections: tuple[Section, ...]
    names: tuple[str, ...]
    source: str = "<morphology>"
    cylinders: tuple[float | tuple[float, ...] | None, ...] = ()
    nseg: tuple[int | None, ...] = ()

    def __post_init__(self):
        if not self.cylinders:
            object.__setattr__(self, "cylinders", (None,) * len(self.sections))
        if not self.nseg:
            object.__setattr__(self, "nseg", (None,) * len(self.sections))
        if not len(self.sections) == len(self.names) == len(self.cylinders) == len(self.nseg):
            raise ConfigError("SectionTree: sections, names, cylinders and nseg must have one "
                              f"entry per section; got {len(self.sections)}, {len(self.names)}, "
                              f"{len(self.cylinders)}, {len(self.nseg)}")
        for k, (diameter, count) in enumerate(zip(self.cylinders, self.nseg, strict=True)):
            if isinstance(diameter, tuple) and len(diameter) != count:
                raise ConfigError(f"SectionTree: section {self.names[k]} has {len(diameter)} "
                                  f"segment diameters and nseg {count}; they must agree")

    def __len__(self) -> int:
        return len(self.sections)

    def index(self, section: int | str, argument: str = "section") -> int:
        """The index of ``section``, given by index or NEURON name (``"dend[3]"``).

        Raises:
          ConfigError: an unknown name or an index out of range.
        """
        if isinstance(section, str):
            if section not in self.names:
                raise ConfigError(f"{argument}: no section named {section!r} in {self.source}; "
                                  f"its sections are {', '.join(self.names[:8])}"
                                  + (f", ... ({len(self.names)} in all)"
                                     if len(self.names) > 8 else ""))
            return self.names.index(section)
        if (isinstance(section, bool) or not isinstance(section, int | np.integer)
                or not 0 <= section < len(self.sections)):
            raise ConfigError(f"{argument} must be a section name or an index in "
                              f"[0, {len(self.sections) - 1}]; got {section!r}")
        return int(section)

    def children(self, section: int) -> list[int]:
        """Indices of the sections joined to ``section``."""
        return [k for k, s in enumerate(self.sections) if s.parent == section]

    def length(self, section: int) -> float:
        """NEURON's ``L`` (um): the arc length of a section's 3-D points as NEURON stores them."""
        steps = np.diff(_geometry._as_stored(self.sections[section].xyz).astype(float), axis=0)
        return float(np.concatenate([[0.0], np.cumsum(np.sqrt(np.sum(steps * steps, 1)))])[-1])


def load_morphology(source: str | Path) -> SectionTree:
    """Read a morphology file (``.swc``, ``.asc``, ``.h5``) into NEURON's sections.

    Raises:
      ConfigError: another suffix, or MorphIO missing for ``.asc``/``.h5``.
      MorphologyError: a file that MorphIO or Import3d cannot read as one cell (no
        soma contour, several somata, a malformed line), named with the file.
    """
    path = Path(source)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ConfigError(f"load_morphology: {str(path)!r} has suffix {path.suffix!r}; "
                          f"readable: {', '.join(SUFFIXES)}")
    if suffix == ".swc":
        sections = swc.sections(swc.read_swc(path), str(path))
        return SectionTree(tuple(sections), swc.section_names(sections), str(path))
    sections = _import3d_neurolucida(_read_morphio(path), str(path))
    return SectionTree(tuple(sections), swc.section_names(sections), str(path))


def segment_diameters(section: Section, nseg: int) -> np.ndarray:
    """NEURON's ``seg.diam`` of each of a section's ``nseg`` segments: the mean over the
    segment's arc of the diameter interpolated linearly between the stored 3-D points."""
    xyz = _geometry._as_stored(section.xyz).astype(float)
    diam = _geometry._as_stored(2 * np.asarray(section.radius, dtype=float)).astype(float)
    steps = np.diff(xyz, axis=0)
    arc = np.concatenate([[0.0], np.cumsum(np.sqrt(np.sum(steps * steps, axis=1)))])
    bounds = np.linspace(0.0, arc[-1], nseg + 1)
    out = np.empty(nseg)
    for j in range(nseg):
        a, b = bounds[j], bounds[j + 1]
        inside = arc[(arc > a) & (arc < b)]
        x = np.concatenate([[a], inside, [b]])
        y = np.interp(x, arc, diam)
        out[j] = np.sum(0.5 * (y[1:] + y[:-1]) * np.diff(x)) / (b - a)
    return out


def _morphio():
    try:
        import morphio
    except ModuleNotFoundError:
        raise ConfigError(f"reading .asc and .h5 morphologies needs MorphIO, which is not "
                          f"installed: {_INSTALL}") from None
    return morphio


def _read_morphio(path: Path):
    morphio = _morphio()
    if not path.is_file():
        raise MorphologyError(f"{path}: no such file")
    try:
        return morphio.Morphology(str(path))
    except morphio.MorphioError as error:
        text = " ".join(str(error).replace("\x1b[1;31m", "").replace("\x1b[0m", "").split())
        raise MorphologyError(f"{path}: MorphIO cannot read it: {text}") from None


def _as_parsed(values: np.ndarray) -> np.ndarray:
    """MorphIO's float32 values as the shortest decimals they hold, parsed in double."""
    flat = np.asarray(values, dtype=np.float32).ravel()
    return np.array([float(str(v)) for v in flat], dtype=float).reshape(np.shape(values))


def _import3d_neurolucida(morphology, where: str) -> list[Section]:
    """The sections ``Import3d_Neurolucida3`` + ``Import3d_GUI.instantiate`` make."""
    soma = morphology.soma
    contour = _as_parsed(soma.points)
    if soma.type != _morphio().SomaType.SOMA_SIMPLE_CONTOUR or contour.shape[0] < 3:
        raise MorphologyError(f"{where}: expected one soma contour of at least 3 points (a "
                              f"Neurolucida CellBody); MorphIO reads soma type {soma.type} with "
                              f"{contour.shape[0]} point(s)")
    centres, diameters = _contour.centroid(contour, where)
    kept = [{"xyz": centres, "radius": diameters / 2, "parent": -1, "x": 0.5, "kind": 1,
             "id": -1}]
    index_of = {}
    for section in morphology.iter():
        parent = 0 if section.is_root else index_of[section.parent.id]
        index_of[section.id] = len(kept)
        kept.append({"xyz": _as_parsed(section.points),
                     "radius": _as_parsed(section.diameters) / 2, "parent": parent,
                     "x": 0.5 if section.is_root else 1.0, "kind": int(section.type),
                     "id": int(section.id)})
    alive = _drop_degenerate(kept, where)
    renumber = {old: new for new, old in enumerate(alive)}
    return [Section(kept[k]["xyz"], kept[k]["radius"], renumber.get(kept[k]["parent"], -1),
                    kept[k]["x"], kept[k]["kind"], kept[k]["id"]) for k in alive]


def _drop_degenerate(kept: list[dict], where: str) -> list[int]:
    """Import3d's ``chk_valid``: drop, last to first, sections of one point or of two equal
    points; their children join their parent where they joined. Returns those kept."""
    alive = list(range(len(kept)))
    for k in range(len(kept) - 1, 0, -1):
        xyz = kept[k]["xyz"]
        if xyz.shape[0] == 1 or (xyz.shape[0] == 2 and np.array_equal(xyz[0], xyz[1])):
            warnings.warn(f"{where}: MorphIO section {kept[k]['id']} has zero length; dropped, "
                          "as NEURON's Import3d drops it", stacklevel=4)
            alive.remove(k)
            for child in kept[k + 1:]:
                if child["parent"] == k:
                    child["parent"], child["x"] = kept[k]["parent"], kept[k]["x"]
    return alive
