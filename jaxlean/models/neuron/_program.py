"""The compiled part of ``simulate``: one backward-Euler step and the loop over time.

A :class:`Plan` holds everything static about a run (cell, mechanisms, sites,
number of steps, options); :func:`program` turns it into a jitted function of
the numbers (parameters, stimuli, spike times, clamp levels, initial state).
Per step, in NEURON's fixed-step order: input spikes arrive, every mechanism's
currents at the present states give the membrane conductance and drive, the
voltage solves ``(C/dt + G + axial) v_new = C/dt v + G E + stimulus`` with
:func:`jaxlean.linalg.tree_solve`, then the states advance by exponential Euler
at the new voltage and thresholds are checked.

The step works on every node of the solver's tree, junctions included: a
junction is a node without membrane: whatever the mechanisms inserted everywhere
put on its diagonal and right-hand side is replaced by zero, so its row stays
purely axial. Those mechanisms carry states on junctions too (starting as their
owner's, without effect). This avoids slicing the voltage to the compartments
and padding the matrix back around the solve, which slowed the gradient (the
backward pass of those pads). Outside the loop, states are per compartment.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend.core import Primitive

from jaxlean.linalg import tree_solve
from jaxlean.models.neuron import clamp, spikes
from jaxlean.models.neuron import params as parameters
from jaxlean.models.neuron._time import Checkpoint, scan_steps
from jaxlean.models.neuron.cell import Cell
from jaxlean.models.neuron.mechanisms import Insertion


@dataclasses.dataclass(frozen=True, eq=False)
class Plan:
    """The static description of a run: what is compiled into the program.

    ``sites`` maps each recorded name to ``(insertion index or None, positions)``:
    where to read it in its array (``None``: the voltage or the clamps).
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
    checkpoint: Checkpoint
    progress: bool


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
    cylinder_half = p["axial_resistivity"] * 0.5e4 * p["length"] / (jnp.pi * p["radius"] ** 2)
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
    """Rematerialisation policy of a time step: keep the solve's output, recompute the rest.

    Saving every intermediate of a step (about 40 arrays per compartment) makes
    the backward pass memory-bound; the elementwise work is cheaper to redo, the
    solve is not.
    """
    return primitive.name == "custom_linear_solve"


def initial_state(cell: Cell, insertions: tuple[Insertion, ...], p: dict[str, jax.Array]) -> dict:
    """Voltage ``v_init`` everywhere, states at rest there, step 0."""
    v_init = p["v_init"]
    states = {}
    for ins in insertions:
        mechanism = ins.mechanism
        own = {k: p[k] if mechanism.point else ins.gather(p[k]) for k in mechanism.parameters}
        states[mechanism.name] = mechanism.initial(ins.gather(v_init), own)
    return {"v": jnp.concatenate([v_init, v_init[cell.junction_owner]]), "states": states,
            "step": jnp.zeros((), jnp.int32)}


def program(plan: Plan) -> Callable:
    """``run(params, currents, spike_times, clamp_values, initial) -> outputs``, jitted."""
    return jax.jit(lambda *args: _run(plan, *args))


def _run(plan: Plan, params, currents, spike_times, clamp_values, initial):
    cell, dt, steps = plan.cell, plan.dt, plan.steps
    n, junctions = cell.n, cell.tree.n - cell.n
    p = parameters.expand(cell, params, plan.insertions)
    lower, diag_axial, upper, area = static_matrix(cell, p)

    def pad(x):
        return jnp.concatenate([x, jnp.zeros(junctions, x.dtype)]) if junctions else x

    def to_nodes(x):  # per compartment -> per node, a junction copying its owner
        return jnp.concatenate([x, x[cell.junction_owner]]) if junctions else x

    has_membrane = np.arange(cell.tree.n) < n
    capacitance_dt = pad(p["capacitance"] / dt)
    celsius = p["celsius"][0]
    own, scale, speed = [], [], []
    for ins in plan.insertions:
        mechanism = ins.mechanism
        everywhere = ins.compartments is None
        own.append({k: p[k] if mechanism.point else to_nodes(p[k]) if everywhere
                    else ins.gather(p[k]) for k in mechanism.parameters})
        scale.append(1e-3 / area[ins.compartments] if mechanism.point else 1e3)
        speed.append(mechanism.speed(celsius))
    stimulus_scale = 1e-3 / area[plan.targets]
    clamp_scale = 1e-3 / area[plan.clamped]
    state = initial_state(cell, plan.insertions, p) if initial is None else initial
    first = state["step"]
    xs = {"current": currents,
          "arrivals": {name: spikes.arrivals(times, dt, first, steps)
                       for name, times in spike_times.items()}}
    if plan.clamped.size:
        xs["vc"], xs["on"] = clamp.command(clamp_values, dt, first, steps)

    def step(carry, x):
        v, states = carry["v"], dict(carry["states"])
        diag, rhs = capacitance_dt, capacitance_dt * v
        flows = {}
        for k, ins in enumerate(plan.insertions):
            mechanism, name = ins.mechanism, ins.mechanism.name
            if mechanism.on_spike is not None:
                arrived = x["arrivals"][name]
                states[name] = {**states[name], **{
                    s: states[name][s] + arrived * jump
                    for s, jump in mechanism.on_spike(own[k]).items()}}
            local = ins.gather(v)
            for current, (g, e) in mechanism.conductances(states[name], own[k]).items():
                g = jnp.broadcast_to(g, local.shape)
                flows[current] = g * (local - e)
                if ins.compartments is None:
                    diag, rhs = diag + scale[k] * g, rhs + scale[k] * g * e
                else:
                    diag = diag.at[ins.compartments].add(scale[k] * g)
                    rhs = rhs.at[ins.compartments].add(scale[k] * g * e)
        if plan.targets.size:
            rhs = rhs.at[plan.targets].add(stimulus_scale * x["current"])
        if plan.clamped.size:
            g_clamp = x["on"] / clamp_values["rs"]
            diag = diag.at[plan.clamped].add(clamp_scale * g_clamp)
            rhs = rhs.at[plan.clamped].add(clamp_scale * g_clamp * x["vc"])
        if junctions:  # no membrane: drop what the mechanisms inserted everywhere put there
            diag, rhs = jnp.where(has_membrane, diag, 0.0), jnp.where(has_membrane, rhs, 0.0)
        v_new = tree_solve(cell.tree, lower, diag_axial + diag, upper, rhs)
        for k, ins in enumerate(plan.insertions):
            name = ins.mechanism.name
            states[name] = ins.mechanism.step(states[name], ins.gather(v_new), dt,
                                              speed[k], own[k])
        if plan.clamped.size:
            flows["i_clamp"] = g_clamp * (x["vc"] - v_new[plan.clamped])
        new = {"v": v_new, "states": states, "step": carry["step"] + 1}
        if plan.detectors.size:
            new["detect"] = spikes.detect(carry["detect"], v[plan.detectors],
                                          v_new[plan.detectors], plan.threshold,
                                          (carry["step"] + 1) * dt)
        return new, _record(plan, new, flows)

    step = jax.checkpoint(step, policy=_save_only_solves)
    everywhere = {ins.mechanism.name for ins in plan.insertions if ins.compartments is None}

    def states_on(resize: Callable, states: dict) -> dict:
        return {name: jax.tree.map(resize, s) if name in everywhere else s
                for name, s in states.items()}

    carry = {**state, "states": states_on(to_nodes, state["states"])}
    if plan.detectors.size:
        carry["detect"] = (jnp.full((plan.detectors.size, plan.max_spikes), jnp.inf,
                                    capacitance_dt.dtype),
                           jnp.zeros(plan.detectors.size, jnp.int32))
    carry, trace = _loop(plan, step, carry, xs)
    out = {**trace, "t": (first + (jnp.arange(steps // plan.every) + 1) * plan.every) * dt,
           "final": {"v": carry["v"], "states": states_on(lambda a: a[:n], carry["states"]),
                     "step": carry["step"]}}
    if plan.detectors.size:
        out["spikes"], out["spike_count"] = carry["detect"]
    return out


def _record(plan: Plan, new: dict, flows: dict) -> dict[str, jax.Array]:
    out = {}
    for name, (k, positions) in plan.sites.items():
        if name == "v":
            out[name] = new["v"][positions]
        elif k is None or name in flows:
            out[name] = flows[name][positions]
        else:
            out[name] = new["states"][plan.insertions[k].mechanism.name][name][positions]
    return out


def _loop(plan: Plan, step: Callable, carry: dict, xs: dict):
    """Blocks of ``every`` steps, recording after each block (checkpointed per
    ``plan.checkpoint``, counted in blocks), then the steps left over, unrecorded."""
    every, blocks = plan.every, plan.steps // plan.every

    def quiet(carry, x):
        return step(carry, x)[0], None

    if every == 1:
        block = step
    else:
        def block(carry, x):
            head = jax.tree.map(lambda a: a[:-1], x)
            carry, _ = lax.scan(quiet, carry, head)
            return step(carry, jax.tree.map(lambda a: a[-1], x))

    def blocked(a):  # (blocks, every, ...) of the recorded steps; (steps, ...) for every = 1
        return a if every == 1 else a[:blocks * every].reshape(blocks, every, *a.shape[1:])

    carry, trace = scan_steps(block, carry, jax.tree.map(blocked, xs), plan.checkpoint,
                              "simulate" if plan.progress else None)
    if plan.steps > blocks * every:
        carry, _ = lax.scan(quiet, carry, jax.tree.map(lambda a: a[blocks * every:], xs))
    return carry, trace
