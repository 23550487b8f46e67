"""How many real tokens a language-model batch holds: the ``count_tokens`` of a train step.

:func:`jaxlean.train.step.make_train_step` knows nothing of attention masks;
its ``StepMetrics.tokens`` comes from the ``count_tokens`` function it is given.
This one counts what a language model attends to.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxlean.train.step import count_integer_elements

__all__ = ["count_tokens"]


def count_tokens(*batch: Any, attention_mask: Any = None, segment_ids: Any = None,
                 **kwargs: Any) -> jax.Array | None:
    """The tokens of a batch passed as ``step(model, state, ids, ..., attention_mask=am)``
    or whole (``step(model, state, **batch)``): the sum of ``attention_mask`` (1 or True at
    real tokens; cast to int32) when given, else of ``segment_ids > 0`` (a packed batch),
    else the element count of the token ids (``input_ids=`` or the first integer positional
    argument, padding included).

    Use as ``make_train_step(loss, tx, metrics=True, count_tokens=count_tokens)``.
    """
    if attention_mask is not None:
        return jnp.sum(jnp.asarray(attention_mask).astype(jnp.int32))
    if segment_ids is not None:
        return jnp.sum((jnp.asarray(segment_ids) > 0).astype(jnp.int32))
    if "input_ids" in kwargs:
        batch = (kwargs["input_ids"], *batch)
    return count_integer_elements(*batch)
