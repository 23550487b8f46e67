"""What a parsed ``.mod`` file declares (:class:`Model`), block by block."""

from __future__ import annotations

import dataclasses

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.nmodl import syntax as s

__all__ = ["Ion", "ModFileError", "Model"]


class ModFileError(ConfigError):
    """Every problem found in one ``.mod`` file, each with its line (``problems``:
    ``[(line, message)]``, sorted), so a file is fixed in one pass, not one error at a time."""

    def __init__(self, where: str, problems):
        self.where = where
        self.problems = sorted(dict.fromkeys(problems), key=lambda item: item[0])
        lines = [f"{where}:{line}: {message}" for line, message in self.problems]
        head = lines[0] if len(lines) == 1 else (
            f"{where}: {len(lines)} problems:\n  " + "\n  ".join(lines))
        super().__init__(head)


@dataclasses.dataclass(frozen=True)
class Ion:
    """One ``USEION`` line."""

    name: str
    read: tuple[str, ...]
    write: tuple[str, ...]
    valence: float | None
    line: int


@dataclasses.dataclass
class Model:
    """Everything a ``.mod`` file declares, by block."""

    where: str
    suffix: str = ""
    point: bool = False
    suffix_line: int = 0
    ions: list[Ion] = dataclasses.field(default_factory=list)
    nonspecific: list[str] = dataclasses.field(default_factory=list)
    electrode: list[str] = dataclasses.field(default_factory=list)
    """``ELECTRODE_CURRENT`` names (also in ``nonspecific``): inward-positive currents."""
    pointers: list[str] = dataclasses.field(default_factory=list)
    """``POINTER`` names: parameters without a default (see variables)."""
    random_pointers: list[str] = dataclasses.field(default_factory=list)
    """POINTERs to a NEURON ``Random`` (drawn from by ``nrn_random_pick``, see
    :mod:`~.random_streams`): its :class:`~.neuron_random.Random` as parameters."""
    range: list[str] = dataclasses.field(default_factory=list)
    globals: list[str] = dataclasses.field(default_factory=list)
    constants: dict[str, float] = dataclasses.field(default_factory=dict)
    parameters: dict[str, s.Variable] = dataclasses.field(default_factory=dict)
    assigned: dict[str, s.Variable] = dataclasses.field(default_factory=dict)
    states: dict[str, s.Variable] = dataclasses.field(default_factory=dict)
    blocks: dict[str, s.Block] = dataclasses.field(default_factory=dict)
    breakpoint: s.Block | None = None
    initial: s.Block | None = None
    net_receive: s.Block | None = None
    before_after: dict[str, s.Block] = dataclasses.field(default_factory=dict)
    """``{"AFTER SOLVE": block, ...}``: BEFORE/AFTER blocks (see before_after)."""
    file_locals: list[str] = dataclasses.field(default_factory=list)
    arrays: dict[str, int] = dataclasses.field(default_factory=dict)
    """``{name: size}`` of array variables; element ``k`` is the variable ``name[k]``."""
    vectors: set[str] = dataclasses.field(default_factory=set)
    """Arrays kept whole, one value ``(..., size)`` (see :mod:`~.loops`), not per element."""
    problems: list[tuple[int, str]] = dataclasses.field(default_factory=list)
    """Constructs refused while parsing (the parser goes on past them)."""

    def initial_after(self, block: s.Block) -> s.Block:
        """INITIAL then ``block``, a second INITIAL block, as nocmodl joins them; a LOCAL
        of both (one value here, two in C) is recorded as a problem."""
        first = self.initial
        for name in sorted(set(first.locals) & set(block.locals)):
            self.refuse(block.line, f"LOCAL {name} in two INITIAL blocks is not supported")
        return dataclasses.replace(first, locals=first.locals + block.locals,
                                   body=first.body + block.body)

    def error(self, line: int, message: str) -> ModFileError:
        """An error naming this file and ``line``, after the problems already found."""
        return ModFileError(self.where, [*self.problems, (line, message)])

    def refuse(self, line: int, message: str) -> None:
        """Record a problem at ``line`` and go on (all are reported together)."""
        self.problems.append((line, message))
