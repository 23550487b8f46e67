"""The ``network`` benchmark's model: jaxley's MNIST network architecture, in jaxlean and jaxley.

Input cells of one branch of 4 compartments, hidden cells from the bundled SWC
reconstruction ``pyramidal.swc`` reduced to its section tree (one compartment per
section, the section's length and mean radius, every child at its parent's end: the same
cell in both simulators), output cells of 4 compartments; HH everywhere; graded synapses
(jaxley's ``IonotropicSynapse``, :data:`~jaxlean.models.neuron.network.graded.ionotropic`) from
every input to every hidden cell and from every hidden cell to every output, each at the
somas (jaxley's ``fully_connect``). An input image is one current step per input cell
(amplitude the pixel's value); a batch of images is a ``vmap`` over these currents. The
loss is the mean over the batch of the output somas' voltages weighted by a fixed pattern;
its gradient is with respect to every synapse's ``gS``.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.models.neuron.mechanisms.channels import hh
from jaxlean.models.neuron.morphology.morphology_io import load_morphology
from jaxlean.models.neuron.morphology.swc import fixture
from jaxlean.models.neuron.network.graded import ionotropic
from jaxlean.models.neuron.network.network import Network
from jaxlean.models.neuron.network.network_sim import simulate_network
from jaxlean.models.neuron.simulation.cable import Cell, Stimulus

__all__ = ["Architecture", "hidden_sections", "jaxlean_side", "jaxley_side", "pixels"]

DT = 0.025
INPUT_COMPARTMENTS = 4
G_SYNAPSE = (0.002, 0.02)
"""``gS`` (uS) of input->hidden and hidden->output synapses: inputs drive the hidden cells."""
PULSE = (0.2, 3.0, 0.5)  # start, duration (ms), largest amplitude (nA) of an input's step
RA = 100.0
"""Axial resistivity (ohm cm) of every cell, set on both sides (jaxlean's default is NEURON's
35.4)."""


@dataclasses.dataclass(frozen=True)
class Architecture:
    """Cell counts, steps and batch size of one network size."""

    inputs: int = 784
    hidden: int = 64
    outputs: int = 10
    steps: int = 400
    batch: int = 4

    @property
    def synapses(self) -> int:
        return self.inputs * self.hidden + self.hidden * self.outputs

    def describe(self) -> str:
        return (f"{self.inputs} in x {self.hidden} hidden x {self.outputs} out, "
                f"{self.synapses:,} synapses, {self.steps} steps, batch {self.batch}")


def hidden_sections() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The hidden cell: parent, length (um) and mean radius (um) of each section of
    ``pyramidal.swc`` (one compartment each)."""
    tree = load_morphology(fixture("pyramidal"))
    parents = np.asarray([s.parent for s in tree.sections], dtype=np.int64)
    lengths = np.asarray([max(tree.length(k), 1.0) for k in range(len(tree))])
    radii = np.asarray([float(np.mean(s.radius)) for s in tree.sections])
    return parents, lengths, radii


def pixels(arch: Architecture, seed: int = 0) -> np.ndarray:
    """``(batch, inputs)`` pixel values in [0, 1]: the batch of "images"."""
    return np.random.default_rng(seed).random((arch.batch, arch.inputs))


def _pulse(arch: Architecture) -> np.ndarray:
    start, duration, amplitude = PULSE
    t = (np.arange(arch.steps) + 1) * DT
    return np.where((t > start) & (t <= start + duration), amplitude, 0.0)


def _pattern(arch: Architecture) -> np.ndarray:
    return np.linspace(-1.0, 1.0, arch.outputs)


def jaxlean_network(arch: Architecture) -> Network:
    """The network in jaxlean (cells of a kind given as one object: one type each)."""
    source = Cell.from_parents(np.arange(INPUT_COMPARTMENTS) - 1, 10.0, 1.0).insert(hh)
    hidden = Cell.from_parents(*hidden_sections()).insert(hh)
    out = Cell.from_parents(np.arange(INPUT_COMPARTMENTS) - 1, 10.0, 1.0).insert(hh)
    a, b = arch.inputs, arch.inputs + arch.hidden
    net = Network([source] * arch.inputs + [hidden] * arch.hidden + [out] * arch.outputs)
    net = net.fully_connect(range(a), range(a, b), ionotropic, gS=G_SYNAPSE[0])
    return net.fully_connect(range(a, b), range(b, b + arch.outputs), ionotropic,
                             gS=G_SYNAPSE[1])


def jaxlean_side(arch: Architecture, net: Network | None = None):
    """``(loss, gS, traces)``: the batch loss of every synapse's ``gS``, its start, and a
    function of the batch's pixels giving every cell's somatic voltage ``(batch, T+1, cells)``."""
    net = jaxlean_network(arch) if net is None else net
    base = net.stacked_params()
    for kind in base["types"]:
        kind["Ra"] = jnp.full_like(kind["Ra"], RA)
    pulse, pattern = jnp.asarray(_pulse(arch)), jnp.asarray(_pattern(arch))
    somas = [net.index(c, 0) for c in range(len(net.cells))]
    outputs = somas[arch.inputs + arch.hidden:]
    t_max = DT * arch.steps

    def run(gS, image, record):
        params = {**base, "synapses": {"ionotropic": {**base["synapses"]["ionotropic"],
                                                      "gS": gS}}}
        stimuli = [Stimulus(somas[i], image[i] * pulse) for i in range(arch.inputs)]
        return simulate_network(net, params, stimuli, DT, t_max, record=record,
                                progress=False)["v"]

    def loss(gS, images):
        v = jax.vmap(lambda image: run(gS, image, outputs))(images)
        return jnp.mean(v[:, -1, :] * pattern) + jnp.mean(v)

    def traces(images):
        return jax.vmap(lambda image: run(base["synapses"]["ionotropic"]["gS"], image,
                                          somas))(images)

    return loss, base["synapses"]["ionotropic"]["gS"], traces


def jaxley_network(arch: Architecture):
    """The same network in jaxley 0.14, states at jaxlean's rest, output somas recorded."""
    import jaxley as jx
    from jaxley.channels import HH
    from jaxley.connect import fully_connect
    from jaxley.synapses import IonotropicSynapse

    def chain():
        cell = jx.Cell(jx.Branch(jx.Compartment(), ncomp=INPUT_COMPARTMENTS), parents=[-1])
        cell.set("length", 10.0)
        cell.set("radius", 1.0)
        return cell

    parents, lengths, radii = hidden_sections()
    hidden = jx.Cell(jx.Branch(jx.Compartment(), ncomp=1), parents=parents.tolist())
    hidden.set("length", lengths)      # one compartment per branch, in branch order
    hidden.set("radius", radii)
    source, out = chain(), chain()
    cells = [source] * arch.inputs + [hidden] * arch.hidden + [out] * arch.outputs
    net = jx.Network(cells)
    net.set("axial_resistivity", RA)
    net.insert(HH())
    a, b = arch.inputs, arch.inputs + arch.hidden
    fully_connect(net.cell(list(range(a))), net.cell(list(range(a, b))), IonotropicSynapse())
    fully_connect(net.cell(list(range(a, b))), net.cell(list(range(b, b + arch.outputs))),
                  IonotropicSynapse())
    gS = np.concatenate([np.full(a * arch.hidden, G_SYNAPSE[0]),
                         np.full(arch.hidden * arch.outputs, G_SYNAPSE[1])])
    net.set("IonotropicSynapse_gS", gS)
    net.set("v", -65.0)
    net.init_states()
    net.set("IonotropicSynapse_s", float(ionotropic.s_inf(-65.0, ionotropic.defaults())))
    return net


def jaxley_side(arch: Architecture, record_all: bool = False):
    """``(loss, params, traces)`` in jaxley: the batch loss of every synapse's ``gS`` (its
    ``make_trainable`` parameters), their start, and the somatic voltages of every cell
    (``record_all``: every soma recorded, the loss taking the outputs'; else the outputs'
    only). Building a network is slow in jaxley (minutes at full size), so the bench builds
    it once, recording every soma."""
    import jaxley as jx

    net = jaxley_network(arch)
    total = arch.inputs + arch.hidden + arch.outputs
    somas = net.cell(list(range(total))).branch(0).comp(0)
    outputs = net.cell(list(range(arch.inputs + arch.hidden, total))).branch(0).comp(0)
    (somas if record_all else outputs).record(verbose=False)
    net.IonotropicSynapse.edge("all").make_trainable("IonotropicSynapse_gS", verbose=False)
    start = net.get_parameters()
    pulse, pattern = jnp.asarray(_pulse(arch)), jnp.asarray(_pattern(arch))
    inputs = net.cell(list(range(arch.inputs))).branch(0).comp(0)
    t_max = DT * arch.steps

    def run(params, image):
        stimuli = inputs.data_stimulate(image[:, None] * pulse[None, :])
        return jx.integrate(net, params=params, data_stimuli=stimuli, delta_t=DT,
                            t_max=t_max, voltage_solver="jaxley.dhs.cpu")

    def loss(params, images):
        v = jax.vmap(lambda image: run(params, image))(images)[:, -arch.outputs:]
        return jnp.mean(v[:, :, -1] * pattern) + jnp.mean(v)     # v: (batch, outputs, T + 1)

    def traces(images):
        return jnp.swapaxes(jax.vmap(lambda image: run(start, image))(images), 1, 2)

    return loss, start, traces
