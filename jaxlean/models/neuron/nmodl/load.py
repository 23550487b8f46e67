"""``load_mod`` and ``load_mod_dir``: ``.mod`` files in, mechanisms out."""

from __future__ import annotations

from pathlib import Path

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.mechanisms import Mechanism
from jaxlean.models.neuron.nmodl.parser import parse
from jaxlean.models.neuron.nmodl.translate import translate

__all__ = ["load_mod", "load_mod_dir"]


def load_mod(source: str | Path) -> Mechanism:
    """The :class:`Mechanism` of one NMODL file: a path, or the file's text (a string
    with a newline or a ``{``).

    Raises:
      ConfigError: the file does not exist, does not parse, or uses a construct that
        does not map onto a Mechanism exactly; the message names the file and line.
    """
    if isinstance(source, str) and ("\n" in source or "{" in source):
        return translate(parse(source, "<mod text>"))
    path = Path(source)
    if not path.is_file():
        raise ConfigError(f"load_mod: no such .mod file {str(path)!r}")
    return translate(parse(path.read_text(), str(path)))


def load_mod_dir(directory: str | Path) -> dict[str, Mechanism]:
    """``{suffix: Mechanism}`` of every ``*.mod`` file in ``directory``, in NEURON's order.

    ``nrnivmodl`` registers the files sorted by file name (byte order: ``CaDynamics_E2``
    before ``Ca_HVA``, upper case before lower case), and NEURON advances each
    compartment's states in that order: a concentration written by one mechanism
    (a calcium shell's ``cai``) is read at its new value by the mechanisms after it
    (an SK channel). jaxlean advances states in insertion order, so insert the
    mechanisms in this dict's order to reproduce NEURON.

    Raises:
      ConfigError: not a directory, no ``.mod`` file in it, two files with one
        suffix, or any file refused by :func:`load_mod` (naming it).
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise ConfigError(f"load_mod_dir: {str(folder)!r} is not a directory")
    files = sorted(folder.glob("*.mod"), key=lambda path: path.name.encode())
    if not files:
        raise ConfigError(f"load_mod_dir: no .mod file in {str(folder)!r}")
    out: dict[str, Mechanism] = {}
    for path in files:
        mechanism = load_mod(path)
        if mechanism.name in out:
            raise ConfigError(f"load_mod_dir: {path.name} and another file both define "
                              f"the mechanism {mechanism.name!r}")
        out[mechanism.name] = mechanism
    return out
