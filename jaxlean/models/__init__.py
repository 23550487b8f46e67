"""Reference workloads built on jaxlean: a Llama/Qwen-style transformer and more.

- ``lm``: a Llama / Mistral / Qwen-style decoder, its Hugging Face checkpoints, LoRA and
  sampling;
- ``neuron``: a differentiable neuron cable simulator;
- ``pmm``: pyPMM's parametric matrix model.

The submodules load on first use (``jaxlean.models.lm`` after ``import jaxlean`` works).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jaxlean._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see of the lazy names below
    from jaxlean.models import lm as lm
    from jaxlean.models import neuron as neuron
    from jaxlean.models import pmm as pmm

_SUBMODULES = ("lm", "neuron", "pmm")

_EXPORTS: dict[str, str] = {}

__all__ = ["lm", "neuron", "pmm"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _SUBMODULES)
