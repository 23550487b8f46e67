"""A branched-neuron cable simulator: backward Euler on a tree, one ``tree_solve`` per step.

Units are NEURON's: mV, ms, um, uF/cm2, S/cm2, ohm*cm, nA, uS, degC. The cell is
discretised as NEURON does it (see :mod:`jaxlean.models.neuron.cell.cell`); its
channels and synapses are :class:`~jaxlean.models.neuron.mechanisms.mechanisms.Mechanism`
data. Each step solves the backward-Euler system with
:func:`jaxlean.linalg.tree_solve_in_layout` (see :mod:`jaxlean.models.neuron.simulation._program`),
so the gradient of a whole simulation costs about one more solve per step.
Everything in ``params`` is differentiable; ``remat`` bounds the memory of
the backward pass of long simulations, and a run can be continued from the
state another one ended in (see :func:`simulate`).

``simulate`` checks its inputs in Python, then runs a program compiled once per
cell structure and options: calling it again with other parameter values,
stimulus currents, spike times or initial state (or an equal cell) does not
compile again.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import functools
import math
from collections.abc import Callable, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean._args import as_names, reject_renamed
from jaxlean._progress import interval
from jaxlean.errors import ConfigError
from jaxlean.models.neuron.cell import params as parameters
from jaxlean.models.neuron.cell.cell import Cell
from jaxlean.models.neuron.mechanisms.ions import variables
from jaxlean.models.neuron.mechanisms.mechanisms import Insertion
from jaxlean.models.neuron.simulation import _time
from jaxlean.models.neuron.simulation import clamp as clamps_
from jaxlean.models.neuron.simulation import spikes as spikes_
from jaxlean.models.neuron.simulation._current import checked_current
from jaxlean.models.neuron.simulation._initial import initial_state
from jaxlean.models.neuron.simulation._ion_pool import ion_uses
from jaxlean.models.neuron.simulation._program import Plan, loop, program
from jaxlean.models.neuron.simulation._time import Remat, segment_lengths
from jaxlean.models.neuron.simulation.clamp import VoltageClamp

__all__ = ["Cell", "Stimulus", "VoltageClamp", "n_steps", "rest_state", "simulate",
           "step_current"]


@dataclasses.dataclass(frozen=True)
class Stimulus:
    """Current clamp (nA) into one compartment or several.

    Attributes:
      compartments: a compartment index, or a sequence of them. In a network
        (``simulate_network``), places as ``record`` takes them: ``(cell, location)``, the
        forest's number, or a list of those.
      current: a scalar (constant for the whole run) or one value per time step.
    """

    compartments: int | Sequence[int] | tuple
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
    """Number of time steps of a run, ``t_max / dt``.

    Raises:
      ConfigError: ``dt`` or ``t_max`` not a positive finite number, or ``t_max``
        not a whole number of steps (within 1e-9 of a step).
    """
    for name, value in (("dt", dt), ("t_max", t_max)):
        if isinstance(value, jax.core.Tracer) or np.ndim(value) != 0:
            raise ConfigError(f"{name} must be a Python number (it sets the number of steps); "
                              f"got {type(value).__name__}")
        if not (math.isfinite(float(value)) and float(value) > 0):
            raise ConfigError(f"{name} must be a positive finite number of ms; got {value}")
    ratio = float(t_max) / float(dt)
    steps = round(ratio)
    if steps < 1 or abs(ratio - steps) > 1e-9 * max(1.0, ratio):
        raise ConfigError(f"t_max ({t_max} ms) must be a whole number of steps of dt ({dt} ms); "
                          f"t_max / dt = {ratio!r}")
    return steps


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
        current = checked_current(index, stimulus.current, steps, f" (compartment {where[0]})")
        targets.extend(where.tolist())
        columns.extend([jnp.asarray(current, dtype=float)] * where.size)
    if not targets:
        return np.zeros(0, dtype=np.int64), jnp.zeros((steps, 0))
    return np.asarray(targets), jnp.stack(columns, 1)


def _compartment_list(cell: Cell, where: object, what: str) -> np.ndarray:
    where_array = np.atleast_1d(np.asarray(where))
    if (where_array.size == 0 or where_array.ndim != 1
            or not np.issubdtype(where_array.dtype, np.integer)
            or where_array.min() < 0 or where_array.max() >= cell.n):
        raise ConfigError(f"{what} must name compartments in [0, {cell.n - 1}]; got {where!r}")
    return where_array.astype(np.int64)


def _sites(cell: Cell, insertions, record: object, names: Sequence[str] | Mapping,
           clamped: np.ndarray):
    """Where each recorded name is read: ``{name: (insertion index or None, positions)}``."""
    if isinstance(names, Mapping):
        wanted = {name: _compartment_list(cell, where, f"states[{name!r}]")
                  for name, where in names.items()}
    else:
        record = _compartment_list(cell, record, "record")
        wanted = {name: record for name in as_names(names, "states")}
    owners = {"v": None}
    for k, ins in enumerate(insertions):
        owners.update({name: k for name in (*ins.mechanism.own_states(),
                                            *ins.mechanism.currents)})
    ions = _ion_variables(cell, insertions)
    owners.update({name: None for name in ions})
    if clamped.size:
        owners["i_clamp"] = None
    unknown = [name for name in wanted if name not in owners]
    for name in unknown:
        if (new := parameters.RENAMED_RECORDINGS.get(name)) in owners:
            raise ConfigError(f"cannot record {name!r}: it is now called {new!r}, NEURON's name")
    if unknown:
        raise ConfigError(f"cannot record {unknown}; this cell has {list(owners)}")
    sites: dict[str, tuple[int | None, np.ndarray]] = {}
    for name, record in wanted.items():
        k = owners[name]
        if name == "v" or name in ions:
            sites[name] = (None, record)
        elif k is None:
            sites[name] = (None, np.arange(clamped.size))
        elif insertions[k].mechanism.point:
            sites[name] = (k, np.arange(insertions[k].compartments.size))
        elif insertions[k].compartments is None:
            sites[name] = (k, record)
        else:
            where = insertions[k].compartments
            missing = record[~np.isin(record, where)]
            if missing.size:
                raise ConfigError(f"cannot record {name!r} at compartment {int(missing[0])}: "
                                  f"{insertions[k].mechanism.name!r} is not inserted there")
            sites[name] = (k, np.searchsorted(where, record))
    return sites


def _ion_variables(cell: Cell, insertions) -> tuple[str, ...]:
    """The ion variables a run can record: each used ion's reversal, its current where a
    mechanism writes or reads it, its concentrations where they are used."""
    names = []
    for use in ion_uses(cell.n, insertions).values():
        ion = variables(use.ion)
        names.append(ion["e"])
        names += [ion["current"]] if use.current else []
        names += [ion["i"], ion["o"]] if use.concentrations else []
    return tuple(names)


def _spike_inputs(insertions, spikes: Mapping | None) -> dict[str, jax.Array]:
    driven = {ins.mechanism.name: ins for ins in insertions if ins.mechanism.on_spike is not None}
    spikes = dict(spikes or {})
    unknown = sorted(set(spikes) - set(driven))
    if unknown:
        raise ConfigError(f"spikes for {unknown}, which is not a synapse of this cell; "
                          f"synapses: {sorted(driven)}")
    missing = sorted(set(driven) - set(spikes))
    if missing:
        raise ConfigError(f"no spike times for the synapses {missing}: give spikes={{name: times}}"
                          f" (an array (synapses, 0) for none)")
    return {name: spikes_.spike_array(name, spikes[name], driven[name].compartments.size)
            for name in driven}


def _check_initial(initial: Mapping, expected: Mapping) -> None:
    """``initial`` must have the keys and shapes of ``expected``; values finite when concrete."""
    if not isinstance(initial, Mapping) or set(initial) != set(expected) or not isinstance(
            initial["states"], Mapping) or set(initial["states"]) != set(expected["states"]):
        have = (sorted(initial) if isinstance(initial, Mapping) else type(initial).__name__)
        raise ConfigError(f"initial state must have keys {sorted(expected)} and states of "
                          f"{sorted(expected['states'])}; got {have}: pass the 'final' of a "
                          f"run of the same cell and mechanisms")
    for path, want in jax.tree_util.tree_flatten_with_path(expected)[0]:
        node = initial
        for key in path:
            if not isinstance(node, Mapping) or key.key not in node:
                raise ConfigError(f"initial state lacks {jax.tree_util.keystr(path)}; pass the "
                                  f"'final' of a run of the same cell and mechanisms")
            node = node[key.key]
        if np.shape(node) != want.shape:
            raise ConfigError(f"initial state {jax.tree_util.keystr(path)} has shape "
                              f"{np.shape(node)}, this cell needs {want.shape}")
        if not isinstance(node, jax.core.Tracer):
            bad = np.flatnonzero(~np.isfinite(np.asarray(node)).reshape(-1))
            if bad.size:
                raise ConfigError(f"initial state {jax.tree_util.keystr(path)} is not finite at "
                                  f"index {bad[0]}")
    if len(jax.tree.leaves(initial)) != len(jax.tree.leaves(expected)):
        raise ConfigError("initial state has entries this cell does not; pass the 'final' of a "
                          "run of the same cell and mechanisms")


def _strong(value: object) -> jax.Array:
    """A parameter as a strongly typed float array, so Python numbers and arrays of the same
    shape share one compiled program."""
    if isinstance(value, jax.Array) and not value.weak_type and jnp.issubdtype(value.dtype,
                                                                               jnp.floating):
        return value
    dtype = jnp.result_type(float)
    if isinstance(value, jax.core.Tracer):
        return value.astype(dtype)
    return jax.device_put(np.asarray(value, dtype=dtype))  # a transfer, not a compiled cast


_PROGRAMS: collections.OrderedDict[tuple, Callable] = collections.OrderedDict()
_MAX_PROGRAMS = 64


def _jax_configuration() -> tuple:
    """What a traced program depends on besides its plan: 64-bit mode, the default matmul
    precision, the backend and default device, the dtype promotion rule."""
    return (bool(jax.config.jax_enable_x64), jax.config.jax_default_matmul_precision,
            jax.default_backend(), jax.config.jax_default_device,
            jax.config.jax_numpy_dtype_promotion)


def _structure(cell: Cell, insertions: tuple[Insertion, ...]) -> tuple:
    """The cell's structure and its mechanisms where they are inserted: equal for equal cells."""
    return (cell.structure, tuple((ins.mechanism, None if ins.compartments is None else
                                   tuple(ins.compartments.tolist())) for ins in insertions))


def _cached(key: tuple, build: Callable[[], Callable]) -> Callable:
    if key in _PROGRAMS:
        _PROGRAMS.move_to_end(key)
    else:
        _PROGRAMS[key] = build()
        while len(_PROGRAMS) > _MAX_PROGRAMS:
            _PROGRAMS.popitem(last=False)
    return _PROGRAMS[key]


def _cached_program(plan: Plan, with_initial: bool) -> Callable:
    """One compiled program per cell structure, static options and JAX configuration
    (:func:`_jax_configuration`), the last 64 kept (``jax.jit`` then caches per argument
    shapes). A program uses only the cell's structure (:attr:`Cell.structure`), so equal
    cells share it."""
    key = ("simulate", _jax_configuration(), _structure(plan.cell, plan.insertions),
           plan.dt, plan.steps, plan.every,
           tuple((name, k, tuple(pos.tolist())) for name, (k, pos) in plan.sites.items()),
           tuple(plan.targets.tolist()), tuple(plan.clamped.tolist()),
           tuple(plan.detectors.tolist()), plan.threshold, plan.max_spikes,
           plan.remat if isinstance(plan.remat, str | None) else tuple(plan.remat),
           plan.progress and interval(), with_initial,  # the interval is read when traced
           _time.KEEP_STATES_BYTES,  # read when traced
           tuple((syn, tuple(pre.tolist()), tuple(post.tolist()))
                 for syn, pre, post in plan.couplings))

    def build() -> Callable:
        cell, insertions = _own_arrays(plan.cell, plan.insertions)
        return program(dataclasses.replace(plan, cell=cell, insertions=insertions))

    return _cached(key, build)


def _program_for(plan: Plan, with_initial: bool, args: tuple) -> Callable:
    """The cached compiled program, or, when an argument is traced (``simulate`` inside a
    caller's ``jit``, ``grad`` or ``vmap``), the loop traced in place: the caller compiles it
    anyway, and JAX 0.10 fails to trace the gradient of the segmented loop (a
    ``custom_jvp``) through a ``jit`` inside ``vmap`` (the gradient of a ``vmap`` over
    stimuli). Either way the loop sees its own copy of the cell's arrays
    (:func:`_own_arrays`)."""
    if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(args)):
        cell, insertions = _own_arrays(plan.cell, plan.insertions)
        return functools.partial(loop, dataclasses.replace(plan, cell=cell,
                                                           insertions=insertions))
    return _cached_program(plan, with_initial)


def _own_arrays(cell: Cell, insertions: tuple[Insertion, ...]):
    """Copies of ``cell`` and ``insertions`` with their own NumPy arrays.

    JAX 0.10 can carry what it derived from a NumPy array in a trace under one 64-bit
    setting into a later trace under the other (a ``simulate`` inside
    ``jax.enable_x64(True)``, then one outside, failed with ``lax.add requires arguments
    to have the same dtypes, got int64, int32``, even from a new ``jax.jit``); a program
    that shares no array with the programs of other configurations is traced afresh.
    """
    arrays = {field.name: np.array(getattr(cell, field.name))
              for field in dataclasses.fields(cell)
              if isinstance(getattr(cell, field.name), np.ndarray)}
    insertions = tuple(Insertion(ins.mechanism, None if ins.compartments is None
                                 else np.array(ins.compartments)) for ins in insertions)
    return dataclasses.replace(cell, **arrays, tree=copy.deepcopy(cell.tree)), insertions


def rest_state(cell: Cell, params: parameters.Params) -> dict:
    """The state a run starts from without ``initial``: ``v_init`` everywhere, every state at
    rest there, step 0. Edit it (a voltage, a gate) and pass it as ``simulate(initial=...)``."""
    insertions = cell.insertions(params)
    parameters.check(cell, params, insertions)

    def build() -> Callable:
        own_cell, own = _own_arrays(cell, insertions)
        return jax.jit(lambda p: initial_state(own_cell, own,
                                               parameters.expand(own_cell, p, own)))

    rest = _cached(("rest_state", _jax_configuration(), _structure(cell, insertions)), build)
    return rest({name: _strong(v) for name, v in params.items()})


def simulate(cell: Cell, params: parameters.Params, stimuli: Sequence[Stimulus], dt: float,
             t_max: float, record: int | Sequence[int] = (0,),
             states: str | Sequence[str] | Mapping[str, Sequence[int]] = ("v",),
             remat: Remat = None, progress: bool = True, *, every: int = 1,
             initial: Mapping | None = None, spikes: Mapping | None = None,
             clamps: Sequence[VoltageClamp] = (), detect: Sequence[int] = (),
             threshold: float = 10.0, max_spikes: int = 100, **renamed) -> dict:
    """Run the cell for ``t_max`` ms in steps of ``dt`` ms (``lax.scan``).

    Compiled once per cell structure and options, reused for new values; also callable
    inside ``jax.jit``, ``jax.grad`` and ``jax.vmap`` (values are then checked
    only where they are concrete).

    Args:
      cell: compartments and inserted mechanisms (:meth:`Cell.insert`); a cell
        with none runs the preset its ``params`` select (``hh`` + ``pas`` or ``pas``).
      params: as from :meth:`Cell.params` (checked by name, shape and value,
        see :mod:`jaxlean.models.neuron.cell.params`). Differentiable, ``vmap``-able.
      stimuli: current clamps.
      dt, t_max: time step and duration (ms); ``t_max`` a whole number of steps.
      record: a compartment or compartments where density states and currents
        and ``"v"`` are recorded (point mechanisms and clamps: every instance).
      states: a name or names to record: ``"v"`` (mV), any mechanism's states (``"m"``,
        ``"g_expsyn"``, ...) or currents (``"i_na"``: mA/cm2, ``"i_expsyn"``: nA,
        computed at the voltage at the start of each step, as NEURON records
        them), ``"i_clamp"`` (nA), the ions' variables (``"eca"`` and ``"ica"`` of
        the step, ``"cai"`` after it; see :mod:`~jaxlean.models.neuron.mechanisms.ions`); or
        ``{name: compartments}`` to record each name at its own compartments
        (instead of ``record``).
      remat: memory of the backward pass over time (rematerialisation; formerly
        ``checkpoint``, which now raises an error naming ``remat``). ``None`` (the
        default): a run whose every step's whole state fits in 256 MiB
        (``_time.KEEP_STATES_BYTES``, per example under ``vmap``) keeps it, as
        ``(T // every,)`` below (quicker to compile and to run); a longer or larger one,
        or any with ``"segments"``, keeps each step's voltage, the solve's result, and
        recomputes the
        rest of the state 16 steps at a time (``_program.SEGMENT_STEPS``), solving
        nothing again: memory grows with the number of steps T by one vector per
        compartment and step. A single length equal to
        the number of recorded blocks, ``(T // every,)``, keeps every step's whole state
        (JAX's own gradient of the loop, several times the memory of segments:
        ``jaxlean bench solver``, figures in BENCHMARKS.md). ``"sqrt"`` runs segments of
        about ``sqrt(T)`` steps and keeps only each segment's first state, recomputing one
        segment at a time in the backward pass:
        O(sqrt(T)) states for about one extra forward pass. A sequence of lengths, outermost
        first, nests the segments (``(100, 100, 10)`` for 100,000 steps keeps about 210
        states); their product must reach T (with ``every > 1``: the number of recorded
        blocks).
      progress: with ``remat``, a run whose forward or backward pass takes
        longer than ``$JAXLEAN_PROGRESS_INTERVAL`` seconds (default 10) prints
        its progress on stderr, one host callback per outer segment; False: silent.
      every: record after every ``every``-th step only (steps left over at the
        end run unrecorded).
      initial: the ``"final"`` state of an earlier run of this cell: the run
        continues from it (time, spike arrivals and clamp levels included), and
        a run cut in pieces gives the values of the whole run, bit for bit.
        ``None``: :func:`rest_state`. Differentiable.
      spikes: ``{synapse mechanism: times}``: input spike times (ms, absolute)
        of each instance, an array ``(instances, k)`` or a ragged list (see
        :mod:`jaxlean.models.neuron.simulation.spikes`); required for every synapse.
      clamps: voltage clamps (:class:`VoltageClamp`).
      detect: compartments whose spikes (upward crossings of ``threshold`` mV)
        are detected; at most ``max_spikes`` times are kept each.

    Returns:
      ``{name: array (T // every + 1, len(record) or instances)}`` for each recorded
      name (``T // every`` with ``initial``), ``"t"`` (ms) of those samples, ``"final"``
      (the state to continue from) and, with ``detect``: ``"spikes"`` ``(detectors,
      max_spikes)`` (``inf`` after the last) and ``"spike_count"``. As NEURON's
      ``Vector.record`` after ``finitialize`` and ``continuerun``: a fresh run's first
      sample is the state it starts from, at ``t = 0`` (``v_init``); a run continued with
      ``initial`` records from its first step on (as ``continuerun`` does, its start was
      the earlier run's last sample), so pieces concatenate to the whole run. A current's
      first sample is computed at the starting state, the others at the start of their
      step.
    """
    reject_renamed(renamed, {"checkpoint": "remat"}, "simulate")
    steps = n_steps(dt, t_max)
    insertions = cell.insertions(params)
    parameters.check(cell, params, insertions)
    params = {name: _strong(value) for name, value in params.items()}
    if not isinstance(every, int) or not 1 <= every <= steps:
        raise ConfigError(f"every must be an int in [1, {steps}] (the number of steps); "
                          f"got {every!r}")
    segment_lengths(remat, steps // every)
    clamp_list = list(clamps)
    clamped = clamps_.check(clamp_list, cell.n)
    detectors = spikes_.detectors(detect, cell.n, max_spikes)
    if not math.isfinite(threshold):
        raise ConfigError(f"threshold must be a finite number of mV; got {threshold}")
    targets, currents = _stimuli(cell, stimuli, steps)
    spike_times = _spike_inputs(insertions, spikes)
    plan = Plan(cell, insertions, float(dt), steps, every,
                _sites(cell, insertions, record, states, clamped),
                targets, clamped, detectors, float(threshold), max_spikes, remat,
                bool(progress))
    clamp_values = clamps_.values(clamp_list) if clamp_list else {}
    if initial is not None:
        expected = jax.eval_shape(lambda: initial_state(
            cell, insertions, parameters.expand(cell, params, insertions)))
        _check_initial(initial, expected)
        initial = {key: initial[key] for key in expected}
    args = (params, currents, spike_times, clamp_values, initial)
    return _program_for(plan, initial is not None, args)(*args)

