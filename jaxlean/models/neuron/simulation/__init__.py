"""Simulating one cell: the cable equation stepped in time, stimuli in, spikes out.

* :mod:`~jaxlean.models.neuron.simulation.cable`: ``simulate``, ``Stimulus``,
  ``step_current``, ``rest_state``, ``n_steps``.
* :mod:`~jaxlean.models.neuron.simulation.clamp`: ``VoltageClamp`` (NEURON's ``SEClamp``).
* :mod:`~jaxlean.models.neuron.simulation.spikes`: input spike times to per-step arrivals,
  threshold detection.
* ``_program``: one backward-Euler step and the loop; ``_initial``: the state a run starts
  from; ``_time``: segments and rematerialisation over time; ``_ion_pool``: ion
  concentrations and reversals during a run.
"""

from __future__ import annotations

from jaxlean.models.neuron.simulation import cable, clamp, spikes
from jaxlean.models.neuron.simulation.cable import (
    Stimulus,
    n_steps,
    rest_state,
    simulate,
    step_current,
)
from jaxlean.models.neuron.simulation.clamp import VoltageClamp, check, command, values
from jaxlean.models.neuron.simulation.spikes import arrivals, detect, detectors, spike_array

__all__ = ["Stimulus", "VoltageClamp", "arrivals", "cable", "check", "clamp", "command", "detect",
           "detectors", "n_steps", "rest_state", "simulate", "spike_array", "spikes",
           "step_current", "values"]
