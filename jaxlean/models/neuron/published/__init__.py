"""Published models and the formats they come in.

* :mod:`~jaxlean.models.neuron.published.l5pc`: Hay et al.'s (2011) layer 5 pyramidal cell
  on any morphology, from its published ``.mod`` files.
* :mod:`~jaxlean.models.neuron.published.migliore_ca1`: Migliore et al.'s (2018) CA1
  pyramidal cell ``CA1_PC_cAC_sig6`` (ModelDB 244688), from its published ``.mod`` files.
"""

from __future__ import annotations

from jaxlean.models.neuron.published import l5pc, migliore_ca1

__all__ = ["l5pc", "migliore_ca1"]
