"""Named rematerialisation policies, resolved in one place.

``scan_layers``, ``Sequential``, ``Graph`` and the transformer all accept
``remat=``; this module turns that option into a wrapper around the per-layer
body so every user gets the same meaning:

- ``None``: no remat; the backward pass keeps every intermediate.
- ``"full"``: save only what enters the layer (the carry); recompute the rest.
- ``"dots"``: save matmul outputs, recompute elementwise work.
- ``"dots_no_batch"``: save matmuls without batch dimensions (weights x activations).
- ``"offload"``: save the carry in pinned host memory instead of device memory,
  where the backend has pinned host memory; elsewhere warn and behave as ``"full"``.
- any ``jax.checkpoint`` policy (a callable), used as is.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import jax
from jax.ad_checkpoint import checkpoint_name

from jaxlean.errors import ConfigError

__all__ = ["CARRY_NAME", "REMAT_NAMES", "RematOption", "has_pinned_host", "remat_body",
           "resolve_policy"]

RematOption = str | Callable[..., Any] | None

CARRY_NAME = "jaxlean_carry"

_NAMED_POLICIES = {
    "full": jax.checkpoint_policies.nothing_saveable,
    "dots": jax.checkpoint_policies.dots_saveable,
    "dots_no_batch": jax.checkpoint_policies.dots_with_no_batch_dims_saveable,
}

REMAT_NAMES = (*_NAMED_POLICIES, "offload")


def has_pinned_host() -> bool:
    """Whether the default device can address pinned host memory (needed to offload)."""
    device = jax.devices()[0]
    try:
        kinds = {memory.kind for memory in device.addressable_memories()}
    except (AttributeError, NotImplementedError):
        return False
    return "pinned_host" in kinds


def _offload_policy() -> Callable[..., Any]:
    return jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=[],
        names_which_can_be_offloaded=[CARRY_NAME],
        offload_src="device",
        offload_dst="pinned_host",
    )


def resolve_policy(remat: RematOption) -> Callable[..., Any] | None:
    """The ``jax.checkpoint`` policy for a remat option (``None`` means: no remat at all)."""
    if remat is None:
        return None
    if callable(remat):
        return remat
    if remat == "offload":
        if has_pinned_host():
            return _offload_policy()
        warnings.warn(
            f"remat='offload': backend {jax.default_backend()!r} has no pinned host memory; "
            "using remat='full' (the carry stays on the device)",
            stacklevel=3,
        )
        return _NAMED_POLICIES["full"]
    if remat in _NAMED_POLICIES:
        return _NAMED_POLICIES[remat]
    raise ConfigError(
        f"unknown remat option {remat!r}; use None, one of {list(REMAT_NAMES)}, "
        "or a jax.checkpoint policy"
    )


def remat_body(body: Callable, remat: RematOption) -> Callable:
    """Wrap a scan body ``body(carry, x) -> (carry, y)`` with the remat option.

    The carry is tagged with :data:`CARRY_NAME` so the ``"offload"`` policy can
    move exactly the layer inputs to host memory.
    """
    policy = resolve_policy(remat)
    if policy is None:
        return body

    def named_body(carry, x):
        carry = jax.tree.map(lambda leaf: checkpoint_name(leaf, CARRY_NAME), carry)
        return body(carry, x)

    return jax.checkpoint(named_body, policy=policy, prevent_cse=False)
