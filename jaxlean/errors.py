"""The exception types jaxlean raises on bad input.

Every error is a ``ValueError`` or ``TypeError`` subclass (so existing ``except``
clauses keep working) and a :class:`JaxleanError` (so callers can catch ours
alone). Messages name the problem in the user's terms: a pytree path, a graph
node, a file line, a tensor name.
"""

from __future__ import annotations

__all__ = ["CacheError", "CheckpointError", "ConfigError", "DataError", "GraphError",
           "JaxleanError", "MemoryBudgetError", "MorphologyError", "NonFiniteError",
           "StructureError", "TreeError"]


class JaxleanError(Exception):
    """Base class of every error raised by jaxlean on bad input."""


class StructureError(JaxleanError, ValueError):
    """Pytrees that must match (layers to stack, params vs. a mask) do not."""


class ConfigError(JaxleanError, ValueError):
    """An option or model configuration is invalid (unknown name, sizes that do not divide)."""


class GraphError(JaxleanError, ValueError):
    """A module graph is malformed: a cycle, an unknown or reserved node, an unconnected input."""


class TreeError(JaxleanError, ValueError):
    """A parent array does not describe a forest (cycle, out-of-range parent)."""


class MorphologyError(JaxleanError, ValueError):
    """A neuron morphology (SWC file or parent array) is malformed; names the line or node."""


class CheckpointError(JaxleanError, ValueError):
    """A weights file has missing, unexpected or mis-shaped tensors; names the tensor."""


class DataError(JaxleanError, ValueError):
    """Training data is inconsistent with itself or with the requested batching."""


class NonFiniteError(JaxleanError, FloatingPointError):
    """A loss or solve produced NaN or infinity; names the step or the place."""


class CacheError(JaxleanError, ValueError):
    """The compilation cache cannot be used as requested."""


class MemoryBudgetError(JaxleanError, ValueError):
    """No option searched makes a compiled step fit the memory budget.

    Attributes:
        budget: the budget in bytes.
        smallest: the smallest footprint, in bytes, that the search compiled.
        option: the option that gave it (what to use if the budget can grow).
    """

    def __init__(self, message: str, *, budget: int, smallest: int, option: object):
        super().__init__(message)
        self.budget, self.smallest, self.option = budget, smallest, option
