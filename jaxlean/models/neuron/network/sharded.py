"""``simulate_network_sharded``: a network's cells split over the devices of a mesh axis.

Each device holds its share of the cells (their states and parameters) and the connections
into them (:mod:`~jaxlean.models.neuron.network._shard_plan`), and runs the single-device time
loop on them (SPMD, ``jax.shard_map`` over a 1-D mesh axis, ``"cells"`` by default); what
crosses devices (:mod:`~jaxlean.models.neuron.network._across`):

* spikes of ``NetCon`` s (:class:`~jaxlean.models.neuron.network.network_events.SpikingSynapse`)
  once per shortest delay of their synapse type, NEURON's ``ParallelContext`` scheme (one
  ``all_gather`` of each device's block of threshold crossings per type);
* the presynaptic voltages of graded synapses every step (their conductance follows the
  voltage, no delay), only at the compartments connections start from;
* the voltages of gap junctions' compartments every step: a junction is explicit in the
  other side's voltage (its value at the start of the step,
  :mod:`~jaxlean.models.neuron.network.gap_junctions`), so each side's device adds its
  conductance toward the gathered voltage, as the one-device run does.

The result is the single-device run's: the same arithmetic per cell, the same steps of
delivery (float64: NEURON's times), up to the order in which many synapses ending at one
compartment are added (tested: bit for bit on two of NEURON's fixture networks, 9e-16
relative on a small MNIST network; 5e-11 at the ``network`` benchmark's full size, 784
synapses per hidden cell). Gradients flow through the collectives (an
``all_gather``'s transpose sums the cotangents back onto their devices), so ``jax.grad`` of
a loss of the result gives the single-device gradient. Not supported: continuing from an
earlier run's ``final`` state (a sharded run returns none), recording states other than
``"v"``, ``every``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.network import network_sim
from jaxlean.models.neuron.network._across import GradedAcross, SpikesAcross
from jaxlean.models.neuron.network._event_clock import neuron_times
from jaxlean.models.neuron.network._shard_plan import ShardPlan
from jaxlean.models.neuron.network.gap_junctions import GapJunction
from jaxlean.models.neuron.network.network import Network, check_synapse_params
from jaxlean.models.neuron.network.network_events import SpikingSynapse
from jaxlean.models.neuron.simulation import cable
from jaxlean.models.neuron.simulation import spikes as spikes_
from jaxlean.models.neuron.simulation._current import checked_current
from jaxlean.models.neuron.simulation._program import Plan, loop
from jaxlean.models.neuron.simulation._time import Remat

__all__ = ["exchange_interval", "simulate_network_sharded"]


def _plan(net: Network, devices: int) -> ShardPlan:
    plans = net.__dict__.setdefault("_shard_plans", {})
    if devices not in plans:
        plans[devices] = ShardPlan.of(net, devices)
    return plans[devices]


def _concrete(value, fallback: np.ndarray) -> np.ndarray:
    """``value`` per connection when concrete, else the values the network was built with."""
    if isinstance(value, jax.core.Tracer):
        return fallback
    return np.broadcast_to(np.asarray(value, dtype=float), fallback.shape)


def exchange_interval(delays: np.ndarray, dt: float) -> int:
    """Steps between spike exchanges: the shortest delay in whole steps (at least 1). An event
    is due at least that many steps minus one after its spike (``_event_clock``'s rule), so
    it is never due before the exchange that carries it."""
    delays = np.asarray(delays, dtype=float)
    return max(1, math.floor(float(delays.min()) / dt + 1e-9)) if delays.size else 1


def _built(net: Network, ix: np.ndarray, name: str, default: float) -> np.ndarray:
    return np.asarray([dict(net.connections[int(i)].values).get(name, default) for i in ix])


def _synapses(plan: ShardPlan, synapses: Mapping, dt: float, steps: int, axis: str):
    """Each synapse type as its sharded coupling, and its values per device ``(D, K)``."""
    net, couplings, values = plan.net, [], {}
    for name, (syn, ix) in net.synapse_groups().items():
        shards = plan.synapses[name]
        take, real = np.maximum(shards.conn, 0), shards.conn >= 0
        # padding repeats connection 0's values; its conductance is masked to exactly 0
        twice = 2 if isinstance(syn, GapJunction) else 1   # a junction's two directions
        p = {key: jnp.tile(jnp.broadcast_to(cable._strong(v), (ix.size,)), twice)[take]
             for key, v in synapses[name].items()}
        cp = {"p": p, "source": jnp.asarray(shards.source), "post": jnp.asarray(shards.post),
              "real": jnp.asarray(real, dtype=jnp.result_type(float))}
        if isinstance(syn, SpikingSynapse):
            delays = _concrete(synapses[name]["delay"], _built(net, ix, "delay", 1.0))
            inner = syn.for_run(dt, delays, lambda i, ix=ix: net.connections[int(ix[i])]
                                .describe(int(ix[i])))
            if isinstance(synapses[name]["delay"], jax.core.Tracer):
                p["delay"] = inner.checked_delays(p["delay"])
            thresholds = _concrete(synapses[name]["threshold"], _built(net, ix, "threshold",
                                                                       10.0))
            per_source = np.full(plan.devices * shards.sources.size, np.inf)
            per_source[shards.source[real]] = thresholds[shards.conn[real]]
            cp["threshold"] = jnp.asarray(per_source.reshape(plan.devices, -1))
            times = (neuron_times(dt, steps + inner.slots + 2)
                     if jax.config.jax_enable_x64 else None)
            coupling = SpikesAcross(inner, axis, exchange_interval(delays, dt), times)
        else:
            coupling = GradedAcross(syn, axis)
        couplings.append((coupling, shards.sources, np.zeros(0, np.int64)))
        values[name] = cp
    return tuple(couplings), values


def _types(plan: ShardPlan, params: Mapping) -> list[dict]:
    """Each type's stacked values padded to ``D * m_t`` cells (ghosts copy the last cell),
    leading axis ``(D, m_t)``."""
    types, values, _, _ = network_sim._cell_values(plan.net, params)
    out = []
    for (_, ix), v, m in zip(types, values, plan.per_type, strict=True):
        take = np.minimum(np.arange(plan.devices * m), ix.size - 1)
        out.append({k: jnp.take(cable._strong(x), take, axis=0).reshape(
            plan.devices, m, *jnp.shape(x)[1:]) for k, x in v.items()})
    return out


def _currents(plan: ShardPlan, net: Network, stimuli: Sequence, steps: int):
    """The devices' stimulated compartments and ``(steps, D * targets)`` currents."""
    comps, columns = [], []
    for index, s in enumerate(network_sim._network_stimuli(net, stimuli)):
        current = checked_current(index, s.current, steps)
        for c in np.atleast_1d(np.asarray(s.compartments)).tolist():
            comps.append(int(c))
            columns.append(jnp.asarray(current, dtype=float))
    if not comps:
        return np.zeros(0, np.int64), jnp.zeros((steps, 0))
    union, where = plan.sites(comps)
    currents = jnp.zeros((steps, plan.devices * union.size), columns[0].dtype)
    return union, currents.at[:, where].add(jnp.stack(columns, 1))


def _split(x: jax.Array, mesh: Mesh, spec: P) -> jax.Array:
    """``x`` laid out over ``mesh`` as ``spec`` says, also where it is computed (inside a
    caller's ``jit``: not replicated on every device first)."""
    return jax.lax.with_sharding_constraint(x, jax.sharding.NamedSharding(mesh, spec))


def simulate_network_sharded(net: Network, params: Mapping, stimuli: Sequence[cable.Stimulus],
                             dt: float, t_max: float, mesh: Mesh, *,
                             record: object = 0, detect: object = (),
                             threshold: float = 10.0, max_spikes: int = 100,
                             remat: Remat = None, axis: str = "cells") -> dict:
    """:func:`~jaxlean.models.neuron.network.network_sim.simulate_network` with the cells split
    over ``mesh``'s axis ``axis`` (module docstring); the voltage (``"v"``) is recorded.

    Args:
      net, params, stimuli, dt, t_max, record, detect, threshold, max_spikes: as
        ``simulate_network``.
      remat: as ``simulate_network``'s; ``None`` runs what the unsplit run runs
        (:func:`~jaxlean.models.neuron.network.network_sim.default_remat`, from the whole
        network's state, not a device's share), so adding devices never changes what the
        backward pass keeps or recomputes, only how it is divided.
      mesh: a 1-D :class:`jax.sharding.Mesh` whose axis ``axis`` holds the devices.

    Returns:
      ``{"v": (T + 1, len(record)), "t"}``, with ``detect`` also ``"spikes"`` and
      ``"spike_count"``: the single-device run's values.

    Raises:
      ConfigError: a mesh without the axis, or what ``simulate_network`` refuses.
    """
    if not isinstance(mesh, Mesh) or tuple(mesh.axis_names) != (axis,):
        raise ConfigError(f"mesh must be a 1-D jax.sharding.Mesh with the axis {axis!r}; got "
                          f"{getattr(mesh, 'axis_names', type(mesh).__name__)}")
    devices = int(mesh.shape[axis])
    plan = _plan(net, devices)
    steps = cable.n_steps(dt, t_max)
    if not isinstance(params, Mapping) or "synapses" not in params:
        raise ConfigError("params must be net.params() or net.stacked_params()'s pytree")
    check_synapse_params(net, params["synapses"])
    couplings, coupling_values = _synapses(plan, params["synapses"], float(dt), steps, axis)
    types = _types(plan, params)
    targets, currents = _currents(plan, net, stimuli, steps)
    recorded, record_at = plan.sites(network_sim._sites(net, record, "record"))
    wanted = not (isinstance(detect, Sequence) and len(detect) == 0)
    detected, detect_at = (plan.sites(network_sim._sites(net, detect, "detect")) if wanted
                           else (np.zeros(0, np.int64), np.zeros(0, np.int64)))
    if wanted and not math.isfinite(threshold):
        raise ConfigError(f"threshold must be a finite number of mV; got {threshold}")
    if remat is None:   # the unsplit run's choice: devices divide the work, never change it
        remat = network_sim.default_remat(net, params, dt, t_max, detect=detect,
                                          max_spikes=max_spikes)
    local = net.__dict__.setdefault("_shard_local", {}).setdefault(
        devices, Network(plan.local_cells))
    none = np.zeros(0, np.int64)

    def body(types, couplings_p, currents):
        types = jax.tree.map(lambda x: x[0], types)
        cp = jax.tree.map(lambda x: x[0], couplings_p)
        whole, merged, _, _ = network_sim._prepare(local, {"types": types, "synapses": {}})
        cell, insertions = cable._own_arrays(whole, whole.mechanisms)
        detectors = spikes_.detectors(detected.tolist(), cell.n, max_spikes)
        run = Plan(cell, insertions, float(dt), steps, 1,
                   cable._sites(cell, insertions, recorded, ("v",), none), targets, none,
                   detectors, float(threshold) if wanted else math.inf,
                   max_spikes if wanted else 1, remat, False, couplings)
        out = loop(run, merged, currents, cable._spike_inputs(insertions, None), {}, None, cp)
        found = (out["spikes"], out["spike_count"]) if wanted else ()
        return out["v"], out["t"], found

    key = (mesh, axis, float(dt), steps, tuple(recorded), tuple(detected), float(threshold),
           max_spikes, remat if isinstance(remat, str | None) else tuple(remat),
           tuple(targets), bool(jax.config.jax_enable_x64),
           tuple((c.name, getattr(c, "every", 0), getattr(c.inner, "slots", 0))
                 for c, _, _ in couplings))
    specs = (P(None, axis), P(), (P(axis), P(axis)) if wanted else ())
    split = jax.shard_map(body, mesh=mesh, in_specs=(P(axis), P(axis), P(None, axis)),
                          out_specs=specs, check_vma=False)
    args = (_split(types, mesh, P(axis)), _split(coupling_values, mesh, P(axis)),
            _split(currents, mesh, P(None, axis)))
    if not any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(args)):
        # one compiled program per layout and options; traced (inside the caller's jit or
        # grad), traced in place, as simulate does: JAX 0.10 fails to differentiate the
        # segmented loop (a custom_jvp) through an inner jit
        runs = net.__dict__.setdefault("_shard_runs", {})
        split = runs.setdefault(key, jax.jit(split))
    v, t, found = split(*args)
    out = {"v": v[:, record_at], "t": t}
    if wanted:
        out["spikes"], out["spike_count"] = found[0][detect_at], found[1][detect_at]
    return out
