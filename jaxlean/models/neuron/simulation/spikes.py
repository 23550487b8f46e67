"""Spikes in and out: input spike times turned into per-step arrivals, threshold detection.

Input: a spike at time ``ts`` arrives at the start of the first step ``k`` (from
``k dt`` to ``(k + 1) dt``) with ``ts <= k dt + dt/2``, where NEURON's fixed step
delivers events (all events up to ``t + dt/2``). Times are absolute: a run that
starts at step ``s`` (continuing an earlier one) takes the spikes whose ``k``
falls in its own steps. ``inf`` pads a ragged list.

Output: a spike is recorded at ``t`` when the voltage after the step ending at
``t`` is above the threshold and the one before was not; the time is the end of
that step, as NEURON's ``NetCon`` and ``APCount`` report it in a fixed-step run
(they do not interpolate).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.errors import ConfigError

__all__ = ["arrivals", "detect", "detectors", "spike_array"]


def spike_array(name: str, times: object, instances: int) -> jax.Array:
    """``times`` as an array ``(instances, spikes)``, a ragged list padded with ``inf``.

    Raises:
      ConfigError: a wrong number of rows, or a NaN or ``-inf`` time (named).
    """
    if isinstance(times, jax.Array | np.ndarray):
        array = times
    else:
        rows = [np.atleast_1d(np.asarray(row, dtype=float)) for row in times]
        if any(row.ndim != 1 for row in rows):
            raise ConfigError(f"spikes[{name!r}]: each synapse's spike times must be 1-D")
        width = max((row.size for row in rows), default=0)
        array = np.full((len(rows), width), np.inf)
        for i, row in enumerate(rows):
            array[i, :row.size] = row
    if np.ndim(array) != 2 or np.shape(array)[0] != instances:
        raise ConfigError(f"spikes[{name!r}]: need one row of spike times per synapse "
                          f"({instances} rows); got shape {np.shape(array)}")
    if not isinstance(array, jax.core.Tracer):
        host = np.asarray(array, dtype=float)
        bad = np.isnan(host) | (host == -np.inf)
        if bad.any():
            row, column = np.argwhere(bad)[0]
            raise ConfigError(f"spikes[{name!r}]: synapse {row} spike {column} is "
                              f"{host[row, column]}; times must be numbers (inf pads)")
    return jnp.asarray(array, dtype=float)


def arrivals(times: jax.Array, dt: float, first_step: jax.Array, steps: int) -> jax.Array:
    """Spikes arriving at each synapse at the start of each step, ``(steps, synapses)``."""
    k = jnp.ceil(times / dt - 0.5)
    k = jnp.where(times <= (k - 1.0) * dt + 0.5 * dt, k - 1.0, k)  # compare times, as NEURON
    k = jnp.where(times > k * dt + 0.5 * dt, k + 1.0, k)            # does, not a rounded ratio
    local = k - first_step
    inside = jnp.isfinite(k) & (local >= 0) & (local < steps)
    index = jnp.where(inside, local, steps).astype(jnp.int32)
    synapse = jnp.broadcast_to(jnp.arange(times.shape[0])[:, None], times.shape)
    return jnp.zeros((steps, times.shape[0]), times.dtype).at[index, synapse].add(1.0, mode="drop")


def detectors(compartments: Sequence[int], n: int, max_spikes: int) -> np.ndarray:
    """The detecting compartments, checked."""
    where = np.atleast_1d(np.asarray(compartments))
    if where.size and (where.ndim != 1 or not np.issubdtype(where.dtype, np.integer)
                       or where.min() < 0 or where.max() >= n):
        raise ConfigError(f"detect must name compartments in [0, {n - 1}]; got {compartments!r}")
    if not isinstance(max_spikes, int) or max_spikes < 1:
        raise ConfigError(f"max_spikes must be a positive int; got {max_spikes!r}")
    return where.astype(np.int64)


def detect(buffers: tuple[jax.Array, jax.Array], before: jax.Array, after: jax.Array,
           threshold: float, t: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Add ``t`` to the spike times of each detector whose voltage crossed ``threshold``.

    ``buffers`` are the times so far ``(detectors, max_spikes)`` (``inf`` where
    none) and the counts ``(detectors,)``; a count may exceed ``max_spikes``
    (the extra times are not kept).
    """
    times, count = buffers
    crossed = (before <= threshold) & (after > threshold)
    slot = jnp.where(crossed, count, times.shape[1])
    times = times.at[jnp.arange(times.shape[0]), slot].set(t, mode="drop")
    return times, count + crossed.astype(count.dtype)
