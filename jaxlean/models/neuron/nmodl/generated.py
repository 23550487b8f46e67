"""A ``.mod`` file run as NEURON runs the C code ``nocmodl`` generates from it.

Every name lives where NEURON keeps it (:mod:`~jaxlean.models.neuron.nmodl.variables`):
the file's blocks read and write the values kept per compartment, so an ASSIGNED set
in INITIAL is read by BREAKPOINT and by later steps, a PARAMETER may be assigned, and
``celsius``, ``v`` and ``dt`` may appear in any expression. Per step, in NEURON's order:

* ``nrn_cur``: BREAKPOINT (without its SOLVE) at ``v + 0.001`` and at ``v``; the
  currents' slope linearises the membrane (``Mechanism.voltage_dependent``) and the
  values it assigns at ``v`` are kept (``cmax`` in ``if (cai > cmax) {cmax = cai}``);
  an ``ELECTRODE_CURRENT`` enters as NEURON adds it (``rhs += i``, ``d -= di/dv``): as
  the membrane current ``-i``, under which jaxlean also records it;
* ``nrn_state``: each SOLVE (:mod:`~jaxlean.models.neuron.nmodl.solve`) at the new
  voltage, reading the ions' variables then (a concentration written by a mechanism
  earlier in the order is read at its new value). A file that writes no current has no
  ``nrn_cur``: its whole BREAKPOINT runs here, in order, at the step's end (``T =
  NTdiffWave() + amb`` of ``diff3D.mod`` reads ``t = (n + 1) dt``).

INITIAL (``nrn_init``) runs at ``v_init`` after every kept value is set to its start
(:class:`~jaxlean.models.neuron.nmodl.variables.Variables`), with ``t = 0``. ``t`` elsewhere
is NEURON's ``t`` at that point of step ``n`` (from ``n dt``): ``(n + 1/2) dt`` in
BREAKPOINT (``nrn_cur``), ``(n + 1) dt`` in the SOLVEd blocks (``nrn_state``), 0 in the
currents recorded at the start. (NEURON adds ``dt/2`` twice a step, so its ``t`` may
differ from these in the last bits.)

This is the general translation: a file that also fits jaxlean's compact
:class:`Mechanism` form (rates with one q10, nothing kept between blocks) is loaded in
that form (:mod:`~jaxlean.models.neuron.nmodl.translate`), which computes the same
values with fewer states; a test checks both agree.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.mechanisms.mechanisms import Mechanism
from jaxlean.models.neuron.nmodl import syntax as s
from jaxlean.models.neuron.nmodl.before_after import check_before_after
from jaxlean.models.neuron.nmodl.interpret import Interpreter, JaxBackend
from jaxlean.models.neuron.nmodl.model import Model, ModFileError
from jaxlean.models.neuron.nmodl.solve import METHODS, STEADY_DT, solve
from jaxlean.models.neuron.nmodl.variables import Variables, plan_variables

__all__ = ["GeneratedMechanism", "InitialInterpreter", "generate"]


class InitialInterpreter(Interpreter):
    """Runs INITIAL, where ``SOLVE kinetic STEADYSTATE sparse`` may stand."""

    def solve(self, statement: s.Solve, local: dict, names: dict) -> None:
        block = self.model.blocks.get(statement.block)
        if statement.method != "steadystate" or block is None or block.kind != "KINETIC":
            raise self.model.error(statement.line, "in INITIAL, only SOLVE <KINETIC block> "
                                   "STEADYSTATE sparse is supported")
        solve(self.model, block, "steadystate", names, STEADY_DT)

    def call(self, node: s.Call, local: dict, names: dict):
        if node.name == "net_send" and self.model.point:  # queued by net_receive's
            return 0.0                                    # PointMechanism.sent_at_start
        return super().call(node, local, names)


def _never(*_):
    raise NotImplementedError("a GeneratedMechanism advances its states with step()")


@dataclasses.dataclass(frozen=True, eq=False)
class GeneratedMechanism(Mechanism):
    """A :class:`Mechanism` whose functions run a ``.mod`` file's blocks (see the module
    docstring); its states are every value the file keeps per compartment."""

    model: Model | None = None
    plan: Variables | None = None
    solves: tuple = ()

    def _names(self, v, states, p, celsius=None) -> dict:
        """The file's names bound to jaxlean's values."""
        plan = self.plan
        out = {"v": v, "celsius": states.get("celsius", celsius)}
        out.update({name: states[name] for name in ("dt", "t") if name in states})
        out.update({mod: p[jax] for mod, (jax, _, _) in plan.parameters.items()})
        out.update({name: states[name] for name in plan.ion_names if name in states})
        out.update({mod: states[jax] for mod, (jax, _) in plan.kept.items() if jax in states})
        return out

    def _kept(self, names, v) -> dict:
        shape, dtype, arrays = jnp.shape(v), jnp.result_type(v), self.model.arrays
        return {jax: jnp.broadcast_to(jnp.asarray(names[mod], dtype), shape + (
                    (arrays[mod],) if mod in self.model.vectors else ()))
                for mod, (jax, _) in self.plan.kept.items() if mod in names}

    def initial(self, v, p, ions=None):
        initial = InitialInterpreter(self.model, JaxBackend())
        return self._kept(self._run_initial(v, p, ions, initial), v)

    def _run_initial(self, v, p, ions, interpreter: Interpreter, extra=None) -> dict:
        """The names (and ``extra``) after INITIAL (and the BEFORE/AFTER blocks
        ``finitialize`` runs)."""
        ions = dict(ions or {})
        start = {jax: (ions[jax] if value is None else value)
                 for jax, value in self.plan.kept.values()}
        names = {**self._names(v, {**ions, **start}, p), "t": 0.0, **(extra or {})}
        ba = self.model.before_after
        for block in (ba.get("BEFORE INITIAL"), self.model.initial, ba.get("AFTER INITIAL"),
                      ba.get("BEFORE STEP")):
            if block is not None:
                interpreter.run_block(block, names)
        return names

    def _breakpoint(self, v, states, p) -> dict:
        names = self._names(v, states, p)
        names.update(dict.fromkeys(set(self.plan.currents) - set(self.plan.kept), 0.0))
        block = self.model.breakpoint
        body = tuple(st for st in block.body if not isinstance(st, s.Solve))
        Interpreter(self.model, JaxBackend()).run_block(
            dataclasses.replace(block, body=body), names)
        return names

    def currents_at(self, v, states, p, reversals=None):
        if not self.plan.currents:  # no nrn_cur (BREAKPOINT runs in step)
            return {}
        names = self._breakpoint(v, states, p)
        return {jax: -names[current] if current in self.model.electrode else names[current]
                for current, (jax, _) in self.plan.currents.items()}

    def currents_kept(self, v, states, p):
        if not self.plan.breakpoint_kept or not self.plan.currents:
            return {}
        names = self._breakpoint(v, states, p)
        return self._kept({m: names[m] for m in self.plan.breakpoint_kept}, v)

    def step(self, states, v, dt, speed, p):
        names = {**self._names(v, states, p), "dt": dt}
        if self.plan.currents:
            for block, method in self.solves:
                solve(self.model, block, method, names, dt)
        else:  # no nrn_cur: nrn_state runs all of BREAKPOINT, in order
            solves, block = iter(self.solves), self.model.breakpoint
            local = {name: 0.0 for name in block.locals}
            for statement in block.body:
                if isinstance(statement, s.Solve):
                    solve(self.model, *next(solves), names, dt)
                else:
                    Interpreter(self.model, JaxBackend()).run((statement,), local, names)
        for kind in ("AFTER SOLVE", "BEFORE STEP"):
            if kind in self.model.before_after:
                Interpreter(self.model, JaxBackend()).run_block(self.model.before_after[kind],
                                                                names)
        return self._kept(names, v)


def _solves(model: Model) -> tuple:
    """``((block, method), ...)`` of BREAKPOINT's SOLVE statements; problems recorded."""
    out = []
    if model.breakpoint is None:
        model.refuse(model.suffix_line, "no BREAKPOINT block")
        return ()
    for statement in model.breakpoint.body:
        if not isinstance(statement, s.Solve):
            continue
        block = model.blocks.get(statement.block)
        method = statement.method
        if block is None or block.kind not in ("DERIVATIVE", "KINETIC", "PROCEDURE"):
            model.refuse(statement.line, f"SOLVE {statement.block}: not a DERIVATIVE, "
                         f"KINETIC or PROCEDURE block of this file")
        elif block.kind == "KINETIC" and method not in ("sparse", ""):
            model.refuse(statement.line, f"SOLVE ... METHOD {method} is not supported for a "
                         f"KINETIC block; its method: sparse")
        elif block.kind == "DERIVATIVE" and method not in METHODS[:3]:
            model.refuse(statement.line, f"SOLVE ... METHOD {method or '(none)'} is not "
                         f"supported for a DERIVATIVE block; methods: {list(METHODS[:3])}")
        else:
            out.append((block, "sparse" if block.kind == "KINETIC" else method))
    return tuple(out)


def _dry_run(mechanism: GeneratedMechanism) -> None:
    """Trace every function once on one compartment (no computing), so a name the blocks
    cannot read (``t`` in BREAKPOINT, an unknown function) is refused when the file loads."""
    def run(v, p):
        ions = {name: jnp.full((1,), 1.0) for name in mechanism.plan.ion_names}
        ions["celsius"], ions["dt"], ions["t"] = jnp.asarray(6.3), 0.025, 0.0125
        states = {**ions, **mechanism.initial(v, p, ions)}
        mechanism.currents_at(v, states, p)
        mechanism.currents_kept(v, states, p)
        return mechanism.step(states, v, 0.025, 1.0, p)

    with jax.enable_x64(True):
        out = jax.eval_shape(run, jnp.full((1,), -65.0), {
            name: jnp.asarray(default) for name, (default, _) in mechanism.parameters.items()})
    if set(out) != set(mechanism.states):
        raise ConfigError(f"a step gives {sorted(out)}, not {sorted(mechanism.states)}")


def generate(model: Model, *, point: bool = False) -> GeneratedMechanism:
    """The :class:`GeneratedMechanism` of ``model`` (``point``: let a POINT_PROCESS through,
    for :func:`~jaxlean.models.neuron.nmodl.net_receive.generate_point`).

    Raises:
      ModFileError: every problem of the file, with its line.
    """
    plan = plan_variables(model)
    check_before_after(model, plan.ion_names)
    solves = _solves(model)
    if not plan.currents and not plan.kept:
        model.refuse(model.suffix_line, "the mechanism writes no current (USEION ... WRITE "
                     "i<ion> or NONSPECIFIC_CURRENT), no concentration and keeps no value")
    if model.point and not point:
        model.refuse(model.suffix_line, "POINT_PROCESS files load only in the compact form "
                     "(see translate); this one does not fit it")
    if model.problems:
        raise ModFileError(model.where, model.problems)
    try:
        mechanism = GeneratedMechanism(
            model.suffix, parameters={jax: (d, u) for jax, d, u in plan.parameters.values()},
            currents={jax: (_never, carrier) for jax, carrier in plan.currents.values()},
            states=tuple(jax for jax, _ in plan.kept.values()), dstate=_never,
            ions=plan.ions, voltage_dependent=True, model=model, plan=plan, solves=solves)
        _dry_run(mechanism)
    except ConfigError as error:
        message = str(error)
        if isinstance(error, ModFileError):
            raise
        raise ModFileError(model.where, [(model.suffix_line, message)]) from None
    return mechanism
