"""``SOLVE block METHOD m`` as NEURON's generated C code advances the states by ``dt``.

The block's statements run in order, each over the names kept per compartment
(``names``, updated in place: ASSIGNED values set by its procedures persist).

* ``cnexp``: each ``x' = f`` becomes, where it stands, ``x = x + (1 - exp(b dt))
  (-a/b - x)`` with ``a = f`` at ``x = 0`` and ``b = df/dx`` at the present ``x``
  (``jax.jvp``), as ``nocmodl`` writes it (exact for ``f`` linear in ``x``; for a
  nonlinear ``f`` the same formula NEURON runs). The statements after it see the new
  ``x`` (coupled equations are advanced one after the other, as in NEURON);
  ``x' = f`` with ``f`` free of ``x`` is ``x = x + dt f``.
* ``derivimplicit``: backward Euler, ``x_new = x + dt f(x_new)`` for every state of
  the block together, solved by Newton's method as NEURON does (NEURON stops when a
  step changes no state by more than 1e-6 with a finite-difference Jacobian; here
  :data:`NEWTON_STEPS` steps with the exact Jacobian: the same root, to round-off
  for ``f`` linear in the states, as in channels and calcium shells). The block then
  runs once more at the solution, leaving its ASSIGNED values there.
* ``sparse`` (a KINETIC block): backward Euler on the reactions' rates of change, by
  the same Newton steps; each ``CONSERVE`` (in amounts: a state in a COMPARTMENT
  counts times its volume) replaces the equation of its last state not already
  replaced, as nocmodl writes it.
* ``euler``: ``x = x + dt f(x)``, every ``f`` from the values before the step.
* ``SOLVE procedure`` (no METHOD): the PROCEDURE runs.
* ``SOLVE kinetic STEADYSTATE sparse`` in INITIAL: backward Euler steps of
  :data:`STEADY_DT`, NEURON's way to the steady state: one for a linear scheme (every
  side of every reaction one state or none), :data:`STEADY_REPEATS` otherwise, as
  ``_ss_sparse`` does (one step is not yet the steady state where a rate is slow).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxlean.models.neuron.nmodl import syntax as s
from jaxlean.models.neuron.nmodl.interpret import Interpreter, JaxBackend
from jaxlean.models.neuron.nmodl.model import Model

__all__ = ["METHODS", "NEWTON_STEPS", "linear", "mentions", "solve"]

METHODS = ("cnexp", "derivimplicit", "euler", "sparse")
NEWTON_STEPS = 3
"""Newton steps of ``derivimplicit`` (from the states before the step)."""


STEADY_DT, STEADY_REPEATS = 1e9, 7
"""``SOLVE kinetic STEADYSTATE sparse`` (in INITIAL): backward Euler steps of 1e9 ms, as
NEURON's ``_ss_sparse`` takes them (one for a linear scheme, up to 7 otherwise)."""


def linear(block: s.Block) -> bool:
    """Whether a KINETIC block's reactions are linear in its states, as nocmodl decides
    (each side of each ``~`` at most one state, coefficient 1)."""
    return all(sum(coefficient for _, coefficient in side) <= 1
               for statement in block.body if isinstance(statement, s.Reaction)
               for side in (statement.left, statement.right))


def mentions(model: Model, expr: s.Expr, name: str, seen: frozenset = frozenset()) -> bool:
    """Whether ``expr`` reads ``name``, directly or in a FUNCTION it calls."""
    if isinstance(expr, s.Name):
        return expr.id == name
    if isinstance(expr, s.Index):  # any element of the array counts
        return name.split("[")[0] == expr.id or mentions(model, expr.index, name, seen)
    if isinstance(expr, s.Unary):
        return mentions(model, expr.operand, name, seen)
    if isinstance(expr, s.Binary):
        return mentions(model, expr.left, name, seen) or mentions(model, expr.right, name, seen)
    if isinstance(expr, s.Call):
        if any(mentions(model, arg, name, seen) for arg in expr.args):
            return True
        block = model.blocks.get(expr.name)
        if block is None or block.name in seen or name in (*block.args, *block.locals):
            return False
        return any(_statement_mentions(model, st, name, seen | {block.name})
                   for st in block.body)
    return False


def _statement_mentions(model, statement, name, seen) -> bool:
    if isinstance(statement, s.Assign | s.Derivative):
        return mentions(model, statement.value, name, seen)
    if isinstance(statement, s.If):
        return mentions(model, statement.condition, name, seen) or any(
            _statement_mentions(model, st, name, seen)
            for st in (*statement.then, *statement.otherwise))
    if isinstance(statement, s.CallStatement):
        return mentions(model, statement.call, name, seen)
    if isinstance(statement, s.Loop):
        return any(_statement_mentions(model, st, name, seen) for st in statement.body)
    return False


class _Cnexp(Interpreter):
    """Runs a DERIVATIVE block, replacing each ``x' = f`` by its exponential step."""

    def __init__(self, model: Model, dt):
        super().__init__(model, JaxBackend())
        self.dt = dt

    def derivative(self, statement: s.Derivative, local: dict, names: dict) -> None:
        x = self.element(statement.state, statement.index, local, names, statement.line)
        old = names[x]
        if not mentions(self.model, statement.value, x):
            names[x] = old + self.dt * self.eval(statement.value, local, names)
            return

        def f(value):
            return jnp.asarray(self.eval(statement.value, dict(local), {**names, x: value}))

        _, slope = jax.jvp(f, (old,), (jnp.ones_like(old),))
        constant = f(jnp.zeros_like(old))
        names[x] = old + (1.0 - jnp.exp(self.dt * slope)) * (-constant / slope - old)


def _derivatives(model: Model, block: s.Block, names: dict) -> tuple[dict, list]:
    """Run ``block`` over ``names`` (in place); ``({state: x'}, [CONSERVE (terms, total)])``."""
    if block.kind == "KINETIC":
        kinetics = _Kinetics(model)
        kinetics.run_block(block, names)
        return kinetics.slopes(), kinetics.conserve
    out: dict = {}
    Interpreter(model, JaxBackend(),
                lambda state, value, line: out.__setitem__(state, value)).run_block(block, names)
    return out, []


class _Kinetics(Interpreter):
    """Runs a KINETIC block, summing each state's rate of change from its reactions: ``~ A +
    B <-> C (kf, kb)`` is the flux ``kf A B - kb C`` out of A and B into C (a coefficient
    ``2A`` counts A twice); ``~ A << (f)`` adds ``f`` to A'; ``COMPARTMENT V {A}`` makes it
    ``d(V A)/dt``."""

    def __init__(self, model: Model):
        super().__init__(model, JaxBackend())
        self.rates: dict = {}
        self.volumes: dict = {}
        self.conserve: list = []

    def _product(self, side, local, names):
        out = 1.0
        for x, coefficient in side:
            value = self.eval(s.Name(x, 0), local, names)
            for _ in range(coefficient):
                out = out * value
        return out

    def _add(self, x, value):
        self.rates[x] = self.rates.get(x, 0.0) + value

    def kinetic(self, statement, local: dict, names: dict) -> None:
        if isinstance(statement, s.Compartment):
            volume = self.eval(statement.volume, local, names)
            self.volumes.update(dict.fromkeys(statement.states, volume))
        elif isinstance(statement, s.Conserve):  # in amounts: a COMPARTMENT's volume counts
            self.conserve.append((statement.terms, self.eval(statement.total, local, names),
                                  dict(self.volumes)))
        elif statement.kind == "<<":
            if len(statement.left) != 1:
                raise self.model.error(statement.line, "~ ... << (flux) takes one state")
            self._add(statement.left[0][0], self.eval(statement.forward, local, names))
        else:
            flux = (self.eval(statement.forward, local, names)
                    * self._product(statement.left, local, names)
                    - self.eval(statement.backward, local, names)
                    * self._product(statement.right, local, names))
            for x, coefficient in statement.left:
                self._add(x, -coefficient * flux)
            for x, coefficient in statement.right:
                self._add(x, coefficient * flux)

    def slopes(self) -> dict:
        return {x: rate / self.volumes[x] if x in self.volumes else rate
                for x, rate in self.rates.items()}


def _backward_euler(model: Model, block: s.Block, names: dict, dt) -> None:
    slopes, conserve = _derivatives(model, block, dict(names))
    old = {x: names[x] for x in slopes}
    order = list(old)
    replaced = {}  # NEURON puts each CONSERVE in place of its last state's equation
    for terms, _, _ in conserve:
        free = [x for x, _ in terms if x in old and x not in replaced]
        if free:
            replaced[free[-1]] = len(replaced)

    def residual(xs):
        given = {**names, **dict(zip(order, xs, strict=True))}
        slopes, conserve = _derivatives(model, block, given)
        out = [x - old[name] - dt * jnp.asarray(slopes[name])
               for name, x in zip(order, xs, strict=True)]
        for name, k in replaced.items():
            terms, total, volumes = conserve[k]
            out[order.index(name)] = sum(c * volumes.get(x, 1.0) * given[x]
                                         for x, c in terms) - total
        return out

    xs = [jnp.asarray(old[name]) for name in order]
    for _ in range(NEWTON_STEPS):
        columns = []
        for j in range(len(order)):
            tangent = [jnp.ones_like(x) if k == j else jnp.zeros_like(x)
                       for k, x in enumerate(xs)]
            value, column = jax.jvp(residual, (xs,), (tangent,))
            columns.append(column)
        if len(order) == 1:
            xs = [xs[0] - value[0] / columns[0][0]]
            continue
        shape = jnp.broadcast_shapes(*(jnp.shape(x) for x in (*xs, *value)),
                                     *(jnp.shape(c) for column in columns for c in column))
        jac = jnp.stack([jnp.stack([jnp.broadcast_to(columns[j][i], shape)
                                    for j in range(len(order))], -1)
                         for i in range(len(order))], -2)
        rhs = jnp.stack([jnp.broadcast_to(r, shape) for r in value], -1)
        delta = jnp.linalg.solve(jac, rhs[..., None])[..., 0]
        xs = [jnp.broadcast_to(x, shape) - delta[..., k] for k, x in enumerate(xs)]
    names.update(zip(order, xs, strict=True))
    _derivatives(model, block, names)  # its ASSIGNED values at the solution
    names.update(zip(order, xs, strict=True))


def solve(model: Model, block: s.Block, method: str, names: dict, dt) -> None:
    """Advance the states of ``block`` by ``dt`` with ``method`` (see the module docstring);
    ``names`` holds every name of the file and is updated in place."""
    if block.kind == "PROCEDURE":
        Interpreter(model, JaxBackend()).run_block(block, names)
    elif method == "cnexp":
        _Cnexp(model, dt).run_block(block, names)
    elif method in ("derivimplicit", "sparse"):
        _backward_euler(model, block, names, dt)
    elif method == "steadystate" and block.kind == "KINETIC":
        saved = names.get("dt")
        names["dt"] = STEADY_DT
        for _ in range(1 if linear(block) else STEADY_REPEATS):
            _backward_euler(model, block, names, STEADY_DT)
        if saved is None:
            names.pop("dt")
        else:
            names["dt"] = saved
    elif method == "euler":
        slopes, _ = _derivatives(model, block, names)
        for x, slope in slopes.items():
            names[x] = names[x] + dt * slope
    else:
        raise model.error(block.line, f"METHOD {method} is not supported")
