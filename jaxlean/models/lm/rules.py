"""FSDP partition rules of the :class:`~jaxlean.models.lm.transformer.Transformer`.

The rules are ``(regex, PartitionSpec)`` pairs on the model's pytree paths, for
:func:`jaxlean.parallel.mesh.shard_model` and friends (see that module for how
rules are matched). They belong to the model: they name its fields.
"""

from __future__ import annotations

from jax.sharding import PartitionSpec as P

from jaxlean.parallel.mesh import FSDP

__all__ = ["transformer_rules"]


def transformer_rules(fsdp: str = FSDP) -> tuple[tuple[str, P], ...]:
    """FSDP partition rules for :class:`jaxlean.models.lm.transformer.Transformer`.

    - ``^\\.embed$`` ``[V, H]``: vocabulary over ``fsdp``;
    - ``^\\.lm_head\\.weight$`` ``[H, V]``: vocabulary over ``fsdp``;
    - ``lora\\.(a|b)$`` ``[L, adapters, in | r, r | out]``: replicated (small, trained);
    - ``^\\.layers\\..*_proj\\.weight$`` ``[L, in, out]``: ``in`` over ``fsdp``, the
      stacked layer axis whole;
    - ``norm\\.weight$`` ``[L, H]`` or ``[H]``: replicated (tiny);
    - ``_bias$`` ``[L, out]`` (Qwen2's q/k/v biases): replicated (tiny).

    The embedding and head are split over the vocabulary, so the head can be
    used vocabulary-parallel by the loss (:class:`jaxlean.loss.chunked.VocabParallel`).
    """
    return (
        (r"^\.embed$", P(fsdp, None)),
        (r"^\.lm_head\.weight$", P(None, fsdp)),
        (r"lora\.(a|b)$", P()),
        (r"^\.layers\..*_proj\.weight$", P(None, fsdp, None)),
        (r"norm\.weight$", P()),
        (r"_bias$", P()),
    )
