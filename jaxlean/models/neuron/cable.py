"""A branched-neuron cable simulator: backward Euler on a tree, one ``tree_solve`` per step.

Units are NEURON's: mV, ms, um, uF/cm2, S/cm2, ohm*cm, nA. Each compartment is
a cylinder; neighbours couple through the resistance of their two halves. Per
step, gates advance by exponential Euler at the old voltage, then the voltage
solves ``(C/dt + G + axial) v_new = C/dt v + G E + stimulus`` (backward Euler)
with :func:`jaxlean.linalg.tree_solve`, so the gradient of a whole simulation
costs about one more solve per step. The parts of the matrix that do not change
over time (axial coupling, capacitance, leak) are built once outside the time
loop; the backward pass keeps only each step's state and solve output and
recomputes the cheap elementwise work. Everything in ``params`` is differentiable.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend.core import Primitive

from jaxlean.errors import ConfigError, MorphologyError
from jaxlean.linalg import Tree, tree_solve
from jaxlean.models.neuron import channels, swc

Params = dict[str, jax.Array]
PASSIVE_DEFAULTS = {"capacitance": 1.0, "axial_resistivity": 100.0, "g_leak": 3e-4,
                    "e_leak": -54.3, "v_init": -65.0}
HH_DEFAULTS = {**PASSIVE_DEFAULTS, "g_na": 0.12, "g_k": 0.036, "e_na": 50.0, "e_k": -77.0}


@dataclasses.dataclass(frozen=True, eq=False)
class Cell:
    """Compartments of a neuron: tree structure and default geometry (um).

    Attributes:
      tree: the compartment tree (static, for :func:`tree_solve`).
      length, radius: per compartment (um); the defaults of ``params``.
      branch: branch index of each compartment (``-1`` for somas).
    """

    tree: Tree
    length: np.ndarray
    radius: np.ndarray
    branch: np.ndarray

    @property
    def n(self) -> int:
        return self.tree.n

    @classmethod
    def from_parents(cls, parents: object, length: object, radius: object) -> Cell:
        """A cell from a compartment parent array (``-1`` = root) and lengths and radii (um)."""
        tree = Tree.from_parents(parents)
        geometry = {}
        for name, values in (("length", length), ("radius", radius)):
            array = np.broadcast_to(np.asarray(values, dtype=float), (tree.n,))
            bad = np.flatnonzero(~(array > 0) | ~np.isfinite(array))
            if bad.size:
                raise MorphologyError(f"compartment {int(bad[0])}: {name} must be positive, "
                                      f"got {array[bad[0]]}")
            geometry[name] = array.copy()
        return cls(tree, geometry["length"], geometry["radius"], np.zeros(tree.n, dtype=int))

    @classmethod
    def from_swc(cls, source: str | Path, ncomp: int | None = None,
                 max_length: float | None = None) -> Cell:
        """A cell from an SWC file (see :mod:`jaxlean.models.neuron.swc`)."""
        parts = swc.compartments(swc.read_swc(source), ncomp=ncomp, max_length=max_length)
        cell = cls.from_parents(parts["parents"], parts["length"], parts["radius"])
        return dataclasses.replace(cell, branch=parts["branch"])

    def params(self, channels: str = "hh") -> Params:
        """Default parameters: ``"hh"`` (Hodgkin-Huxley + leak) or ``"passive"`` (leak only)."""
        if channels not in ("hh", "passive"):
            raise ConfigError(f"channels must be 'hh' or 'passive'; got {channels!r}")
        defaults = HH_DEFAULTS if channels == "hh" else PASSIVE_DEFAULTS
        return {"length": jnp.asarray(self.length), "radius": jnp.asarray(self.radius),
                **{name: jnp.asarray(value) for name, value in defaults.items()}}


@dataclasses.dataclass(frozen=True)
class Stimulus:
    """Current clamp: ``current`` (nA, one value per time step) into each of ``compartments``."""

    compartments: tuple[int, ...]
    current: jax.Array


def step_current(amplitude: float, start: float, duration: float, dt: float,
                 t_max: float) -> jax.Array:
    """A current step (nA) sampled at every step of ``dt`` up to ``t_max`` (ms)."""
    t = (jnp.arange(n_steps(dt, t_max)) + 1) * dt
    return jnp.where((t > start) & (t <= start + duration), amplitude, 0.0)


def n_steps(dt: float, t_max: float) -> int:
    return round(t_max / dt)


def _children_by_parent(cell: Cell) -> tuple[np.ndarray, np.ndarray]:
    """Non-root compartments sorted by parent, and those parents (for a sorted segment sum)."""
    children = np.flatnonzero(cell.tree.parents >= 0)
    children = children[np.argsort(cell.tree.parents[children], kind="stable")]
    return children, cell.tree.parents[children]


def _static_matrix(cell: Cell, p: Params, dt: float):
    """The parts of the backward-Euler matrix that stay fixed over a simulation.

    Every row is divided by its membrane area. Returns ``lower``, ``upper`` and
    the diagonal without the membrane conductance (``C/dt`` plus axial coupling),
    all computed once per simulation rather than once per step.
    """
    parent = np.where(cell.tree.parents < 0, np.arange(cell.n), cell.tree.parents)
    area = 2e-8 * jnp.pi * p["radius"] * p["length"]
    half_resistance = p["axial_resistivity"] * 0.5e4 * p["length"] / (jnp.pi * p["radius"] ** 2)
    g_axial = jnp.where(cell.tree.parents < 0, 0.0,
                        1.0 / (half_resistance + half_resistance[parent]))
    children, their_parents = _children_by_parent(cell)
    from_children = jax.ops.segment_sum(g_axial[children], their_parents, cell.n,
                                        indices_are_sorted=True)
    lower = -1e3 * g_axial / area
    upper = -1e3 * g_axial / area[parent]
    diag = p["capacitance"] / dt + 1e3 * (from_children + g_axial) / area
    return lower, diag, upper, area


def _save_only_solves(primitive: Primitive, *_, **__) -> bool:
    """Rematerialisation policy of a time step: keep the solve's output, recompute the rest.

    Saving every intermediate of a step (about 40 arrays per compartment) made
    the backward pass memory-bound; the elementwise work is cheaper to redo, the
    solve is not.
    """
    return primitive.name == "custom_linear_solve"


def _broadcast(cell: Cell, params: Params) -> Params:
    return {name: jnp.broadcast_to(jnp.asarray(value), (cell.n,)) for name, value in params.items()}


def simulate(cell: Cell, params: Params, stimuli: Sequence[Stimulus], dt: float, t_max: float,
             record: Sequence[int] = (0,), states: Sequence[str] = ("v",)) -> dict[str, jax.Array]:
    """Run the cell for ``t_max`` ms in steps of ``dt`` ms (``lax.scan``).

    Args:
      cell: compartments, from :meth:`Cell.from_swc` or :meth:`Cell.from_parents`.
      params: scalars or per-compartment arrays, as from :meth:`Cell.params`; HH
        channels are simulated when it has ``g_na``. Differentiable, ``vmap``-able.
      stimuli: current clamps; each ``current`` has one value per step.
      dt, t_max: time step and duration (ms).
      record: compartments to record.
      states: any of ``"v"`` (mV) and the HH gates ``"m"``, ``"h"``, ``"n"``.

    Returns:
      ``{state: array (steps, len(record))}`` after each step, and ``"t"`` (ms).
    """
    steps = n_steps(dt, t_max)
    hh = "g_na" in params
    known = ("v", *channels.GATES) if hh else ("v",)
    unknown = [s for s in states if s not in known]
    if unknown:
        raise ConfigError(f"cannot record {unknown}; this cell has states {known}")
    record = np.asarray(record, dtype=int)
    if record.size == 0 or record.min() < 0 or record.max() >= cell.n:
        raise ConfigError(f"record must name compartments in [0, {cell.n - 1}]; got {record}")
    p = _broadcast(cell, params)
    targets = np.asarray([c for s in stimuli for c in s.compartments], dtype=int)
    currents = (jnp.stack([jnp.asarray(s.current) for s in stimuli for _ in s.compartments], 1)
                if stimuli else jnp.zeros((steps, 0)))
    if currents.shape[0] != steps:
        raise ConfigError(f"stimulus currents need {steps} values (t_max / dt); "
                          f"got {currents.shape[0]}")

    lower, diag_fixed, upper, area = _static_matrix(cell, p, dt)
    diag_fixed = diag_fixed + 1e3 * p["g_leak"]
    leak_drive = 1e3 * p["g_leak"] * p["e_leak"]
    capacitance_dt = p["capacitance"] / dt
    stimulus_scale = 1e-3 / area[targets]
    if hh:
        g_na, g_k = 1e3 * p["g_na"], 1e3 * p["g_k"]

    def step(carry, current):
        v, gates = carry
        diag, rhs = diag_fixed, capacitance_dt * v + leak_drive
        if hh:
            gates = channels.advance(gates, v, dt)
            open_na, open_k = channels.conductances(gates, g_na, g_k)
            diag = diag + open_na + open_k
            rhs = rhs + open_na * p["e_na"] + open_k * p["e_k"]
        if targets.size:
            rhs = rhs.at[targets].add(stimulus_scale * current)
        v = tree_solve(cell.tree, lower, diag, upper, rhs)
        state = {"v": v, **gates}
        return (v, gates), {name: state[name][record] for name in states}

    step = jax.checkpoint(step, policy=_save_only_solves)
    v0 = p["v_init"]
    gates0 = channels.steady_state(v0) if hh else {}
    _, trace = lax.scan(step, (v0, gates0), currents)
    return {**trace, "t": (jnp.arange(steps) + 1) * dt}
