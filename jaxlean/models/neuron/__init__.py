"""A differentiable neuron cable simulator that discretises cells as NEURON does.

* :mod:`~jaxlean.models.neuron.swc`: read SWC files, cut them into sections (Import3d's rules).
* :mod:`~jaxlean.models.neuron.discretize`: ``nseg`` rules (fixed, max length, NEURON's d_lambda)
  and NEURON's default parameters.
* :mod:`~jaxlean.models.neuron.cell`: compartments, junctions and morphology helpers (``Cell``).
* :mod:`~jaxlean.models.neuron.params`: parameter names, defaults, units and allowed shapes.
* :mod:`~jaxlean.models.neuron.channels`: Hodgkin-Huxley channels (``hh.mod``, with q10).
* :mod:`~jaxlean.models.neuron.cable`: ``simulate``, stimuli, time checkpointing.
"""
