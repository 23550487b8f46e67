"""The jaxley side of the ``l5pc`` benchmark: the same L5PC on cylinders, in jaxley 0.14.

jaxley's compartments are cylinders joined at branch ends; jaxlean's ``l5pc`` keeps
NEURON's frustum areas and resistances and wires dendrites to ``soma(0.5)``. Both sides
therefore run a variant both can express: every compartment of the built model becomes
the cylinder of its membrane area (its ``length`` and ``radius``), and every section
joins the distal end of its parent section. jaxlean builds it with
:meth:`Cell.from_parents` and the model's own mechanisms and per-compartment values
(:meth:`L5PC.params`, so the apical Ih exponential and the hot zone are the same);
jaxley builds one branch per section (``ncomp = nseg``), sets length, radius, ``Ra``,
capacitance and every channel value per compartment, and inserts jaxley-mech's L5PC
channels by region.

jaxley-mech 0.4.0's channels were read against Hay's ``.mod`` files: NaTaT, NapEt2, KPst,
KTst, SKv3_1, SKE2, M (Im), H (Ih), CaHVA and CaLVA (Ca_LVAst) have the same equations,
temperature factors (34 degC written in) and units. Two differ and are replaced here by
subclasses that change only a constant:

* ``CaNernstReversal`` computes ``eCa`` at ``T = 279.45`` K (6.3 degC) with ``R = 8.314``,
  ``F = 96485.3329``; NEURON at 34 degC with CODATA 2018's ``R`` and ``F``
  (:data:`NERNST`).
* ``CaPump`` (CaDynamics_E2) uses ``F = 96485``; NEURON's ``FARADAY`` is 96485.33212.

The order of jaxley's channel updates reproduces NEURON's: the calcium shell is updated
before SK_E2 reads ``cai``, and ``eCa`` after it; jaxley's initial ``eCa`` is the Nernst
value (not jaxley-mech's 0 mV) and its initial ``cai`` is one shell step back
(:func:`_first_cai`), because jaxley advances states before the voltage and NEURON after.
"""

from __future__ import annotations

import dataclasses
import math

import jax.numpy as jnp
import numpy as np

from jaxlean.models.neuron.cell.cell import Cell

__all__ = ["CHANNELS", "NERNST", "available", "cylinder_cell", "jaxley_loss", "jaxley_model",
           "nernst_ca"]

NERNST = {"R": 8.3144626181532395, "F": 96485.33212331001, "T": 34.0 + 273.15}
"""NEURON 9's constants (CODATA 2018) and Hay's temperature, for ``eCa``."""

#: jaxlean's parameter name -> (jaxley-mech class name, its parameter name).
CHANNELS = {
    "gNaTa_tbar_NaTa_t": ("NaTaT", "gNaTaT"), "gNap_Et2bar_Nap_Et2": ("NapEt2", "gNapEt2"),
    "gK_Pstbar_K_Pst": ("KPst", "gKPst"), "gK_Tstbar_K_Tst": ("KTst", "gKTst"),
    "gSKv3_1bar_SKv3_1": ("SKv3_1", "gSKv3_1"), "gSK_E2bar_SK_E2": ("SKE2", "gSKE2"),
    "gCa_HVAbar_Ca_HVA": ("CaHVA", "gCaHVA"), "gCa_LVAstbar_Ca_LVAst": ("CaLVA", "gCaLVA"),
    "gamma_CaDynamics_E2": ("CaPump", "gamma"), "decay_CaDynamics_E2": ("CaPump", "decay"),
    "gImbar_Im": ("M", "gM"), "gIhbar_Ih": ("H", "gH"), "g_pas": ("Leak", "gLeak"),
}
# Update order: Ca channels, the shell, eCa, then the rest (SKE2 reads the new cai).
_ORDER = ("Leak", "CaHVA", "CaLVA", "CaPump", "CaNernstReversal", "H", "M", "KPst", "KTst",
          "NapEt2", "NaTaT", "SKE2", "SKv3_1")
_MOD = {"NaTa_t": "NaTaT", "Nap_Et2": "NapEt2", "K_Pst": "KPst", "K_Tst": "KTst",
        "SKv3_1": "SKv3_1", "SK_E2": "SKE2", "Ca_HVA": "CaHVA", "Ca_LVAst": "CaLVA",
        "CaDynamics_E2": "CaPump", "Im": "M", "Ih": "H"}


def available() -> bool:
    """Whether jaxley and jaxley-mech import here."""
    try:
        import jaxley  # noqa: F401
        import jaxley_mech.channels.l5pc  # noqa: F401
    except ImportError:
        return False
    return True


def _sections(cell: Cell) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """First compartment, compartment count and parent section of each section."""
    first = np.flatnonzero(np.r_[True, cell.branch[1:] != cell.branch[:-1]])
    counts = np.diff(np.r_[first, cell.n])
    parent = np.array([-1 if cell.parents[f] < 0 else int(cell.branch[cell.parents[f]])
                       for f in first])
    return first, counts, parent


def cylinder_cell(cell: Cell) -> Cell:
    """``cell`` with cylindrical compartments (each of its membrane area), every section
    joined to its parent section's distal end; the same mechanisms on the same compartments."""
    first, counts, parent = _sections(cell)
    last = first + counts - 1
    parents = cell.parents.copy()
    parents[first[1:]] = last[parent[1:]]
    cylinders = Cell.from_parents(parents, cell.length, cell.radius, kind=cell.kind)
    return dataclasses.replace(cylinders, mechanisms=cell.mechanisms)


def nernst_ca(inside: float, outside: float) -> float:
    """``eCa`` (mV) at :data:`NERNST`'s temperature: jaxley's initial value (jaxley-mech's
    default, 0 mV, would enter the calcium current that the first shell update reads)."""
    return 1000.0 * NERNST["R"] * NERNST["T"] / (2 * NERNST["F"]) * math.log(outside / inside)


def _first_cai(classes, params: dict, eca: float, dt: float) -> np.ndarray:
    """The ``cai`` jaxley starts from so that its first shell update gives NEURON's ``cai0``.

    jaxley advances every state at the start of a step, from the voltage and currents of
    the step before; NEURON (and jaxlean) after the voltage. The gates line up exactly
    (jaxley's state after step ``k + 1`` is NEURON's after step ``k``, both starting at
    rest), but the shell would be one step ahead: so it starts one step back, from the
    initial calcium current."""
    v = float(params["v_init"])
    full = lambda key: np.broadcast_to(np.asarray(params[key], dtype=float),
                                       np.shape(params["length"]))
    ica = 0.0
    for name, key in (("CaHVA", "gCa_HVAbar_Ca_HVA"), ("CaLVA", "gCa_LVAstbar_Ca_LVAst")):
        m, h = (np.asarray(gate(v), dtype=float)
                for gate in (classes[name].m_gate, classes[name].h_gate))
        m_inf = m[0] / (m[0] + m[1]) if name == "CaHVA" else m[0]
        h_inf = h[0] / (h[0] + h[1]) if name == "CaHVA" else h[0]
        ica = ica + full(key) * m_inf ** 2 * h_inf * (v - eca)
    decay = full("decay_CaDynamics_E2")
    decay = np.where(decay > 0, decay, 1.0)  # 0 where there is no shell (not used there)
    drive = (-10_000.0 * ica * full("gamma_CaDynamics_E2")
             / (2 * NERNST["F"] * float(params["depth_CaDynamics_E2"])))
    target = decay * drive + float(params["minCai_CaDynamics_E2"])
    return target + (float(params["cai0"]) - target) * np.exp(dt / decay)


def _channel_classes():
    """jaxley-mech's classes by name, with the two constants of NEURON's replaced."""
    from jaxley.channels import Leak
    from jaxley.solver_gate import exponential_euler
    from jaxley_mech.channels import l5pc as mech

    class CaNernstReversal(mech.CaNernstReversal):
        """jaxley-mech's ``eCa`` at 34 degC with NEURON's constants."""

        def __init__(self, name=None):
            super().__init__(name)
            self.channel_constants = dict(NERNST)

    class CaPump(mech.CaPump):
        """jaxley-mech's CaDynamics_E2 with NEURON's Faraday constant."""

        def update_states(self, u, dt, voltages, params):
            p = self._name
            drive = (-10_000.0 * u["i_Ca"] * params[f"{p}_gamma"]
                     / (2 * NERNST["F"] * params[f"{p}_depth"]))
            decay = params[f"{p}_decay"]
            return {"CaCon_i": exponential_euler(u["CaCon_i"], dt,
                                                 params[f"{p}_minCai"] + decay * drive, decay)}

    classes = {name: getattr(mech, name) for name in _ORDER if hasattr(mech, name)}
    return {**classes, "Leak": Leak, "CaPump": CaPump, "CaNernstReversal": CaNernstReversal}


def jaxley_model(model, cylinders: Cell, params: dict, regions: dict, stimulus: tuple,
                 sites: list[int]):
    """jaxley's cell of the cylinder variant: channels by region (``regions``: jaxlean's
    mechanism name -> SWC types, from ``l5pc.MECHANISMS``), every value of ``params``
    (jaxlean's, per compartment) set per compartment, stimulus ``(amp, delay, dur, dt,
    t_max)`` at compartment 0, ``sites`` recorded. Returns the cell and, per jaxley
    parameter name, the compartments it lives on."""
    import jaxley as jx

    first, counts, parent = _sections(cylinders)
    cell = jx.Cell([jx.Branch(jx.Compartment(), ncomp=int(k)) for k in counts],
                   parents=parent.tolist())
    classes = _channel_classes()
    kinds = np.asarray(cylinders.kind)
    where = {"Leak": np.ones(cylinders.n, bool), "CaNernstReversal": np.isin(kinds, regions[
        "CaDynamics_E2"])}
    for mod, name in _MOD.items():
        where[name] = np.isin(kinds, regions[mod])
    for name in _ORDER:
        comps = np.flatnonzero(where[name])
        sections = sorted({int(cylinders.branch[c]) for c in comps})
        cell.branch(sections).insert(classes[name]())
    n = cylinders.n
    full = lambda value: np.broadcast_to(np.asarray(value, dtype=float), (n,))
    for key, value in (("length", cylinders.length), ("radius", cylinders.radius),
                       ("axial_resistivity", params["Ra"]),   # jaxley's names
                       ("capacitance", params["cm"])):
        cell.set(key, full(value))
    scalars = {"eNa": params["ena"], "eK": params["ek"], "eH": params["ehcn_Ih"],
               "Leak_eLeak": params["e_pas"], "CaPump_depth": params["depth_CaDynamics_E2"],
               "CaPump_minCai": params["minCai_CaDynamics_E2"]}
    on = {}
    for key, (channel, short) in CHANNELS.items():
        name = f"{channel}_{short}"
        on[name] = np.flatnonzero(where[channel])
        cell.set(name, full(params[key])[on[name]])
    for name, value in scalars.items():
        cell.set(name, float(value))
    eca = nernst_ca(float(params["cai0"]), float(params["cao0"]))
    shell = where["CaPump"]
    cell.set("eCa", eca)
    cell.set("CaCon_e", float(params["cao0"]))
    cell.set("CaCon_i", _first_cai(classes, params, eca, stimulus[3])[shell])
    cell.set("v", float(params["v_init"]))
    cell.init_states()
    amp, delay, dur, dt, t_max = stimulus
    cell.branch(0).comp(0).stimulate(jx.step_current(delay, dur, amp, dt, t_max), verbose=False)
    for site in sites:
        section = int(cylinders.branch[site])
        cell.branch(section).comp(int(site - first[section])).record(verbose=False)
    return cell, on


def jaxley_loss(cell, on: dict, per_compartment, dt: float, t_max: float, recorded,
                checkpoint: bool):
    """``scale -> (trace, loss)`` for jaxley: ``per_compartment(scale)`` gives jaxlean's
    parameter dict, whose channel values are set with ``data_set`` (jaxley's way to set
    values computed inside ``jit``); with ``checkpoint`` jaxley's ``checkpoint_lengths``
    of two levels of about ``sqrt`` steps each, as its docs recommend for long runs."""
    import jaxley as jx

    steps = round(t_max / dt)
    inner = math.isqrt(steps) + 1
    lengths = [-(-(steps + 1) // inner), inner] if checkpoint else None

    def trace(scale):
        values, state = per_compartment(scale), None
        for key, (channel, short) in CHANNELS.items():
            name = f"{channel}_{short}"
            state = cell.data_set(name, jnp.broadcast_to(values[key], (cell.nodes.shape[0],))[
                on[name]], state)
        return jx.integrate(cell, param_state=state, delta_t=dt, t_max=t_max,
                            voltage_solver="jaxley.dhs.cpu", checkpoint_lengths=lengths)

    def loss(scale):
        return jnp.mean((trace(scale).T - recorded) ** 2)

    return trace, loss


SAME_T_MAX = 60.0
"""ms of the same-model check: the step starts at 20 ms, the first spikes follow."""
SAME_TOLERANCE_MV = 1e-3
"""float64; the two agree to about 1e-8 mV through the spikes of those 60 ms once
jaxley's calcium shell starts one step back (:func:`_first_cai`); with it started at
``cai0`` they differ by 0.03 mV, with jaxley-mech's own calcium constants by more."""


def check_same_model(model, regions: dict, case: dict, sites: list[int],
                     t_max: float = SAME_T_MAX) -> tuple[float, str]:
    """Largest voltage difference (mV) of jaxlean and jaxley on the cylinder variant over
    ``t_max`` ms at ``sites``, and the sentence that reports it."""
    import jax
    import jaxley as jx

    from jaxlean.models.neuron.simulation.cable import Stimulus, simulate, step_current

    dt = case["dt"]
    cylinders = cylinder_cell(model.cell)
    params = model.params()
    current = step_current(case["amp"], case["delay"], case["dur"], dt, t_max)
    ours = np.asarray(simulate(cylinders, params, [Stimulus(0, current)], dt, t_max,
                               record=sites, progress=False)["v"])
    cell, _ = jaxley_model(model, cylinders, params, regions,
                           (case["amp"], case["delay"], case["dur"], dt, t_max), sites)
    theirs = np.asarray(jax.jit(lambda: jx.integrate(
        cell, delta_t=dt, t_max=t_max, voltage_solver="jaxley.dhs.cpu"))())
    steps = ours.shape[0]
    error = float(np.abs(ours.T - theirs[:, :steps]).max())
    rest = float(np.abs(ours.T - theirs[:, :steps])[:, :int(case["delay"] / dt)].max())
    return error, (f"same model (cylinder variant, {cylinders.n} compartments): jaxley 0.14 + "
                   f"jaxley-mech and jaxlean differ by at most {error:.2g} mV over {t_max:g} ms "
                   f"at soma and two dendrites ({rest:.1g} mV before the step; tolerance "
                   f"{SAME_TOLERANCE_MV} mV). Swapped constants: jaxley-mech's "
                   "CaNernstReversal (T = 279.45 K) and CaPump (F = 96485) use NEURON's 34 degC "
                   "and CODATA constants here.")


def compare(ctx, result, case: dict, model, values, regions: dict, sites: list[int],
            noise: float) -> None:
    """Rows and target of jaxlean vs jaxley on the cylinder variant over ``case``'s run:
    forward and gradient of the loss in the 20 scales (``values(scale)``: ``L5PC.params``'
    input), jaxley's gradient plain and with ``checkpoint_lengths``, timed in alternation
    after compiling, and the gradients' XLA temp memory; the target is against the faster
    of jaxley's two gradients.
    Nothing is timed when :func:`check_same_model` exceeds :data:`SAME_TOLERANCE_MV`."""
    import jax

    from jaxlean.bench._measure import aot_compile, time_alternating
    from jaxlean.models.neuron.simulation.cable import Stimulus, simulate, step_current

    ctx.step(f"jaxley: same-model check ({SAME_T_MAX:g} ms, cylinder variant)")
    error, text = check_same_model(model, regions, case, sites)
    result.notes.append(text)
    if not error <= SAME_TOLERANCE_MV:
        result.notes.append("jaxley and jaxlean disagree: no jaxley time compared.")
        return
    dt, t_max = case["dt"], case["t_max"]
    cylinders = cylinder_cell(model.cell)
    stimuli = [Stimulus(0, step_current(case["amp"], case["delay"], case["dur"], dt, t_max))]
    per_compartment = lambda scale: model.params(values(scale))
    steps = round(t_max / dt)

    def ours(scale, remat=None):
        return simulate(cylinders, per_compartment(scale), stimuli, dt, t_max, record=sites,
                        progress=False, remat=remat)["v"]

    ones = jnp.ones(20)
    recorded = jnp.asarray(ours(ones))

    def our_loss(remat):
        return lambda scale: jnp.mean((ours(scale, remat) - recorded) ** 2)

    cell, on = jaxley_model(model, cylinders, model.params(), regions,
                            (case["amp"], case["delay"], case["dur"], dt, t_max), sites)
    trace, plain = jaxley_loss(cell, on, per_compartment, dt, t_max, recorded, checkpoint=False)
    _, checked = jaxley_loss(cell, on, per_compartment, dt, t_max, recorded, checkpoint=True)
    ctx.step("jaxley and jaxlean (cylinder variant): compile forward and gradients")
    start = ones * 1.01
    # jaxlean's gradients: the default (each step's voltage kept, segments recomputed), every
    # step's state kept (remat=(steps,), as jaxley's plain gradient keeps it) and
    # remat="sqrt" (nested checkpoints, as jaxley's checkpoint_lengths)
    remats = {"simulate (default)": None, "simulate, every step kept": (steps,),
              "simulate remat='sqrt'": "sqrt"}
    ours_grads = [aot_compile(jax.grad(our_loss(r)), start) for r in remats.values()]
    peers = [aot_compile(jax.grad(plain), start), aot_compile(jax.grad(checked), start)]
    forwards = [aot_compile(ours, ones), aot_compile(trace, ones)]
    ctx.step(f"jaxley and jaxlean: timing forward and gradients ({t_max:g} ms)")
    fwd, peer_fwd, *timed = time_alternating(
        *((c.executable, (x,)) for c, x in zip(forwards, (ones, ones), strict=True)),
        *((c.executable, (start,)) for c in (*ours_grads, *peers)),
        repeats=3, min_seconds=0.2)
    grads, peer_grads = timed[:len(remats)], timed[len(remats):]
    label = f"L5PC cylinder variant, {cylinders.n} compartments, {t_max:g} ms, float64"
    peer = "jaxley 0.14 + jaxley-mech 0.4"
    names = (peer, f"{peer}, checkpoint_lengths")
    result.compare(label, "forward", "s", peer_fwd, fwd, "jaxlean", peer)
    # like for like: the default and every-step gradients against jaxley's plain one, the
    # nested checkpoints against jaxley's checkpoint_lengths
    pairs = ((0, 0), (1, 0), (2, 1))
    for mine, theirs in pairs:
        variant = list(remats)[mine]
        result.compare(label, "gradient (20 parameters)", "s", peer_grads[theirs],
                       grads[mine], variant, names[theirs])
        result.compare(label, "gradient temp memory", "MB", peers[theirs].temp_bytes / 1e6,
                       ours_grads[mine].temp_bytes / 1e6, variant, names[theirs])
    best = min(peer_grads, key=lambda timing: timing.median)
    fastest = min(range(len(grads)), key=lambda i: grads[i].median)
    result.notes.append(
        f"jaxlean's fastest gradient here: {list(remats)[fastest]} "
        f"({grads[fastest].median:.2f} s, {ours_grads[fastest].temp_bytes / 1e6:.1f} MB temp); "
        f"the default's: {grads[0].median:.2f} s, {ours_grads[0].temp_bytes / 1e6:.1f} MB. "
        "On a small cell with many mechanisms the default's recomputed segments cost more "
        "than keeping every step's state, which at this size is small.")
    result.target("jaxlean's fastest gradient / jaxley's fastest (same L5PC, cylinders), "
                  ">= 2x faster", grads[fastest] / best, 0.5, noise=noise,
                  spread=grads[fastest].ratio_spread(best))
