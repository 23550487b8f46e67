"""A differentiable neuron cable simulator that discretises cells as NEURON does.

* :mod:`~jaxlean.models.neuron.swc`: read SWC files, cut them into sections (Import3d's rules).
* :mod:`~jaxlean.models.neuron.discretize`: ``nseg`` rules (fixed, max length, NEURON's d_lambda)
  and NEURON's default parameters.
* :mod:`~jaxlean.models.neuron.cell`: compartments, junctions and morphology helpers (``Cell``).
* :mod:`~jaxlean.models.neuron.mechanisms`: channels and synapses as data (``Mechanism``).
* :mod:`~jaxlean.models.neuron.channels`: ``hh`` (NEURON's ``hh.mod``, with q10) and ``pas``.
* :mod:`~jaxlean.models.neuron.synapses`: ``expsyn`` and ``exp2syn``, driven by spike times.
* :mod:`~jaxlean.models.neuron.nmodl`: ``load_mod``: NEURON ``.mod`` files as mechanisms.
* :mod:`~jaxlean.models.neuron.params`: cell parameters, defaults, shapes and value checks.
* :mod:`~jaxlean.models.neuron.clamp`, :mod:`~jaxlean.models.neuron.spikes`: voltage clamp,
  spike arrival and threshold detection.
* :mod:`~jaxlean.models.neuron.cable`: ``simulate``, stimuli, rematerialisation over time, long
  runs.
* :mod:`~jaxlean.models.neuron.network`, :mod:`~jaxlean.models.neuron.network_sim`: cells joined
  by :mod:`~jaxlean.models.neuron.graded` synapses, simulated as one forest.
* :mod:`~jaxlean.models.neuron.morphology_io`: SWC, Neurolucida ASC and HDF5 files (MorphIO) as
  Import3d builds them; :mod:`~jaxlean.models.neuron.morph_edit`: axon stub, subtree deletion,
  diameter scaling.
* :mod:`~jaxlean.models.neuron.distribution`: parameters by region and by distance from the soma;
  :mod:`~jaxlean.models.neuron.transforms`: bounded and positive parameters for fitting.
"""
