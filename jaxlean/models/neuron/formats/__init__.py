"""Model formats of other tools, read into jaxlean cells.

* :mod:`~jaxlean.models.neuron.formats.bluepyopt`: BluePyOpt's cell models (a morphology,
  ``mechanisms.json``, ``parameters.json``, the ``.mod`` files and a parameter set) in one
  call; ``bluepyopt_parameters`` reads and checks the JSON files, ``bluepyopt_expression``
  turns their ``{distance}``/``{value}`` strings into JAX functions.

Why a room of its own and not ``published/``: a format is not a model. BluePyOpt's files
describe many cells (its L5PC example, every e-model fitted with it); ``published/`` holds
particular published models, which may come in such a format and are then built through it.
"""

from __future__ import annotations

from jaxlean.models.neuron.formats import bluepyopt, bluepyopt_expression, bluepyopt_parameters

__all__ = ["bluepyopt", "bluepyopt_expression", "bluepyopt_parameters"]
