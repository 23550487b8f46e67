"""The cable part of the ``solver`` benchmark: a 10k-compartment HH cell, jaxlean vs jaxley."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.bench._measure import aot_compile, wall_time
from jaxlean.bench._registry import BenchContext, BenchResult
from jaxlean.models.neuron.cable import Cell, Stimulus, simulate, step_current

DT, STEPS, COMPARTMENTS_PER_BRANCH = 0.025, 200, 10
TRAINABLE = {"g_na": "HH_gNa", "g_k": "HH_gK", "g_leak": "HH_gLeak"}


def branch_parents(n_branches: int, seed: int = 0) -> np.ndarray:
    """Each branch hangs from the end of a random earlier branch."""
    rng = np.random.default_rng(seed)
    return np.array([-1] + [int(rng.integers(0, b)) for b in range(1, n_branches)])


def _jaxlean_cell(branches: np.ndarray) -> Cell:
    per = COMPARTMENTS_PER_BRANCH
    parents = np.arange(branches.size * per) - 1
    parents[::per] = np.where(branches < 0, -1, branches * per + per - 1)
    return Cell.from_parents(parents, 10.0, 1.0)


def _ours(cell: Cell):
    t_max = DT * STEPS
    stimulus = Stimulus((0,), step_current(0.5, 0.5, 3.0, DT, t_max))
    base = cell.params()

    def loss(trainable):
        trace = simulate(cell, {**base, **trainable}, [stimulus], DT, t_max, record=(0,))
        return jnp.mean(trace["v"])

    start = {name: base[name] for name in TRAINABLE}
    return loss, start


def _jaxley(branches: np.ndarray):
    import jaxley as jx
    from jaxley.channels import HH

    cell = jx.Cell(jx.Branch(jx.Compartment(), ncomp=COMPARTMENTS_PER_BRANCH),
                   parents=branches.tolist())
    cell.set("length", 10.0)
    cell.set("radius", 1.0)
    cell.set("axial_resistivity", 100.0)
    cell.insert(HH())
    t_max = DT * STEPS
    cell.branch(0).comp(0).stimulate(jx.step_current(0.5, 3.0, 0.5, DT, t_max))
    cell.branch(0).comp(0).record(verbose=False)
    for name in TRAINABLE.values():
        cell.make_trainable(name, verbose=False)
    start = cell.get_parameters()

    def loss(params):
        return jnp.mean(jx.integrate(cell, params=params, delta_t=DT, t_max=t_max))

    return loss, start


def _time(loss, start) -> tuple[float, float]:
    forward = aot_compile(loss, start)
    gradient = aot_compile(jax.grad(loss), start)
    return (wall_time(forward.executable, start, repeats=3, min_seconds=0.05),
            wall_time(gradient.executable, start, repeats=3, min_seconds=0.05))


def cable_timings(ctx: BenchContext, result: BenchResult, n_compartments: int) -> None:
    """Forward and gradient time of ``STEPS`` steps of the HH cell; jaxley when importable."""
    branches = branch_parents(n_compartments // COMPARTMENTS_PER_BRANCH)
    case = f"HH cell {n_compartments // 1000}k comp, {STEPS} steps"
    ctx.step(f"cable: jaxlean, {n_compartments} compartments")
    ours = _time(*_ours(_jaxlean_cell(branches)))
    try:
        ctx.step(f"cable: jaxley, {n_compartments} compartments")
        peer = _time(*_jaxley(branches))
    except ImportError:
        peer = None
        result.notes.append('jaxley is not installed (`pip install "jaxlean[peers]"`): '
                            "the cable comparison with jaxley was skipped.")
    if peer is not None:
        result.compare(case, "forward", "s", peer[0], ours[0], "jaxlean simulate", "jaxley 0.14")
        result.compare(case, "gradient", "s", peer[1], ours[1], "jaxlean simulate", "jaxley 0.14")
        result.compare(case, "gradient/forward", "x", peer[1] / peer[0], ours[1] / ours[0],
                       "jaxlean simulate", "jaxley 0.14")
        result.target("cable gradient speed-up over jaxley (same cell)", peer[1] / ours[1], 2.0,
                      ">=")
    else:
        result.compare(case, "gradient/forward", "x", float("nan"), ours[1] / ours[0],
                       "jaxlean simulate", "jaxley")
    result.target("cable gradient/forward (jaxley 0.14 here: 6.8)", ours[1] / ours[0], 3.0)
