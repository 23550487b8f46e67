"""NMODL (``.mod``) files as :class:`~jaxlean.models.neuron.mechanisms.Mechanism` data.

``load_mod(path)`` parses a channel or synapse file written for NEURON
(:mod:`~jaxlean.models.neuron.nmodl.parser`) and translates it
(:mod:`~jaxlean.models.neuron.nmodl.translate`) into a mechanism whose functions
run the file's own statements in JAX, so it is differentiable and compiled with
the rest of a simulation. Rates are computed exactly (``TABLE`` is ignored): the
result matches NEURON with ``usetable_<suffix> = 0``. ``USEION`` lines become the
mechanism's ions (:mod:`~jaxlean.models.neuron.nmodl.ions`). What does not map
exactly onto a Mechanism (coupled or nonlinear kinetics, ``KINETIC``, temperature
outside a rate factor) is refused with a :class:`~jaxlean.errors.ConfigError`
naming the file, line and construct.

Names: parameters are NEURON's hoc names (``gnabar_hh``) in jaxlean's units
(S/cm2, mV, ms, uS), states and currents ``<name>_<suffix>`` (``m_hh``,
``ina_hh``); ion variables keep NEURON's names (``ena``, ``eca``, ``cai``, ``ica``).
:func:`load_mod_dir` returns the mechanisms in NEURON's order, the order to insert
them in.
"""

from jaxlean.models.neuron.nmodl.load import Mechanisms, ModDirError, load_mod, load_mod_dir
from jaxlean.models.neuron.nmodl.model import ModFileError

__all__ = ["Mechanisms", "ModDirError", "ModFileError", "load_mod", "load_mod_dir"]
