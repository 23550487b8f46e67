"""NEURON's ``PreSyn``: one threshold per spike source, shared by every ``NetCon`` from it.

In NEURON the ``NetCon`` s whose source is the same section location share one ``PreSyn``:
one threshold, one "above" flag, one spike record. Setting ``nc.threshold`` on one of them
sets it for all (the last value set wins). jaxlean keeps a ``threshold`` per spiking
connection (a parameter like the others), so two connections from one compartment with
different thresholds would be a network NEURON cannot express; it is refused, naming both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import jax
import numpy as np

from jaxlean.errors import ConfigError

__all__ = ["check_shared_thresholds"]


def check_shared_thresholds(sources: Iterable[tuple[int, tuple[int, int], float]],
                            describe) -> None:
    """Raise ConfigError when two spiking connections from one source compartment have
    different thresholds.

    ``sources``: ``(connection number, (pre cell, pre compartment), threshold)`` of each
    spiking connection; ``describe(number)`` names a connection in the error."""
    first: dict[tuple[int, int], tuple[int, float]] = {}
    for index, source, threshold in sources:
        if source not in first:
            first[source] = (index, threshold)
            continue
        other, value = first[source]
        if threshold != value:
            raise ConfigError(
                f"{describe(index)} has threshold {threshold} mV and {describe(other)}, from the "
                f"same compartment, {value} mV: NEURON's NetCons from one source share one "
                f"threshold (its PreSyn); give both the same threshold")


def concrete_thresholds(synapses: Mapping, groups: Mapping) -> dict[int, float] | None:
    """``{connection number: threshold}`` of the spiking connections in ``params
    ["synapses"]`` when every value is concrete (``None`` under a transformation: the
    check ran when the network was built)."""
    out: dict[int, float] = {}
    for name, (_, ix) in groups.items():
        value = synapses.get(name, {}).get("threshold") if isinstance(
            synapses.get(name), Mapping) else None
        if value is None:
            continue
        if isinstance(value, jax.core.Tracer):
            return None
        column = np.broadcast_to(np.asarray(value, dtype=float), (ix.size,))
        out.update({int(k): float(v) for k, v in zip(ix, column, strict=True)})
    return out
