"""What a :func:`jaxlean.fit` checkpoint records about its run, and the check on resume.

A checkpoint of ``fit`` holds the loop's whole carry, so a resumed run
continues exactly, but only if it is the same run: the same data shapes, the
same batching and shuffle key, the same epochs and patience, the same
trainable leaves. :func:`describe_run` turns those into a flat dict of
JSON values stored with every checkpoint; :func:`check_same_run` compares the
stored dict with this call's and names the first option that differs. Data
values and the loss function are not compared (hashing a dataset on every
start would cost a pass over it); their shapes and dtypes are.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from jaxlean.errors import CheckpointError
from jaxlean.train.packed import Layout

_ENTRY = "fit"


def _array_text(leaf: Any) -> str:
    return f"{np.dtype(leaf.dtype)}{list(np.shape(leaf))}"


def _key_data(key: jax.Array) -> list[int]:
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    return np.asarray(key).ravel().tolist()


def describe_run(*, data: Any, val_data: Any, epochs: int, batch_size: int,
                 patience: int | None, key: jax.Array, pack: bool, layout: Layout) -> dict:
    """The checkpoint metadata of one ``fit`` call: every option a resume must match."""
    fields: dict[str, Any] = {"epochs": int(epochs), "batch_size": int(batch_size),
                              "patience": None if patience is None else int(patience),
                              "pack": bool(pack), "key": _key_data(key)}
    for name, tree in (("data", data), ("val_data", val_data)):
        if tree is None:
            fields[name] = None
            continue
        for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
            fields[name + jax.tree_util.keystr(path)] = _array_text(leaf)
    for leaf in layout.leaves:
        if leaf is not None:
            role = "trained" if leaf.buffer >= 0 else "frozen"
            fields["params" + leaf.path] = f"{role} {leaf.dtype}{list(leaf.shape)}"
    return {_ENTRY: fields}


def check_same_run(saved: dict, here: dict, where: str) -> None:
    """Raise CheckpointError naming the first option whose value differs.

    Args:
        saved: the metadata stored with the checkpoint.
        here: :func:`describe_run` of this call.
        where: the checkpoint, in words (directory and step).
    """
    if not isinstance(saved.get(_ENTRY), dict):
        raise CheckpointError(f"the checkpoint at {where} was not written by fit (its metadata "
                              f"has no {_ENTRY!r} entry); give fit an empty directory")
    stored, fields = saved[_ENTRY], here[_ENTRY]
    absent = object()
    for name in [*fields, *(name for name in stored if name not in fields)]:
        mine, theirs = fields.get(name, absent), stored.get(name, absent)
        if mine != theirs:
            text = lambda value: "absent" if value is absent else str(value)
            raise CheckpointError(
                f"{name} is {text(mine)} here, {text(theirs)} in the checkpoint at {where}; "
                "resume with the options of the checkpointed run or use another directory")
