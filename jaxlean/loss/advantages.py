"""Advantages and reward shaping from per-completion rewards: GRPO, RLOO, DAPO.

Plain ``jnp`` on a ``[N]`` vector of rewards whose completions come in groups of
``group_size`` consecutive rows (the completions of one prompt), as in TRL's
``GRPOTrainer`` and ``RLOOTrainer``. A NaN reward marks a completion that could not
be scored: it is left out of its group's statistics and its advantage is 0 (TRL's
rule). The results feed :func:`jaxlean.loss.policy.policy_gradient_loss`.

- :func:`group_advantages`: GRPO's group-relative advantages, ``scale_rewards``
  ``"group"``, ``"batch"`` or ``"none"`` (Dr. GRPO) as in TRL;
- :func:`rloo_advantages`: REINFORCE leave-one-out (each completion's baseline is
  the mean reward of the others in its group);
- :func:`varied_groups`: DAPO's dynamic sampling (keep only groups whose rewards
  are not all equal: the others have zero advantage and no gradient);
- :func:`overlong_penalty`: DAPO's soft overlong punishment, a reward by length.
"""

from __future__ import annotations

import functools
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean._args import as_int
from jaxlean.errors import ConfigError, StructureError

__all__ = [
    "SCALE_REWARDS",
    "ScaleRewards",
    "check_groups",
    "group_advantages",
    "overlong_penalty",
    "rloo_advantages",
    "varied_groups",
]

ScaleRewards = Literal["group", "batch", "none"]
SCALE_REWARDS = ("group", "batch", "none")


def _grouped(rewards: Any, group_size: Any, where: str) -> tuple[jax.Array, int]:
    """``rewards [N]`` as float ``[N / group_size, group_size]``."""
    group_size = as_int(group_size, "group_size", minimum=1)
    rewards = jnp.asarray(rewards)
    if rewards.ndim != 1 or rewards.shape[0] % group_size:
        raise StructureError(f"{where}: rewards must be [N] with N a multiple of group_size="
                             f"{group_size}, got shape {list(rewards.shape)}")
    if not jnp.issubdtype(rewards.dtype, jnp.floating):
        rewards = rewards.astype(jnp.promote_types(rewards.dtype, jnp.float32))
    return rewards.reshape(-1, group_size), group_size


def _nanmean(x: jax.Array, axis=None, keepdims: bool = False) -> jax.Array:
    return jnp.nanmean(x, axis=axis, keepdims=keepdims)


def _nanstd(x: jax.Array, axis=None, keepdims: bool = False) -> jax.Array:
    """Standard deviation with Bessel's correction over the non-NaN entries (TRL's nanstd)."""
    mean = jnp.nanmean(x, axis=axis, keepdims=True)
    variance = jnp.nanmean(jnp.square(x - mean), axis=axis, keepdims=True)
    count = jnp.sum(~jnp.isnan(x), axis=axis, keepdims=True)
    std = jnp.sqrt(variance * count / (count - 1))
    return std if keepdims else jnp.squeeze(std, axis)


def check_groups(group_ids: Any, group_size: int, where: str = "group_advantages") -> None:
    """Raise :class:`StructureError` unless ``group_ids`` ``[N]`` (each completion's prompt)
    come in runs of ``group_size`` consecutive equal values, one run per prompt.

    The advantages compare each reward with its group's, and a group is
    ``group_size`` consecutive rows (TRL's layout: each prompt repeated
    ``num_generations`` times in a row). Completions laid out another way (prompts
    interleaved, ``prompts * G``) would be compared with other prompts' rewards. A prompt
    drawn twice may have two groups.
    """
    ids = np.asarray(group_ids).reshape(-1)
    if ids.size % group_size:
        raise StructureError(f"{where}: {ids.size} group_ids are not a multiple of "
                             f"group_size={group_size}")
    runs = ids.reshape(-1, group_size)
    bad = np.flatnonzero((runs != runs[:, :1]).any(axis=1))
    if bad.size:
        g = int(bad[0])
        raise StructureError(
            f"{where}: rows {g * group_size}..{(g + 1) * group_size - 1} should be the "
            f"completions of one prompt (groups are group_size={group_size} consecutive rows, "
            f"as TRL lays them out) but hold the prompts {runs[g].tolist()}: repeat each prompt "
            f"group_size times in a row (np.repeat), not the prompt list (list * group_size)")


def group_advantages(rewards: jax.Array, group_size: int, *,
                     scale_rewards: ScaleRewards | bool = "group",
                     eps: float = 1e-4, group_ids: Any = None) -> jax.Array:
    """GRPO's advantages: each reward less its group's mean, over a standard deviation.

    ``A_i = (r_i - mean(group)) / (std + eps)`` with ``std`` (Bessel-corrected) of the
    group (``scale_rewards="group"``, GRPO) or of the whole batch (``"batch"``), or
    ``A_i = r_i - mean(group)`` (``"none"``, Dr. GRPO). TRL's ``scale_rewards`` values,
    ``True`` and ``False`` meaning ``"group"`` and ``"none"``.

    Args:
        rewards: ``[N]`` rewards, groups of ``group_size`` consecutive completions
            (NaN: unscorable, advantage 0).
        group_size: completions per prompt (TRL's ``num_generations``).
        scale_rewards: ``"group"``, ``"batch"``, ``"none"``, ``True`` or ``False``.
        eps: added to the standard deviation (TRL: ``1e-4``).
        group_ids: ``[N]`` each completion's prompt (any ids), checked eagerly to come in
            ``group_size`` consecutive rows per prompt (:func:`check_groups`), so a batch
            laid out another way is refused instead of mis-grouped.

    Returns:
        ``[N]`` advantages.
    """
    if group_ids is not None:
        check_groups(group_ids, as_int(group_size, "group_size", minimum=1))
    if isinstance(scale_rewards, bool):
        scale_rewards = "group" if scale_rewards else "none"
    if scale_rewards not in SCALE_REWARDS:
        raise ConfigError(f"unknown scale_rewards {scale_rewards!r}: use 'group', 'batch', "
                          "'none', True or False")
    grouped, group_size = _grouped(rewards, group_size, "group_advantages")
    return _group_advantages(grouped, scale_rewards, float(eps))


@functools.partial(jax.jit, static_argnums=(1, 2))
def _group_advantages(grouped: jax.Array, scale_rewards: str, eps: float) -> jax.Array:
    """:func:`group_advantages` on ``[groups, group_size]`` rewards, compiled as one program
    (eagerly it would dispatch, and compile, a dozen small operations)."""
    group_size = grouped.shape[1]
    flat = grouped.reshape(-1)
    centred = grouped - _nanmean(grouped, axis=1, keepdims=True)
    if scale_rewards == "none":
        advantages = centred
    elif scale_rewards == "group":
        std = (_nanstd(grouped, axis=1, keepdims=True) if group_size > 1
               else jnp.zeros_like(grouped))
        advantages = centred / (std + eps)
    else:
        std = _nanstd(flat) if flat.size > 1 else jnp.zeros((), flat.dtype)
        advantages = centred / (std + eps)
    return jnp.nan_to_num(advantages.reshape(-1), nan=0.0)


def rloo_advantages(rewards: jax.Array, group_size: int, *, normalize: bool = False,
                    eps: float = 1e-4) -> jax.Array:
    """REINFORCE leave-one-out advantages: ``A_i = r_i - mean(r_j, j != i in the group)``.

    The baseline averages the group's other scorable completions (TRL's
    ``RLOOTrainer``); a group of one completion has no baseline and advantages 0.
    With ``normalize=True`` (TRL's ``normalize_advantages``) the advantages are then
    standardised over the whole batch: ``(A - mean(A)) / (std(A) + eps)``.

    Args:
        rewards: ``[N]`` rewards, groups of ``group_size`` consecutive completions
            (NaN: unscorable, advantage 0).
        group_size: completions per prompt.
        normalize: standardise over the batch afterwards.
        eps: added to the standard deviation when normalising.

    Returns:
        ``[N]`` advantages.
    """
    grouped, group_size = _grouped(rewards, group_size, "rloo_advantages")
    if group_size == 1:
        return jnp.zeros(grouped.size, grouped.dtype)
    count = jnp.sum(~jnp.isnan(grouped), axis=1, keepdims=True)
    baseline = (jnp.nansum(grouped, axis=1, keepdims=True) - grouped) / (count - 1)
    advantages = (grouped - baseline).reshape(-1)
    if normalize:
        advantages = (advantages - _nanmean(advantages)) / (_nanstd(advantages) + eps)
    return jnp.nan_to_num(advantages, nan=0.0)


def varied_groups(rewards: jax.Array, group_size: int) -> jax.Array:
    """DAPO's dynamic sampling: ``[N]`` True for the completions of groups whose rewards
    are not all equal.

    A group whose completions all score the same (all right, all wrong) has zero
    group-relative advantage and contributes no gradient, only dilution; DAPO drops
    such groups and samples more prompts until the batch is full. Select the kept rows
    eagerly, e.g. ``batch = jax.tree.map(lambda x: x[keep], batch)`` with
    ``keep = np.asarray(varied_groups(rewards, group_size))``. A group with fewer than
    two scorable (non-NaN) rewards is dropped too.
    """
    grouped, group_size = _grouped(rewards, group_size, "varied_groups")
    scorable = ~jnp.isnan(grouped)
    high = jnp.max(jnp.where(scorable, grouped, -jnp.inf), axis=1)
    low = jnp.min(jnp.where(scorable, grouped, jnp.inf), axis=1)
    keep = (high > low) & (jnp.sum(scorable, axis=1) > 1)
    return jnp.repeat(keep, group_size)


def overlong_penalty(lengths: jax.Array, max_completion_length: int,
                     soft_punish_cache: int) -> jax.Array:
    """DAPO's soft overlong punishment (its Eq. 13; TRL's ``get_soft_overlong_punishment``).

    With ``L = max_completion_length`` and ``C = soft_punish_cache``: 0 for a length
    ``<= L - C``, ``(L - C - length) / C`` (from 0 down to -1) up to ``L``, and -1 beyond.
    Add it to the task reward before computing advantages.

    Args:
        lengths: ``[N]`` completion lengths in tokens.
        max_completion_length: ``L`` (>= 1).
        soft_punish_cache: ``C``, the length of the soft zone (``0 <= C <= L``).

    Returns:
        ``[N]`` float penalties in ``[-1, 0]``.
    """
    limit = as_int(max_completion_length, "max_completion_length", minimum=1)
    cache = as_int(soft_punish_cache, "soft_punish_cache", minimum=0)
    if cache > limit:
        raise ConfigError(f"soft_punish_cache must be <= max_completion_length={limit}, got "
                          f"{cache}")
    lengths = jnp.asarray(lengths)
    dtype = jnp.promote_types(lengths.dtype, jnp.float32)
    lengths = lengths.astype(dtype)
    start = limit - cache
    soft = (start - lengths) / max(cache, 1)
    return jnp.where(lengths <= start, 0.0, jnp.where(lengths <= limit, soft, -1.0)).astype(dtype)
