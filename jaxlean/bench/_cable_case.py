"""The cable part of the ``solver`` benchmark: a 10k-compartment HH cell over long runs.

For each number of steps, forward and gradient time and XLA temp memory of ``simulate``
without time checkpointing (every step's voltage kept, the rest recomputed 16 steps at a
time; beside it the gradient that keeps every step's state, JAX's own gradient of the
loop) and with ``remat="sqrt"`` (O(sqrt(T)) states); jaxley 0.14 on the same cell
with its CPU voltage solver, plain and with its own ``checkpoint_lengths``, when it is
installed. Memory comes from ``memory_analysis`` of the compiled executables, so it is
reported even where a run would not fit (then it is not timed).

Before jaxley is timed, both simulators run the same cell (jaxlean's defaults
given to jaxley: initial voltage, gates at rest) through a stimulated spike and
their voltages at the soma and the farthest tip must agree within
``SAME_TOLERANCE_MV``; otherwise no comparison is reported.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.bench._measure import SidesDisagreeError, Timing, aot_compile, time_alternating
from jaxlean.bench._registry import EXACT, BenchContext, BenchResult
from jaxlean.models.neuron.cell.params import CELL
from jaxlean.models.neuron.simulation.cable import Cell, Stimulus, simulate, step_current

DT, COMPARTMENTS_PER_BRANCH = 0.025, 10
TRAINABLE = {"gnabar_hh": "HH_gNa", "gkbar_hh": "HH_gK", "gl_hh": "HH_gLeak"}
TIME_LIMIT_BYTES = 8 << 30   # compiled runs whose temp memory exceeds this are not executed
TIME_LIMIT_STEP_COMPARTMENTS = 2e8  # nor runs longer than this (compartments x steps)
SAME_STEPS = 400  # 10 ms: the stimulated spike and its spread to the tips
SAME_TOLERANCE_MV = 0.1  # float32 round-off through a spike is ~0.01 mV
TIME_NOISE = 0.10
RA = 100.0
"""Axial resistivity (ohm cm) of the bench's cell, set on both sides (jaxlean's default is
NEURON's 35.4)."""
"""Stated noise band of a ratio of alternating timings on a shared 2-core VM (widened to the
per-round spread of the ratio when that is larger)."""


def branch_parents(n_branches: int, seed: int = 0) -> np.ndarray:
    """Each branch hangs from the end of a random earlier branch."""
    rng = np.random.default_rng(seed)
    return np.array([-1] + [int(rng.integers(0, b)) for b in range(1, n_branches)])


def _jaxlean_cell(branches: np.ndarray) -> Cell:
    per = COMPARTMENTS_PER_BRANCH
    parents = np.arange(branches.size * per) - 1
    parents[::per] = np.where(branches < 0, -1, branches * per + per - 1)
    return Cell.from_parents(parents, 10.0, 1.0)


def bench_params(cell: Cell) -> dict:
    """``cell.params()`` with the bench's axial resistivity :data:`RA`."""
    return {**cell.params(), "Ra": jnp.asarray(RA, dtype=float)}


def _ours(cell: Cell, steps: int, remat):
    base = bench_params(cell)

    def loss(trainable):
        trace = simulate(cell, {**base, **trainable}, _stimulus(steps), DT, DT * steps, record=0,
                         remat=remat, progress=False)
        return jnp.mean(trace["v"])

    return loss, {name: base[name] for name in TRAINABLE}


def _stimulus_args(steps: int) -> tuple[float, float, float, float]:
    """Amplitude (nA), start and duration (ms) of the somatic current step, and t_max."""
    return 0.5, 0.5, 3.0, DT * steps


def _stimulus(steps: int) -> list[Stimulus]:
    """That current step as jaxlean's stimulus list."""
    amplitude, start, duration, t_max = _stimulus_args(steps)
    return [Stimulus(0, step_current(amplitude, start, duration, DT, t_max))]


def jaxley_hh_cell(branches: np.ndarray):
    """jaxley's cell with jaxlean's geometry (10 um compartments of radius 1 um, :data:`RA`
    ohm cm) and HH everywhere, not yet stimulated."""
    import jaxley as jx
    from jaxley.channels import HH

    cell = jx.Cell(jx.Branch(jx.Compartment(), ncomp=COMPARTMENTS_PER_BRANCH),
                   parents=branches.tolist())
    cell.set("length", 10.0)
    cell.set("radius", 1.0)
    cell.set("axial_resistivity", RA)
    cell.insert(HH())
    return cell


def _jaxley_cell(branches: np.ndarray, steps: int):
    """jaxley's cell with jaxlean's geometry, defaults and stimulus; soma recorded."""
    return stimulated_jaxley_cell(jaxley_hh_cell(branches), steps)


def stimulated_jaxley_cell(cell, steps: int):
    """A built jaxley ``cell`` at jaxlean's ``v_init``, states initialised, with the somatic
    current step of :func:`_stimulus_args` and the soma recorded."""
    import jaxley as jx

    cell.set("v", CELL["v_init"][0])
    cell.init_states()
    amplitude, start, duration, t_max = _stimulus_args(steps)
    cell.branch(0).comp(0).stimulate(jx.step_current(start, duration, amplitude, DT, t_max),
                                     verbose=False)
    cell.branch(0).comp(0).record(verbose=False)
    return cell


def _jaxley(branches: np.ndarray, steps: int, checkpoint: bool):
    import jaxley as jx

    cell = _jaxley_cell(branches, steps)
    for name in TRAINABLE.values():
        cell.make_trainable(name, verbose=False)
    start = cell.get_parameters()
    inner = math.isqrt(steps) + 1
    lengths = [-(-(steps + 1) // inner), inner] if checkpoint else None

    def loss(params):
        return jnp.mean(jx.integrate(cell, params=params, delta_t=DT, t_max=DT * steps,
                                     voltage_solver="jaxley.dhs.cpu",
                                     checkpoint_lengths=lengths))

    return loss, start


def check_same_model(cell: Cell, branches: np.ndarray) -> str:
    """Voltage difference of jaxley and jaxlean on the same cell, in words.

    Raises:
      SidesDisagreeError: the traces at the soma or the farthest tip differ by more
        than ``SAME_TOLERANCE_MV``, so the simulators do not run the same model.
    """
    import jaxley as jx

    tip = int(cell.tips[np.argmax(cell.path_distance[cell.tips])])
    t_max = DT * SAME_STEPS
    ours = simulate(cell, bench_params(cell), _stimulus(SAME_STEPS), DT, t_max,
                    record=[0, tip])["v"]
    peer = _jaxley_cell(branches, SAME_STEPS)
    peer.branch(tip // COMPARTMENTS_PER_BRANCH).comp(tip % COMPARTMENTS_PER_BRANCH).record(
        verbose=False)
    theirs = jx.integrate(peer, delta_t=DT, t_max=t_max, voltage_solver="jaxley.dhs.cpu")
    difference = np.abs(np.asarray(ours).T - np.asarray(theirs)).max(axis=1)  # both from t = 0
    text = (f"same model: over {SAME_STEPS} steps (a spike), jaxley and jaxlean voltages differ "
            f"by at most {difference[0]:.1e} mV at the soma and {difference[1]:.1e} mV at the "
            f"farthest tip (compartment {tip}); tolerance {SAME_TOLERANCE_MV} mV.")
    if not difference.max() <= SAME_TOLERANCE_MV:
        raise SidesDisagreeError(f"cable: {text} They disagree: no jaxley comparison is reported.")
    return text


def _measure(sides: dict[str, tuple], steps: int, n: int) -> dict[str, dict]:
    """Temp memory of each side's forward and gradient; their times where the runs fit the
    limits, every side's forward and gradient timed in alternation (``_s`` keys: a
    :class:`Timing`, NaN where not timed). ``sides`` maps a name to ``(loss, start, forward)``;
    ``forward=False`` compiles and times only the gradient."""
    compiled: dict[tuple[str, str], object] = {}
    for name, (loss, start, forward) in sides.items():
        if forward:
            compiled[name, "forward"] = aot_compile(loss, start)
        compiled[name, "gradient"] = aot_compile(jax.grad(loss), start)
    out = {name: {} for name in sides}
    for (name, what), c in compiled.items():
        out[name][f"{what}_bytes"], out[name][f"{what}_s"] = c.temp_bytes, float("nan")
    largest = max(c.temp_bytes for (_, what), c in compiled.items() if what == "gradient")
    if largest <= TIME_LIMIT_BYTES and steps * n <= TIME_LIMIT_STEP_COMPARTMENTS:
        repeats = 3 if steps * n <= 1e8 else 1
        times = time_alternating(*((c.executable, (sides[name][1],))
                                   for (name, _), c in compiled.items()),
                                 repeats=repeats, min_seconds=0.05)
        for (name, what), timing in zip(compiled, times, strict=True):
            out[name][f"{what}_s"] = timing
    return out


def cable_timings(ctx: BenchContext, result: BenchResult, n_compartments: int,
                  step_counts: list[int]) -> str:
    """Plain vs checkpointed ``simulate`` (and jaxley when importable) for each run length;
    returns what the run showed about checkpointing, in words."""
    branches = branch_parents(n_compartments // COMPARTMENTS_PER_BRANCH)
    cell = _jaxlean_cell(branches)
    ours = {}
    for steps in step_counts:
        ctx.step(f"cable: jaxlean, {n_compartments} compartments, {steps} steps: the default "
                 "gradient, every step's state kept, remat='sqrt'")
        measured = _measure({None: (*_ours(cell, steps, "segments"), True),
                             "kept": (*_ours(cell, steps, (steps,)), False),
                             "sqrt": (*_ours(cell, steps, "sqrt"), True)}, steps, cell.n)
        ours[steps, None] = {**measured[None], **{f"kept_{key}": value
                                                  for key, value in measured["kept"].items()}}
        ours[steps, "sqrt"] = measured["sqrt"]
    peers = {}
    try:
        ctx.step(f"cable: same-model check with jaxley, {SAME_STEPS} steps")
        result.notes.append(check_same_model(cell, branches))
        for steps in step_counts:
            for checkpoint in (False, True):
                ctx.step(f"cable: jaxley, {n_compartments} compartments, {steps} steps")
                peer = _jaxley(branches, steps, checkpoint)
                peers[steps, checkpoint] = _measure({"jaxley": (*peer, True)}, steps,
                                                    cell.n)["jaxley"]
    except ImportError:
        result.notes.append('jaxley is not installed (`pip install "jaxlean[peers]"`): '
                            "the cable comparison with jaxley was skipped.")
    for steps in step_counts:
        case = f"HH cell {n_compartments // 1000}k comp, {steps} steps"
        plain, checked = ours[steps, None], ours[steps, "sqrt"]
        for metric, unit, key in (("forward", "s", "forward_s"), ("gradient", "s", "gradient_s"),
                                  ("forward temp", "MB", "forward_bytes"),
                                  ("gradient temp", "MB", "gradient_bytes")):
            result.compare(case, metric, unit, _in(unit, plain[key]), _in(unit, checked[key]),
                           "simulate remat='sqrt'", "simulate, no remat")
            for flag, label in ((False, "jaxley 0.14"), (True, "jaxley 0.14 checkpointed")):
                if (steps, flag) in peers:
                    mine = checked if flag else plain
                    result.compare(case, metric, unit, _in(unit, peers[steps, flag][key]),
                                   _in(unit, mine[key]),
                                   "simulate remat='sqrt'" if flag else "simulate", label)
        result.compare(case, "gradient/forward", "x", _ratio(plain["gradient_s"],
                                                             plain["forward_s"]),
                       _ratio(checked["gradient_s"], checked["forward_s"]),
                       "simulate remat='sqrt'", "simulate, no remat")
        for metric, unit, key in (("gradient", "s", "gradient_s"),
                                  ("gradient temp", "MB", "gradient_bytes")):
            result.compare(case, metric, unit, _in(unit, plain[f"kept_{key}"]),
                           _in(unit, plain[key]),
                           "simulate (each step's voltage kept, segments recomputed)",
                           "simulate, every step's state kept (JAX's gradient of the loop)")
    return _targets(result, ours, step_counts)


def _in(unit: str, value: float | Timing) -> float | Timing:
    """Bytes in MB; a time as it is."""
    return value * 1e-6 if unit == "MB" else value


def _ratio(a: float | Timing, b: float | Timing) -> float:
    """``a / b`` of two timings' medians; NaN where either was not timed."""
    return a / b if isinstance(a, Timing) and isinstance(b, Timing) else float("nan")


def _targets(result: BenchResult, ours: dict, step_counts: list[int]) -> str:
    """The cable's goals. The baseline of checkpointing is JAX's own gradient of the loop,
    which keeps every step's state (the default gradient is itself segmented since round 29,
    so it no longer is the thing checkpointing saves memory against). Returns what the run
    showed about checkpointing, in words."""
    longest = step_counts[-1]
    timed = max(steps for steps in step_counts
                if all(isinstance(ours[steps, side][key], Timing)
                       for side, key in (("sqrt", "gradient_s"), (None, "kept_gradient_s"))))
    kept = "JAX's every-step gradient (every step's state kept)"
    memory = ours[longest, "sqrt"]["gradient_bytes"] / ours[longest, None]["kept_gradient_bytes"]
    result.target(f"remat='sqrt' gradient temp memory / {kept}, at {longest} steps",
                  memory, 0.1, noise=EXACT)
    plain, checked = ours[timed, None], ours[timed, "sqrt"]
    time = checked["gradient_s"] / plain["kept_gradient_s"]
    result.target(f"remat='sqrt' gradient time / {kept}, at {timed} steps", time, 1.5,
                  noise=TIME_NOISE, spread=checked["gradient_s"].ratio_spread(
                      plain["kept_gradient_s"]))
    # jaxley's 3.8 is at 10k compartments; at quick sizes (1k) the per-step loop overhead
    # weighs differently on the forward and the gradient.
    result.target(f"cable default gradient/forward at {timed} steps (jaxley's fix: 3.8)",
                  plain["gradient_s"] / plain["forward_s"], 3.0, quick=False, noise=TIME_NOISE,
                  spread=plain["gradient_s"].ratio_spread(plain["forward_s"]))
    result.target(f"gradient temp memory, each step's voltage kept / every step's state kept, "
                  f"at {longest} steps", ours[longest, None]["gradient_bytes"]
                  / ours[longest, None]["kept_gradient_bytes"], 0.5, noise=EXACT)
    at = "" if timed == longest else f" at {timed:,} steps"
    return (f"remat='sqrt' cuts the cable gradient's temp memory to {memory:.3f}x JAX's "
            f"every-step gradient at {longest:,} steps, for {time:.2f}x its time{at}")
