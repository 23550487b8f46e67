"""matplotlib, imported where a plot is drawn (the ``plot`` extra), refused by name if missing."""

from __future__ import annotations

from types import ModuleType

from jaxlean.errors import ConfigError

INSTALL = "pip install 'jaxlean[plot]'"


def pyplot() -> ModuleType:
    """``matplotlib.pyplot``, or a ConfigError with the install line."""
    try:
        import matplotlib.pyplot as plt
    except ModuleNotFoundError:
        raise ConfigError(f"jaxlean.models.neuron.plot draws with matplotlib, which is not "
                          f"installed: {INSTALL}") from None
    return plt


def axes(ax, figsize: tuple[float, float]):
    """``(figure, ax)``: the given axes' figure, or a new figure with one axes."""
    if ax is not None:
        return ax.figure, ax
    return pyplot().subplots(figsize=figsize)
