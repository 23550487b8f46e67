"""Published models and the formats they come in.

* :mod:`~jaxlean.models.neuron.published.l5pc`: Hay et al.'s (2011) layer 5 pyramidal cell
  on any morphology, from its published ``.mod`` files.
"""

from __future__ import annotations

from jaxlean.models.neuron.published import l5pc

__all__ = ["l5pc"]
