"""Networks of cells joined by synapses and gap junctions, simulated as one program.

A :class:`Network` holds cells (any morphologies and mechanisms) and connections, each
from a presynaptic compartment to a postsynaptic one through one of three kinds:

* a :class:`~jaxlean.models.neuron.network.graded.GradedSynapse` (jaxley's ``IonotropicSynapse`` by
  default): its conductance follows the presynaptic voltage;
* a :class:`~jaxlean.models.neuron.network.network_events.SpikingSynapse` (NEURON's ``NetCon`` into
  ``ExpSyn``/``Exp2Syn``): threshold crossings at the presynaptic compartment, delivered
  after ``delay`` with ``weight`` (:meth:`Network.connect_spiking`);
* a :class:`~jaxlean.models.neuron.network.gap_junctions.GapJunction`: ohmic coupling of the two
  compartments (:meth:`Network.connect_gap`).

Build it as cells are built, each call returning a new network::

    net = Network([cell_a, cell_b, cell_c])
    net = net.connect((0, ("dend[2]", 1.0)), (1, 0), gS=0.02)
    net = net.connect_random([0, 1], [2], p=0.5, seed=0)
    net = net.connect_spiking((2, 0), (0, 0), expsyn, weight=0.01, delay=2.0)

A location is a compartment index or ``(section, x)`` (:meth:`Cell.location`).
:meth:`Network.params` gives one pytree, ``{"cells": [each cell's params], "synapses":
{synapse name: {parameter: one value per connection}}}``, every leaf trainable
(:meth:`Network.stacked_params`: the cells' values stacked per cell type); simulate it
with :func:`~jaxlean.models.neuron.network.network_sim.simulate_network`. Connections are numbered
in the order they were made; errors name a connection by that number and its endpoints.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping, Sequence

import jax
import numpy as np

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.cell.cell import Cell
from jaxlean.models.neuron.mechanisms.mechanisms import Mechanism
from jaxlean.models.neuron.network._cell_types import cell_types, stack
from jaxlean.models.neuron.network._forest import offsets
from jaxlean.models.neuron.network._presyn import check_shared_thresholds, concrete_thresholds
from jaxlean.models.neuron.network.gap_junctions import GapJunction, gap_junction
from jaxlean.models.neuron.network.graded import GradedSynapse, ionotropic
from jaxlean.models.neuron.network.network_events import SpikingSynapse

__all__ = ["Connection", "Network", "Synapse", "check_synapse_params"]

Location = int | tuple[int | str, float]
Synapse = GradedSynapse | SpikingSynapse | GapJunction
"""What a connection goes through: graded, spike-triggered, or a gap junction."""


@dataclasses.dataclass(frozen=True)
class Connection:
    """One synapse: from ``pre_cell``'s compartment ``pre`` to ``post_cell``'s ``post``;
    ``values`` its parameters that differ from the synapse's defaults."""

    pre_cell: int
    pre: int
    post_cell: int
    post: int
    synapse: Synapse
    values: tuple[tuple[str, float], ...] = ()

    def describe(self, index: int) -> str:
        arrow = "<->" if isinstance(self.synapse, GapJunction) else "->"
        return (f"connection {index} (cell {self.pre_cell} compartment {self.pre} {arrow} cell "
                f"{self.post_cell} compartment {self.post}, {self.synapse.name})")


@dataclasses.dataclass(frozen=True, eq=False)
class Network:
    """Cells and the connections between them (see the module's docstring)."""

    cells: tuple[Cell, ...]
    connections: tuple[Connection, ...] = ()

    def __post_init__(self):
        cells = tuple(self.cells)
        if not cells or not all(isinstance(c, Cell) for c in cells):
            raise ConfigError(f"Network(cells=...) must be a non-empty sequence of Cell; got "
                              f"{[type(c).__name__ for c in cells] or 'none'}")
        object.__setattr__(self, "cells", cells)

    @property
    def n(self) -> int:
        """Number of compartments of all cells."""
        return int(offsets(self.cells)[-1])

    def index(self, cell: int, where: Location = 0) -> int:
        """The forest's number of ``cell``'s compartment ``where`` (an index or
        ``(section, x)``): what ``record`` and ``Stimulus`` take in a network."""
        return int(offsets(self.cells)[self._cell(cell, "cell")]) + self._where(cell, where,
                                                                                "where")

    def _cell(self, cell: object, what: str) -> int:
        if (isinstance(cell, bool) or not isinstance(cell, numbers.Integral)
                or not 0 <= cell < len(self.cells)):
            raise ConfigError(f"{what}: cell {cell!r} does not exist; the network has cells "
                              f"0 to {len(self.cells) - 1}")
        return int(cell)

    def _where(self, cell: int, where: object, what: str) -> int:
        target = self.cells[cell]
        if isinstance(where, tuple) and len(where) == 2:
            try:
                return target.location(*where)
            except ConfigError as error:
                raise ConfigError(f"{what}: {error}") from None
        if (isinstance(where, bool) or not isinstance(where, numbers.Integral)
                or not 0 <= where < target.n):
            raise ConfigError(f"{what}: cell {cell} has no compartment {where!r}; it has "
                              f"compartments 0 to {target.n - 1} (or give (section, x))")
        return int(where)

    def connect(self, pre: tuple[int, Location], post: tuple[int, Location],
                synapse: Synapse = ionotropic, **values: float) -> Network:
        """This network with one more connection from ``pre`` to ``post``, each ``(cell,
        location)``; ``values`` set its parameters (``gS=0.02``), the others default.

        Raises:
          ConfigError: a cell or compartment that does not exist, an unknown parameter, a
            value that is not finite or a delay not above 0 (``simulate_network`` checks
            delay >= dt), named with the connection's number and endpoints.
        """
        return self.connect_many([pre], [post], synapse, **values)

    def connect_spiking(self, pre: tuple[int, Location], post: tuple[int, Location],
                        synapse: Mechanism | SpikingSynapse, *, weight: float,
                        delay: float = 1.0, threshold: float = 10.0,
                        **values: float) -> Network:
        """A ``NetCon`` from ``pre``'s threshold crossings into a new instance of the point
        ``synapse`` (``expsyn``, ``exp2syn``, or a :class:`SpikingSynapse`) at ``post``:
        ``weight`` (uS) added at each arrival, ``delay`` (ms, >= dt), ``threshold`` (mV);
        ``values`` set the mechanism's own parameters (``tau_expsyn=2.0``).

        A method of its own (not ``connect``'s keywords) because a ``NetCon`` always
        takes these three values, and its weight replaces the mechanism's own
        ``weight_<name>`` parameter: a spiking connection's parameters are
        ``weight``, ``delay``, ``threshold`` and the mechanism's others.
        """
        if isinstance(synapse, Mechanism):
            synapse = SpikingSynapse(synapse)
        return self.connect(pre, post, synapse, weight=weight, delay=delay,
                            threshold=threshold, **values)

    def connect_gap(self, a: tuple[int, Location], b: tuple[int, Location], g: float,
                    junction: GapJunction = gap_junction) -> Network:
        """A gap junction of ``g`` uS between compartments ``a`` and ``b``."""
        return self.connect(a, b, junction, g=g)

    def connect_many(self, pre: Sequence[tuple[int, Location]],
                     post: Sequence[tuple[int, Location]], synapse: Synapse = ionotropic,
                     **values: float | Sequence[float]) -> Network:
        """Connections ``pre[i] -> post[i]``; each of ``values`` a number for all or one per
        connection."""
        pre, post = list(pre), list(post)
        if len(pre) != len(post):
            raise ConfigError(f"connect: pre and post must have the same length; got "
                              f"{len(pre)} and {len(post)}")
        if isinstance(synapse, Mechanism):
            raise ConfigError(f"connect: synapse {synapse.name!r} is a mechanism; connect "
                              f"it with connect_spiking(pre, post, {synapse.name}, weight=...)"
                              f" or pass SpikingSynapse({synapse.name})")
        if not isinstance(synapse, GradedSynapse | SpikingSynapse | GapJunction):
            raise ConfigError(f"connect: synapse must be a GradedSynapse (e.g. graded."
                              f"ionotropic), a SpikingSynapse or a GapJunction; got "
                              f"{type(synapse).__name__}")
        for other in self.connections:
            if other.synapse.name == synapse.name and other.synapse != synapse:
                raise ConfigError(f"connect: a different synapse named {synapse.name!r} is "
                                  f"already connected; give this one another name")
        defaults = synapse.defaults()
        unknown = sorted(set(values) - set(defaults))
        if unknown:
            raise ConfigError(f"connect: unknown parameter(s) {unknown} of {synapse.name!r}; "
                              f"it has {sorted(defaults)}")
        columns = {}
        for name, value in values.items():
            column = np.broadcast_to(np.asarray(value, dtype=float), (len(pre),)) if np.ndim(
                value) == 0 else np.asarray(value, dtype=float)
            if column.shape != (len(pre),):
                raise ConfigError(f"connect: {name} must be a number or one per connection "
                                  f"({len(pre)}); got shape {column.shape}")
            columns[name] = column
        made = []
        for i, (a, b) in enumerate(zip(pre, post, strict=True)):
            index = len(self.connections) + i
            made.append(self._connection(index, a, b, synapse, {
                name: float(column[i]) for name, column in columns.items()}))
        network = dataclasses.replace(self, connections=self.connections + tuple(made))
        if isinstance(synapse, SpikingSynapse):  # each connection's own or default value
            network._check_thresholds({k: dict(c.values).get(
                "threshold", c.synapse.defaults()["threshold"])
                for k, c in enumerate(network.connections)
                if isinstance(c.synapse, SpikingSynapse)})
        return network

    def _check_thresholds(self, thresholds: dict[int, float] | None) -> None:
        """Spiking connections from one compartment share one threshold, as NEURON's
        ``PreSyn`` does (``_presyn.py``); ``None`` (under a transformation) skips it."""
        if thresholds is not None:
            c = self.connections
            check_shared_thresholds(
                ((k, (c[k].pre_cell, c[k].pre), thresholds[k]) for k in sorted(thresholds)),
                lambda k: c[k].describe(k))

    def _connection(self, index: int, pre: object, post: object, synapse: Synapse,
                    values: dict[str, float]) -> Connection:
        ends = []
        for side, end in (("pre", pre), ("post", post)):
            what = f"connection {index} ({side} {end!r})"
            if not isinstance(end, tuple) or len(end) != 2:
                raise ConfigError(f"{what}: give (cell, compartment or (section, x))")
            cell = self._cell(end[0], what)
            ends += [cell, self._where(cell, end[1], what)]
        made = Connection(*ends, synapse, tuple(sorted(values.items())))
        for name, value in values.items():
            if not math.isfinite(value):
                raise ConfigError(f"{made.describe(index)}: {name} must be finite; got {value}")
        if isinstance(synapse, SpikingSynapse) and not values.get("delay", 1.0) > 0:
            raise ConfigError(f"{made.describe(index)}: delay must be > 0 ms (and >= dt); got "
                              f"{values['delay']}")
        if isinstance(synapse, GapJunction) and ends[:2] == ends[2:]:
            raise ConfigError(f"{made.describe(index)}: a gap junction joins two different "
                              f"compartments")
        return made

    def fully_connect(self, pre_cells: Sequence[int], post_cells: Sequence[int],
                      synapse: Synapse = ionotropic, pre_where: Location = 0,
                      post_where: Location = 0, **values: float) -> Network:
        """Every cell of ``pre_cells`` to every cell of ``post_cells`` (none to itself), from
        ``pre_where`` to ``post_where`` (default: compartment 0, the root)."""
        matrix = np.ones((len(pre_cells), len(post_cells)), dtype=bool)
        return self.connect_matrix(matrix, pre_cells, post_cells, synapse, pre_where,
                                   post_where, **values)

    def connect_random(self, pre_cells: Sequence[int], post_cells: Sequence[int], p: float,
                       seed: int, synapse: Synapse = ionotropic, pre_where: Location = 0,
                       post_where: Location = 0, **values: float) -> Network:
        """Each pair (none to itself) connected with probability ``p``, drawn from NumPy's
        generator seeded with ``seed`` (the same seed, the same connections)."""
        if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p <= 1:
            raise ConfigError(f"connect_random: p must be a probability in [0, 1]; got {p!r}")
        rng = np.random.default_rng(seed)
        matrix = rng.random((len(pre_cells), len(post_cells))) < p
        return self.connect_matrix(matrix, pre_cells, post_cells, synapse, pre_where,
                                   post_where, **values)

    def connect_matrix(self, matrix: object, pre_cells: Sequence[int] | None = None,
                       post_cells: Sequence[int] | None = None,
                       synapse: Synapse = ionotropic, pre_where: Location = 0,
                       post_where: Location = 0, weights: str | None = None,
                       **values: float) -> Network:
        """A connection wherever ``matrix[i, j]`` is true (nonzero), from ``pre_cells[i]`` to
        ``post_cells[j]`` (default: all cells), in row-major order; the diagonal's pairs of a
        cell with itself are skipped. ``weights``: the parameter that the matrix's entries
        give each connection (``"weight"`` of a spiking synapse, ``"gS"``, ``"g"``); None:
        the matrix only says which pairs connect."""
        pre_cells = list(range(len(self.cells))) if pre_cells is None else list(pre_cells)
        post_cells = list(range(len(self.cells))) if post_cells is None else list(post_cells)
        matrix = np.asarray(matrix)
        if matrix.shape != (len(pre_cells), len(post_cells)):
            raise ConfigError(f"connect_matrix: matrix must have shape (len(pre_cells), "
                              f"len(post_cells)) = {(len(pre_cells), len(post_cells))}; got "
                              f"{matrix.shape}")
        pairs = [(a, b, i, j) for i, a in enumerate(pre_cells)
                 for j, b in enumerate(post_cells) if matrix[i, j] and a != b]
        if weights is not None:
            if weights in values:
                raise ConfigError(f"connect_matrix: {weights!r} is given both by the matrix "
                                  f"(weights={weights!r}) and as a keyword")
            values = {**values, weights: [float(matrix[i, j]) for _, _, i, j in pairs]}
        return self.connect_many([(a, pre_where) for a, *_ in pairs],
                                 [(b, post_where) for _, b, *_ in pairs], synapse, **values)

    def synapse_groups(self) -> dict[str, tuple[Synapse, np.ndarray]]:
        """``{synapse name: (synapse, the numbers of its connections)}``, in order."""
        groups: dict[str, list] = {}
        for index, c in enumerate(self.connections):
            groups.setdefault(c.synapse.name, [c.synapse, []])[1].append(index)
        return {name: (syn, np.asarray(ix)) for name, (syn, ix) in groups.items()}

    def params(self) -> dict:
        """Default parameters: ``{"cells": [cell.params() each], "synapses": {name:
        {parameter: one value per connection}}}`` (each connection's own values, float64 NumPy
        arrays: a run in float64 gets them as given, not rounded to float32 first)."""
        synapses = {}
        for name, (syn, ix) in self.synapse_groups().items():
            given = [dict(self.connections[i].values) for i in ix]
            synapses[name] = {p: np.asarray([g.get(p, d) for g in given], dtype=np.float64)
                              for p, d in syn.defaults().items()}
        return {"cells": [cell.params() for cell in self.cells], "synapses": synapses}

    def endpoints(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Pre and post compartments (the forest's numbers) of synapse ``name``'s connections."""
        first = offsets(self.cells)
        ix = self.synapse_groups()[name][1]
        pre = np.asarray([first[self.connections[i].pre_cell] + self.connections[i].pre
                          for i in ix], dtype=np.int64)
        post = np.asarray([first[self.connections[i].post_cell] + self.connections[i].post
                           for i in ix], dtype=np.int64)
        return pre, post

    def stacked_params(self) -> dict:
        """:meth:`params` with ``"types"`` in place of ``"cells"``: one dict per cell type
        (cells given as the same :class:`Cell` object), each leaf stacked over the type's
        cells (``params["types"][t][name][j]``: the type's ``j``-th cell's value). The same
        simulation as the per-cell list, in a program whose size and compile time do not
        grow with the number of cells."""
        base = self.params()
        types = cell_types(self.cells)
        return {"types": stack(types, base.pop("cells")), **base}


def check_synapse_params(net: Network, synapses: Mapping) -> None:
    """``params["synapses"]`` must name each synapse type and parameter, one value (or a
    scalar) per connection, finite where concrete; errors name the connection."""
    groups = net.synapse_groups()
    if not isinstance(synapses, Mapping) or set(synapses) != set(groups):
        raise ConfigError(f"params['synapses'] must have the synapse types {sorted(groups)}; "
                          f"got {sorted(synapses) if isinstance(synapses, Mapping) else synapses}"
                          f": start from net.params()")
    for name, (syn, ix) in groups.items():
        given = synapses[name]
        if not isinstance(given, Mapping) or set(given) != set(syn.defaults()):
            raise ConfigError(f"params['synapses'][{name!r}] must have {sorted(syn.defaults())}"
                              f"; got {sorted(given) if isinstance(given, Mapping) else given}")
        for p, value in given.items():
            if np.shape(value) not in ((), (ix.size,)):
                raise ConfigError(f"params['synapses'][{name!r}][{p!r}] must be a scalar or "
                                  f"one value per connection ({ix.size},); got shape "
                                  f"{np.shape(value)}")
            if isinstance(value, jax.core.Tracer):
                continue
            bad = np.flatnonzero(~np.isfinite(np.broadcast_to(np.asarray(value), (ix.size,))))
            if bad.size:
                k = int(ix[bad[0]])
                raise ConfigError(f"params['synapses'][{name!r}][{p!r}] of "
                                  f"{net.connections[k].describe(k)} must be finite; got "
                                  f"{np.broadcast_to(np.asarray(value), (ix.size,))[bad[0]]}")
    net._check_thresholds(concrete_thresholds(synapses, {
        name: group for name, group in groups.items() if isinstance(group[0], SpikingSynapse)}))
