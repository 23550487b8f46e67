"""A differentiable neuron cable simulator that discretises cells as NEURON does.

Subpackages, by what one looks for (each one's docstring lists its modules):

* :mod:`~jaxlean.models.neuron.morphology`: SWC, ASC and HDF5 files read as NEURON's
  Import3d reads them, edits, ``nseg`` rules.
* :mod:`~jaxlean.models.neuron.mechanisms`: channels, synapses and ions as data
  (``Mechanism``); :mod:`~jaxlean.models.neuron.nmodl` beside it reads ``.mod`` files.
* :mod:`~jaxlean.models.neuron.cell`: ``Cell``, its parameters, their distribution over the
  cell and transforms for fitting.
* :mod:`~jaxlean.models.neuron.simulation`: ``simulate``: stimuli, voltage clamp, spikes,
  the time loop and its memory.
* :mod:`~jaxlean.models.neuron.network`: cells joined by graded and spiking (``NetCon``)
  synapses and gap junctions, simulated as one forest.
* :mod:`~jaxlean.models.neuron.formats`: other tools' model formats (BluePyOpt's cell
  models from their own files).
* :mod:`~jaxlean.models.neuron.published`: published models (Hay et al.'s L5PC,
  Migliore et al.'s CA1 pyramidal cell).

Every public name of the subpackages, and each of their public modules (``swc``,
``cable``, ...), is also importable from here.
"""

from __future__ import annotations

from jaxlean.models.neuron.cell import *  # noqa: F403
from jaxlean.models.neuron.mechanisms import *  # noqa: F403
from jaxlean.models.neuron.morphology import *  # noqa: F403
from jaxlean.models.neuron.network import *  # noqa: F403
from jaxlean.models.neuron.nmodl import Random, load_mod, load_mod_dir, random_parameters
from jaxlean.models.neuron.published import *  # noqa: F403
from jaxlean.models.neuron.simulation import *  # noqa: F403

# After the star imports: ``cell``, ``mechanisms`` and ``network`` name the subpackages.
from jaxlean.models.neuron import (  # isort: skip
    cell, formats, mechanisms, morphology, network, nmodl, published, simulation)

__all__ = ["Random", "cell", "formats", "load_mod", "load_mod_dir", "mechanisms",
           "morphology", "network", "nmodl", "published", "random_parameters", "simulation"]
__all__ += cell.__all__
__all__ += mechanisms.__all__
__all__ += morphology.__all__
__all__ += network.__all__
__all__ += published.__all__
__all__ += simulation.__all__
