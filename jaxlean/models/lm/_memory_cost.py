"""The memory planner's cost model of a transformer's loss + gradient: bytes and time.

Used only to order and prune candidates before compiling; the compiled
footprint is the truth (and rescales these bytes, see
:mod:`jaxlean.compile.memory_budget`). Per token, a layer run without remat
keeps about ``10 H + 5 I`` elements for its norms, residuals and SwiGLU,
its projections' outputs, rotary copies and the attention's residuals;
``"dots"`` keeps the matmul outputs only; ``"full"`` only the layer's input.
Nested blocks of ``k`` keep one input per block plus one block's worth of
saved activations and parameter gradients. Time counts FLOPs: forward,
backward (twice the forward) and what each policy recomputes, plus a fixed
cost per loop iteration (flash tiles, loss chunks, nested blocks), which is
why smaller tiles and chunks are chosen only when memory needs them.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from jaxlean.models.lm.config import TransformerConfig

ELEMENTWISE_FLOPS = 4.0
"""FLOP-equivalents of one elementwise operation on one element (memory bound)."""
LOOP_ITERATION_FLOPS = 2e5
"""FLOP-equivalents of one loop iteration's fixed cost (a flash tile, a loss chunk)."""
F32 = 4


@dataclasses.dataclass(frozen=True)
class Choice:
    """One candidate: how the layers run, the loss chunk and the attention computation."""

    remat: str | None
    nested: int | None
    chunk_size: int
    attention: str
    attention_tile: int

    def __str__(self) -> str:
        tile = f", tile {self.attention_tile}" if self.attention == "flash" else ""
        return (f"remat={self.remat!r}, nested={self.nested!r}, loss chunk {self.chunk_size}, "
                f"{self.attention} attention{tile}")


@dataclasses.dataclass(frozen=True)
class StepShape:
    """The sizes the model needs: the config, the batch, bytes per activation element and
    the parameters' bytes (all of them, and one layer's)."""

    config: TransformerConfig
    batch: int
    length: int
    itemsize: int
    param_bytes: int
    layer_param_bytes: int
    tensor: int = 1
    """The size of the ``tensor`` mesh axis: heads and MLP features per device are divided
    by it (``batch`` and the parameter bytes are already those of one device)."""

    @property
    def tokens(self) -> int:
        return self.batch * self.length

    @property
    def qkv(self) -> int:
        c = self.config
        return (c.num_heads + 2 * c.num_kv_heads) * c.head_dim // self.tensor

    @property
    def heads(self) -> int:
        """Query heads per device."""
        return self.config.num_heads // self.tensor

    @property
    def inner(self) -> int:
        """MLP features per device."""
        return self.config.intermediate_size // self.tensor


def _per_token_saved(shape: StepShape, remat: str | None, attention: str) -> float:
    """Bytes per token one layer keeps for the backward pass under ``remat``."""
    c, b = shape.config, shape.itemsize
    hidden, inner, qkv, heads = c.hidden_size, shape.inner, shape.qkv, shape.heads
    q_size = heads * c.head_dim
    if remat == "full" or remat == "offload":
        return hidden * b
    dense = attention == "dense"
    if remat in ("dots", "dots_no_batch"):
        saved = (qkv + 2 * hidden + 2 * inner) * b
        if dense and remat == "dots":  # the score and output einsums have batch dims
            saved += heads * shape.length * F32 + q_size * b
        return saved
    saved = (6 * hidden + 4 * inner + 2 * qkv) * b
    if dense:  # scores and probabilities (float32) and the mask broadcast to the heads
        return saved + heads * shape.length * (2 * F32 + 1)
    return saved + (2 * qkv + q_size) * b + heads * F32  # flash residuals, log-sum-exp


def predicted_temp(shape: StepShape, choice: Choice) -> int:
    """Predicted temporary bytes of the loss + gradient (activations and workspace)."""
    c, tokens = shape.config, shape.tokens
    layers, carry = c.num_layers, tokens * c.hidden_size * shape.itemsize
    per_layer = tokens * _per_token_saved(shape, choice.remat, choice.attention)
    one_layer = tokens * _per_token_saved(shape, None, choice.attention)
    if choice.nested:
        k = choice.nested
        saved = math.ceil(layers / k) * carry + k * (per_layer + shape.layer_param_bytes)
        work = one_layer
    else:
        saved = layers * per_layer
        work = one_layer if choice.remat is not None else 0
    if choice.attention == "flash":
        work += 3 * shape.batch * shape.heads * choice.attention_tile ** 2 * F32
    chunk = min(choice.chunk_size, tokens)
    loss = 2 * chunk * c.vocab_size * F32 + 2 * tokens * c.hidden_size * F32
    return int(saved + work + loss + 2 * carry)


def predicted_cost(shape: StepShape, choice: Choice) -> float:
    """Predicted relative time (FLOP-equivalents) of one loss + gradient."""
    c, tokens = shape.config, shape.tokens
    hidden, inner, heads, dim = c.hidden_size, shape.inner, shape.heads, c.head_dim
    matmul = 2 * tokens * (hidden * shape.qkv + heads * dim * hidden + 3 * hidden * inner)
    elementwise = ELEMENTWISE_FLOPS * tokens * (10 * hidden + 5 * inner + 4 * shape.qkv)
    scores = 2 * tokens * shape.length * heads * dim  # one [T, S] product, all heads
    if choice.attention == "flash":
        tiles = math.ceil(shape.length / choice.attention_tile)
        attention = scores  # two products over the causal half
        loops = LOOP_ITERATION_FLOPS * tiles * (tiles + 1) / 2
        backward_attention = 2.5 * attention + 2 * loops
    else:
        attention = 2 * scores + ELEMENTWISE_FLOPS * 5 * tokens * shape.length * heads
        loops = 0.0
        backward_attention = 2 * attention
    forward = matmul + elementwise + attention + loops
    backward = 2 * (matmul + elementwise) + backward_attention
    if choice.remat is None:
        recompute = 0.0
    elif choice.remat in ("full", "offload"):
        recompute = forward
    else:  # dots: elementwise work and the attention (its products have batch dims)
        recompute = elementwise + attention + loops
        if choice.remat == "dots" and choice.attention == "dense":
            recompute -= 2 * scores
    per_layer = forward + backward + recompute
    if choice.nested:
        per_layer += forward
    chunks = math.ceil(tokens / min(choice.chunk_size, tokens))
    loss = 3 * 2 * tokens * hidden * c.vocab_size + LOOP_ITERATION_FLOPS * 2 * chunks
    return float(c.num_layers * per_layer + loss)


def itemsize(config: TransformerConfig, param_dtype: np.dtype) -> int:
    """Bytes of one activation element: the compute dtype's, else the parameters'."""
    return np.dtype(config.compute_dtype or param_dtype).itemsize
