"""``load_mod`` and ``load_mod_dir``: ``.mod`` files in, mechanisms out.

A file is refused with every problem it has, each with its line (a
:class:`~jaxlean.models.neuron.nmodl.model.ModFileError`); a directory loads every
file it can and names every file it could not, with their problems
(:class:`ModDirError`, or :attr:`Mechanisms.refused` with ``skip_refused=True``).
"""

from __future__ import annotations

import warnings
from pathlib import Path

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.mechanisms.mechanisms import Mechanism
from jaxlean.models.neuron.nmodl.generated import generate
from jaxlean.models.neuron.nmodl.model import ModFileError
from jaxlean.models.neuron.nmodl.net_receive import generate_point
from jaxlean.models.neuron.nmodl.parser import parse
from jaxlean.models.neuron.nmodl.translate import translate

__all__ = ["Mechanisms", "ModDirError", "load_mod", "load_mod_dir"]


def _load(text: str, where: str, path: Path | None = None) -> Mechanism:
    """The compact form of the file where it fits (:mod:`.translate`), else NEURON's
    generated code (:mod:`.generated`), which refuses with every problem of the file."""
    options = {} if path is None else {"folder": path.parent, "default_suffix": path.stem}
    model = parse(text, where, **options)
    if model.problems:
        raise ModFileError(where, model.problems)
    try:
        if model.file_locals or model.arrays or model.pointers:
            raise ConfigError("file-level LOCAL, arrays or POINTER")  # the general form
        return translate(model)
    except ConfigError:
        model = parse(text, where, **options)
        return generate_point(model) if model.point else generate(model)


def load_mod(source: str | Path) -> Mechanism:
    """The :class:`Mechanism` of one NMODL file: a path, or the file's text (a string
    with a newline or a ``{``).

    Raises:
      ModFileError: (a ConfigError) the file does not parse or uses constructs jaxlean
        cannot translate; the message lists every one, with its file and line.
      ConfigError: the file does not exist.
    """
    if isinstance(source, str) and ("\n" in source or "{" in source):
        return _load(source, "<mod text>")
    path = Path(source)
    if not path.is_file():
        raise ConfigError(f"load_mod: no such .mod file {str(path)!r}")
    return _load(path.read_text(errors="replace"), str(path), path)


class Mechanisms(dict):
    """``{suffix: Mechanism}`` in NEURON's order; ``refused``: ``{file name: error}`` of the
    files that could not be loaded (empty unless ``skip_refused=True``)."""

    refused: dict[str, ConfigError]

    def __init__(self, *args, refused: dict[str, ConfigError] | None = None):
        super().__init__(*args)
        self.refused = dict(refused or {})


class ModDirError(ConfigError):
    """Files of a directory that could not be loaded: ``refused`` (``{file name: error}``,
    every problem of each file) and ``loaded``, the :class:`Mechanisms` of the others,
    usable as they are."""

    def __init__(self, directory: str, loaded: Mechanisms, refused: dict[str, ConfigError]):
        self.loaded, self.refused = loaded, refused
        details = "\n".join(str(error) for error in refused.values())
        super().__init__(f"load_mod_dir: {len(refused)} of {len(loaded) + len(refused)} .mod "
                         f"files in {directory!r} could not be loaded ({', '.join(refused)}); "
                         f"the others are in this error's .loaded, or pass "
                         f"skip_refused=True:\n{details}")


def load_mod_dir(directory: str | Path, *, skip_refused: bool = False) -> Mechanisms:
    """``{suffix: Mechanism}`` of every ``*.mod`` file in ``directory``, in NEURON's order.

    ``nrnivmodl`` registers the files sorted by file name (byte order: ``CaDynamics_E2``
    before ``Ca_HVA``, upper case before lower case), and NEURON advances each
    compartment's states in that order: a concentration written by one mechanism
    (a calcium shell's ``cai``) is read at its new value by the mechanisms after it
    (an SK channel). jaxlean advances states in insertion order, so insert the
    mechanisms in this dict's order to reproduce NEURON.

    Every file is tried. With ``skip_refused=True`` the files that could not be loaded
    are left out, named in a warning and in the result's ``refused``.

    Raises:
      ModDirError: some files could not be loaded (each named with all its problems;
        the loaded ones are in the error's ``loaded``).
      ConfigError: not a directory, no ``.mod`` file in it, or two files with one suffix.
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise ConfigError(f"load_mod_dir: {str(folder)!r} is not a directory")
    files = sorted(folder.glob("*.mod"), key=lambda path: path.name.encode())
    if not files:
        raise ConfigError(f"load_mod_dir: no .mod file in {str(folder)!r}")
    out, refused, origin = Mechanisms(), {}, {}
    for path in files:
        try:
            mechanism = load_mod(path)
        except ConfigError as error:
            refused[path.name] = error
            continue
        if mechanism.name in out:
            raise ConfigError(f"load_mod_dir: {path.name} and {origin[mechanism.name]} both "
                              f"define the mechanism {mechanism.name!r}")
        out[mechanism.name], origin[mechanism.name] = mechanism, path.name
    if refused and not skip_refused:
        raise ModDirError(str(folder), out, refused)
    if refused:
        warnings.warn(f"load_mod_dir: left out {len(refused)} .mod files of {str(folder)!r} "
                      f"that could not be loaded: {', '.join(refused)} (see .refused)",
                      stacklevel=2)
    out.refused = refused
    return out
