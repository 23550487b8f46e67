"""Next-token choice: Hugging Face's temperature, top-k, top-p and min-p filters, and sampling.

The filters follow ``transformers``' logits warpers, applied in its order
(``TemperatureLogitsWarper``, ``TopKLogitsWarper``, ``TopPLogitsWarper``,
``MinPLogitsWarper``, each keeping at least one token): top-k drops logits below
the k-th largest; top-p sorts ascending and drops tokens whose cumulative
probability is ``<= 1 - top_p``; min-p drops tokens whose probability is below
``min_p`` times the largest. Filtered logits are ``-inf``. Where HF breaks a tie
at the top-p boundary by sort position, here every tied token is kept.

The filter values are data (traced), so changing ``top_p`` does not compile
again; whether a filter is on is part of the program. Each row samples with its
own key, folded with the step number, so a row's draws do not depend on the
other rows of the batch.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from jaxlean.errors import ConfigError
from jaxlean.models.lm.generation_config import HF_SAMPLING_DEFAULTS, GenerationDefaults

__all__ = ["Sampling", "choose", "filter_logits", "resolve_sampling"]


class Sampling(NamedTuple):
    """How the next token is chosen; ``None`` turns a filter off.

    Attributes:
        temperature: 0 for greedy decoding (argmax, filters unused), else the
            divisor of the logits.
        top_k: keep the ``top_k`` largest logits (``1 <= top_k <= vocab``).
        top_p: keep the smallest set of most likely tokens whose probability
            exceeds ``top_p`` (``0 < top_p <= 1``).
        min_p: keep tokens at least ``min_p`` times as likely as the most likely
            one (``0 <= min_p <= 1``).
    """

    temperature: float = 0.0
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def check(self, vocab_size: int) -> Sampling:
        """``self`` if every value is in range, else :class:`ConfigError` naming the field."""
        if not self.temperature >= 0:
            raise ConfigError(f"temperature must be >= 0, got {self.temperature}")
        if self.top_k is not None and not 1 <= self.top_k <= vocab_size:
            raise ConfigError(f"top_k must be in [1, vocab_size={vocab_size}], got {self.top_k}")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ConfigError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.min_p is not None and not 0 <= self.min_p <= 1:
            raise ConfigError(f"min_p must be in [0, 1], got {self.min_p}")
        return self

    def values(self) -> dict[str, np.ndarray]:
        """The enabled filters' values as float32 arrays (data, not constants, under ``jit``)."""
        temperature = 1.0 if self.greedy else self.temperature
        out = {"temperature": np.asarray(temperature, np.float32)}
        for name in ("top_k", "top_p", "min_p"):
            if getattr(self, name) is not None:
                out[name] = np.asarray(getattr(self, name), np.float32)
        return out


def resolve_sampling(defaults: GenerationDefaults, vocab_size: int, do_sample: bool | None,
                     temperature: float | None, top_k: int | None, top_p: float | None,
                     min_p: float | None) -> Sampling:
    """The :class:`Sampling` of a call: its arguments, else the checkpoint's ``defaults``.

    ``do_sample`` not given: sampling when ``temperature`` is given and above 0 (jaxlean's
    ``temperature=0`` is greedy), else the checkpoint's ``do_sample`` (default False).
    Sampling takes each filter from the call, else the checkpoint, else (for a
    checkpoint) ``transformers``' default (:data:`HF_SAMPLING_DEFAULTS`: ``top_k=50``);
    ``top_k=0`` and ``top_p=1`` turn a filter off, as in ``transformers``, and a top-k
    not from the call is capped at the vocabulary, as its warper caps it.
    """
    if do_sample is None:
        do_sample = temperature > 0 if temperature is not None else bool(defaults.do_sample)
    if not do_sample:
        return Sampling(0.0)
    fallback = HF_SAMPLING_DEFAULTS if defaults.from_checkpoint else {}

    def pick(name: str, given):
        if given is not None:
            return given
        stated = getattr(defaults, name)
        return stated if stated is not None else fallback.get(name)

    value = pick("temperature", temperature)
    value = 1.0 if value is None else float(value)
    if not value > 0:
        raise ConfigError(f"do_sample=True needs temperature > 0, got {value}")
    k = pick("top_k", top_k)
    if top_k is None and k is not None:
        k = min(k, vocab_size)
    p = pick("top_p", top_p)
    return Sampling(value, None if k == 0 else k, None if p == 1.0 else p,
                    pick("min_p", min_p)).check(vocab_size)


def filter_logits(logits: Array, values: dict[str, Array]) -> Array:
    """``logits[..., V] / temperature`` with the filtered-out tokens at ``-inf`` (float32).

    Args:
        logits: next-token logits.
        values: ``temperature`` and any of ``top_k``, ``top_p``, ``min_p``
            (see :meth:`Sampling.values`); a missing key is a filter turned off.
    """
    x = logits.astype(jnp.float32) / values["temperature"]
    if "top_k" in values or "top_p" in values:
        descending = -jnp.sort(-x, axis=-1)
    if "top_k" in values:
        k = values["top_k"].astype(jnp.int32)
        kth = jax.lax.dynamic_index_in_dim(descending, k - 1, axis=-1)
        x = jnp.where(x < kth, -jnp.inf, x)
        descending = jnp.where(descending < kth, -jnp.inf, descending)
    if "top_p" in values:
        ascending = descending[..., ::-1]
        cumulative = jnp.cumsum(jax.nn.softmax(ascending, axis=-1), axis=-1)
        removed = (cumulative <= 1 - values["top_p"]).at[..., -1].set(False)
        first_kept = jnp.argmin(removed, axis=-1)  # `removed` is True on a prefix
        threshold = jnp.take_along_axis(ascending, first_kept[..., None], axis=-1)
        x = jnp.where(x < threshold, -jnp.inf, x)
    if "min_p" in values:
        probs = jax.nn.softmax(x, axis=-1)
        floor = values["min_p"] * jnp.max(probs, axis=-1, keepdims=True)
        x = jnp.where(probs < floor, -jnp.inf, x)
    return x


def choose(logits: Array, values: dict[str, Array], greedy: bool,
           keys: Array | None, step: Array) -> tuple[Array, Array]:
    """The next token of each row and its log-prob under ``softmax(logits / temperature)``.

    The log-prob is of the unfiltered, temperature-scaled distribution (the one
    a PPO/GRPO loss with the same ``temperature`` computes; 1 when greedy).

    Args:
        logits: ``[B, V]``.
        values: as for :func:`filter_logits`.
        greedy: take the argmax instead of sampling.
        keys: ``[B]`` PRNG keys, one per row (unused when greedy).
        step: the decoding step, folded into each row's key.

    Returns:
        ``(tokens [B] int32, logprobs [B] float32)``.
    """
    scaled = logits.astype(jnp.float32) / values["temperature"]
    if greedy:
        token = jnp.argmax(scaled, axis=-1).astype(jnp.int32)
    else:
        filtered = filter_logits(logits, values)
        step_keys = jax.vmap(jax.random.fold_in, in_axes=(0, None))(keys, step)
        token = jax.vmap(jax.random.categorical)(step_keys, filtered).astype(jnp.int32)
    logprob = jnp.take_along_axis(jax.nn.log_softmax(scaled, axis=-1), token[:, None], axis=-1)
    return token, logprob[:, 0]
