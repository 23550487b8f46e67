"""A branched-neuron cable simulator: backward Euler on a tree, one ``tree_solve`` per step.

Units are NEURON's: mV, ms, um, uF/cm2, S/cm2, ohm*cm, nA, degC. The cell is
discretised as NEURON does it (see :mod:`jaxlean.models.neuron.cell`). Per step,
gates advance by exponential Euler at the old voltage, then the voltage solves
``(C/dt + G + axial) v_new = C/dt v + G E + stimulus`` (backward Euler) with
:func:`jaxlean.linalg.tree_solve`, so the gradient of a whole simulation costs
about one more solve per step. The parts of the matrix that do not change over
time (axial coupling, capacitance, leak) are built once outside the time loop.
Everything in ``params`` is differentiable; ``checkpoint`` bounds the memory of
the backward pass of long simulations (see :func:`simulate`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Primitive

from jaxlean.errors import ConfigError
from jaxlean.linalg import tree_solve
from jaxlean.models.neuron import channels
from jaxlean.models.neuron import params as parameters
from jaxlean.models.neuron._time import Checkpoint, scan_steps
from jaxlean.models.neuron.cell import Cell

__all__ = ["Cell", "Stimulus", "n_steps", "simulate", "step_current"]


@dataclasses.dataclass(frozen=True)
class Stimulus:
    """Current clamp (nA) into one compartment or several.

    Attributes:
      compartments: a compartment index, or a sequence of them.
      current: a scalar (constant for the whole run) or one value per time step.
    """

    compartments: int | Sequence[int]
    current: jax.Array | float


def step_current(amplitude: float, start: float, duration: float, dt: float,
                 t_max: float) -> jax.Array:
    """A current step (nA) sampled at every step of ``dt`` up to ``t_max`` (ms).

    The step is on during the steps that end in ``(start, start + duration]``,
    which is what NEURON's ``IClamp`` delivers on the same grid.
    """
    t = (jnp.arange(n_steps(dt, t_max)) + 1) * dt
    return jnp.where((t > start) & (t <= start + duration), amplitude, 0.0)


def n_steps(dt: float, t_max: float) -> int:
    """Number of time steps of a run: ``round(t_max / dt)``."""
    return round(t_max / dt)


def _children_by_parent(parents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Non-root nodes sorted by parent, and those parents (for a sorted segment sum)."""
    children = np.flatnonzero(parents >= 0)
    children = children[np.argsort(parents[children], kind="stable")]
    return children, parents[children]


def _static_matrix(cell: Cell, p: dict[str, jax.Array], dt: float):
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


def _stimuli(cell: Cell, stimuli: Sequence[Stimulus], steps: int):
    """Target compartments and a ``(steps, targets)`` current array."""
    targets, columns = [], []
    for index, stimulus in enumerate(stimuli):
        where = np.atleast_1d(np.asarray(stimulus.compartments))
        if where.ndim != 1 or not np.issubdtype(where.dtype, np.integer) or where.size == 0:
            raise ConfigError(f"stimulus {index}: compartments must be an index or a sequence of "
                              f"indices; got {stimulus.compartments!r}")
        if where.min() < 0 or where.max() >= cell.n:
            raise ConfigError(f"stimulus {index}: compartments must be in [0, {cell.n - 1}]; "
                              f"got {where.tolist()}")
        current = jnp.asarray(stimulus.current)
        if current.ndim == 0:
            current = jnp.broadcast_to(current, (steps,))
        if current.shape != (steps,):
            raise ConfigError(f"stimulus {index}: current must be a scalar or have {steps} "
                              f"values (t_max / dt); got shape {current.shape}")
        targets.extend(where.tolist())
        columns.extend([current] * where.size)
    if not targets:
        return np.zeros(0, dtype=int), jnp.zeros((steps, 0))
    return np.asarray(targets), jnp.stack(columns, 1)


def simulate(cell: Cell, params: parameters.Params, stimuli: Sequence[Stimulus], dt: float,
             t_max: float, record: int | Sequence[int] = (0,), states: Sequence[str] = ("v",),
             checkpoint: Checkpoint = None, progress: bool = True) -> dict[str, jax.Array]:
    """Run the cell for ``t_max`` ms in steps of ``dt`` ms (``lax.scan``).

    Args:
      cell: compartments, from :meth:`Cell.from_swc` or :meth:`Cell.from_parents`.
      params: as from :meth:`Cell.params` (checked by name and shape, see
        :mod:`jaxlean.models.neuron.params`); HH channels are simulated when it
        holds the HH parameters. Differentiable, ``vmap``-able.
      stimuli: current clamps.
      dt, t_max: time step and duration (ms).
      record: a compartment or compartments to record.
      states: any of ``"v"`` (mV) and the HH gates ``"m"``, ``"h"``, ``"n"``.
      checkpoint: memory of the backward pass over time. ``None`` keeps every
        step's state (fastest; memory grows with the number of steps T).
        ``"sqrt"`` runs segments of about ``sqrt(T)`` steps and keeps only each
        segment's first state, recomputing one segment at a time in the backward
        pass: O(sqrt(T)) states for about one extra forward pass. A sequence of
        lengths, outermost first, nests the segments (``(100, 100, 10)`` for
        100,000 steps keeps about 210 states); their product must reach T.
      progress: with ``checkpoint``, a run whose forward or backward pass takes
        longer than ``$JAXLEAN_PROGRESS_INTERVAL`` seconds (default 10) prints
        its progress on stderr, one host callback per outer segment; False: silent.

    Returns:
      ``{state: array (steps, len(record))}`` after each step, and ``"t"`` (ms).
    """
    steps = n_steps(dt, t_max)
    p = parameters.check(cell, params)
    hh = parameters.has_channels(p)
    known = ("v", *channels.GATES) if hh else ("v",)
    unknown = [s for s in states if s not in known]
    if unknown:
        raise ConfigError(f"cannot record {unknown}; this cell has states {known}")
    record = np.atleast_1d(np.asarray(record, dtype=int))
    if record.size == 0 or record.min() < 0 or record.max() >= cell.n:
        raise ConfigError(f"record must name compartments in [0, {cell.n - 1}]; got {record}")
    targets, currents = _stimuli(cell, stimuli, steps)

    n, junctions = cell.n, cell.tree.n - cell.n
    lower, diag_axial, upper, area = _static_matrix(cell, p, dt)
    capacitance_dt = p["capacitance"] / dt
    diag_fixed = capacitance_dt + 1e3 * p["g_leak"]
    leak_drive = 1e3 * p["g_leak"] * p["e_leak"]
    stimulus_scale = 1e-3 / area[targets]
    if hh:
        g_na, g_k = 1e3 * p["g_na"], 1e3 * p["g_k"]
        speed = channels.q10(p["celsius"])

    def pad(x):
        return jnp.concatenate([x, jnp.zeros(junctions, x.dtype)]) if junctions else x

    def step(carry, current):
        v, gates = carry
        membrane = v[:n]
        diag, rhs = diag_fixed, capacitance_dt * membrane + leak_drive
        if hh:
            gates = channels.advance(gates, membrane, dt, speed)
            open_na, open_k = channels.conductances(gates, g_na, g_k)
            diag = diag + open_na + open_k
            rhs = rhs + open_na * p["e_na"] + open_k * p["e_k"]
        if targets.size:
            rhs = rhs.at[targets].add(stimulus_scale * current)
        v = tree_solve(cell.tree, lower, diag_axial + pad(diag), upper, pad(rhs))
        state = {"v": v, **gates}
        return (v, gates), {name: state[name][record] for name in states}

    step = jax.checkpoint(step, policy=_save_only_solves)
    v0 = jnp.concatenate([p["v_init"], p["v_init"][cell.junction_owner]])
    gates0 = channels.steady_state(p["v_init"]) if hh else {}
    trace = scan_steps(step, (v0, gates0), currents, checkpoint,
                       "simulate" if progress else None)
    return {**trace, "t": (jnp.arange(steps) + 1) * dt}
