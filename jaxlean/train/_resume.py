"""What a :func:`jaxlean.fit` checkpoint records about its run, the check on resume, the restore.

A checkpoint of ``fit`` holds the loop's whole carry, so a resumed run
continues exactly, but only if it is the same run. :func:`describe_run`
records the run's identity as small JSON values stored with every checkpoint:

- ``tx``: the optimizer's structure and settings (:mod:`jaxlean.train._describe`);
- ``data`` / ``val_data``: shape, dtype and a content hash of every array;
- ``batch_size``, ``patience``, ``pack``, ``quick_compile`` (when on) and the shuffle ``key``;
- the model: each params leaf (trained or frozen, dtype, shape; functions and
  other static leaves described as in ``tx``) and a hash of the pytree structure;
- ``epochs``, which may grow: a longer run continues the checkpointed one.

:func:`check_same_run` compares the stored record with this call's and raises
naming the first field that differs. The loss function is not compared.
:func:`restore` reads the latest checkpoint's carry after that check, while
the loop compiles for the carry's shapes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from concurrent import futures
from typing import Any

import jax
import numpy as np
import optax

from jaxlean.errors import CheckpointError
from jaxlean.train._describe import array_text, describe, setting_name
from jaxlean.train._layout import PackedLayout
from jaxlean.train._loop import Carry
from jaxlean.train.checkpoint import Checkpointer

__all__ = ["check_same_run", "describe_run", "resize_history", "restore", "resumable_epochs"]

_ENTRY = "fit"
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _structure_hash(params: Any) -> str:
    """A hash of the params' pytree structure: node types, keys, static fields."""
    text = _ADDRESS.sub("", str(jax.tree.structure(params)))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def describe_run(*, params: Any, data: Any, val_data: Any, tx: optax.GradientTransformation,
                 epochs: int, batch_size: int, patience: int | None, key: jax.Array,
                 pack: bool, layout: PackedLayout, quick_compile: bool = False) -> dict:
    """The checkpoint metadata of one ``fit`` call: every option a resume must match.

    ``quick_compile`` is recorded only when on, so checkpoints written without it still match.
    """
    fields: dict[str, Any] = {"epochs": int(epochs), "batch_size": int(batch_size),
                              "patience": None if patience is None else int(patience),
                              "pack": bool(pack), "key": array_text(key, by_value=True)}
    if quick_compile:
        fields["quick_compile"] = True
    for name, tree in (("data", data), ("val_data", val_data)):
        if tree is None:
            fields[name] = None
            continue
        for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
            fields[name + jax.tree_util.keystr(path)] = array_text(leaf)
    flat = jax.tree_util.tree_flatten_with_path(params)[0]
    for (path, value), leaf in zip(flat, layout.leaves, strict=True):
        name = "params" + jax.tree_util.keystr(path)
        if leaf is None:
            fields.update(describe(value, name))
        else:
            role = "trained" if leaf.buffer >= 0 else "frozen"
            fields[name] = f"{role} {leaf.dtype}{list(leaf.shape)}"
    fields["params structure"] = _structure_hash(params)
    fields["tx"] = describe(tx, "tx")
    return {_ENTRY: fields}


def _fresh_start(directory: str) -> str:
    return f"start fresh: give fit another checkpoint directory or delete {directory}"


def _tx_difference(saved: dict, here: dict, where: str, epochs: tuple[int, int]) -> str | None:
    """The first optimizer setting that differs, in words, or None."""
    absent = "absent"
    for path in [*here, *(path for path in saved if path not in here)]:
        mine, theirs = here.get(path, absent), saved.get(path, absent)
        if mine != theirs:
            text = (f"tx: {setting_name(path)} is {mine} here, {theirs} in the checkpoint at "
                    f"{where} (the optimizer differs at {path})")
            if epochs[0] != epochs[1]:
                text += (f"; epochs is {epochs[0]} here, {epochs[1]} in the checkpoint, and a "
                         "schedule built from epochs changes when epochs changes: to extend "
                         "the run, build the optimizer from the checkpointed run's epochs")
            return text
    return None


def check_same_run(saved: dict, here: dict, where: str, directory: str) -> None:
    """Raise CheckpointError naming the first field of the run's identity that differs.

    ``epochs`` is not compared (:func:`resumable_epochs` decides about it).

    Args:
        saved: the metadata stored with the checkpoint.
        here: :func:`describe_run` of this call.
        where: the checkpoint, in words (directory and step).
        directory: the checkpoint directory, for the way to start fresh.
    """
    if not isinstance(saved.get(_ENTRY), dict):
        raise CheckpointError(f"the checkpoint at {where} was not written by fit (its metadata "
                              f"has no {_ENTRY!r} entry); give fit an empty directory")
    stored, fields = saved[_ENTRY], here[_ENTRY]
    absent = object()
    text = lambda value: "absent" if value is absent else str(value)
    for name in [*fields, *(name for name in stored if name not in fields)]:
        if name == "epochs":
            continue
        mine, theirs = fields.get(name, absent), stored.get(name, absent)
        if name == "tx" and isinstance(mine, dict) and isinstance(theirs, dict):
            problem = _tx_difference(theirs, mine, where, (fields["epochs"], stored.get("epochs")))
        elif mine != theirs:
            problem = f"{name} is {text(mine)} here, {text(theirs)} in the checkpoint at {where}"
        else:
            problem = None
        if problem:
            raise CheckpointError(f"{problem}; resume with the options of the checkpointed "
                                  f"run, or {_fresh_start(directory)}")


def resumable_epochs(saved: dict, epochs: int, step: int, where: str, directory: str) -> int:
    """The checkpointed run's ``epochs``, after checking this call can go on from ``step``.

    A run continues to any ``epochs`` at or past the checkpoint's epoch (the
    first ``epochs`` of a longer run are those of a shorter one), so a
    finished run can be extended; a checkpoint past ``epochs`` is refused.
    """
    saved_epochs = int(saved[_ENTRY]["epochs"])
    if step > epochs:
        raise CheckpointError(
            f"epochs is {epochs} here, {saved_epochs} in the checkpoint at {where}, which is "
            f"already at epoch {step}: a checkpointed run can be extended, not shortened; "
            f"ask for epochs >= {step}, or {_fresh_start(directory)}")
    return saved_epochs


def resize_history(history: jax.Array, epochs: int) -> np.ndarray:
    """A per-epoch history cut or NaN-padded to ``epochs`` entries (epochs not run are NaN)."""
    out = np.full((epochs,), np.nan, np.float32)
    kept = min(epochs, history.shape[0])
    out[:kept] = np.asarray(history)[:kept]
    return out


def _as_restored(leaf: Any) -> Any:
    """The shape and placement a restored carry array has (restored arrays are committed);
    other leaves come back as they are."""
    if not isinstance(leaf, jax.Array):
        return leaf
    return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=leaf.sharding)


def restore(checkpointer: Checkpointer, carry: Carry, run_info: dict, epochs: int,
            while_reading: Callable[[Carry], Any]) -> Carry:
    """The latest checkpoint's carry, histories resized to ``epochs``, or ``carry`` if none.

    The arrays are read in the background while ``while_reading`` runs on the
    carry's shapes and placements (``fit`` compiles its loop for them meanwhile),
    unless the checkpoint is at the last epoch, where no loop is left to run.

    Raises:
        CheckpointError: the checkpoint belongs to another run (see :func:`check_same_run`),
            is past ``epochs``, or its leaves do not fit ``carry`` (names the pytree path).
    """
    step = checkpointer.latest_step()
    if step is None:
        return carry
    where, directory = f"{checkpointer.directory} step {step}", str(checkpointer.directory)
    saved = checkpointer.metadata(step)
    check_same_run(saved, run_info, where, directory)
    saved_epochs = resumable_epochs(saved, epochs, step, where, directory)
    nan_hist = np.full((saved_epochs,), np.nan, np.float32)
    pending = checkpointer.restore_in_background(
        carry._replace(train_hist=nan_hist, val_hist=nan_hist), step)
    try:
        if step < epochs:  # steps are epochs: a checkpoint at the last one has no loop left
            while_reading(jax.tree.map(_as_restored, carry))
    finally:
        futures.wait([pending])  # never leave a read running into the checkpointer's close
    restored = pending.result()
    sharding = carry.train_hist.sharding  # as the restored arrays: committed
    placed = lambda history: jax.device_put(resize_history(history, epochs), sharding)
    return restored._replace(train_hist=placed(restored.train_hist),
                             val_hist=placed(restored.val_hist))
