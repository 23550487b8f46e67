"""Train a network of 20 HH cells joined by graded synapses to tell two input patterns apart.

Eight input cells, ten hidden cells (a small branched cell, one type: its parameters
stacked), two output cells; graded synapses (jaxley's ``IonotropicSynapse``) from every
input to every hidden cell and from every hidden cell to both outputs. Pattern A drives
inputs 0-3, pattern B inputs 4-7; the network should answer A with output 0's voltage
above output 1's and B the other way round. Loss: cross-entropy of the two outputs' mean
voltages (as logits, per mV), over the batch of both patterns (``vmap``). Trained: every
synapse's conductance (as its log, started at random around 0.5 nS input->hidden and
2 nS hidden->output: identical synapses would leave the two outputs identical whatever
the input) with optax Adam.

Training runs in two halves: the first saves its state (parameters, optimizer state, step
and the learning curve) with :class:`jaxlean.train.checkpoint.Checkpointer`; the second
starts from nothing but the directory, restores it and carries on, as a requeued job would.
``JAXLEAN_EXAMPLE_SIZE=small`` (what the test suite sets) takes fewer and shorter steps.
"""

from __future__ import annotations

import json
import os
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxlean.models.neuron import Cell, Network, Stimulus, hh, simulate_network, step_current
from jaxlean.train.checkpoint import Checkpointer

INPUTS, HIDDEN, OUTPUTS = 8, 10, 2
DT = 0.05
SCALE_MV = 1.0  # mV of output voltage per unit of logit


def network() -> Network:
    source = Cell.from_parents([-1, 0], 10.0, 1.0).insert(hh)
    hidden = Cell.from_parents([-1, 0, 1, 1], [15.0, 20.0, 20.0, 20.0], 1.0).insert(hh)
    out = Cell.from_parents([-1, 0], 10.0, 1.0).insert(hh)
    net = Network([source] * INPUTS + [hidden] * HIDDEN + [out] * OUTPUTS)
    a, b = INPUTS, INPUTS + HIDDEN
    net = net.fully_connect(range(a), range(a, b), gS=0.0005)
    return net.fully_connect(range(a, b), range(b, b + OUTPUTS), gS=0.002)


def make_loss(net: Network, t_max: float):
    """The batch loss of ``{"log_gS": ...}`` and the batch's output voltages."""
    base = net.stacked_params()
    pulse = step_current(0.6, 1.0, 3.0, DT, t_max)
    patterns = jnp.asarray([[1.0] * 4 + [0.0] * 4, [0.0] * 4 + [1.0] * 4])  # A, B
    labels = jnp.asarray([0, 1])
    outputs = [(INPUTS + HIDDEN + k, 0) for k in range(OUTPUTS)]

    def voltages(trainable, pattern):
        synapses = {"ionotropic": {**base["synapses"]["ionotropic"],
                                   "gS": jnp.exp(trainable["log_gS"])}}
        stimuli = [Stimulus(net.index(i, 0), pattern[i] * pulse) for i in range(INPUTS)]
        v = simulate_network(net, {**base, "synapses": synapses}, stimuli, DT, t_max,
                             record=outputs, progress=False)["v"]
        return v.mean(axis=0)                      # each output's mean voltage (mV)

    def loss(trainable):
        v = jax.vmap(lambda pattern: voltages(trainable, pattern))(patterns)
        logits = (v - v.mean(axis=1, keepdims=True)) / SCALE_MV
        accuracy = jnp.mean(jnp.argmax(v, axis=1) == labels)
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean(), accuracy

    spread = np.random.default_rng(0).normal(0.0, 0.5, len(net.connections))  # seeded
    start = {"log_gS": jnp.log(base["synapses"]["ionotropic"]["gS"]) + spread}
    return loss, start


def train(steps: int, t_max: float, directory: str, until: int) -> list[float]:
    """Train up to step ``until`` of ``steps``, from the latest checkpoint in ``directory``
    if there is one; save there at the end. Returns the learning curve so far."""
    net = network()
    loss, start = make_loss(net, t_max)
    optimizer = optax.adam(0.2)
    state = {"params": start, "opt": optimizer.init(start), "step": 0}
    curve: list[float] = []
    with Checkpointer(directory, keep=2) as checkpoints:
        if checkpoints.latest_step() is not None:
            state = checkpoints.restore(state)
            curve = checkpoints.metadata()["curve"]
            print(f"resumed from step {state['step']} (loss {curve[-1]:.4f})")
        grad = jax.jit(jax.value_and_grad(loss, has_aux=True))
        began = time.perf_counter()
        while state["step"] < until:
            (value, accuracy), grads = grad(state["params"])
            updates, opt = optimizer.update(grads, state["opt"])
            state = {"params": optax.apply_updates(state["params"], updates), "opt": opt,
                     "step": state["step"] + 1}
            curve.append(float(value))
            print(f"step {state['step']:3d}/{steps}  loss {float(value):.4f}  accuracy "
                  f"{float(accuracy):.1f}  ({time.perf_counter() - began:.1f} s)", flush=True)
        checkpoints.save(state["step"], state, {"curve": curve})
    return curve


def main(steps: int, t_max: float) -> None:
    print(f"{INPUTS + HIDDEN + OUTPUTS} cells, {INPUTS * HIDDEN + HIDDEN * OUTPUTS} graded "
          f"synapses, {round(t_max / DT)} steps of {DT} ms, batch of 2 patterns")
    with tempfile.TemporaryDirectory() as directory:
        train(steps, t_max, directory, until=steps // 2)         # a job that stops half-way
        curve = train(steps, t_max, directory, until=steps)      # its requeued successor
    first, last = np.mean(curve[:3]), np.mean(curve[-3:])
    print(f"loss fell from {first:.4f} to {last:.4f}")
    print("result:" + json.dumps({"losses": curve}))


if __name__ == "__main__":
    small = os.environ.get("JAXLEAN_EXAMPLE_SIZE") == "small"
    main(steps=16 if small else 60, t_max=6.0 if small else 10.0)
