"""Where each cell, connection and site of a network goes when its cells are split over devices.

Every device runs the same program (SPMD), so every device holds the same *local forest*:
``m_t = ceil(n_t / D)`` cells of each cell type ``t`` (``n_t`` cells of the type, ``D``
devices), type after type. The ``j``-th cell of type ``t`` goes to device ``j // m_t``, slot
``j % m_t`` of the type; slots left over hold *ghost* cells (copies of the type's last cell,
unconnected, unstimulated, unrecorded) which change nothing. A connection lives on its
postsynaptic cell's device; each device's connections of a synapse type are padded to one
count (padding: connection 0's values into local compartment 0, its conductance masked to
exactly 0); a gap junction is its two directions, each a connection into its own side. A
synapse type's *sources* are the local compartments some connection of the type starts at on
some device (the same list on every device): what is exchanged, never a cell's whole state.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from jaxlean.models.neuron.network._cell_types import cell_types
from jaxlean.models.neuron.network._forest import offsets
from jaxlean.models.neuron.network.gap_junctions import GapJunction
from jaxlean.models.neuron.network.network import Network

__all__ = ["ShardPlan", "SynapseShards"]


@dataclasses.dataclass(frozen=True)
class SynapseShards:
    """One synapse type's connections laid out per device.

    ``conn[d, i]``: the number (within the type's group) of device ``d``'s ``i``-th incoming
    connection, ``-1`` for padding; ``post[d, i]`` its local compartment; ``source[d, i]`` its
    presynaptic compartment's place in the gathered sources (``device * len(sources) +
    position``); ``sources``: the local compartments gathered."""

    conn: np.ndarray
    post: np.ndarray
    source: np.ndarray
    sources: np.ndarray


@dataclasses.dataclass(frozen=True, eq=False)
class ShardPlan:
    """The layout of ``net`` over ``devices`` devices (module docstring)."""

    net: Network
    devices: int
    per_type: tuple[int, ...]
    local_cells: tuple
    device_of_cell: np.ndarray
    slot_of_cell: np.ndarray
    synapses: dict

    @classmethod
    def of(cls, net: Network, devices: int) -> ShardPlan:
        types = cell_types(net.cells)
        per_type = tuple(math.ceil(ix.size / devices) for _, ix in types)
        local_cells = tuple(cell for (cell, _), m in zip(types, per_type, strict=True)
                            for _ in range(m))
        device = np.zeros(len(net.cells), np.int64)
        slot = np.zeros(len(net.cells), np.int64)
        first = np.concatenate([[0], np.cumsum(per_type)])
        for t, (_, ix) in enumerate(types):
            j = np.arange(ix.size)
            device[ix], slot[ix] = j // per_type[t], first[t] + j % per_type[t]
        plan = cls(net, devices, per_type, local_cells, device, slot, {})
        for name, (syn, ix) in net.synapse_groups().items():
            plan.synapses[name] = plan._synapse(ix, isinstance(syn, GapJunction))
        return plan

    @property
    def local_offsets(self) -> np.ndarray:
        return offsets(self.local_cells)

    def site(self, compartment: int) -> tuple[int, int]:
        """The network's compartment number -> ``(device, local compartment)``."""
        whole = offsets(self.net.cells)
        cell = int(np.searchsorted(whole, compartment, side="right") - 1)
        local = self.local_offsets[self.slot_of_cell[cell]] + compartment - whole[cell]
        return int(self.device_of_cell[cell]), int(local)

    def _end(self, cell: int, compartment: int) -> tuple[int, int]:
        local = self.local_offsets[self.slot_of_cell[cell]] + compartment
        return int(self.device_of_cell[cell]), int(local)

    def _synapse(self, ix: np.ndarray, both_ways: bool) -> SynapseShards:
        """``both_ways`` (gap junctions): each junction as its two directions, ``a -> b``
        numbered as the junction, ``b -> a`` after all of them (``GapJunction.directed``)."""
        conns = [self.net.connections[int(i)] for i in ix]
        pre = [self._end(c.pre_cell, c.pre) for c in conns]
        post = [self._end(c.post_cell, c.post) for c in conns]
        if both_ways:
            pre, post = pre + post, post + pre
        sources = np.unique(np.asarray([local for _, local in pre], np.int64))
        incoming = [[i for i, (d, _) in enumerate(post) if d == dev]
                    for dev in range(self.devices)]
        width = max(1, max(len(rows) for rows in incoming))
        conn = np.full((self.devices, width), -1, np.int64)
        post_ix = np.zeros((self.devices, width), np.int64)
        source = np.zeros((self.devices, width), np.int64)
        for dev, rows in enumerate(incoming):
            for i, r in enumerate(rows):
                conn[dev, i], post_ix[dev, i] = r, post[r][1]
                d, local = pre[r]
                source[dev, i] = d * sources.size + int(np.searchsorted(sources, local))
        return SynapseShards(conn, post_ix, source, sources)

    def sites(self, compartments: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """The local compartments every device reads for ``compartments`` (their union, the
        same on every device), and where each of ``compartments`` lands in the devices'
        concatenated reads (``device * len(union) + position``)."""
        placed = [self.site(c) for c in compartments]
        union = np.unique(np.asarray([local for _, local in placed] or [0], np.int64))
        where = np.asarray([d * union.size + int(np.searchsorted(union, local))
                            for d, local in placed], np.int64)
        return union, where
