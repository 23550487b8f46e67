"""Reference workloads built on jaxlean: a Llama/Qwen-style transformer and more.

- ``lm``: a Llama / Mistral / Qwen-style decoder, its Hugging Face checkpoints, LoRA and
  sampling;
- ``neuron``: a differentiable neuron cable simulator;
- ``pmm``: pyPMM's parametric matrix model.

The submodules load on first use (``jaxlean.models.lm`` after ``import jaxlean`` works).
"""

from __future__ import annotations

import importlib
from types import ModuleType

_SUBMODULES = ("lm", "neuron", "pmm")

__all__ = list(_SUBMODULES)


def __getattr__(name: str) -> ModuleType:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_SUBMODULES})
