"""A checkpointed simulate reports its forward and backward passes; progress=False is silent."""

import jax
import jax.numpy as jnp

from jaxlean.models.neuron.simulation.cable import Cell, Stimulus, simulate


def _loss(progress):
    cell = Cell.from_parents([-1, 0, 1], 10.0, 1.0)

    def loss(params):
        v = simulate(cell, params, [Stimulus(0, 0.2)], 0.1, 2.0, remat=(4, 5),
                     progress=progress)["v"]
        return jnp.mean(v)

    return loss, cell.params()


def test_checkpointed_simulate_reports_both_passes(monkeypatch, capsys):
    monkeypatch.setenv("JAXLEAN_PROGRESS_INTERVAL", "1e-9")  # every segment is "long"
    loss, params = _loss(True)
    jax.jit(jax.grad(loss))(params)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("simulate: forward pass, 10/20 steps (")  # after the first
    assert any(line.startswith("simulate: forward pass done, 20 steps") for line in lines)
    assert lines[-2].startswith("simulate: backward pass, 20/20 steps (")
    assert lines[-1].startswith("simulate: backward pass done, 20 steps (")


def test_progress_false_is_silent(monkeypatch, capsys):
    monkeypatch.setenv("JAXLEAN_PROGRESS_INTERVAL", "1e-9")
    loss, params = _loss(False)
    jax.jit(loss)(params)
    assert capsys.readouterr().err == ""
