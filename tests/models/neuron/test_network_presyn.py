"""NetCons from one source share one threshold, as NEURON's ``PreSyn`` does: two spiking
connections from the same compartment with different thresholds are refused, when the
network is built and when parameters given to a run differ."""

from __future__ import annotations

import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.mechanisms.channels import hh
from jaxlean.models.neuron.mechanisms.synapses import exp2syn, expsyn
from jaxlean.models.neuron.network.network import Network, check_synapse_params
from jaxlean.models.neuron.simulation.cable import Cell


@pytest.fixture(scope="module")
def net():
    cell = Cell.from_parents(np.array([-1, 0]), [20.0, 50.0], [10.0, 1.0]).insert(hh)
    return Network([cell] * 3)


def test_two_netcons_from_one_source_with_different_thresholds_are_refused(net):
    one = net.connect_spiking((0, 0), (1, 1), expsyn, weight=0.01, threshold=-20.0)
    with pytest.raises(ConfigError, match=r"connection 1 .*threshold -10.0 mV.*connection 0 "
                                          r".*-20.0 mV.*share one threshold \(its PreSyn\)"):
        one.connect_spiking((0, 0), (2, 1), exp2syn, weight=0.01, threshold=-10.0)
    with pytest.raises(ConfigError, match="PreSyn"):  # within one connect_many call too
        net.connect_many([(0, 0), (0, 0)], [(1, 1), (2, 1)], _spiking(), weight=0.01,
                         threshold=[-20.0, -10.0])


def test_one_threshold_per_source_is_accepted_and_sources_differ_freely(net):
    both = (net.connect_spiking((0, 0), (1, 1), expsyn, weight=0.01, threshold=-20.0)
            .connect_spiking((0, 0), (2, 1), exp2syn, weight=0.02, threshold=-20.0)
            .connect_spiking((1, 0), (2, 0), expsyn, weight=0.01, threshold=5.0)
            .connect_spiking((0, 1), (2, 0), expsyn, weight=0.01, threshold=0.0))
    check_synapse_params(both, both.params()["synapses"])
    assert len(both.connections) == 4


def test_parameters_that_split_a_source_threshold_are_refused_before_a_run(net):
    both = (net.connect_spiking((0, 0), (1, 1), expsyn, weight=0.01, threshold=-20.0)
            .connect_spiking((0, 0), (2, 1), expsyn, weight=0.01, threshold=-20.0))
    synapses = both.params()["synapses"]
    synapses["expsyn"]["threshold"] = np.array([-20.0, 0.0])
    with pytest.raises(ConfigError, match=r"connection 1 .*same compartment"):
        check_synapse_params(both, synapses)


def _spiking():
    from jaxlean.models.neuron.network.network_events import SpikingSynapse
    return SpikingSynapse(expsyn)
