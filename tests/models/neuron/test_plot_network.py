"""``plot.raster`` and ``plot.connections`` on a 3-cell network, rendered to PNG (Agg)."""

from __future__ import annotations

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from jaxlean.errors import ConfigError  # noqa: E402
from jaxlean.models.neuron import (  # noqa: E402
    Cell,
    Network,
    Stimulus,
    expsyn,
    hh,
    pas,
    simulate_network,
    step_current,
)
from jaxlean.models.neuron.plot import connection_matrix, connections, raster  # noqa: E402


def ball_and_stick() -> Cell:
    cell = Cell.from_parents([-1, 0, 1], [20.0, 50.0, 50.0], [10.0, 1.0, 1.0])
    return cell.insert(hh, compartments=[0]).insert(pas, compartments=[1, 2])


@pytest.fixture(scope="module")
def net() -> Network:
    net = Network([ball_and_stick() for _ in range(3)])
    net = net.connect_spiking((0, 0), (1, 2), expsyn, weight=0.1, delay=2.0, threshold=-20.0)
    net = net.connect_spiking((1, 0), (2, 2), expsyn, weight=0.05, delay=1.5, threshold=-20.0)
    net = net.connect_spiking((0, 0), (2, 1), expsyn, weight=0.01, delay=1.0, threshold=-20.0)
    net = net.connect((2, 0), (0, 1), gS=1e-3)                      # graded
    return net.connect_gap((1, 0), (2, 0), g=1e-4)


def test_the_connection_matrix_counts_and_sums(net, tmp_path):
    np.testing.assert_array_equal(connection_matrix(net), [[0, 1, 1], [0, 0, 2], [1, 1, 0]])
    weights = connection_matrix(net, value="weight", synapses=["expsyn"])
    np.testing.assert_allclose(weights, [[0, 0.1, 0.01], [0, 0, 0.05], [0, 0, 0]])
    params = net.params()
    params["synapses"]["expsyn"]["weight"] = params["synapses"]["expsyn"]["weight"] * 2
    np.testing.assert_allclose(connection_matrix(net, params, "weight", ["expsyn"]), 2 * weights)
    drawn = connections(net, value="weight", synapses=["expsyn"])
    drawn.figure.savefig(tmp_path / "matrix.png", dpi=60)
    assert (tmp_path / "matrix.png").stat().st_size > 1000
    np.testing.assert_allclose(drawn.image.get_array(), weights)
    assert sorted(text.get_text() for text in drawn.texts) == ["0.01", "0.05", "0.1"]
    assert drawn.colorbar.ax.get_ylabel() == "weight"
    with pytest.raises(ConfigError, match="has no parameter 'weight'"):
        connection_matrix(net, value="weight")           # the graded synapse has gS
    with pytest.raises(ConfigError, match="no synapse named"):
        connection_matrix(net, synapses=["ampa"])
    matplotlib.pyplot.close("all")


def test_the_raster_shows_each_cells_spikes(net, tmp_path):
    dt, t_max = 0.025, 30.0
    stimuli = [Stimulus(net.index(0, 0), step_current(0.3, 2.0, 25.0, dt, t_max))]
    out = simulate_network(net, net.params(), stimuli, dt, t_max, record=[(0, 0)],
                           detect=[(c, 0) for c in range(3)], threshold=-20.0, progress=False)
    counts = np.asarray(out["spike_count"])
    assert (counts >= 1).all(), counts              # the spikes go round
    drawn = raster(out, labels=["cell 0", "cell 1", "cell 2"], t_max=t_max)
    drawn.figure.savefig(tmp_path / "raster.png", dpi=60)
    assert len(drawn.events) == 3
    for c, events in enumerate(drawn.events):
        expected = np.asarray(out["spikes"])[c, :counts[c]]
        np.testing.assert_allclose(np.sort(events.get_positions()), expected)
        assert events.get_lineoffset() == c
    assert [t.get_text() for t in drawn.ax.get_yticklabels()] == ["cell 0", "cell 1", "cell 2"]
    assert drawn.ax.get_xlim() == (0.0, t_max)
    plain = raster([[1.0, 2.0], []])
    assert [e.get_positions() for e in plain.events] == [[1.0, 2.0], []]
    with pytest.raises(ConfigError, match="1 labels for 2 rows"):
        raster([[1.0], [2.0]], labels=["a"])
    matplotlib.pyplot.close("all")
