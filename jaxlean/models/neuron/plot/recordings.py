"""Recorded traces with their spikes, optionally beside a reference (NEURON's) and the difference.

:func:`traces` draws ``simulate``'s ``out["t"]`` against ``out["v"]`` (or any recorded
state), one line per site, marks spike times on them, and, given a reference recording
of the same sites (NEURON's, a recording), draws it under the traces, thick and pale,
with the difference in a second panel: agreement is seen, not assumed.
:func:`spike_times` reads ``simulate``'s ``"spikes"`` and ``"spike_count"``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence

import numpy as np

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.plot import _mpl

__all__ = ["TracePlot", "crossings", "spike_times", "traces"]


@dataclasses.dataclass(frozen=True)
class TracePlot:
    """What :func:`traces` drew.

    Attributes:
      figure: the figure.
      ax: the traces' axes; ``difference_ax``: the difference's, or None.
      lines: one ``Line2D`` per site; ``reference_lines``: the reference's (or empty);
        ``difference_lines``: ours minus the reference, per site (or empty).
      spike_markers: site -> the ``Line2D`` of its spike ticks (sites with spikes only), a
        row per site along the top of the axes (x: time, y: the axes' fraction).
      spikes: the spike times (ms) marked on each site.
    """

    figure: object
    ax: object
    difference_ax: object
    lines: list
    reference_lines: list
    difference_lines: list
    spike_markers: dict
    spikes: list


def spike_times(result: Mapping) -> list[np.ndarray]:
    """The spike times (ms) of each detector of a ``simulate`` or ``simulate_network`` run
    made with ``detect=``: its ``"spikes"`` rows cut at ``"spike_count"`` (a count beyond the
    buffer keeps the buffer's times).

    Raises:
      ConfigError: a result without ``"spikes"`` (a run without ``detect``).
    """
    if "spikes" not in result or "spike_count" not in result:
        raise ConfigError("spike_times: the result has no 'spikes'; simulate with detect=[...]")
    times = np.asarray(result["spikes"], dtype=float)
    counts = np.asarray(result["spike_count"]).astype(int)
    return [row[:min(int(count), row.size)] for row, count in zip(times, counts, strict=True)]


def crossings(t: object, v: object, threshold: float) -> list[np.ndarray]:
    """Times of ``v``'s upward crossings of ``threshold`` (the first sample at or above it
    after one below; NEURON's ``NetCon`` times a crossing at the end of its step), per
    column of ``v`` (``(samples,)`` or ``(samples, sites)``)."""
    t = np.asarray(t, dtype=float)
    v = np.asarray(v, dtype=float).reshape(t.size, -1)
    up = (v[:-1] < threshold) & (v[1:] >= threshold)
    return [t[1:][up[:, k]] for k in range(v.shape[1])]


def traces(t: object, v: object, *, labels: Sequence[str] | None = None,
           spikes: Sequence | None = None, threshold: float | None = None,
           reference: tuple[object, object] | None = None, reference_label: str = "NEURON",
           label: str = "jaxlean", difference: bool = True, ax=None,
           ylabel: str = "v (mV)") -> TracePlot:
    """Draw ``v`` (``(samples,)`` or ``(samples, sites)``) against ``t`` (ms).

    Args:
      t, v: ``out["t"]`` and ``out["v"]`` (or another recorded state) of ``simulate``.
      labels: one name per site (``"soma[0](0.5)"``); default ``site 0``, ...
      spikes: spike times to mark, one sequence per site (:func:`spike_times` of a run
        whose ``detect`` sites are its ``record`` sites); or ``threshold``: mark the
        drawn traces' upward crossings of it (mV).
      reference: ``(t_ref, v_ref)`` of the same sites (NEURON's recording), drawn under
        ours; with ``difference``, ours minus the reference (interpolated to ``t`` where
        the times differ) in a second panel.
      reference_label, label: the legend's names of the reference and of ours.
      ax: the axes to draw in (default: a new figure; a second panel needs a new figure).
      ylabel: the y axis label.

    Raises:
      ConfigError: shapes that disagree (samples, sites, labels, spikes), both ``spikes``
        and ``threshold``, or a difference panel asked into a given ``ax``.
    """
    t = np.asarray(t, dtype=float).reshape(-1)
    v = np.asarray(v, dtype=float)
    v = v.reshape(v.shape[0], -1) if v.ndim else v
    if v.ndim != 2 or v.shape[0] != t.size:
        raise ConfigError(f"traces: v must be (samples,) or (samples, sites) with {t.size} "
                          f"samples (t's); got shape {np.shape(v)}")
    sites = v.shape[1]
    labels = [f"site {k}" for k in range(sites)] if labels is None else [str(x) for x in labels]
    if len(labels) != sites:
        raise ConfigError(f"traces: {len(labels)} labels for {sites} sites")
    if spikes is not None and threshold is not None:
        raise ConfigError("traces: give spikes or threshold, not both")
    marked = crossings(t, v, threshold) if threshold is not None else (
        [np.asarray(s, dtype=float).reshape(-1) for s in spikes] if spikes is not None
        else [np.zeros(0)] * sites)
    if len(marked) != sites:
        raise ConfigError(f"traces: spikes has {len(marked)} rows for {sites} sites")
    ref = None
    if reference is not None:
        t_ref = np.asarray(reference[0], dtype=float).reshape(-1)
        v_ref = np.asarray(reference[1], dtype=float).reshape(t_ref.size, -1)
        if v_ref.shape[1] != sites:
            raise ConfigError(f"traces: the reference has {v_ref.shape[1]} sites, v {sites}")
        ref = (t_ref, v_ref)
    two = ref is not None and difference
    if two and ax is not None:
        raise ConfigError("traces: the difference panel needs a new figure; pass ax=None or "
                          "difference=False")
    if two:
        figure, (ax, below) = _mpl.pyplot().subplots(
            2, 1, figsize=(6.0, 4.2), sharex=True, gridspec_kw={"height_ratios": (3, 1.3)})
    else:
        figure, ax = _mpl.axes(ax, (6.0, 3.2))
        below = None
    reference_lines, lines, difference_lines, spike_markers = [], [], [], {}
    for k in range(sites):
        color = f"C{k % 10}"
        if ref is not None:
            reference_lines += ax.plot(ref[0], ref[1][:, k], lw=3.5, alpha=0.3, color=color,
                                       label=f"{reference_label} {labels[k]}")
        lines += ax.plot(t, v[:, k], lw=1.0, color=color,
                         ls="--" if ref is not None else "-",
                         label=f"{label} {labels[k]}" if ref is not None else labels[k])
        if marked[k].size:  # a tick per spike, in a row per site along the top
            spike_markers[k], = ax.plot(marked[k], np.full(marked[k].size, 0.97 - 0.05 * k),
                                        "|", ms=7, mew=1.5, color=color,
                                        transform=ax.get_xaxis_transform())
        if below is not None:
            same = ref[0].size == t.size and np.allclose(ref[0], t)
            other = ref[1][:, k] if same else np.interp(t, ref[0], ref[1][:, k])
            difference_lines += below.plot(t, v[:, k] - other, lw=0.8, color=color)
    ax.set(ylabel=ylabel)
    if spike_markers:  # room above the traces for the rows of ticks
        low, high = ax.get_ylim()
        rows = max(spike_markers) + 1
        ax.set_ylim(low, high + (high - low) * (0.05 + 0.06 * rows) / (1 - 0.05 * rows))
    ax.legend(fontsize=7, ncol=2 if ref is not None else 1, loc="best")
    if below is not None:
        unit = re.search(r"\([^()]*\)\s*$", ylabel)
        below.set(xlabel="t (ms)",
                  ylabel=f"{label} - {reference_label}" + (f" {unit.group(0)}" if unit else ""))
        below.axhline(0.0, color="0.6", lw=0.5)
    else:
        ax.set(xlabel="t (ms)")
    return TracePlot(figure, ax, below, lines, reference_lines, difference_lines,
                     spike_markers, marked)
