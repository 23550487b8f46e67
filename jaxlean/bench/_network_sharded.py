"""The ``network`` benchmark's network split over devices: per-device memory against one device's.

Compiles (does not run) the gradient of the ``network`` benchmark's loss (jaxley's MNIST
network, one image, float64) on one device with ``simulate_network`` and split over the
devices of a ``cells`` mesh with ``simulate_network_sharded``, and prints both programs'
``memory_analysis()`` (temp and argument bytes, per device) and their ratio. Run with forced
CPU devices::

    XLA_FLAGS=--xla_force_host_platform_device_count=8 JAX_PLATFORMS=cpu \\
        python -m jaxlean.bench._network_sharded [--inputs 784 --hidden 64 --outputs 10 --steps 400]

(``jaxlean bench network`` runs it so, on 8 devices, after its own measurements.) The
test (``tests/models/neuron/test_network_sharded.py``) runs :func:`losses` on a smaller
network and checks the values and gradients against each other.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from jaxlean.bench._child import finish, progress
from jaxlean.bench._network_case import DT, RA, Architecture, _pulse, jaxlean_network
from jaxlean.models.neuron.network.network_sim import simulate_network
from jaxlean.models.neuron.network.sharded import simulate_network_sharded
from jaxlean.models.neuron.simulation.cable import Stimulus


def losses(arch: Architecture, mesh: Mesh, remat=None):
    """``(loss on one device, loss split over mesh, gS)`` of the bench's network (one image,
    every soma recorded): each loss maps ``gS`` to ``(loss, voltages)``; ``remat`` as
    ``simulate_network``'s, both sides."""
    net = jaxlean_network(arch)
    base = net.stacked_params()
    for kind in base["types"]:
        kind["Ra"] = jnp.full_like(kind["Ra"], RA)
    pulse = jnp.asarray(_pulse(arch))
    somas = [net.index(c, 0) for c in range(len(net.cells))]
    image = np.random.default_rng(0).random(arch.inputs)
    stimuli = [Stimulus(somas[i], image[i] * pulse) for i in range(arch.inputs)]
    weights = jnp.linspace(-1.0, 1.0, len(somas))
    t_max = DT * arch.steps

    def params(gS):
        return {**base, "synapses": {"ionotropic": {**base["synapses"]["ionotropic"],
                                                    "gS": gS}}}

    def one(gS):
        v = simulate_network(net, params(gS), stimuli, DT, t_max, record=somas,
                             progress=False, remat=remat)["v"]
        return jnp.mean(v * weights), v

    def split(gS):
        v = simulate_network_sharded(net, params(gS), stimuli, DT, t_max, mesh,
                                     record=somas, remat=remat)["v"]
        return jnp.mean(v * weights), v

    return one, split, base["synapses"]["ionotropic"]["gS"]


def memory(compiled) -> dict:
    """Temp, argument and output bytes of a compiled program (per device)."""
    m = compiled.memory_analysis()
    return {"temp": int(m.temp_size_in_bytes), "arguments": int(m.argument_size_in_bytes),
            "output": int(m.output_size_in_bytes)}


def main() -> None:
    """Print the two programs' memory and the ratio of their temp bytes (one JSON object)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in (("inputs", 784), ("hidden", 64), ("outputs", 10), ("steps", 400)):
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--quick", action="store_true", help="the bench's --quick size")
    parser.add_argument("--check", action="store_true",
                        help="also run both gradients: largest relative differences of the "
                             "voltages and of the gradient")
    args = parser.parse_args()
    jax.config.update("jax_enable_x64", True)
    arch = (Architecture(16, 8, 5, 80, batch=1) if args.quick else
            Architecture(args.inputs, args.hidden, args.outputs, args.steps, batch=1))
    mesh = Mesh(np.array(jax.devices()), ("cells",))
    out = {"network": arch.describe(), "devices": len(jax.devices())}
    for remat in (None, "segments"):
        progress(f"network split over {len(jax.devices())} devices: compiling the "
                 f"gradients, remat={remat}")
        one, split, gS = losses(arch, mesh, remat)
        single = memory(jax.jit(jax.grad(lambda g, one=one: one(g)[0])).lower(gS).compile())
        sharded = memory(jax.jit(jax.grad(lambda g, split=split: split(g)[0])).lower(
            gS).compile())
        out[f"remat={remat}"] = {"one_device": single, "per_device": sharded,
                                 "temp_ratio": sharded["temp"] / single["temp"]}
    if args.check:
        progress("running both gradients")
        one, split, gS = losses(arch, mesh)
        (_, a), ga = jax.jit(jax.value_and_grad(one, has_aux=True))(gS)
        (_, b), gb = jax.jit(jax.value_and_grad(split, has_aux=True))(gS)
        out["v_rel"] = float(jnp.max(jnp.abs(a - b)) / jnp.max(jnp.abs(a)))
        out["grad_rel"] = float(jnp.max(jnp.abs(ga - gb)) / jnp.max(jnp.abs(ga)))
    finish(out)


if __name__ == "__main__":
    main()
