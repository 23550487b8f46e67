"""Events delivered to point processes whose ``NET_RECEIVE`` runs in full: NEURON's
fixed-step event queue for one connection per instance plus its self-events.

A mechanism with ``receives`` true and a ``deliver`` method (an NMODL
:class:`~jaxlean.models.neuron.nmodl.net_receive.PointMechanism`) receives, at the start
of each step ``[t, t + dt]``, every event with time ``<= t + dt/2``, earliest first, as
NEURON's fixed step does (at equal times an input event before a self-event: NEURON's
order, first queued first, when the input's presynaptic spike came before the
``net_send`` call; a self-event queued before the input's spike goes first in NEURON and
second here): the input spikes given to ``simulate`` (``spikes={name: times}``, flag 0)
and the self-events its ``net_send`` calls queued (a self-event due within the same half step is
delivered in the same step). Each instance keeps its connection's NET_RECEIVE arguments
after the weight (zero at the start), the index of its next input spike, and up to
``queue`` pending self-events (time ``inf``: a free slot; of self-events due at one time,
the first sent is delivered first, as NEURON does; INITIAL's ``net_send`` calls fill the
queue as the run starts). A step in which no instance has an event due skips NET_RECEIVE
(``lax.cond``). At most :data:`PER_STEP`
events per instance are delivered in one step; ``lost`` counts, per instance, the steps
that had more and the self-events a full queue dropped (``simulate``'s
``out["final"]["events"][name]["lost"]``, zero in a faithful run).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

__all__ = ["PER_STEP", "deliver", "start", "start_all", "step"]

PER_STEP = 4
"""Events an instance can receive in one step (a connection's and self-events together)."""


def start(mechanism, args: jax.Array, dtype, sends=()) -> dict[str, jax.Array]:
    """The event bookkeeping of instances whose NET_RECEIVE arguments start at ``args``;
    ``sends``: ``[(sent, delay, flag)]`` of INITIAL's ``net_send`` calls, queued in order."""
    instances = args.shape[0]
    due = jnp.full((instances, mechanism.queue), jnp.inf, dtype)
    flags = jnp.zeros((instances, mechanism.queue), dtype)
    order = jnp.zeros((instances, mechanism.queue), jnp.int32)
    count = jnp.zeros(instances, jnp.int32)
    for k, (sent, delay, flag) in enumerate(sends):  # slot k is free: the queue is empty
        on = jnp.broadcast_to(sent, (instances,)) > 0
        due = due.at[:, k].set(jnp.where(on, jnp.broadcast_to(delay, (instances,)), jnp.inf))
        flags = flags.at[:, k].set(jnp.broadcast_to(flag, (instances,)).astype(dtype))
        order = order.at[:, k].set(count)
        count = count + on
    return {"args": args.astype(dtype), "next": jnp.zeros(instances, jnp.int32),
            "due": due, "flag": flags, "order": order, "sent": count,
            "lost": jnp.zeros(instances, jnp.int32)}


def deliver(mechanism, states: dict, events: dict, times: jax.Array, t: jax.Array, dt: float,
            v: jax.Array, p: dict) -> tuple[dict, dict]:
    """States and bookkeeping after the events of the step starting at ``t``; ``times``:
    ``(instances, spikes)`` input spike times (``inf`` pads), sorted in each row."""
    limit = t + 0.5 * dt
    rows = jnp.arange(times.shape[0])
    padded = jnp.concatenate([times, jnp.full((times.shape[0], 1), jnp.inf, times.dtype)], 1)

    def one(_, carry):
        states, events = carry
        outside = padded[rows, jnp.minimum(events["next"], times.shape[1])]
        first = events["due"].min(axis=1, keepdims=True)  # of those, the first sent
        slot = jnp.argmin(jnp.where(events["due"] == first, events["order"],
                                    jnp.iinfo(jnp.int32).max), axis=1)
        queued = events["due"][rows, slot]
        from_outside = outside <= queued
        when = jnp.where(from_outside, outside, queued)
        active = when <= limit
        when = jnp.where(active, when, t)  # no inf reaches the block
        flag = jnp.where(from_outside, 0.0, events["flag"][rows, slot])
        return lax.cond(active.any(), receive, lambda *a: a[0],  # most steps have none
                        (states, events), active, when, flag, from_outside, slot, queued)

    def receive(carry, active, when, flag, from_outside, slot, queued):
        states, events = carry
        new, args, sends = mechanism.deliver(states, events["args"], when, flag, v, p)
        states = {k: jnp.where(active.reshape(active.shape + (1,) * (x.ndim - 1)), new[k], x)
                  if k in new else x for k, x in states.items()}
        taken = active & ~from_outside
        due = events["due"].at[rows, slot].set(jnp.where(taken, jnp.inf, queued))
        flags = events["flag"]
        lost, order, count = events["lost"], events["order"], events["sent"]
        for sent, delay, sent_flag in sends:
            on = active & (jnp.broadcast_to(sent, active.shape) > 0)
            free = jnp.argmax(due == jnp.inf, axis=1)
            lost = lost + (on & (due[rows, free] < jnp.inf))  # the queue is full
            due = due.at[rows, free].set(jnp.where(on, when + delay, due[rows, free]))
            flags = flags.at[rows, free].set(jnp.where(on, sent_flag, flags[rows, free]))
            order = order.at[rows, free].set(jnp.where(on, count, order[rows, free]))
            count = count + on
        events = {"args": jnp.where(active[:, None], args, events["args"]),
                  "next": events["next"] + (active & from_outside),
                  "due": due, "flag": flags, "order": order, "sent": count, "lost": lost}
        return jax.tree.map(lambda x, y: x.astype(y.dtype), (states, events), carry)

    states, events = lax.fori_loop(0, PER_STEP, one, (states, events))
    left = jnp.minimum(padded[rows, jnp.minimum(events["next"], times.shape[1])],
                       events["due"].min(axis=1)) <= limit  # more than PER_STEP this step
    return states, {**events, "lost": events["lost"] + left}


def start_all(plan, state: dict, dtype, own: list, celsius) -> dict:
    """``{"events": {name: bookkeeping}}`` of ``plan``'s insertions that run NET_RECEIVE in
    full (a continued run's own, from ``state``); ``{}`` when none does. ``own``: each
    insertion's parameters."""
    if "events" in state:
        return {"events": state["events"]}
    out = {}
    for ins, p in zip(plan.insertions, own, strict=True):
        if getattr(ins.mechanism, "receives", False):
            v = state["v"][ins.compartments]
            given = {**state["states"][ins.mechanism.name], "celsius": celsius}
            args = ins.mechanism.initial_args(given, v, p)
            sends = ins.mechanism.sent_at_start(v, p, {"celsius": celsius, "dt": plan.dt})
            out[ins.mechanism.name] = start(ins.mechanism, args, dtype, sends)
    return {"events": out} if out else {}


def step(plan, carry: dict, states: dict, spike_times: dict, where: list, own: list,
         dt: float, celsius) -> dict:
    """Deliver the events of the step starting at ``carry``'s step to every such insertion:
    their states updated in ``states`` (in place); returns ``{"events": ...}``."""
    t = carry["step"] * dt
    out = dict(carry["events"])
    for k, ins in enumerate(plan.insertions):
        name = ins.mechanism.name
        if name not in out:
            continue
        given = {**states[name], "celsius": celsius}
        new, out[name] = deliver(ins.mechanism, given, out[name],
                                 jnp.sort(spike_times[name], axis=1), t, dt,
                                 carry["v"][where[k]], own[k])
        states[name] = {key: new[key] for key in states[name]}
    return {"events": out}
