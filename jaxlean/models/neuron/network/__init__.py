"""Networks: cells joined by synapses and gap junctions, simulated as one forest.

* :mod:`~jaxlean.models.neuron.network.network`: ``Network``, ``Connection``.
* :mod:`~jaxlean.models.neuron.network.network_events`: ``SpikingSynapse`` (NEURON's
  ``NetCon``): a presynaptic threshold crossing reaches the postsynaptic mechanism's
  ``NET_RECEIVE`` after its delay, inside the scan.
* :mod:`~jaxlean.models.neuron.network.graded`: graded (voltage-driven) synapses;
  :mod:`~jaxlean.models.neuron.network.gap_junctions`: ohmic coupling.
* :mod:`~jaxlean.models.neuron.network.network_sim`: ``simulate_network``; ``_forest``: the
  cells as one tree with many roots; ``_cell_types``: cells grouped by type, parameters stacked.
* :mod:`~jaxlean.models.neuron.network.sharded`: ``simulate_network_sharded``, the cells
  split over the devices of a mesh axis (``_shard_plan``: the layout; ``_across``: what
  crosses devices).
"""

from __future__ import annotations

from jaxlean.models.neuron.network import (
    gap_junctions,
    graded,
    network_events,
    network_sim,
    sharded,
)
from jaxlean.models.neuron.network.gap_junctions import GapJunction, gap_junction
from jaxlean.models.neuron.network.graded import GradedSynapse, ionotropic
from jaxlean.models.neuron.network.network import Connection, Network, check_synapse_params
from jaxlean.models.neuron.network.network_events import SpikingSynapse, spiking
from jaxlean.models.neuron.network.network_sim import simulate_network
from jaxlean.models.neuron.network.sharded import simulate_network_sharded

__all__ = ["Connection", "GapJunction", "GradedSynapse", "Network", "SpikingSynapse",
           "check_synapse_params", "gap_junction", "gap_junctions", "graded", "ionotropic",
           "network_events", "network_sim", "sharded", "simulate_network",
           "simulate_network_sharded", "spiking"]
