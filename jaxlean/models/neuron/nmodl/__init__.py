"""NMODL (``.mod``) files as :class:`~jaxlean.models.neuron.mechanisms.Mechanism` data.

``load_mod(path)`` parses a channel or synapse file written for NEURON
(:mod:`~jaxlean.models.neuron.nmodl.parser`) and runs it as NEURON runs the C code
``nocmodl`` generates from it (:mod:`~jaxlean.models.neuron.nmodl.generated`): every
value kept per compartment between INITIAL, BREAKPOINT and the steps
(:mod:`~jaxlean.models.neuron.nmodl.variables`), each SOLVE advanced as NEURON advances
it (:mod:`~jaxlean.models.neuron.nmodl.solve`), in JAX, so it is differentiable and
compiled with the rest of a simulation. A file that fits the compact Mechanism form
(gates with one q10 factor, nothing kept between blocks) is loaded in that form
(:mod:`~jaxlean.models.neuron.nmodl.translate`), computing the same values with fewer
states. Rates are computed exactly (``TABLE`` is ignored): the result matches NEURON
with ``usetable_<suffix> = 0``. What cannot be translated is refused with a
:class:`ModFileError` listing every problem of the file, each with its line.

Names: parameters are NEURON's hoc names (``gnabar_hh``) with the values and units the
file declares (never rescaled), states ``<name>_<suffix>`` (``m_hh``, ``minf_hh``) and
currents ``<name>_<suffix>`` (``ina_hh``); ion variables keep NEURON's names (``ena``,
``eca``, ``cai``, ``ica``). :func:`load_mod_dir` returns the mechanisms in NEURON's
order, the order to insert them in, and names every file it could not load. A
synapse that draws from a NEURON ``Random`` (Blue Brain's ``setRNG``) takes one
:class:`Random` per instance (:func:`random_parameters`), drawing NEURON's values.
"""

from jaxlean.models.neuron.nmodl.load import Mechanisms, ModDirError, load_mod, load_mod_dir
from jaxlean.models.neuron.nmodl.model import ModFileError
from jaxlean.models.neuron.nmodl.neuron_random import Random, random_parameters

__all__ = ["Mechanisms", "ModDirError", "ModFileError", "Random", "load_mod", "load_mod_dir",
           "random_parameters"]
