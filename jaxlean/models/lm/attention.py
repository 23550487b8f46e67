"""Which attention computation the transformer runs: dense, blockwise (flash) or cuDNN's.

``TransformerConfig.attention`` names it; ``"auto"`` decides per call from what
is traced (backend, dtype, mask, length). All compute the same softmax
attention; they differ in memory (dense keeps ``[T, S]`` scores per head,
flash and cuDNN only ``[T]`` statistics) and speed.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import Array

from jaxlean.errors import ConfigError
from jaxlean.nn.attention_mask import AttentionMask

__all__ = ["ATTENTION_NAMES", "AUTO_FLASH_LENGTH", "Blockwise", "choose_attention",
           "cudnn_attention", "cudnn_refusal", "layer_mask"]

ATTENTION_NAMES = ("auto", "dense", "flash", "cudnn")

AUTO_FLASH_LENGTH = 64
"""``"auto"`` runs flash attention for queries at least this long, dense below
(measured on CPU: loss + gradient of the attention; see BENCHMARKS.md)."""

_CUDNN_DTYPES = (jnp.bfloat16, jnp.float16)
_CUDNN_MAX_HEAD_DIM = 128


def cudnn_refusal(q: Array, k: Array, mask: AttentionMask) -> str | None:
    """Why cuDNN's fused attention cannot compute this call (None: it can)."""
    if jax.default_backend() != "gpu":
        return f"it needs a GPU (the backend is {jax.default_backend()!r})"
    device = jax.devices()[0]
    if float(getattr(device, "compute_capability", 0) or 0) < 8.0:
        return f"it needs an NVIDIA GPU of compute capability 8.0 or newer, not {device}"
    if q.dtype not in _CUDNN_DTYPES:
        return f"it needs bfloat16 or float16 queries, got {q.dtype}"
    dim = q.shape[-1]
    if dim % 8 or dim > _CUDNN_MAX_HEAD_DIM:
        return f"it needs a head_dim multiple of 8 up to {_CUDNN_MAX_HEAD_DIM}, got {dim}"
    if (mask.key_valid is not None or mask.q_segments is not None or not mask.causal
            or mask.q_offset or mask.q_shift is not None or q.shape[1] != k.shape[1]):
        return ("it takes a causal (optionally sliding-window) self-attention mask only, "
                "without padding or segment ids")
    return None


def cudnn_attention(q: Array, k: Array, v: Array, mask: AttentionMask, *,
                    implementation: str = "cudnn") -> Array:
    """``jax.nn.dot_product_attention`` with cuDNN's fused kernel (check
    :func:`cudnn_refusal` first): causal, with ``mask.window`` as its left window.
    ``implementation="xla"`` runs the same call through XLA (to check it anywhere)."""
    window = None if mask.window is None else (mask.window - 1, 0)
    return jax.nn.dot_product_attention(q, k, v, is_causal=True, local_window_size=window,
                                        implementation=implementation)


def choose_attention(attention: str, q: Array, k: Array, mask: AttentionMask) -> str:
    """``"dense"``, ``"flash"`` or ``"cudnn"`` for ``attention`` (a config's choice) here.

    ``"auto"``: cuDNN where :func:`cudnn_refusal` has no objection, else flash
    for at least :data:`AUTO_FLASH_LENGTH` queries, else dense. ``"cudnn"``
    raises :class:`ConfigError` saying why where cuDNN cannot run.
    """
    if attention == "cudnn":
        refusal = cudnn_refusal(q, k, mask)
        if refusal is not None:
            raise ConfigError(f'attention="cudnn" cannot run here: {refusal}; use '
                              f'attention="flash" or "auto"')
        return "cudnn"
    if attention != "auto":
        return attention
    if cudnn_refusal(q, k, mask) is None:
        return "cudnn"
    return "flash" if q.shape[1] >= AUTO_FLASH_LENGTH else "dense"


class Blockwise(eqx.Module):
    """A mask the layers compute blockwise: ``kind`` is ``"flash"`` (with square
    ``tile``) or ``"cudnn"``. The layers run dense attention on a plain array mask."""

    mask: AttentionMask
    kind: str = eqx.field(static=True)
    tile: int = eqx.field(static=True)


def layer_mask(attention: str, tile: int, mask: AttentionMask, q: jax.ShapeDtypeStruct,
               k: jax.ShapeDtypeStruct) -> Array | Blockwise:
    """What the transformer hands its layers: the dense ``[B, T, S]`` mask where
    ``attention`` (a config's choice) resolves to dense attention, else a :class:`Blockwise`.

    ``q``, ``k`` are the shapes and dtype of the layers' queries and keys.
    """
    kind = choose_attention(attention, q, k, mask)
    if kind == "dense":
        return mask.dense(q.shape[1], k.shape[1])
    return Blockwise(mask, kind, tile)
