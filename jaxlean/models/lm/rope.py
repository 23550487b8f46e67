"""Rotary position embeddings: the frequencies of each scaling type, and their application.

The frequencies depend only on the config, so they are computed once in NumPy
(float64, then float32) and enter the traced function as a constant. Scaling
follows Hugging Face's ``rope_type`` definitions: ``"default"`` (none),
``"linear"`` (every frequency divided by ``factor``) and ``"llama3"`` (long
wavelengths divided by ``factor``, short ones kept, a smooth blend between).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from jax import Array

from jaxlean.errors import ConfigError

__all__ = ["ROPE_TYPES", "RopeScaling", "apply_rotary", "inv_frequencies", "rope_scaling"]

ROPE_TYPES = ("default", "linear", "llama3")
_PARAMETERS = {"default": (), "linear": ("factor",),
               "llama3": ("factor", "low_freq_factor", "high_freq_factor",
                          "original_max_position_embeddings")}

RopeScaling = tuple[str, tuple[tuple[str, float], ...]] | None
"""``(rope_type, ((parameter, value), ...))``, hashable so a config can hold it; None: none."""


def rope_scaling(rope_type: str, **parameters: float) -> RopeScaling:
    """A checked :data:`RopeScaling` (``None`` for ``"default"``).

    Raises:
        ConfigError: an unknown type, or a parameter missing for its type.
    """
    if rope_type not in ROPE_TYPES:
        raise ConfigError(f"rope_type={rope_type!r} is not supported; supported: "
                          f"{list(ROPE_TYPES)}")
    if rope_type == "default":
        return None
    needed = _PARAMETERS[rope_type]
    missing = [name for name in needed if parameters.get(name) is None]
    if missing:
        raise ConfigError(f"rope_type={rope_type!r} needs {missing}")
    return rope_type, tuple((name, float(parameters[name])) for name in needed)


def inv_frequencies(head_dim: int, theta: float, scaling: RopeScaling = None) -> np.ndarray:
    """The ``head_dim // 2`` rotary frequencies, float32."""
    inv_freq = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    if scaling is not None:
        kind, values = scaling
        p = dict(values)
        if kind == "linear":
            inv_freq = inv_freq / p["factor"]
        else:  # llama3
            old = p["original_max_position_embeddings"]
            low_wavelen = old / p["low_freq_factor"]
            high_wavelen = old / p["high_freq_factor"]
            wavelen = 2 * math.pi / inv_freq
            scaled = np.where(wavelen > low_wavelen, inv_freq / p["factor"], inv_freq)
            smooth = (old / wavelen - p["low_freq_factor"]) / (p["high_freq_factor"]
                                                               - p["low_freq_factor"])
            blended = (1 - smooth) * scaled / p["factor"] + smooth * scaled
            medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
            inv_freq = np.where(medium, blended, scaled)
    return inv_freq.astype(np.float32)


def apply_rotary(x: Array, positions: Array, inv_freq: np.ndarray) -> Array:
    """Rotary embedding (Hugging Face "rotate half" layout) of ``x[B, T, heads, d]``."""
    half = x.shape[-1] // 2
    angles = positions.astype(jnp.float32)[..., None, None] * jnp.asarray(inv_freq)
    cos, sin = jnp.cos(angles), jnp.sin(angles)
    x1, x2 = x[..., :half].astype(jnp.float32), x[..., half:].astype(jnp.float32)
    out = jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
    return out.astype(x.dtype)
