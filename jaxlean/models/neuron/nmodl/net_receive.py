"""A ``POINT_PROCESS`` with a general ``NET_RECEIVE`` block, run as NEURON runs it.

NEURON calls ``NET_RECEIVE(weight, a1, a2, ...)`` once per event delivered to the point
process, with ``t`` the event's time and ``flag`` 0 for an event from a ``NetCon`` (the
value given to ``net_send`` for a self-event). The block may use any statement the other
blocks may (``LOCAL``, ``if``/``else``, assignments to STATEs, ASSIGNEDs and RANGE
variables, which stay assigned), read ``t`` and ``flag``, and call ``net_send(delay,
flag)``, which queues a self-event at ``t + delay`` carrying the same connection's
arguments. The arguments after ``weight`` are kept per connection (``NetCon.weight[1:]``),
zero at the start of a run as in NEURON's ``finitialize``, then as an ``INITIAL`` block
inside NET_RECEIVE sets them (``t = 0``). The weight is the parameter
``<weight>_<name>``, so gradients flow to it.

:class:`PointMechanism` is the
:class:`~jaxlean.models.neuron.nmodl.generated.GeneratedMechanism` of such a file plus
:meth:`PointMechanism.deliver`, which the simulator (``simulation/_events.py``) calls for
every event at the start of the step NEURON's fixed step delivers it in. Drive it with
``simulate(..., spikes={name: times})`` (one connection per instance).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.nmodl import syntax as s
from jaxlean.models.neuron.nmodl.generated import (
    GeneratedMechanism,
    InitialInterpreter,
    generate,
)
from jaxlean.models.neuron.nmodl.interpret import Interpreter, JaxBackend
from jaxlean.models.neuron.nmodl.model import Model, ModFileError
from jaxlean.models.neuron.nmodl.neuron_random import FIELDS, pick

__all__ = ["PointMechanism", "generate_point"]

QUEUE = 16
"""Self-events (``net_send``) each instance can have pending at once."""


class _Sends:
    """``net_send(delay, flag)`` records a send at its call site (``sites``: line -> k)."""

    sites: dict[int, int]

    def call(self, node: s.Call, local: dict, names: dict):
        if node.name != "net_send":
            return super().call(node, local, names)
        if len(node.args) != 2:
            raise self.model.error(node.line, "net_send takes two arguments (delay, flag)")
        k = self.sites[node.line]
        delay, flag = (self.eval(arg, local, names) for arg in node.args)
        names.update({f" sent{k}": 1.0, f" delay{k}": delay, f" flag{k}": flag})
        return 0.0


class _Receive(_Sends, Interpreter):
    """Runs NET_RECEIVE, recording its sends; ``nrn_random_pick(rng)`` draws the next value
    of the instance's NEURON ``Random`` (:mod:`~.neuron_random`) and counts it."""

    def __init__(self, model: Model, sites: dict[int, int]):
        super().__init__(model, JaxBackend())
        self.sites = sites

    def eval(self, node, local: dict, names: dict):
        """As C evaluates it: the right side of ``&&`` (``||``) runs only where the left
        is true (false), so a draw there counts only where it is made."""
        if not (isinstance(node, s.Binary) and node.op in ("&&", "||")):
            return super().eval(node, local, names)
        left = self.eval(node.left, local, names)
        before = {key: names[key] for key in self._counters()}
        right = self.eval(node.right, local, names)
        ran = left if node.op == "&&" else jnp.logical_not(left)
        for key, value in before.items():
            names[key] = jnp.where(ran, names[key], value)
        return self.backend.binary(node, left, right)

    def _counters(self) -> list[str]:
        return [f"{pointer}.picks" for pointer in self.model.random_pointers]

    def call(self, node: s.Call, local: dict, names: dict):
        if node.name != "nrn_random_pick":
            return super().call(node, local, names)
        pointer = node.args[0] if len(node.args) == 1 else None
        if not (isinstance(pointer, s.Name) and pointer.id in self.model.random_pointers):
            raise self.model.error(node.line, "nrn_random_pick takes one POINTER to a Random")
        picks = names[f"{pointer.id}.picks"]
        value = pick({field: names[f"{pointer.id}.{field}"] for field in FIELDS}, picks)
        names[f"{pointer.id}.picks"] = picks + 1
        return value.astype(jnp.result_type(names["v"]))


class _InitialSends(_Sends, InitialInterpreter):
    """Runs INITIAL, recording its sends (self-events from ``t = 0``)."""

    def __init__(self, model: Model, sites: dict[int, int]):
        super().__init__(model, JaxBackend())
        self.sites = sites


def _unsent(count: int) -> dict:
    return {f" {key}{k}": 0.0 for k in range(count) for key in ("sent", "delay", "flag")}


def _sent(names: dict, count: int) -> list[tuple]:
    return [(names[f" sent{k}"], names[f" delay{k}"], names[f" flag{k}"])
            for k in range(count)]


def _calls(statements, name: str) -> list[int]:
    """Lines of the calls of ``name`` among ``statements`` (nested ifs and loops too)."""
    lines = []

    def expr(node):
        if isinstance(node, s.Call):
            if node.name == name:
                lines.append(node.line)
            for arg in node.args:
                expr(arg)
        elif isinstance(node, s.Binary):
            expr(node.left)
            expr(node.right)
        elif isinstance(node, s.Unary):
            expr(node.operand)

    for statement in statements:
        if isinstance(statement, s.CallStatement):
            expr(statement.call)
        elif isinstance(statement, s.Assign):
            expr(statement.value)
        elif isinstance(statement, s.If):
            expr(statement.condition)
            lines += _calls((*statement.then, *statement.otherwise), name)
        elif isinstance(statement, s.Loop):
            lines += [-line for line in _calls(statement.body, name)]  # negative: in a loop
    return lines


def _assigns(statements, name: str) -> int | None:
    """The line of the first assignment to ``name`` among ``statements``, else None."""
    for statement in statements:
        if isinstance(statement, s.Assign) and statement.target == name:
            return statement.line
        inner = ((*statement.then, *statement.otherwise) if isinstance(statement, s.If)
                 else statement.body if isinstance(statement, s.Loop | s.Block) else ())
        found = _assigns(inner, name)
        if found is not None:
            return found
    return None


@dataclasses.dataclass(frozen=True, eq=False)
class PointMechanism(GeneratedMechanism):
    """A point process whose NET_RECEIVE runs in full (see the module docstring).

    ``weight``: the weight parameter's jaxlean name; ``receive_args``: how many arguments
    after the weight are kept per connection; ``sends``: the lines of its ``net_send``
    calls; ``queue``: pending self-events per instance (:data:`QUEUE`).
    """

    weight: str = ""
    receive_args: int = 0
    sends: tuple[int, ...] = ()
    initial_sends: tuple[int, ...] = ()
    queue: int = QUEUE

    @property
    def receives(self) -> bool:
        """Whether the file has a NET_RECEIVE block (events reach it)."""
        return self.model.net_receive is not None

    def initial_args(self, states, v, p):
        """The arguments after the weight as a run starts, ``(instances, receive_args)``:
        zero, then as NET_RECEIVE's own ``INITIAL`` block sets them (``t = 0``)."""
        block = self.model.net_receive
        args = {name: jnp.zeros(jnp.shape(v), jnp.result_type(v)) for name in block.args[1:]}
        for inner in (x for x in block.body if isinstance(x, s.Block)):
            names = {**self._names(v, states, p), "t": 0.0}
            local = Interpreter(self.model, JaxBackend()).run_block(
                inner, names, {**args, block.args[0]: p[self.weight]})
            args = {name: jnp.broadcast_to(local[name], jnp.shape(v)) for name in args}
        return jnp.stack(list(args.values()), axis=1) if args else jnp.zeros((len(v), 0))

    def deliver(self, states, args, t, flag, v, p):
        """NET_RECEIVE for one event per instance at time ``t`` (``(instances,)``) with
        ``flag``; ``args``: ``(instances, receive_args)``. Returns the new states, the new
        arguments and ``[(sent, delay, flag)]``, one per ``net_send`` call site (``sent``
        1 where the call ran)."""
        block = self.model.net_receive
        names = {**self._names(v, states, p), "t": t, "flag": flag}
        names.update(_unsent(len(self.sends)))
        given = {block.args[0]: p[self.weight]}
        given.update({name: args[:, j] for j, name in enumerate(block.args[1:])})
        local = _Receive(self.model, {line: k for k, line in enumerate(self.sends)}
                         ).run_block(block, names, given)
        new_args = (jnp.stack([jnp.broadcast_to(local[name], jnp.shape(t))
                               for name in block.args[1:]], axis=1)
                    if self.receive_args else args)
        return self._kept(names, v), new_args, _sent(names, len(self.sends))

    def sent_at_start(self, v, p, ions) -> list[tuple]:
        """``[(sent, delay, flag)]`` of INITIAL's ``net_send`` calls (one per call site), as
        :meth:`initial` runs with these arguments: self-events due at ``delay``. (NEURON
        gives such an event, and those its NET_RECEIVE sends on, no connection: a null
        argument pointer, which the block must not read; jaxlean gives them the
        instance's connection's arguments.)"""
        if not self.initial_sends:
            return []
        names = self._run_initial(v, p, ions, _InitialSends(
            self.model, {line: k for k, line in enumerate(self.initial_sends)}),
            _unsent(len(self.initial_sends)))
        return _sent(names, len(self.initial_sends))


def generate_point(model: Model) -> PointMechanism:
    """The :class:`PointMechanism` of a point-process ``model`` (compact or not, with or
    without NET_RECEIVE).

    Raises:
      ModFileError: every problem of the file, with its line.
    """
    receive = model.net_receive
    for block in [model.breakpoint, *model.blocks.values(), *model.before_after.values()]:
        for line in _calls(block.body if block is not None else (), "net_send"):
            model.refuse(abs(line), "net_send outside NET_RECEIVE and INITIAL (a self-event "
                         f"from {block.kind}) is not supported")
    starts = _calls(model.initial.body, "net_send") if model.initial is not None else []
    for line in sorted({abs(x) for x in starts if x < 0 or starts.count(x) > 1}):
        model.refuse(line, "net_send in a FROM loop, or twice on one line, is not supported "
                     "(each call needs its own line)")
    if starts and receive is None:
        model.refuse(abs(starts[0]), "net_send in INITIAL without a NET_RECEIVE block")
    if receive is not None and not receive.args:
        model.refuse(receive.line, "NET_RECEIVE needs at least one argument, the weight")
    if receive is not None and receive.args:
        calls = _calls(receive.body, "net_send")
        for line in sorted({abs(line) for line in calls if line < 0 or calls.count(line) > 1}):
            model.refuse(line, "net_send in a FROM loop, or twice on one line, is not "
                         "supported (each call needs its own line)")
        line = _assigns(receive.body, receive.args[0])
        if line is not None:
            model.refuse(line, f"NET_RECEIVE assigns its weight {receive.args[0]} (NEURON "
                         f"keeps it in the NetCon); jaxlean's weight is a parameter")
        if f"{receive.args[0]}_{model.suffix}" in {f"{n}_{model.suffix}" for n in
                                                  model.parameters}:
            model.refuse(receive.line, f"the weight {receive.args[0]} is also a PARAMETER")
    if model.problems:
        raise ModFileError(model.where, model.problems)
    general = generate(model, point=True)
    fields = {f.name: getattr(general, f.name) for f in dataclasses.fields(general)
              if f.init}
    parameters = dict(fields.pop("parameters"))
    weight, sends = "", ()
    if receive is not None:
        weight = f"{receive.args[0]}_{model.suffix}"
        parameters[weight] = (0.0, "")
        sends = tuple(_calls(receive.body, "net_send"))
    try:
        mechanism = PointMechanism(
            **{**fields, "point": True, "parameters": parameters,
               "on_spike": (lambda p: {}) if receive is not None else None},
            weight=weight, receive_args=len(receive.args) - 1 if receive else 0, sends=sends,
            initial_sends=tuple(starts))
        if receive is not None:
            _dry_receive(mechanism)
    except ConfigError as error:
        if isinstance(error, ModFileError):
            raise
        raise ModFileError(model.where, [(model.suffix_line, str(error))]) from None
    return mechanism


def _dry_receive(mechanism: PointMechanism) -> None:
    """Trace NET_RECEIVE once (no compiling), so a construct it cannot run is refused when
    the file loads."""
    def run(v, p):
        states = {**mechanism.initial(v, p, {"celsius": 6.3, "dt": 0.025}), "celsius": 6.3}
        mechanism.sent_at_start(v, p, {"celsius": 6.3, "dt": 0.025})
        return mechanism.deliver(states, mechanism.initial_args(states, v, p), v * 0 + 1,
                                 v * 0, v, p)

    jax.eval_shape(run, jnp.full((1,), -65.0),
                   {name: jnp.asarray(d) for name, (d, _) in mechanism.parameters.items()})
