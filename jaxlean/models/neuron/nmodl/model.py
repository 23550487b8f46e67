"""What a parsed ``.mod`` file declares (:class:`Model`), block by block."""

from __future__ import annotations

import dataclasses

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.nmodl import syntax as s

__all__ = ["Ion", "Model"]


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

    def error(self, line: int, message: str) -> ConfigError:
        """A ConfigError naming this file and ``line``."""
        return ConfigError(f"{self.where}:{line}: {message}")
