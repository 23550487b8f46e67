"""A parsed ``.mod`` file in the compact :class:`~jaxlean.models.neuron.mechanisms.Mechanism`
form (gates with one q10, nothing kept between blocks), or an error naming what does not
fit it; ``load_mod`` then runs the file as NEURON's generated code
(:mod:`~jaxlean.models.neuron.nmodl.generated`), which computes the same values.

* ``DERIVATIVE``: each ``x' = f`` must be linear in ``x`` and free of the other
  states (``f = a + b x``, as ``cnexp`` requires); then ``inf = -a / b`` and
  ``tau = -1 / b``, computed from ``a = f(0)`` and ``b = df/dx`` (``jax.jvp``).
  ``cnexp`` is the mechanism's exponential step; ``derivimplicit`` (backward Euler,
  which NEURON's Newton iteration solves for a linear ``f``) is its ``advance``.
* Temperature: ``celsius`` may enter only through factors ``K ^ ((celsius - T0) / 10)``
  that multiply every rate (:mod:`~jaxlean.models.neuron.nmodl.analysis`); they
  become the mechanism's ``q10 = K`` at ``q10_celsius = T0``, and the file is
  evaluated with the factor set to 1.
* Ions (:mod:`~jaxlean.models.neuron.nmodl.ions`): a file that reads a
  concentration or an ion current, or writes a concentration, becomes a ``dstate``
  mechanism (``(a, b)`` of each ``x' = a + b x``, reading the ion variables), its
  ``INITIAL`` block its ``init``; a written concentration is the state ``cai``.
* ``INITIAL`` must set every state (other than written concentrations); without ions
  read in the kinetics, to its steady state (checked at 81 voltages with the default
  parameters), where jaxlean starts states.
* ``BREAKPOINT``: each current ``i = g * (v - e)`` (see
  :mod:`~jaxlean.models.neuron.nmodl.currents`), ``e`` a parameter or an ion's
  reversal it reads (``eca``: the current is carried by the ion). A conductance that
  reads ``v`` or ``celsius``, or a current of another form (``ica = P m^2 ghk(v, cai,
  cao)``), makes the mechanism ``voltage_dependent`` (NEURON's linearisation); a
  temperature factor in a conductance is refused.
* ``NET_RECEIVE(weight)`` (point processes): statements ``x = x + expr``, the weight
  a parameter ``weight_<suffix>`` (uS).
"""

from __future__ import annotations

from jaxlean.models.neuron.mechanisms.mechanisms import Mechanism
from jaxlean.models.neuron.nmodl import syntax as s
from jaxlean.models.neuron.nmodl.analysis import Abstract, AbstractBackend
from jaxlean.models.neuron.nmodl.currents import ohmic_form
from jaxlean.models.neuron.nmodl.functions import Plan, build
from jaxlean.models.neuron.nmodl.interpret import Interpreter
from jaxlean.models.neuron.nmodl.ions import ion_currents
from jaxlean.models.neuron.nmodl.model import Model
from jaxlean.models.neuron.nmodl.names import SPECIAL, Naming, parameter_default

__all__ = ["translate"]

METHODS = ("cnexp", "derivimplicit")


def _breakpoint(model: Model, currents: dict[str, int]):
    """The SOLVE statement, the BREAKPOINT body with currents replaced by conductances,
    and each current's reversal name in the file."""
    block = model.breakpoint
    if block is None:
        raise model.error(model.suffix_line, "no BREAKPOINT block")
    solves = [st for st in block.body if isinstance(st, s.Solve)]
    if len(solves) > 1:
        raise model.error(solves[1].line, "more than one SOLVE is not supported")
    body, reversals, seen = [], {}, set()
    for statement in block.body:
        if isinstance(statement, s.Solve):
            continue
        if isinstance(statement, s.Assign) and statement.target in currents:
            if statement.target in seen:
                raise model.error(statement.line, f"current {statement.target} is assigned "
                                  f"twice; write it as one g * (v - e)")
            seen.add(statement.target)
            form = ohmic_form(statement)
            if form is None:  # a current function of v (GHK): kept whole
                reversals[statement.target] = None
            else:
                g, reversals[statement.target] = form
                statement = s.Assign(statement.target, g, statement.line)
        elif _assigns(statement, currents):
            raise model.error(statement.line, "a current assigned inside if/else is not "
                              "supported; assign it once, outside if/else")
        body.append(statement)
    for current, line in currents.items():
        if current not in seen:
            raise model.error(line, f"current {current} is not assigned in BREAKPOINT")
    return (solves[0] if solves else None), tuple(body), reversals


def _assigns(statement: s.Statement, targets) -> bool:
    if isinstance(statement, s.Assign):
        return statement.target in targets
    if isinstance(statement, s.If):
        return any(_assigns(st, targets) for st in (*statement.then, *statement.otherwise))
    return False


def _abstract_names(model: Model, naming: Naming, states: bool) -> dict[str, Abstract]:
    names = {"v": Abstract(frozenset({"v"}), (("v", 1),)),
             "celsius": Abstract(frozenset({"celsius"}), hom=None, affine=(1.0, 0.0))}
    for name, variable in model.parameters.items():
        if name not in SPECIAL and name not in naming.reversals and name not in naming.ions.read:
            names[name] = Abstract(frozenset({name}), const=parameter_default(variable))
    names.update({name: Abstract(frozenset({name})) for name in naming.reversals})
    names.update({name: Abstract(frozenset({name})) for name in naming.ions.read})
    if model.net_receive is not None and model.net_receive.args:
        names[model.net_receive.args[0]] = Abstract(frozenset({model.net_receive.args[0]}))
    if states:
        names.update({x: Abstract(frozenset({x}), ((x, 1),)) for x in model.states})
    return names


def _no_parameter_assigned(model: Model, block: s.Block, before: dict, after: dict) -> None:
    for name in model.parameters:
        if name in before and after.get(name) is not before[name]:
            raise model.error(block.line, f"{block.kind} assigns the PARAMETER {name}; "
                              f"parameters are fixed during a simulation in jaxlean")


def _analyse_derivative(model: Model, naming: Naming, block: s.Block, backend):
    """``{state: (Abstract of x', line)}``, every equation checked to be linear in its state."""
    derivatives: dict[str, tuple[Abstract, int]] = {}

    def record(state: str, value: Abstract, line: int) -> None:
        if state not in model.states:
            raise model.error(line, f"{state}' but {state} is not a STATE")
        if state in derivatives:
            raise model.error(line, f"{state}' is given twice")
        derivatives[state] = (value, line)

    names = _abstract_names(model, naming, states=True)
    before = dict(names)
    Interpreter(model, backend, record).run_block(block, names)
    _no_parameter_assigned(model, block, before, names)
    for state in model.states:
        if state not in derivatives:
            raise model.error(block.line, f"DERIVATIVE {block.name} has no {state}' equation")
        value, line = derivatives[state]
        coupled = sorted((value.deps & set(model.states)) - {state})
        if coupled:
            raise model.error(line, f"{state}' depends on the states {coupled}: coupled "
                              f"equations are not supported (each state must obey "
                              f"x' = (inf(v) - x) / tau(v))")
        degree = value.deg(state)
        if degree != 1:
            what = "does not depend on" if degree == 0 else "is not linear in"
            raise model.error(line, f"{state}' {what} {state}; cnexp needs "
                              f"{state}' = a + b * {state} with a, b functions of v")
    return derivatives


def _temperature(model: Model, derivatives: dict, backend) -> tuple[float, float, frozenset]:
    """``(q10, q10_celsius, parameters folded into the factor)``."""
    for state, (value, line) in derivatives.items():
        if value.hom is None:
            raise model.error(line, f"{state}' depends on celsius other than through one "
                              f"factor K^((celsius - T0)/10) multiplying every rate; "
                              f"jaxlean's Mechanism has one q10")
    homs = {value.hom for value, _ in derivatives.values()}
    if homs <= {0}:
        return 1.0, 6.3, frozenset()
    if homs != {1}:
        state, (_, line) = next((x, d) for x, d in derivatives.items() if d[0].hom != 1)
        raise model.error(line, f"{state}' is not multiplied by the temperature factor that "
                          f"multiplies the other rates; jaxlean's Mechanism has one q10")
    factors = {(f.q10, f.t0) for f in backend.factors.values()}
    if len(factors) != 1:
        line = max(f.line for f in backend.factors.values())
        raise model.error(line, f"the rates use different temperature factors "
                          f"{sorted(factors)} (q10, T0); jaxlean's Mechanism has one q10")
    (q10, t0), = factors
    frozen = frozenset().union(*(f.frozen for f in backend.factors.values()))
    return q10, t0, frozen


def _analyse_rest(model: Model, naming: Naming, plan_body: tuple, currents, reversals,
                  backend) -> bool:
    """INITIAL sets every own state, free of temperature; NET_RECEIVE adds to states.
    Returns whether the currents are ``voltage_dependent``: a conductance reads ``v`` or
    ``celsius`` (not through a temperature factor, which is refused), or a current is
    not ohmic."""
    own = [x for x in model.states if x not in naming.ions.written]
    if own and model.initial is None:
        raise model.error(model.suffix_line, "no INITIAL block: NEURON starts the states "
                          "at 0, jaxlean at their steady state")
    if model.initial is not None:
        names = _abstract_names(model, naming, states=False)
        before = dict(names)
        Interpreter(model, backend).run_block(model.initial, names)
        _no_parameter_assigned(model, model.initial, before, names)
        for state in own:
            if state not in names:
                raise model.error(model.initial.line, f"INITIAL does not set STATE {state} "
                                  f"(NEURON starts it at 0, jaxlean at its steady state)")
            if names[state].hom != 0:
                raise model.error(model.initial.line, f"INITIAL sets {state} from celsius")
    names = _abstract_names(model, naming, states=True)
    before = dict(names)
    factors_before = len(backend.factors)
    block = s.Block("BREAKPOINT", "BREAKPOINT", (), model.breakpoint.locals, plan_body,
                    model.breakpoint.line)
    Interpreter(model, backend).run_block(block, names)
    _no_parameter_assigned(model, block, before, names)
    dependent = False
    for current in currents:
        g = names[current]
        line = next(st.line for st in plan_body if isinstance(st, s.Assign)
                    and st.target == current)
        thermal = "celsius" in g.deps
        if thermal and (g.hom not in (None, 0) or len(backend.factors) > factors_before):
            raise model.error(line, f"the conductance of {current} depends on celsius "
                              f"through a temperature factor; jaxlean's Mechanism applies "
                              f"temperature factors to rates only")
        dependent |= thermal or "v" in g.deps or reversals[current] is None
    return dependent


def _method(model: Model, solve: s.Solve | None) -> tuple[s.Block | None, str]:
    """The DERIVATIVE block SOLVE names and its method."""
    if not model.states:
        return None, ""
    if solve is None:
        raise model.error(model.breakpoint.line, "STATEs without a SOLVE in BREAKPOINT")
    derivative = model.blocks.get(solve.block)
    if derivative is None or derivative.kind != "DERIVATIVE":
        raise model.error(solve.line, f"SOLVE {solve.block}: not a DERIVATIVE block of "
                          f"this file")
    if solve.method not in METHODS:
        raise model.error(solve.line, f"SOLVE ... METHOD {solve.method or '(none)'} is not "
                          f"supported; methods: {list(METHODS)}")
    return derivative, solve.method


def _reversal(model: Model, naming: Naming, current: str, name: str | None,
              line: int) -> str | None:
    """The Mechanism's reversal of ``current``: an ion's reversal it reads (``"eca"``), a
    parameter's jaxlean name, the ion's current (``"ica"``) for a current function
    carried by the ion, or ``None`` (a nonspecific current function)."""
    if name is None:
        carried = current in naming.ions.read or any(
            current in use.write for use in naming.ions.uses)
        return current if carried else None
    if name in naming.ions.read and any(name == f"e{use.ion}" for use in naming.ions.uses):
        return name
    if name in naming.reversals:
        return name
    if name in naming.parameters:
        return naming.parameters[name][0]
    raise model.error(line, f"the reversal {name} of {current} is not a PARAMETER or an "
                      f"ion's reversal potential it READs")


def translate(model: Model) -> Mechanism:
    """The :class:`Mechanism` of ``model`` (see the module docstring for what maps)."""
    if model.electrode or model.before_after:
        raise model.error(model.suffix_line, "ELECTRODE_CURRENT, BEFORE/AFTER: the general "
                          "form only")
    currents = ion_currents(model)
    solve, body, reversal_names = _breakpoint(model, currents)
    derivative, method = _method(model, solve)
    naming = Naming.of(model, method=method)
    if not currents and not naming.ions.written:
        raise model.error(model.suffix_line, "the mechanism writes no current (USEION ... "
                          "WRITE i<ion> or NONSPECIFIC_CURRENT) and no concentration")
    rates_backend, rest_backend = AbstractBackend(), AbstractBackend()
    q10, t0, frozen = 1.0, 6.3, frozenset()
    if derivative is not None:
        derivatives = _analyse_derivative(model, naming, derivative, rates_backend)
        q10, t0, frozen = _temperature(model, derivatives, rates_backend)
    dependent = _analyse_rest(model, naming, body, currents, reversal_names, rest_backend)
    naming = Naming.of(model, frozen, method)
    reversals = {current: _reversal(model, naming, current, name, currents[current])
                 for current, name in reversal_names.items()}
    plan = Plan(model, naming, derivative, method, body, reversals,
                frozenset(rates_backend.factors) | frozenset(rest_backend.factors), dependent)
    return build(plan, q10, t0)
