"""Traces of a small network of HH cells joined by jaxley's graded ``IonotropicSynapse``.

Run with jaxley 0.14 installed (``/work/venvs/neuron-jaxley/bin/python
scripts/make_jaxley_network_fixtures.py``); writes
``tests/models/neuron/fixtures/jaxley_network.npz``, which
``tests/models/neuron/test_network_jaxley.py`` compares jaxlean's network with. The
network (:data:`CELLS`, :data:`EDGES`) is described by plain numbers so the test builds
the same one without jaxley. Float64; every synapse's state starts at its steady value for
the presynaptic ``v_init`` (jaxlean's rest), the gates of HH at rest.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import numpy as np

NCOMP = 2
CELLS = ([-1, 0, 0], [-1, 0, 1], [-1])
"""Each cell's branch parents (jaxley's ``parents``); every branch has :data:`NCOMP`
compartments of length 10 um, radius 1 um, axial resistivity :data:`RA`."""
RA = 100.0
"""Axial resistivity (ohm cm) set on both sides (jaxlean's default is NEURON's 35.4)."""
EDGES = (  # (pre cell, pre branch, pre comp, post cell, post branch, post comp, gS, v_th)
    (0, 1, 1, 1, 0, 0, 0.02, -35.0),
    (1, 2, 1, 2, 0, 1, 0.015, -30.0),
    (2, 0, 0, 0, 2, 0, 0.005, -40.0),
    (0, 0, 0, 2, 0, 0, 0.01, -35.0),
)
V_INIT, DT, T_MAX = -65.0, 0.025, 30.0
STIMULUS = (0.5, 1.0, 3.0)  # amplitude (nA), start, duration (ms) into cell 0's soma
OUT = Path(__file__).resolve().parent.parent / "tests/models/neuron/fixtures/jaxley_network.npz"


def s_rest(v_th: float, delta: float = 10.0) -> float:
    """``IonotropicSynapse``'s steady ``s`` at the presynaptic ``V_INIT``."""
    return 1.0 / (1.0 + np.exp((v_th - V_INIT) / delta))


def jaxley_traces() -> np.ndarray:
    """jaxley's recordings: the somas of cells 0-2, cell 1's last compartment, then ``s`` of
    edge 0; ``(5, T + 1)`` from t = 0."""
    import jaxley as jx
    from jaxley.channels import HH
    from jaxley.connect import connect
    from jaxley.synapses import IonotropicSynapse

    cells = []
    for parents in CELLS:
        cell = jx.Cell(jx.Branch(jx.Compartment(), ncomp=NCOMP), parents=list(parents))
        cell.set("length", 10.0)
        cell.set("radius", 1.0)
        cell.set("axial_resistivity", RA)
        cell.insert(HH())
        cells.append(cell)
    net = jx.Network(cells)
    for pc, pb, pk, qc, qb, qk, _, _ in EDGES:
        connect(net.cell(pc).branch(pb).comp(pk), net.cell(qc).branch(qb).comp(qk),
                IonotropicSynapse())
    for k, (*_, g, v_th) in enumerate(EDGES):
        net.IonotropicSynapse.edge(k).set("IonotropicSynapse_gS", g)
        net.IonotropicSynapse.edge(k).set("IonotropicSynapse_v_th", v_th)
        net.IonotropicSynapse.edge(k).set("IonotropicSynapse_s", s_rest(v_th))
    net.set("v", V_INIT)
    net.init_states()
    for k, (*_, v_th) in enumerate(EDGES):  # init_states may reset synapse states
        net.IonotropicSynapse.edge(k).set("IonotropicSynapse_s", s_rest(v_th))
    amplitude, start, duration = STIMULUS
    net.cell(0).branch(0).comp(0).stimulate(
        jx.step_current(start, duration, amplitude, DT, T_MAX), verbose=False)
    for c in range(len(CELLS)):
        net.cell(c).branch(0).comp(0).record(verbose=False)
    net.cell(1).branch(2).comp(1).record(verbose=False)
    net.IonotropicSynapse.edge(0).record("IonotropicSynapse_s", verbose=False)
    return np.asarray(jx.integrate(net, delta_t=DT, t_max=T_MAX,
                                   voltage_solver="jaxley.dhs.cpu"))


def main() -> int:
    import jaxley as jx

    jax.config.update("jax_enable_x64", True)
    traces = jaxley_traces()
    np.savez_compressed(OUT, v=traces[:-1], s0=traces[-1], dt=DT, t_max=T_MAX,
                        jaxley=getattr(jx, "__version__", "0.14"))
    print(f"wrote {OUT}: {traces.shape}, soma peaks {traces[:3].max(axis=1)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
