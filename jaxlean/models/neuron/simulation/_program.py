"""The compiled part of ``simulate``: one backward-Euler step and the loop over time.

A :class:`Plan` holds everything static about a run (cell, mechanisms, sites, number of
steps, options); :func:`program` turns it into a jitted function of the numbers
(parameters, stimuli, spike times, clamp levels, initial state; :func:`loop` unjitted).
Per step, in NEURON's fixed-step order: input spikes arrive, every mechanism's
currents at the present states give the membrane conductance and drive, the
voltage solves ``(C/dt + G + axial) v_new = C/dt v + G E + stimulus`` with
:func:`jaxlean.linalg.tree_solve_in_layout`, then the states advance by
exponential Euler at the new voltage and thresholds are checked.

The loop keeps its vectors in the solver's layout (:class:`~._layout.Layout`): every node of the
solver's tree in the solver's order, then its dummy entry, so no step permutes, slices or
pads around the solve, forward or backward (each of those cost as much as the solve).
Junctions and the dummy are nodes without membrane: whatever the mechanisms inserted
everywhere put on their diagonal and right-hand side is replaced by zero, so a junction's
row stays purely axial and the dummy's the identity. Those mechanisms carry states there too
(starting as their owner's, without effect). Outside the loop, values are per compartment.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend.core import Primitive

from jaxlean.linalg import tree_solve_in_layout
from jaxlean.models.neuron.cell import params as parameters
from jaxlean.models.neuron.cell.cell import Cell
from jaxlean.models.neuron.mechanisms.ions import variables
from jaxlean.models.neuron.mechanisms.mechanisms import Insertion
from jaxlean.models.neuron.simulation import _events, _time, clamp, spikes
from jaxlean.models.neuron.simulation._batched import Sums, gather_each
from jaxlean.models.neuron.simulation._initial import initial_state
from jaxlean.models.neuron.simulation._ion_pool import ion_uses, reversals, view, written
from jaxlean.models.neuron.simulation._layout import Layout
from jaxlean.models.neuron.simulation._time import Remat, scan_in_segments, scan_steps


@dataclasses.dataclass(frozen=True, eq=False)
class Plan:
    """The static description of a run: what is compiled into the program.

    ``sites`` maps each recorded name to ``(insertion index or None, positions)``:
    where to read it in its array (``None``: the voltage or the clamps).
    ``couplings``: a network's ``(graded synapse, pre, post compartments)`` per type.
    """

    cell: Cell
    insertions: tuple[Insertion, ...]
    dt: float
    steps: int
    every: int
    sites: dict[str, tuple[int | None, np.ndarray]]
    targets: np.ndarray
    clamped: np.ndarray
    detectors: np.ndarray
    threshold: float
    max_spikes: int
    remat: Remat
    progress: bool
    couplings: tuple = ()


def _children_by_parent(parents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Non-root nodes sorted by parent, and those parents (for a sorted segment sum)."""
    children = np.flatnonzero(parents >= 0)
    children = children[np.argsort(parents[children], kind="stable")]
    return children, parents[children]


def static_matrix(cell: Cell, p: dict[str, jax.Array]):
    """The parts of the backward-Euler matrix that stay fixed over a simulation.

    Compartment rows are divided by their membrane area; a junction's row (no
    membrane) by its owner's, which leaves its solution unchanged. Returns
    ``lower``, ``upper`` and the axial part of the diagonal over all nodes, and
    the compartments' areas (cm2).
    """
    tree = cell.tree
    parent = np.where(tree.parents < 0, np.arange(tree.n), tree.parents)
    is_root = tree.parents < 0
    area = 2e-8 * jnp.pi * p["radius"] * p["length"]
    cylinder_half = p["Ra"] * 0.5e4 * p["length"] / (jnp.pi * p["radius"] ** 2)
    halves = jnp.concatenate([cylinder_half * cell.taper[:, 0], cylinder_half * cell.taper[:, 1],
                              jnp.zeros(1, cylinder_half.dtype)])
    resistance = halves[cell.half_index[:, 0]] + halves[cell.half_index[:, 1]]
    g_axial = jnp.where(is_root, 0.0, 1.0 / jnp.where(is_root, 1.0, resistance))
    scale = 1e3 / jnp.concatenate([area, area[cell.junction_owner]])
    children, their_parents = _children_by_parent(tree.parents)
    from_children = jax.ops.segment_sum(g_axial[children], their_parents, tree.n,
                                        indices_are_sorted=True)
    return -g_axial * scale, (from_children + g_axial) * scale, -g_axial * scale[parent], area


def _save_only_solves(primitive: Primitive, *_, **__) -> bool:
    """Rematerialisation policy of a time step or segment: keep the solves' outputs, recompute
    the rest.

    Storing a step's other intermediates (about 40 vectors per compartment), or even
    its three gates, for every step of a run makes the backward pass memory-bound;
    the elementwise work is cheaper to redo, the solve is not.
    """
    return primitive.name == "custom_linear_solve"


_DV = 0.001
"""NEURON's voltage step (mV) for the slope of a voltage-dependent current."""


def program(plan: Plan) -> Callable:
    """:func:`loop` jitted: ``run(params, currents, spike_times, clamp_values, initial[,
    coupling_params])``, ``coupling_params``: ``{synapse: {parameter: per connection}}``."""
    return jax.jit(lambda *args: loop(plan, *args))


def loop(plan: Plan, params, currents, spike_times, clamp_values, initial, coupling_params=None,
         *, start_only: bool = False):
    """The time loop of ``plan`` on these arguments, not jitted; ``start_only``: only its
    first state (whose size ``remat=None`` weighs), nothing run."""
    cell, dt, steps = plan.cell, plan.dt, plan.steps
    n = cell.n
    layout = Layout.of(cell)
    at = layout.position  # a node's (compartment's) position in the layout
    p = parameters.expand(cell, params, plan.insertions)
    lower, diag_axial, upper, area = static_matrix(cell, p)
    lower, diag_axial, upper = layout.put(lower), layout.put(diag_axial, 1.0), layout.put(upper)

    def to_nodes(x):  # per compartment -> per node, a junction copying its owner
        return jnp.concatenate([x, x[cell.junction_owner]])

    def to_layout(x):  # per compartment -> the loop's layout
        return layout.put(to_nodes(x))

    has_membrane = layout.order < n
    capacitance_dt = jnp.where(has_membrane, to_layout(p["cm"] / dt), 0.0)
    celsius = p["celsius"][0]
    own, scale, speed, where = [], [], [], []
    for ins in plan.insertions:
        mechanism = ins.mechanism
        everywhere = ins.compartments is None
        own.append({k: p[k] if mechanism.point else to_layout(p[k]) if everywhere
                    else ins.gather(p[k]) for k in mechanism.parameters})
        scale.append(1e-3 / area[ins.compartments] if mechanism.point else 1e3)
        speed.append(mechanism.speed(celsius))
        where.append(None if everywhere else at[ins.compartments])
    targets, clamped, detectors = at[plan.targets], at[plan.clamped], at[plan.detectors]
    stimulus_scale = 1e-3 / area[plan.targets]
    clamp_scale = 1e-3 / area[plan.clamped]
    state = initial_state(cell, plan.insertions, p, dt) if initial is None else initial
    if initial is None and plan.couplings:
        state["synapses"] = {syn.name: syn.rest(p["v_init"][pre], coupling_params[syn.name])
                             for syn, pre, _ in plan.couplings}
    coupled = []  # a network's synapses; a sharded one's give their (traced) post sites
    for syn, pre, post in plan.couplings:
        cp = coupling_params[syn.name]
        post = syn.post_of(cp) if hasattr(syn, "post_of") else post
        coupled.append((syn, at[pre], jnp.asarray(at)[post] if isinstance(post, jax.Array)
                        else at[post], 1e-3 / area[post], cp))
    first = state["step"]
    xs = {"current": currents,
          "arrivals": {name: spikes.arrivals(times, dt, first, steps)
                       for name, times in spike_times.items()}}
    if plan.clamped.size:
        xs["vc"], xs["on"] = clamp.command(clamp_values, dt, first, steps)

    def gather(k, x):
        return x if where[k] is None else x[where[k]]

    uses = ion_uses(n, plan.insertions)
    computed = {ion: np.append(np.concatenate([use.computed, use.computed[cell.junction_owner]]),
                               False)[layout.order] for ion, use in uses.items()}
    ion_params = {name: to_layout(p[name]) for use in uses.values()
                  for name in [variables(use.ion)["e"]] if use.reversal}

    def membrane(v, states, pool, t):
        """The membrane's diagonal and drive, each current's flow, and the ions' reversals and
        total currents (``{"eca": ..., "ica": ...}``) at the start of a step (NEURON's ``t``
        then: half a step on, ``t``)."""
        diag, rhs = capacitance_dt, capacitance_dt * v
        flows = {}
        ions = {**pool, **reversals(uses, pool, ion_params, celsius,
                                    lambda use: computed[use.ion])}
        totals = {variables(u.ion)["current"]: jnp.zeros_like(v) for u in uses.values()
                  if u.current}
        sums = Sums()  # what mechanisms on some compartments add, added at once

        def add(k, key, total, x):
            if where[k] is None:
                return total + x
            sums.add(key, where[k], x)
            return total

        for k, (ins, local) in enumerate(zip(plan.insertions, gather_each(v, where),
                                             strict=True)):
            mechanism, name = ins.mechanism, ins.mechanism.name
            if mechanism.voltage_dependent:
                given = {**states[name], **view(mechanism, ions, functools.partial(gather, k)),
                         "celsius": celsius, "dt": dt, "t": t}
                now = mechanism.currents_at(local, given, own[k], given)
                later = mechanism.currents_at(local + _DV, given, own[k], given)
                kept = mechanism.currents_kept(local, given, own[k])
                if kept:  # values NEURON's BREAKPOINT leaves in its range variables
                    states[name] = {**states[name], **kept}
                for current, i in now.items():
                    i = jnp.broadcast_to(i, local.shape)
                    slope = (later[current] - i) / _DV  # NEURON's di/dv
                    flows[current] = i
                    diag = add(k, "diag", diag, scale[k] * slope)
                    rhs = add(k, "rhs", rhs, scale[k] * (slope * local - i))
                    carrier = mechanism.ion_of(mechanism.currents[current][1])
                    if carrier is not None:
                        totals[f"i{carrier}"] = add(k, f"i{carrier}", totals[f"i{carrier}"], i)
                continue
            given = states[name]
            if mechanism.ions:
                given = {**given, **view(mechanism, ions, functools.partial(gather, k))}
            for current, (g, e) in mechanism.conductances(given, own[k], given).items():
                g = jnp.broadcast_to(g, local.shape)
                flows[current] = g * (local - e)
                diag = add(k, "diag", diag, scale[k] * g)
                rhs = add(k, "rhs", rhs, scale[k] * g * e)
                carrier = mechanism.ion_of(mechanism.currents[current][1])
                if carrier is not None:
                    totals[f"i{carrier}"] = add(k, f"i{carrier}", totals[f"i{carrier}"],
                                                flows[current])
        totals = {key: sums.into(key, total) for key, total in totals.items()}
        return sums.into("diag", diag), sums.into("rhs", rhs), flows, {**ions, **totals}

    def advance(k, states, pool, ions, local, t):
        """Mechanism ``k``'s states after a step at its voltage ``local``; the concentrations
        it writes in ``pool``; ``t``: NEURON's time then (the step's end)."""
        ins = plan.insertions[k]
        mechanism, name = ins.mechanism, ins.mechanism.name
        if not (mechanism.ions or mechanism.dstate):
            return ins.mechanism.step(states[name], local, dt, speed[k], own[k])
        given = {**states[name], **view(mechanism, {**ions, **pool},
                                        functools.partial(gather, k)), "celsius": celsius, "t": t}
        new = mechanism.step(given, local, dt, speed[k], own[k])
        for conc in written(mechanism):
            pool[conc] = new[conc] if where[k] is None else pool[conc].at[where[k]].set(
                new[conc])
        return {s: new[s] for s in mechanism.own_states()}

    def step(carry, x):
        v, states = carry["v"], dict(carry["states"])
        if "events" in carry:  # NET_RECEIVE run in full (_events)
            carry = {**carry, **_events.step(plan, carry, states, spike_times, where, own, dt,
                                              celsius)}
        for k, ins in enumerate(plan.insertions):
            mechanism, name = ins.mechanism, ins.mechanism.name
            if mechanism.on_spike is not None:
                arrived = x["arrivals"][name]
                states[name] = {**states[name], **{
                    s: states[name][s] + arrived * jump
                    for s, jump in mechanism.spike_increments(own[k]).items()}}
        pool = dict(carry.get("ions", {}))
        diag, rhs, flows, ions = membrane(v, states, pool, (carry["step"] + 0.5) * dt)
        if plan.targets.size:
            rhs = rhs.at[targets].add(stimulus_scale * x["current"])
        for syn, _, post, syn_scale, cp in coupled:  # graded synapses: conductances at post
            g, e = syn.conductance(carry["synapses"][syn.name], cp)
            diag = diag.at[post].add(syn_scale * g)
            rhs = rhs.at[post].add(syn_scale * g * e)
        if plan.clamped.size:
            g_clamp = x["on"] / clamp_values["rs"]
            diag = diag.at[clamped].add(clamp_scale * g_clamp)
            rhs = rhs.at[clamped].add(clamp_scale * g_clamp * x["vc"])
        # no membrane at junctions and the dummy: drop what mechanisms inserted everywhere put there
        diag, rhs = jnp.where(has_membrane, diag, 0.0), jnp.where(has_membrane, rhs, 0.0)
        v_new = tree_solve_in_layout(layout.tree, lower, diag_axial + diag, upper, rhs)
        for k, (ins, local) in enumerate(zip(plan.insertions, gather_each(v_new, where),
                                             strict=True)):
            states[ins.mechanism.name] = advance(k, states, pool, ions, local,
                                                 (carry["step"] + 1) * dt)
        if plan.clamped.size:
            flows["i_clamp"] = g_clamp * (x["vc"] - v_new[clamped])
        new = {"v": v_new, "states": states, "step": carry["step"] + 1,
               **({"events": carry["events"]} if "events" in carry else {})}
        if coupled:
            new["synapses"] = {syn.name: syn.step(carry["synapses"][syn.name], v_new[pre], dt, cp)
                               for syn, pre, _, _, cp in coupled}
        if pool:
            new["ions"] = pool
        if plan.detectors.size:
            new["detect"] = spikes.detect(carry["detect"], v[detectors], v_new[detectors],
                                          plan.threshold, (carry["step"] + 1) * dt)
        return new, _record(plan, at, new, flows, {**ions, **pool})

    everywhere = {ins.mechanism.name for ins in plan.insertions if ins.compartments is None}

    def states_on(resize: Callable, states: dict) -> dict:
        return {name: jax.tree.map(resize, s) if name in everywhere else s
                for name, s in states.items()}

    carry = {"v": layout.put(state["v"]), "states": states_on(to_layout, state["states"]),
             "step": state["step"]}
    if "ions" in state:
        carry["ions"] = {name: to_layout(c) for name, c in state["ions"].items()}
    carry.update(_events.start_all(plan, state, capacitance_dt.dtype, own, celsius))
    if "synapses" in state:
        carry["synapses"] = state["synapses"]
    if plan.detectors.size:
        carry["detect"] = (jnp.full((plan.detectors.size, plan.max_spikes), jnp.inf,
                                    capacitance_dt.dtype),
                           jnp.zeros(plan.detectors.size, jnp.int32))
    if start_only:
        return carry
    if initial is None:   # a fresh run records its starting state; a continued one does not
        _, _, flows, ions = membrane(carry["v"], carry["states"], carry.get("ions", {}), 0.0)
        if plan.clamped.size:
            flows["i_clamp"] = (xs["on"][0] / clamp_values["rs"]) * (xs["vc"][0]
                                                                     - carry["v"][clamped])
        start = _record(plan, at, carry, flows, ions)  # the first sample: the starting state
    carry, trace = _loop(plan, step, carry, xs)
    if initial is None:
        trace = {name: jnp.concatenate([start[name][None], values])
                 for name, values in trace.items()}
    samples = jnp.arange(steps // plan.every + 1)[0 if initial is None else 1:]
    out = {**trace, "t": (first + samples * plan.every) * dt,
           "final": {"v": layout.take(carry["v"], cell.tree.n),
                     "states": states_on(lambda a: layout.take(a, n), carry["states"]),
                     "step": carry["step"]}}
    if "ions" in carry:
        out["final"]["ions"] = {name: layout.take(c, n) for name, c in carry["ions"].items()}
    for key in ("synapses", "events"):
        if key in carry:
            out["final"][key] = carry[key]
    if plan.detectors.size:
        out["spikes"], out["spike_count"] = carry["detect"]
    return out


def _record(plan: Plan, at: np.ndarray, new: dict, flows: dict,
            ions: dict) -> dict[str, jax.Array]:
    """The recorded values of a step; ``at`` maps compartments to the loop's layout; ``ions``
    holds the ions' variables (the reversals and currents of the step, the concentrations
    after it)."""
    out = {}
    for name, (k, positions) in plan.sites.items():
        # positions index compartments for "v", ions and mechanisms inserted everywhere
        everywhere = (name in ("v", *ions)
                      or (k is not None and plan.insertions[k].compartments is None))
        where = at[positions] if everywhere else positions
        if name == "v":
            out[name] = new["v"][where]
        elif name in ions:
            out[name] = ions[name][where]
        elif k is None or name in flows:
            out[name] = flows[name][where]
        else:
            out[name] = new["states"][plan.insertions[k].mechanism.name][name][where]
    return out


SEGMENT_STEPS = 16
"""Steps the default backward pass recomputes together (``remat=None``): each step's
solve is kept, the rest of a segment's residuals live only while it is differentiated.
On the bench's 10k-compartment cell at 10,000 steps, segments of 16 and 32 steps took
within 3 % of each other's time and 8 took 3-5 % more; at 16 the gradient's temp memory
was 503 MB, 415 MB of it the kept voltages (every step's state kept: 1,660 MB)."""

def _loop(plan: Plan, step: Callable, carry: dict, xs: dict):
    """Blocks of ``every`` steps, recording after each block, then the steps left over,
    unrecorded. ``remat=None`` keeps every step's state when that fits
    :data:`~._time.KEEP_STATES_BYTES` (:func:`~._time.default_remat`); else, and with
    ``"segments"``, it differentiates blocks in segments of about :data:`SEGMENT_STEPS`
    steps, keeping only each step's solve; a ``remat`` option nests checkpointed segments
    of blocks (:func:`scan_steps`) around steps that keep their solve."""
    every, blocks = plan.every, plan.steps // plan.every
    kept = jax.checkpoint(step, policy=_save_only_solves)
    remat = plan.remat
    if remat is None:
        remat = _time.default_remat(_time.kept_state_bytes(carry, plan.steps), blocks)
    segmented = remat == "segments"
    # inside a segment steps keep all their residuals, unless a block alone is longer
    unit = step if segmented and every <= SEGMENT_STEPS else kept

    def quiet(step, carry, x):
        return step(carry, x)[0], None

    if every == 1:
        block = unit
    else:
        def block(carry, x):
            head = jax.tree.map(lambda a: a[:-1], x)
            carry, _ = lax.scan(functools.partial(quiet, unit), carry, head)
            return unit(carry, jax.tree.map(lambda a: a[-1], x))

    def blocked(a):  # (blocks, every, ...) of the recorded steps; (steps, ...) for every = 1
        return a if every == 1 else a[:blocks * every].reshape(blocks, every, *a.shape[1:])

    xs_blocked = jax.tree.map(blocked, xs)
    if segmented:
        carry, trace = scan_in_segments(block, carry, xs_blocked, _save_only_solves,
                                        max(1, SEGMENT_STEPS // every))
    else:
        carry, trace = scan_steps(block, carry, xs_blocked, remat,
                                  "simulate" if plan.progress else None)
    if plan.steps > blocks * every:
        carry, _ = lax.scan(functools.partial(quiet, kept), carry,
                            jax.tree.map(lambda a: a[blocks * every:], xs))
    return carry, trace
