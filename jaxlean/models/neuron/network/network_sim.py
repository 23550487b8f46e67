"""``simulate_network``: a :class:`~jaxlean.models.neuron.network.network.Network` as one program.

The cells' compartments form one forest (:mod:`~jaxlean.models.neuron.network._forest`): every
step solves all cells in one tree sweep, the mechanisms of all cells run per compartment
as in :func:`~jaxlean.models.neuron.simulation.cable.simulate`, and each graded synapse adds its
conductance at its postsynaptic compartment to that step's implicit system, its state
advancing after the solve at the new presynaptic voltage. Spike-triggered connections
(:mod:`~jaxlean.models.neuron.network.network_events`) and gap junctions
(:mod:`~jaxlean.models.neuron.network.gap_junctions`) enter the same way: a conductance and reversal
per connection at its postsynaptic compartment, states advanced after the solve (threshold
crossings, events in flight in a ring buffer of the carry, the other side's voltage).
Compiled once per network structure and options; parameters, stimuli and initial state
are arguments (differentiable, ``vmap``-able: a batch of inputs is a ``vmap`` over the
stimuli's currents). Cells given as one :class:`Cell` object are one type, their parameters
laid out together (:mod:`~jaxlean.models.neuron.network._cell_types`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import jax
import numpy as np

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.cell import params as parameters
from jaxlean.models.neuron.network._cell_types import cell_types, merged_stacked, stack
from jaxlean.models.neuron.network._forest import forest, merged_insertions
from jaxlean.models.neuron.network.network import Network, check_synapse_params
from jaxlean.models.neuron.simulation import _time, cable
from jaxlean.models.neuron.simulation import spikes as spikes_
from jaxlean.models.neuron.simulation._initial import initial_state
from jaxlean.models.neuron.simulation._program import Plan, loop
from jaxlean.models.neuron.simulation._time import Remat, segment_lengths

__all__ = ["default_remat", "simulate_network"]

Site = int | tuple[int, object]


def _sites(net: Network, where: object, what: str) -> list[int]:
    """Forest compartment numbers of ``where``: an int (the forest's number), ``(cell,
    location)`` or a sequence of those (a list or array of ints, or of pairs)."""
    pair = isinstance(where, tuple) and not (where and isinstance(where[0], tuple))
    if pair or isinstance(where, int | np.integer):
        items = [where]
    elif isinstance(where, np.ndarray | jax.Array):
        items = np.asarray(where).reshape(-1).tolist()
    else:
        items = list(where)
    out = []
    for item in items:
        if isinstance(item, tuple):
            if len(item) != 2:
                raise ConfigError(f"{what}: give (cell, compartment or (section, x)); got "
                                  f"{item!r}")
            try:
                out.append(net.index(item[0], item[1]))
            except ConfigError as error:
                raise ConfigError(f"{what}: {error}") from None
        elif isinstance(item, int | np.integer) and not isinstance(item, bool) and (
                0 <= item < net.n):
            out.append(int(item))
        else:
            raise ConfigError(f"{what}: {item!r} is not a compartment of the network (0 to "
                              f"{net.n - 1}, or (cell, location))")
    return out


def _network_stimuli(net: Network, stimuli: Sequence[cable.Stimulus]) -> list[cable.Stimulus]:
    """``stimuli`` with their places read as ``record`` reads them (a tuple is ``(cell,
    location)``, an int the forest's number), as the forest's numbers."""
    if isinstance(stimuli, cable.Stimulus):
        raise ConfigError("stimuli must be a list of Stimulus; got one Stimulus (wrap it in "
                          "[...])")
    return [cable.Stimulus(_sites(net, s.compartments, f"stimulus {i}"), s.current)
            for i, s in enumerate(stimuli)]


def _cell_values(net: Network, params: Mapping) -> tuple[list, list, list, bool]:
    """The cell types, their stacked parameters, each cell's insertions, and whether the
    values were checked (a per-cell list is checked cell by cell, then stacked)."""
    types = net.__dict__.get("_types")
    if types is None:
        types = net.__dict__.setdefault("_types", cell_types(net.cells))
    if "types" in params:
        values = list(params["types"])
        if len(values) != len(types):
            raise ConfigError(f"params['types'] must have one dict per cell type "
                              f"({len(types)}: cells given as the same Cell object are one "
                              f"type, see Network.stacked_params); got {len(values)}")
        own = [cell.insertions(v) for (cell, _), v in zip(types, values, strict=True)]
        kind = {int(i): t for t, (_, ix) in enumerate(types) for i in ix}
        return types, values, [own[kind[i]] for i in range(len(net.cells))], False
    cell_params = list(params["cells"])
    if len(cell_params) != len(net.cells):
        raise ConfigError(f"params['cells'] must have one dict per cell ({len(net.cells)}); "
                          f"got {len(cell_params)}")
    per_cell = [cell.insertions(p) for cell, p in zip(net.cells, cell_params, strict=True)]
    for k, (cell, p, own) in enumerate(zip(net.cells, cell_params, per_cell, strict=True)):
        try:
            parameters.check(cell, p, own)
        except ConfigError as error:
            raise ConfigError(f"params['cells'][{k}]: {error}") from None
    return types, stack(types, cell_params), per_cell, True


def _prepare(net: Network, params: Mapping):
    if not isinstance(params, Mapping) or set(params) not in ({"cells", "synapses"},
                                                              {"types", "synapses"}):
        got = sorted(map(str, params)) if isinstance(params, Mapping) else type(params).__name__
        raise ConfigError(f"params must be {{'cells': [...], 'synapses': {{...}}}} (or 'types' "
                          f"in place of 'cells'): start from net.params() or "
                          f"net.stacked_params(); got {got}")
    types, values, per_cell, checked = _cell_values(net, params)
    insertions = merged_insertions(net.cells, per_cell)
    key = tuple((ins.mechanism, None if ins.compartments is None else
                 tuple(ins.compartments.tolist())) for ins in insertions)
    cache = net.__dict__.setdefault("_forests", {})
    if key not in cache:
        cache[key] = forest(net.cells, insertions)
    whole = cache[key]
    merged = merged_stacked(net.cells, types, values, whole.mechanisms, checked,
                            "types" if "types" in params else "cells")
    check_synapse_params(net, params["synapses"])
    couplings = tuple((syn, *net.endpoints(name))
                      for name, (syn, _) in net.synapse_groups().items())
    synapse_params = {name: {p: cable._strong(v) for p, v in values.items()}
                      for name, values in params["synapses"].items()}
    return whole, {k: cable._strong(v) for k, v in merged.items()}, couplings, synapse_params


def _for_run(net: Network, couplings: tuple, synapse_params: dict, dt: float):
    """Each synapse type as the run uses it: a spiking synapse with its ring buffer sized
    for its delays at ``dt`` (checked: delay >= dt, named), a gap junction as its two
    directions; other types as they are."""
    out, values = [], dict(synapse_params)
    for syn, pre, post in couplings:
        p = values[syn.name]
        if hasattr(syn, "for_run"):
            ix = net.synapse_groups()[syn.name][1]
            delays = (np.asarray([dict(net.connections[i].values).get("delay", 1.0)
                                  for i in ix]) if isinstance(p["delay"], jax.core.Tracer)
                      else np.broadcast_to(np.asarray(p["delay"]), (ix.size,)))
            syn = syn.for_run(dt, delays, lambda i, ix=ix: net.connections[ix[i]].describe(
                int(ix[i])))
            if isinstance(p["delay"], jax.core.Tracer):
                p = {**p, "delay": syn.checked_delays(p["delay"])}
        if hasattr(syn, "directed"):
            pre, post, p = syn.directed(pre, post, p)
        out.append((syn, pre, post))
        values[syn.name] = p
    return tuple(out), values


def _planned(net: Network, params: Mapping, stimuli: Sequence[cable.Stimulus], dt: float,
             t_max: float, record, states, remat: Remat, progress: bool, every: int, detect,
             threshold: float, max_spikes: int) -> tuple[Plan, dict, jax.Array, dict]:
    """``simulate_network``'s checked options as its :class:`Plan`, with the merged cell
    parameters, the stimuli's currents and the synapses' values for the run."""
    steps = cable.n_steps(dt, t_max)
    whole, merged, couplings, synapse_params = _prepare(net, params)
    couplings, synapse_params = _for_run(net, couplings, synapse_params, float(dt))
    if not isinstance(every, int) or not 1 <= every <= steps:
        raise ConfigError(f"every must be an int in [1, {steps}] (the number of steps); "
                          f"got {every!r}")
    segment_lengths(remat, steps // every)
    targets, currents = cable._stimuli(whole, _network_stimuli(net, stimuli), steps)
    record = np.asarray(_sites(net, record, "record"), dtype=np.int64)
    none = np.zeros(0, dtype=np.int64)
    wanted = not (isinstance(detect, Sequence) and len(detect) == 0)
    detectors = spikes_.detectors(_sites(net, detect, "detect") if wanted else [],
                                  net.n, max_spikes)
    if detectors.size and not math.isfinite(threshold):
        raise ConfigError(f"threshold must be a finite number of mV; got {threshold}")
    plan = Plan(whole, whole.mechanisms, float(dt), steps, every,
                cable._sites(whole, whole.mechanisms, record, states, none), targets, none,
                detectors, float(threshold) if detectors.size else math.inf,
                max_spikes if detectors.size else 1, remat, bool(progress), couplings)
    return plan, merged, currents, synapse_params


def default_remat(net: Network, params: Mapping, dt: float, t_max: float, *,
                  detect: Site | Sequence[Site] = (), max_spikes: int = 100) -> Remat:
    """The ``remat`` that ``simulate_network(net, params, ..., dt, t_max)`` runs for
    ``remat=None`` (``every=1``, from the start): ``(T,)``, every step's whole state kept,
    when that fits :data:`~jaxlean.models.neuron.simulation._time.KEEP_STATES_BYTES`, else
    ``"segments"``. Only the loop's first state is traced (``jax.eval_shape``), never run;
    given traced ``params`` (inside a caller's ``jit`` or ``grad``), so is everything before
    it, and the caller's trace gains nothing."""

    def planned():
        return _planned(net, params, [], dt, t_max, 0, ("v",), None, False, 1, detect, 10.0,
                        max_spikes)

    def first_state(values):
        plan, merged, currents, synapse_params = values or planned()
        cell, insertions = cable._own_arrays(plan.cell, plan.insertions)  # as the run's trace
        plan = dataclasses.replace(plan, cell=cell, insertions=insertions)
        return loop(plan, merged, currents, cable._spike_inputs(insertions, None), {}, None,
                    synapse_params, start_only=True)

    traced = any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(params))
    values = None if traced else planned()  # concrete values read as the run reads them
    steps = cable.n_steps(dt, t_max)
    return _time.default_remat(_time.kept_state_bytes(
        jax.eval_shape(lambda: first_state(values)), steps), steps)


def simulate_network(net: Network, params: Mapping, stimuli: Sequence[cable.Stimulus],
                     dt: float, t_max: float, record: Site | Sequence[Site] = 0,
                     states: str | Sequence[str] = ("v",), remat: Remat = None,
                     progress: bool = True, *, every: int = 1,
                     initial: Mapping | None = None, detect: Site | Sequence[Site] = (),
                     threshold: float = 10.0, max_spikes: int = 100) -> dict:
    """Run ``net`` for ``t_max`` ms in steps of ``dt`` ms.

    Args:
      net: cells and graded synapses (:class:`~jaxlean.models.neuron.network.network.Network`).
      params: ``net.params()``'s pytree, edited or trained: ``{"cells": [per cell],
        "synapses": {name: {parameter: per connection}}}``; or ``net.stacked_params()``'s,
        ``"types"`` in place of ``"cells"`` (one dict per cell type, each value stacked
        over the type's cells): the same run, in a program that does not grow with the
        number of cells. Cells must share ``celsius``.
      stimuli: current clamps, each at places given as ``record`` gives them: ``(cell,
        location)`` (``Stimulus((1, 0), I)``: cell 1's compartment 0; ``Stimulus((1,
        ("dend", 0.3)), I)``), the forest's number (:meth:`Network.index`), or a list of
        those.
      record: where ``states`` are recorded: the forest's numbers or ``(cell, location)``
        (default: 0, the first cell's first compartment).
      states, remat, progress, every: as in
        :func:`~jaxlean.models.neuron.simulation.cable.simulate`.
      initial: the ``"final"`` of an earlier run of this network: the run continues from it.
      detect, threshold, max_spikes: compartments (as ``record``) whose upward crossings of
        ``threshold`` mV are recorded, as in ``simulate`` (``"spikes"``, ``"spike_count"``).

    Returns:
      As ``simulate``: ``{name: (T // every + 1, len(record))}`` (``T // every`` with
        ``initial``: pieces concatenate to the whole run), ``"t"`` and ``"final"``
      (with ``"synapses"``: each synapse type's states per connection).

    Raises:
      ConfigError: a malformed ``params`` (a cell's errors name it: ``params['cells'][1]``;
        a synapse value that is not finite names the connection and its endpoints), a
        record site or stimulus outside the network, or options as ``simulate`` rejects.
    """
    plan, merged, currents, synapse_params = _planned(
        net, params, stimuli, dt, t_max, record, states, remat, progress, every, detect,
        threshold, max_spikes)
    whole, couplings = plan.cell, plan.couplings
    if initial is not None:
        expected = jax.eval_shape(lambda: {**initial_state(
            whole, whole.mechanisms, parameters.expand(whole, merged, whole.mechanisms)),
            **({"synapses": {syn.name: syn.rest(merged["v_init"][pre], synapse_params[syn.name])
                             for syn, pre, _ in couplings}} if couplings else {})})
        cable._check_initial(initial, expected)
        initial = {key: initial[key] for key in expected}
    args = (merged, currents, cable._spike_inputs(whole.mechanisms, None), {}, initial,
            synapse_params)
    return cable._program_for(plan, initial is not None, args)(*args)
