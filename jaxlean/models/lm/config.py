"""The sizes of a Llama-3 / Qwen3-style decoder and how its layers run.

:class:`TransformerConfig` names its fields as Hugging Face's ``config.json``
does; the last fields (:data:`STRUCTURE_OPTIONS`) choose how the layers
run, not what they compute.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import jax.numpy as jnp

from jaxlean.errors import ConfigError
from jaxlean.models.lm.attention import ATTENTION_NAMES
from jaxlean.models.lm.rope import RopeScaling, inv_frequencies, rope_scaling
from jaxlean.nn.flash import DEFAULT_TILE
from jaxlean.nn.layers import Nested
from jaxlean.nn.remat import REMAT_NAMES, RematOption

__all__ = ["STRUCTURE_OPTIONS", "HFSource", "TransformerConfig"]

STRUCTURE_OPTIONS = ("remat", "nested", "scan", "compute_dtype", "attention", "attention_tile")


@dataclasses.dataclass(frozen=True)
class HFSource:
    """The files a model was loaded from, carried by the model so a save writes them back.

    ``config_json``: its ``config.json`` as read (canonical JSON text, so the
    model's static structure stays hashable); ``generation``: the bytes of its
    ``generation_config.json`` (None: there was none).
    """

    config_json: str
    generation: bytes | None = None

    @classmethod
    def of(cls, config: dict, generation: bytes | None) -> HFSource:
        return cls(json.dumps(config, sort_keys=True), generation)

    @property
    def config(self) -> dict:
        return json.loads(self.config_json)


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
    """Sizes of a decoder, named as in Hugging Face ``config.json`` (Llama / Qwen3).

    ``head_dim`` defaults to ``hidden_size // num_heads`` (Qwen3 sets it explicitly);
    ``num_kv_heads`` defaults to ``num_heads`` (no grouping); ``qk_norm`` is Qwen3's
    RMSNorm of queries and keys per head; ``qkv_bias`` adds Qwen2's biases to the
    query, key and value projections; ``rope_scaling`` is a :data:`~jaxlean.models.lm.rope.
    RopeScaling` (see :func:`~jaxlean.models.lm.rope.rope_scaling`); ``sliding_window``
    (Mistral) lets each query see only the last ``sliding_window`` keys, itself included.

    The last six fields choose how the layers run, not what they compute:
    ``remat`` is the per-layer rematerialisation (see :func:`jaxlean.nn.layers.scan_layers`),
    ``nested`` the block size of two-level (sqrt-N) remat, ``scan=False``
    runs the layers as an unrolled Python loop (one trace per layer) instead of
    one ``scan_layers``, and ``compute_dtype`` (e.g. ``jnp.bfloat16``) is the dtype
    the forward pass and the head run in whatever the weights are stored in:
    float32 weights (full fine-tuning, or float32 adapters) are cast to it where
    used, so they are differentiated and updated in float32 while the products
    run in bfloat16 (the chunked loss still accumulates in float32). ``attention``
    is how the softmax attention is computed: ``"dense"`` builds the ``[T, S]``
    scores, ``"flash"`` computes them in ``[attention_tile, attention_tile]``
    blocks (:func:`jaxlean.nn.flash.flash_attention`: memory linear in the
    length), ``"cudnn"`` calls cuDNN's fused kernel (GPU, bfloat16/float16,
    causal or sliding-window mask only) and ``"auto"`` takes cuDNN where it
    applies, else flash from :data:`~jaxlean.models.lm.attention.AUTO_FLASH_LENGTH`
    tokens on and dense below. Change them on a built model with
    :meth:`Transformer.with_options`.
    """

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int | None = None
    head_dim: int | None = None
    rope_theta: float = 10000.0
    rope_scaling: RopeScaling = None
    rms_norm_eps: float = 1e-6
    qk_norm: bool = False
    qkv_bias: bool = False
    sliding_window: int | None = None
    tie_embeddings: bool = False
    remat: RematOption = None
    nested: Nested = None
    scan: bool = True
    compute_dtype: Any = None
    attention: str = "auto"
    attention_tile: int = DEFAULT_TILE

    def __post_init__(self) -> None:
        if self.compute_dtype is not None:
            if not jnp.issubdtype(self.compute_dtype, jnp.floating):
                raise ConfigError(f"TransformerConfig.compute_dtype must be a floating-point "
                                  f"dtype or None, got {self.compute_dtype!r}")
            object.__setattr__(self, "compute_dtype", jnp.dtype(self.compute_dtype))
        if not (self.remat is None or callable(self.remat) or self.remat in REMAT_NAMES):
            raise ConfigError(f"TransformerConfig.remat={self.remat!r} is not one of None, "
                              f"{list(REMAT_NAMES)} or a jax.checkpoint policy")
        if self.attention not in ATTENTION_NAMES:
            raise ConfigError(f"TransformerConfig.attention={self.attention!r} is not one of "
                              f"{list(ATTENTION_NAMES)}")
        if (not isinstance(self.attention_tile, int) or isinstance(self.attention_tile, bool)
                or self.attention_tile < 1):
            raise ConfigError(f"TransformerConfig.attention_tile must be a positive int, got "
                              f"{self.attention_tile!r}")
        if self.nested is not None and not self.scan:
            raise ConfigError(f"nested={self.nested!r} needs scan=True (nested remat groups "
                              "the scanned layers into blocks)")
        for name in ("vocab_size", "hidden_size", "intermediate_size", "num_layers", "num_heads"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"TransformerConfig.{name} must be a positive int, got {value!r}")
        if self.num_kv_heads is None:
            object.__setattr__(self, "num_kv_heads", self.num_heads)
        if self.num_kv_heads < 1 or self.num_heads % self.num_kv_heads:
            raise ConfigError(
                f"num_heads={self.num_heads} must be a multiple of num_kv_heads="
                f"{self.num_kv_heads} (each key/value head serves a group of query heads)"
            )
        if self.head_dim is None:
            if self.hidden_size % self.num_heads:
                raise ConfigError(
                    f"hidden_size={self.hidden_size} is not divisible by num_heads="
                    f"{self.num_heads}; pass head_dim explicitly or change the sizes"
                )
            object.__setattr__(self, "head_dim", self.hidden_size // self.num_heads)
        if self.head_dim < 2 or self.head_dim % 2:
            raise ConfigError(f"head_dim={self.head_dim} must be even for rotary embeddings")
        if self.rope_scaling is not None:
            kind, values = self.rope_scaling
            rope_scaling(kind, **dict(values))
        if self.sliding_window is not None and (not isinstance(self.sliding_window, int)
                                                or self.sliding_window < 1):
            raise ConfigError(f"sliding_window must be a positive int or None, got "
                              f"{self.sliding_window!r}")

    @property
    def group_size(self) -> int:
        return self.num_heads // self.num_kv_heads

    @property
    def inv_freq(self):
        """The rotary frequencies (NumPy, computed from the config)."""
        return inv_frequencies(self.head_dim, self.rope_theta, self.rope_scaling)
