"""The default ``trainable`` of a model that holds adapters: the adapters alone.

PEFT freezes the base model when it adds adapters, and a user coming from it
expects a step to train only them. ``train`` sits below ``models``, so it does
not import the LoRA module; it recognises an adapter by a marker instead: a
pytree node whose type sets the class attribute ``jaxlean_adapter = True``
(:class:`jaxlean.models.lm.lora.LoRA` does) is an adapter, and every array
inside it trains by default.
"""

from __future__ import annotations

from typing import Any

import jax

__all__ = ["ADAPTER_MARKER", "adapter_mask", "is_adapter"]

ADAPTER_MARKER = "jaxlean_adapter"
"""The class attribute that marks a pytree node type as an adapter (its value must be True)."""


def is_adapter(node: Any) -> bool:
    """Whether ``node``'s type is marked as an adapter (``jaxlean_adapter = True``)."""
    return getattr(type(node), ADAPTER_MARKER, False) is True


def adapter_mask(model: Any) -> Any | None:
    """A pytree of bools like ``model``, True exactly at the leaves inside adapter nodes;
    None when ``model`` holds no adapter (then nothing changes the usual default)."""
    found = False

    def mark(node: Any) -> Any:
        nonlocal found
        if is_adapter(node):
            found = True
            return jax.tree.map(lambda _: True, node)
        return False

    mask = jax.tree.map(mark, model, is_leaf=is_adapter)
    return mask if found else None
