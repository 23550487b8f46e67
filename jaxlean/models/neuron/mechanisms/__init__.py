"""Mechanisms: what a membrane carries (channels, synapses, ions), as data.

* :mod:`~jaxlean.models.neuron.mechanisms.mechanisms`: ``Mechanism`` (a ``.mod`` file's
  content as functions) and ``Insertion``; ``.mod`` files themselves are read by the
  sibling package :mod:`jaxlean.models.neuron.nmodl` (``load_mod``).
* :mod:`~jaxlean.models.neuron.mechanisms.channels`: ``hh`` (NEURON's ``hh.mod``) and ``pas``.
* :mod:`~jaxlean.models.neuron.mechanisms.synapses`: ``expsyn``, ``exp2syn``.
* :mod:`~jaxlean.models.neuron.mechanisms.ions`: ion species, ``USEION``, Nernst and GHK.
"""

from __future__ import annotations

from jaxlean.models.neuron.mechanisms import channels, ions, synapses
from jaxlean.models.neuron.mechanisms.channels import GATES, advance, hh, pas, rates, steady_state
from jaxlean.models.neuron.mechanisms.ions import (
    FARADAY,
    GAS_CONSTANT,
    SPECIES,
    Species,
    UseIon,
    ghk,
    nernst,
    variables,
)
from jaxlean.models.neuron.mechanisms.mechanisms import (
    Insertion,
    Mechanism,
    ion_parameters,
    parameter_table,
)
from jaxlean.models.neuron.mechanisms.synapses import exp2syn, expsyn

__all__ = ["FARADAY", "GAS_CONSTANT", "GATES", "SPECIES", "Insertion", "Mechanism", "Species",
           "UseIon", "advance", "channels", "exp2syn", "expsyn", "ghk", "hh", "ion_parameters",
           "ions", "nernst", "parameter_table", "pas", "rates", "steady_state", "synapses",
           "variables"]
