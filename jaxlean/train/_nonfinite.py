"""A step that does not apply a non-finite loss, gradient or update, and says what was not finite.

An out-of-range token id makes the loss NaN, a NaN learning rate the update;
applied, either writes NaN into the weights and the optimizer state for good.
The train step computes :func:`finite_flags` inside the jitted step, keeps the
old state where they are not all True (:func:`keep_if`) and, on the host, names
what was not finite in the model's pytree paths (:func:`why_skipped`).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["finite_flags", "keep_if", "why_skipped"]


def finite_flags(loss: jax.Array, grads: Any, updates: Any) -> jax.Array:
    """``[loss finite, each gradient leaf finite..., each update leaf finite...]`` (bools)."""
    leaves = [*jax.tree.leaves(grads), *jax.tree.leaves(updates)]
    return jnp.stack([jnp.all(jnp.isfinite(x)) for x in (loss, *leaves)])


def keep_if(ok: jax.Array, new: Any, old: Any) -> Any:
    """``new`` where ``ok``, else ``old`` (leaf by leaf; the shapes are equal)."""
    return jax.tree.map(lambda n, o: jnp.where(ok, n, o), new, old)


def why_skipped(finite: np.ndarray, trainable: jax.tree_util.PyTreeDef) -> str:
    """What was not finite, in pytree paths of the model, from ``finite_flags``' values."""
    dummy = jax.tree.unflatten(trainable, [0] * trainable.num_leaves)
    paths = [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_leaves_with_path(dummy)]
    grads, updates = finite[1:1 + len(paths)], finite[1 + len(paths):]

    def where(flags: np.ndarray) -> str:
        bad = [path for path, ok in zip(paths, flags, strict=True) if not ok]
        return ", ".join(f"model{path}" for path in bad[:3]) + (" ..." if len(bad) > 3 else "")

    if not finite[0]:
        return ("the loss is not finite (check the batch: an index out of range, a log of "
                "zero)" + (f"; so is the gradient at {where(grads)}" if not grads.all() else ""))
    if not grads.all():
        return f"the gradient is not finite at {where(grads)}"
    return (f"the optimizer's update is not finite at {where(updates)}, though the loss and "
            "gradient are: a hyperparameter of the optimizer (the learning rate?) is NaN or "
            "infinite")
