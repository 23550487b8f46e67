"""Partition rules of the :class:`~jaxlean.models.lm.transformer.Transformer`: FSDP and tensor.

The rules are ``(regex, PartitionSpec)`` pairs on the model's pytree paths, for
:func:`jaxlean.parallel.mesh.shard_model` and friends (see that module for how
rules are matched). They belong to the model: they name its fields.

The tensor layout is Megatron's: the projections into heads and MLP features
(``q/k/v/gate/up``) are split by their output features, the projections back
(``o/down``) by their input features, so each device of the ``tensor`` axis holds
whole heads (query and key/value heads alike: both counts must be divisible by the
axis) and a slice of the MLP. LoRA adapters follow their base: for a column-split
layer ``a`` is replicated and ``b`` split by output, for a row-split one ``a`` is
split by input and ``b`` replicated. Both layouts compose: FSDP splits each projection's
input features (within the tensor blocks of a row-split one).
"""

from __future__ import annotations

from jax.sharding import PartitionSpec as P

from jaxlean.parallel.mesh import FSDP, TENSOR

__all__ = ["COLUMN_PROJECTIONS", "ROW_PROJECTIONS", "transformer_rules"]

COLUMN_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj")
"""Projections split by output features over the ``tensor`` axis."""
ROW_PROJECTIONS = ("o_proj", "down_proj")
"""Projections split by input features over the ``tensor`` axis (their outputs are sums)."""


def transformer_rules(fsdp: str = FSDP, tensor: str | None = TENSOR
                      ) -> tuple[tuple[str, P], ...]:
    """FSDP and tensor partition rules for :class:`jaxlean.models.lm.transformer.Transformer`.

    - ``^\\.embed$`` ``[V, H]``: vocabulary over ``fsdp``;
    - ``^\\.lm_head\\.weight$`` ``[H, V]``: vocabulary over ``fsdp``;
    - ``q/k/v/gate/up_proj.weight`` ``[L, in, out]``: ``in`` over ``fsdp``, ``out`` over
      ``tensor``; their LoRA ``a`` ``[L, adapters, in, r]`` replicated, ``b``
      ``[L, adapters, r, out]`` ``out`` over ``tensor``;
    - ``o/down_proj.weight`` ``[L, in, out]``: ``in`` over ``tensor`` and, within each
      tensor block, over ``fsdp`` (so with a ``tensor`` axis of size 1 the FSDP layout is
      that of every projection: ``in`` over ``fsdp``); their LoRA ``a`` ``in`` over
      ``tensor``, ``b`` replicated;
    - other ``lora\\.(a|b)`` (the head's): replicated (small, trained);
    - ``norm\\.weight$`` ``[L, H]`` or ``[H]``: replicated (tiny; q/k-norms act per head);
    - ``(q|k|v)_bias$`` ``[L, out]`` (Qwen2's): ``out`` over ``tensor``, as their projections.

    The stacked layer axis is never split, so the layer scan slices one layer per step.
    The embedding and head are split over the vocabulary, so the head can be used
    vocabulary-parallel by the loss (:class:`jaxlean.loss.chunked.VocabParallel`).

    Args:
        fsdp: the mesh axis the parameters are split over, ZeRO-3 style.
        tensor: the mesh axis of the Megatron layout; ``None`` for a mesh without one
            (rules of FSDP alone, as before the axis existed).
    """
    row_in = fsdp if tensor is None else (tensor, fsdp)
    column = "|".join(COLUMN_PROJECTIONS)
    row = "|".join(ROW_PROJECTIONS)
    return (
        (r"^\.embed$", P(fsdp, None)),
        (r"^\.lm_head\.weight$", P(None, fsdp)),
        (rf"^\.layers\..*\.({column})\.lora\.a$", P()),
        (rf"^\.layers\..*\.({column})\.lora\.b$", P(None, None, None, tensor)),
        (rf"^\.layers\..*\.({row})\.lora\.a$", P(None, None, tensor, None)),
        (rf"^\.layers\..*\.({row})\.lora\.b$", P()),
        (r"lora\.(a|b)$", P()),
        (rf"^\.layers\..*\.({column})\.weight$", P(None, fsdp, tensor)),
        (rf"^\.layers\..*\.({row})\.weight$", P(None, row_in, None)),
        (r"norm\.weight$", P()),
        (r"^\.layers\..*(q|k|v)_bias$", P(None, tensor)),
        (r"_bias$", P()),
    )
