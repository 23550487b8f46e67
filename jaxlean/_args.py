"""Argument normalisers shared by the whole public API.

Every argument that takes a list of names goes through :func:`as_names`, so a
single string is one name (never split into characters); every renamed keyword
goes through :func:`reject_renamed`, so an old spelling raises an error naming
the new one; integer options go through :func:`as_int`, so ``4.0`` and ``True``
are refused by name instead of failing later.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping
from typing import Any

from jaxlean.errors import ConfigError

__all__ = ["as_int", "as_names", "reject_renamed"]


def as_names(value: str | Iterable[str] | None, argument: str, *,
             allowed: Iterable[str] | None = None,
             indices: bool = False) -> tuple[str, ...] | None:
    """``value`` as a tuple of names: one string is one name; ``None`` stays ``None``.

    Args:
        value: a name or an iterable of names.
        argument: the argument's name, for the error message.
        allowed: if given, every name must be one of these (the message lists them).
        indices: integers are accepted beside names (a section by name or by index).

    Raises:
        ConfigError: an element is not a non-empty string, or not in ``allowed``.
    """
    if value is None:
        return None
    single = (str, numbers.Integral) if indices else str
    names = (value,) if isinstance(value, single) and not isinstance(value, bool) else value
    try:
        names = tuple(names)
    except TypeError:
        raise ConfigError(f"{argument} must be a name or a list of names, got "
                          f"{type(value).__name__} {value!r}") from None
    for name in names:
        if indices and isinstance(name, numbers.Integral) and not isinstance(name, bool):
            continue
        if not isinstance(name, str) or not name:
            kinds = "non-empty strings or integers" if indices else "non-empty strings"
            raise ConfigError(f"{argument} must hold {kinds}, got {name!r} in {value!r}")
    if allowed is not None:
        allowed = tuple(allowed)
        unknown = [name for name in names if name not in allowed]
        if unknown:
            raise ConfigError(f"{argument}: unknown name(s) {unknown}; accepted: "
                              f"{sorted(allowed)}")
    return names


def reject_renamed(given: Mapping[str, Any], renamed: Mapping[str, str], where: str) -> None:
    """Raise naming the new spelling for any old keyword in ``given`` (kept one release).

    Args:
        given: the ``**kwargs`` a function received.
        renamed: old name -> new name.
        where: the function's name, for the message.
    """
    for old, new in renamed.items():
        if old in given:
            raise ConfigError(f"{where}: the argument {old!r} is now called {new!r}")
    unknown = sorted(set(given) - set(renamed))
    if unknown:
        raise TypeError(f"{where}() got unexpected keyword argument(s) {unknown}")


def as_int(value: Any, argument: str, *, minimum: int | None = None) -> int:
    """``value`` as an ``int``, refusing floats and bools by name (``4.0`` is not a count)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"{argument} must be an integer, got {type(value).__name__} "
                          f"{value!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(f"{argument} must be >= {minimum}, got {value}")
    return int(value)
