"""The ``solver`` benchmark's user-model cable: HH, an A-type K channel and 100 ExpSyn synapses.

A cell as a user builds it: ``hh`` (NEURON's, its leak included) everywhere, a user-defined A-type
K channel (:data:`KA`, a :class:`Mechanism`) everywhere, and ``expsyn`` on 100
compartments driven by input spike times. Forward and gradient (with respect to
``gnabar_hh``, ``gbar_ka`` and the synaptic weight) are timed in alternation with
jaxley 0.14 on the same model.

jaxley's synapses join a presynaptic cell to a postsynaptic one; none is driven
by spike times. The synapses are therefore written for jaxley as a
:class:`jaxley.channels.Channel` on the same 100 compartments that is ExpSyn
exactly: a conductance state that jumps by the weight (uS, divided by the
compartment's area) when a spike arrives and decays with ``tau``, the arrival
step taken from a step-counter state and the spike times given as parameters,
delivered as jaxlean (and NEURON) deliver them. The A-type channel is a jaxley
``Channel`` with the same formulas. Before timing, both run the model through
the stimulated spike and the synaptic input and their voltages at the soma, the
farthest tip and a synapse must agree within ``SAME_TOLERANCE_MV``; then the
timed losses must agree within it too, and their gradients within
``SAME_GRADIENT_RTOL``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.bench._cable_case import (
    COMPARTMENTS_PER_BRANCH,
    DT,
    SAME_STEPS,
    SAME_TOLERANCE_MV,
    TIME_NOISE,
    _jaxlean_cell,
    _stimulus,
    bench_params,
    branch_parents,
    jaxley_hh_cell,
    stimulated_jaxley_cell,
)
from jaxlean.bench._measure import SidesDisagreeError, aot_compile, time_alternating
from jaxlean.bench._registry import BenchContext, BenchResult
from jaxlean.models.neuron.cell.params import CELL
from jaxlean.models.neuron.mechanisms.channels import hh
from jaxlean.models.neuron.mechanisms.ions import UseIon
from jaxlean.models.neuron.mechanisms.mechanisms import Mechanism
from jaxlean.models.neuron.mechanisms.synapses import expsyn
from jaxlean.models.neuron.simulation.cable import Cell, simulate

N_SYNAPSES, SPIKES_PER_SYNAPSE = 100, 3
SYNAPSE = {"weight_expsyn": 0.002, "tau_expsyn": 2.0}  # uS, ms
TRAINABLE = {"gnabar_hh": "HH_gNa", "gbar_ka": "Ka_gbar", "weight_expsyn": "Syn_weight"}
KA_GBAR, KA_Q10, KA_Q10_CELSIUS = 0.01, 3.0, 22.0
# jaxley's float32 gradient is off by up to 1.6 % at 10k compartments and 1000 steps (its
# finite-difference linearisation of channel currents); jaxlean's by 1e-5; in float64 the two
# agree to 1e-11 (measured at 1k compartments, 200 steps).
SAME_GRADIENT_RTOL = 0.05


def _ka_gates(v, p):
    """A-type K steady states and time constants (ms) at ``v`` (mV), before the q10 factor."""
    tau = 1.0 / (jnp.exp((v + 46.0) / 5.0) + jnp.exp(-(v + 238.0) / 37.5))
    return {"a_ka": (1.0 / (1.0 + jnp.exp(-(v + 60.0) / 8.5)), 0.37 + tau),
            "b_ka": (1.0 / (1.0 + jnp.exp((v + 78.0) / 6.0)), 19.0 + tau)}


KA = Mechanism("ka", parameters={"gbar_ka": (KA_GBAR, "S/cm2")},
               states=("a_ka", "b_ka"), steady=_ka_gates, q10=KA_Q10,
               q10_celsius=KA_Q10_CELSIUS, ions=(UseIon("k", read=("ek",), write=("ik",)),),
               currents={"i_ka": (lambda s, p: p["gbar_ka"] * s["a_ka"] ** 3 * s["b_ka"], "ek")})
"""A user-defined A-type K channel (``a^3 b``, q10 3 at 22 degC), as a neuroscientist writes it."""


def synapse_sites(n_compartments: int, n_synapses: int, seed: int = 1) -> np.ndarray:
    """``n_synapses`` distinct compartments, drawn at random (the soma excluded)."""
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(np.arange(1, n_compartments), n_synapses, replace=False))


def spike_times(n_synapses: int, steps: int, seed: int = 2) -> np.ndarray:
    """``(n_synapses, SPIKES_PER_SYNAPSE)`` input times (ms) in the run, each at least 0.1 dt
    away from the half steps where the arrival step changes."""
    rng = np.random.default_rng(seed)
    grid = rng.integers(0, steps, size=(n_synapses, SPIKES_PER_SYNAPSE))
    return DT * (grid + rng.uniform(-0.4, 0.4, size=grid.shape))


def jaxlean_cell(branches: np.ndarray, sites: np.ndarray) -> Cell:
    """The jaxlean cell: ``hh`` (with its leak, as jaxley's ``HH``) and :data:`KA` everywhere,
    ``expsyn`` at ``sites``."""
    cell = _jaxlean_cell(branches)
    for mechanism in (hh, KA):
        cell = cell.insert(mechanism)
    return cell.insert(expsyn, compartments=sites)


def _params(cell: Cell) -> dict:
    return {**bench_params(cell), **SYNAPSE}


def _ours(cell: Cell, steps: int, times: np.ndarray):
    base = _params(cell)
    spikes = {"expsyn": jnp.asarray(times)}

    def loss(trainable):
        trace = simulate(cell, {**base, **trainable}, _stimulus(steps), DT, DT * steps, record=0,
                         progress=False, spikes=spikes)
        return jnp.mean(trace["v"])

    return loss, {name: base[name] for name in TRAINABLE}


def _jaxley_channels():
    """jaxley ``Channel`` classes for :data:`KA` and for ExpSyn driven by spike-time parameters."""
    from jaxley.channels import Channel

    speed = KA_Q10 ** ((CELL["celsius"][0] - KA_Q10_CELSIUS) / 10.0)

    class Ka(Channel):
        def __init__(self, name=None):
            self.current_is_in_mA_per_cm2 = True
            super().__init__(name)
            self.channel_params = {"Ka_gbar": KA_GBAR, "Ka_eK": -77.0}
            self.channel_states = {"Ka_a": 0.0, "Ka_b": 0.0}
            self.current_name = "i_Ka"

        def update_states(self, states, dt, v, params):
            gates = _ka_gates(v, params)
            return {f"Ka_{g}": inf + (states[f"Ka_{g}"] - inf) * jnp.exp(-dt * speed / tau)
                    for g, (inf, tau) in (("a", gates["a_ka"]), ("b", gates["b_ka"]))}

        def compute_current(self, states, v, params):
            g = params["Ka_gbar"] * states["Ka_a"] ** 3 * states["Ka_b"]
            return g * (v - params["Ka_eK"])

        def init_state(self, states, v, params, delta_t):
            gates = _ka_gates(v, params)
            return {"Ka_a": gates["a_ka"][0], "Ka_b": gates["b_ka"][0]}

    spike_names = [f"Syn_t{k}" for k in range(SPIKES_PER_SYNAPSE)]

    class Syn(Channel):
        """ExpSyn at one compartment: ``g`` (uS) jumps by the weight at each input spike
        arriving at the start of a step (spike time within half a step of it) and decays
        with ``tau``; current density ``g / area (v - e)``."""

        def __init__(self, name=None):
            self.current_is_in_mA_per_cm2 = True
            super().__init__(name)
            self.channel_params = {"Syn_weight": 0.0, "Syn_tau": 0.1, "Syn_e": 0.0,
                                   **{name: np.inf for name in spike_names}}
            self.channel_states = {"Syn_g": 0.0, "Syn_step": 0.0}
            self.current_name = "i_Syn"

        def update_states(self, states, dt, v, params):
            step = states["Syn_step"]
            arrived = sum(jnp.where(jnp.round(params[name] / dt) == step, 1.0, 0.0)
                          for name in spike_names)
            g = states["Syn_g"] * jnp.exp(-dt / params["Syn_tau"]) + params["Syn_weight"] * arrived
            return {"Syn_g": g, "Syn_step": step + 1.0}

        def compute_current(self, states, v, params):
            area = 2e-8 * jnp.pi * params["radius"] * params["length"]  # cm2
            return 1e-6 * states["Syn_g"] / area * (v - params["Syn_e"])

        def init_state(self, states, v, params, delta_t):
            return {"Syn_g": jnp.zeros_like(v), "Syn_step": jnp.zeros_like(v)}

    return Ka, Syn


def _jaxley_cell(branches: np.ndarray, sites: np.ndarray, times: np.ndarray, steps: int):
    """jaxley's cell with the same geometry, channels, synapses, stimulus; soma recorded."""
    ka, syn = _jaxley_channels()
    cell = jaxley_hh_cell(branches)
    cell.insert(ka())
    cell.select(nodes=sites.tolist()).insert(syn())
    synapses = cell.select(nodes=sites.tolist())
    synapses.set("Syn_weight", SYNAPSE["weight_expsyn"])
    synapses.set("Syn_tau", SYNAPSE["tau_expsyn"])
    for k in range(SPIKES_PER_SYNAPSE):
        synapses.set(f"Syn_t{k}", times[:, k])
    return stimulated_jaxley_cell(cell, steps)


def _jaxley(branches: np.ndarray, sites: np.ndarray, times: np.ndarray, steps: int):
    import jaxley as jx

    cell = _jaxley_cell(branches, sites, times, steps)
    for name in TRAINABLE.values():
        cell.make_trainable(name, verbose=False)
    start = cell.get_parameters()

    def loss(params):  # from t = 0 (the initial voltage), as jaxlean's trace
        return jnp.mean(jx.integrate(cell, params=params, delta_t=DT, t_max=DT * steps,
                                     voltage_solver="jaxley.dhs.cpu"))

    return loss, start


def check_same_model(cell: Cell, branches: np.ndarray, sites: np.ndarray) -> str:
    """Voltage difference of jaxley and jaxlean on the same model with synapses, in words.

    Raises:
      SidesDisagreeError: the traces at the soma, the farthest tip or the first
        synapse differ by more than ``SAME_TOLERANCE_MV``.
    """
    import jaxley as jx

    tip = int(cell.tips[np.argmax(cell.path_distance[cell.tips])])
    where = [0, tip, int(sites[0])]
    times = spike_times(sites.size, SAME_STEPS)
    t_max = DT * SAME_STEPS
    ours = simulate(cell, _params(cell), _stimulus(SAME_STEPS), DT, t_max, record=where,
                    spikes={"expsyn": times})["v"]
    peer = _jaxley_cell(branches, sites, times, SAME_STEPS)
    for index in where[1:]:
        peer.branch(index // COMPARTMENTS_PER_BRANCH).comp(
            index % COMPARTMENTS_PER_BRANCH).record(verbose=False)
    theirs = jx.integrate(peer, delta_t=DT, t_max=t_max, voltage_solver="jaxley.dhs.cpu")
    ours = np.asarray(ours).T
    difference = np.abs(ours - np.asarray(theirs)).max(axis=1)  # both from t = 0
    text = (f"same model (HH + user A-type K + {sites.size} ExpSyn): over {SAME_STEPS} steps "
            f"(a spike, {times.size} input spikes), jaxley and jaxlean voltages differ by at most "
            f"{difference[0]:.1e} mV at the soma, {difference[1]:.1e} mV at the farthest tip "
            f"(compartment {tip}) and {difference[2]:.1e} mV at a synapse (compartment "
            f"{where[2]}, peak {ours[2].max():.1f} mV); tolerance {SAME_TOLERANCE_MV} mV.")
    if not difference.max() <= SAME_TOLERANCE_MV:
        raise SidesDisagreeError(f"cable with synapses: {text} They disagree: no jaxley "
                                 "comparison is reported.")
    return text


def _check_timed_run(compiled: list, starts: list, case: str) -> str:
    """The timed losses (mean somatic voltage) within ``SAME_TOLERANCE_MV`` and their gradients
    within ``SAME_GRADIENT_RTOL`` of each other, in words.

    ``compiled``: jaxley's loss and gradient, then jaxlean's; ``starts``: their arguments.

    Raises:
      SidesDisagreeError: they are not.
    """
    theirs_loss, theirs_grad, ours_loss, ours_grad = (
        run.executable(start) for run, start in zip(compiled, starts, strict=True))
    theirs_grad = {k: float(v[0]) for group in theirs_grad for k, v in group.items()}
    relative = {name: abs(float(ours_grad[name]) - theirs_grad[peer]) / abs(theirs_grad[peer])
                for name, peer in TRAINABLE.items()}
    loss_difference = abs(float(ours_loss) - float(theirs_loss))
    text = (f"{case}: the timed losses differ by {loss_difference:.1e} mV (tolerance "
            f"{SAME_TOLERANCE_MV}), their gradients by at most {max(relative.values()):.1e} "
            f"relative ({', '.join(f'{k} {v:.1e}' for k, v in relative.items())}; tolerance "
            f"{SAME_GRADIENT_RTOL}).")
    if not (loss_difference <= SAME_TOLERANCE_MV
            and max(relative.values()) <= SAME_GRADIENT_RTOL):
        raise SidesDisagreeError(f"{text} They disagree: no jaxley comparison is reported.")
    return text


def synapse_cable_timings(ctx: BenchContext, result: BenchResult, n_compartments: int,
                          steps: int) -> None:
    """jaxlean vs jaxley (when importable): forward and gradient of the user-model cell."""
    branches = branch_parents(n_compartments // COMPARTMENTS_PER_BRANCH)
    sites = synapse_sites(n_compartments, N_SYNAPSES)
    cell = jaxlean_cell(branches, sites)
    times = spike_times(N_SYNAPSES, steps)
    try:
        ctx.step(f"cable + synapses: same-model check with jaxley, {SAME_STEPS} steps")
        result.notes.append(check_same_model(cell, branches, sites))
    except ImportError:
        result.notes.append('jaxley is not installed (`pip install "jaxlean[peers]"`): the '
                            "cable-with-synapses comparison with jaxley was skipped.")
        return
    ctx.step(f"cable + synapses: jaxlean and jaxley, {n_compartments} compartments, "
             f"{steps} steps")
    compiled, starts = [], []
    for loss, start in (_jaxley(branches, sites, times, steps), _ours(cell, steps, times)):
        compiled += [aot_compile(loss, start), aot_compile(jax.grad(loss), start)]
        starts += [start, start]
    case = f"HH + A-type K + {N_SYNAPSES} ExpSyn, {n_compartments // 1000}k comp, {steps} steps"
    result.notes.append(_check_timed_run(compiled, starts, case))
    theirs_f, theirs_g, ours_f, ours_g = time_alternating(
        *[(run.executable, (start,)) for run, start in zip(compiled, starts, strict=True)],
        repeats=3, min_seconds=0.05)
    result.compare(case, "forward", "s", theirs_f, ours_f, "simulate", "jaxley 0.14")
    result.compare(case, "gradient", "s", theirs_g, ours_g, "simulate", "jaxley 0.14")
    for metric, theirs, ours in (("forward temp", *compiled[0::2]),
                                 ("gradient temp", *compiled[1::2])):
        result.compare(case, metric, "MB", 1e-6 * theirs.temp_bytes, 1e-6 * ours.temp_bytes,
                       "simulate", "jaxley 0.14")
    result.target(f"{case}: jaxley gradient time / jaxlean's", theirs_g / ours_g, 2.0, ">=",
                  quick=False, noise=TIME_NOISE, spread=theirs_g.ratio_spread(ours_g))
