"""``plot.traces``: lines, spike markers, a reference and the difference, rendered to PNG (Agg)."""

from __future__ import annotations

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from jaxlean.errors import ConfigError  # noqa: E402
from jaxlean.models.neuron import Cell, Stimulus, simulate, step_current  # noqa: E402
from jaxlean.models.neuron.plot import crossings, spike_times, traces  # noqa: E402


def test_traces_beside_a_reference_and_their_difference(tmp_path):
    t = np.linspace(0.0, 10.0, 401)
    ours = np.stack([np.sin(t), 20 * np.sin(3 * t)], axis=1)
    t_ref = np.linspace(0.0, 10.0, 201)                      # another sampling: interpolated
    ref = np.stack([np.sin(t_ref), 20 * np.sin(3 * t_ref)], axis=1) + 0.01
    drawn = traces(t, ours, labels=["soma", "tip"], reference=(t_ref, ref), threshold=10.0)
    drawn.figure.savefig(tmp_path / "traces.png", dpi=60)
    assert (tmp_path / "traces.png").stat().st_size > 1000
    assert len(drawn.lines) == len(drawn.reference_lines) == len(drawn.difference_lines) == 2
    np.testing.assert_array_equal(drawn.lines[1].get_ydata(), ours[:, 1])
    np.testing.assert_array_equal(drawn.reference_lines[0].get_xdata(), t_ref)
    expected = ours[:, 1] - np.interp(t, t_ref, ref[:, 1])
    np.testing.assert_allclose(drawn.difference_lines[1].get_ydata(), expected)
    assert drawn.difference_ax is not None and drawn.difference_ax is not drawn.ax
    assert drawn.difference_ax.get_ylabel() == "jaxlean - NEURON (mV)"
    # 20 sin(3t) crosses 10 upward where 3t = pi/6 + 2 pi k: first sample at or above it
    first = t[1:][(ours[:-1, 1] < 10.0) & (ours[1:, 1] >= 10.0)]
    assert first.size == 5 and abs(first[0] - np.pi / 18) < 0.025
    np.testing.assert_array_equal(drawn.spikes[1], first)
    assert drawn.spikes[0].size == 0 and list(drawn.spike_markers) == [1]
    np.testing.assert_array_equal(drawn.spike_markers[1].get_xdata(), first)
    legend = [text.get_text() for text in drawn.ax.get_legend().get_texts()]
    assert legend == ["NEURON soma", "jaxlean soma", "NEURON tip", "jaxlean tip"]
    matplotlib.pyplot.close("all")


def test_spikes_of_a_run_are_marked_on_its_trace(tmp_path):
    cell = Cell.from_parents([-1, 0], [20.0, 100.0], [10.0, 0.5])   # hh everywhere
    dt, t_max = 0.025, 20.0
    out = simulate(cell, cell.params(), [Stimulus(0, step_current(0.3, 1.0, 15.0, dt, t_max))],
                   dt, t_max, record=[0, 1], detect=[0, 1], threshold=0.0, progress=False)
    times = spike_times(out)
    assert len(times) == 2 and times[0].size >= 2
    drawn = traces(out["t"], out["v"], spikes=times, labels=["soma", "dend"])
    drawn.figure.savefig(tmp_path / "run.png", dpi=60)
    assert drawn.difference_ax is None and drawn.reference_lines == []
    np.testing.assert_allclose(drawn.spike_markers[0].get_xdata(), times[0])
    # simulate's detector and the drawn trace's crossings agree, to the step
    np.testing.assert_allclose(crossings(out["t"], out["v"][:, 0], 0.0)[0], times[0],
                               atol=dt + 1e-6)
    matplotlib.pyplot.close("all")


def test_bad_shapes_are_refused_by_name():
    t = np.arange(5.0)
    with pytest.raises(ConfigError, match="with 5 samples"):
        traces(t, np.zeros((4, 2)))
    with pytest.raises(ConfigError, match="1 labels for 2 sites"):
        traces(t, np.zeros((5, 2)), labels=["a"])
    with pytest.raises(ConfigError, match="spikes or threshold"):
        traces(t, np.zeros(5), spikes=[[1.0]], threshold=0.0)
    with pytest.raises(ConfigError, match="reference has 1 sites, v 2"):
        traces(t, np.zeros((5, 2)), reference=(t, np.zeros(5)))
    with pytest.raises(ConfigError, match="detect"):
        spike_times({"v": np.zeros(3)})
    matplotlib.pyplot.close("all")
