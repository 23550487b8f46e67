"""Save and resume a training state: atomic, keep-last-N, async, arrays restored in place.

A training state is any pytree: the model, the (packed) optimizer state, the
step, a data-order PRNG key. :class:`Checkpointer` stores its arrays with
orbax-checkpoint (each save is written to a temporary directory and renamed
when complete, so a killed job leaves the previous checkpoint intact, and the
next :class:`Checkpointer` on the directory deletes what it left; saves run in
the background; old steps are deleted beyond ``keep``). Python numbers and
strings in the state are stored by value; other leaves (activation functions,
static fields) are not stored, and come back from the template the state is
restored into, so restoring needs a state of the same structure: the freshly
initialised one a program builds anyway.

Restoring compares the checkpoint with that template leaf by leaf and raises
:class:`jaxlean.errors.CheckpointError` naming the first pytree path whose
presence, shape, dtype or kind differs, so a checkpoint of another model is
never loaded into the wrong slots. Each array comes back with the template
leaf's sharding (orbax reads just the shards each process needs). A small
JSON ``metadata`` dict (loss history, configuration) travels with each step.

A background save is not on disk when :meth:`Checkpointer.save` returns: a job
killed then resumes from the previous step. :meth:`Checkpointer.newly_saved`
says, without blocking, which saves have been committed since it was last
asked, so a log line can say "saved" only when it is true.
"""

from __future__ import annotations

import json
import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jax.sharding import SingleDeviceSharding

from jaxlean.errors import CheckpointError

__all__ = ["Checkpointer", "unplaced_sharding"]

_FORMAT = 1
_VALUES = (bool, int, float, str)


def _is_key(leaf: Any) -> bool:
    return (isinstance(leaf, jax.Array | jax.ShapeDtypeStruct)
            and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key))


def _key_description(key: Any) -> dict:
    """Shape and dtype of a key's data and its implementation, for a key or its shape."""
    impl: list[str] = []

    def data(key: jax.Array) -> jax.Array:
        impl.append(str(jax.random.key_impl(key)))
        return jax.random.key_data(key)

    shape = jax.eval_shape(data, key)
    return {"kind": "key", "shape": list(shape.shape), "dtype": str(shape.dtype),
            "impl": impl[0]}


def _describe(leaf: Any) -> dict:
    """What the checkpoint records about one leaf (its value, for a Python value)."""
    if _is_key(leaf):
        return _key_description(leaf)
    if isinstance(leaf, jax.Array | jax.ShapeDtypeStruct | np.ndarray | np.generic):
        return {"kind": "array", "shape": list(np.shape(leaf)), "dtype": str(leaf.dtype)}
    if isinstance(leaf, _VALUES):
        return {"kind": "value", "type": type(leaf).__name__, "value": leaf}
    return {"kind": "static", "type": type(leaf).__qualname__}


def _shape_text(record: dict) -> str:
    if record["kind"] in ("array", "key"):
        return f"{record['kind']} {record['dtype']}{record['shape']}"
    return f"{record['kind']} {record['type']}"


def _first_difference(saved: list[dict], expected: list[dict]) -> str | None:
    """The first leaf whose presence, kind, shape or dtype differs, in words."""
    saved_by_path = {r["path"]: r for r in saved}
    expected_paths = {r["path"] for r in expected}
    for record in expected:
        other = saved_by_path.get(record["path"])
        if other is None:
            return f"{record['path'] or '<root>'} is not in the checkpoint"
        keys = ("kind", "shape", "dtype") if record["kind"] in ("array", "key") else (
            "kind", "type")
        if any(other.get(k) != record.get(k) for k in keys):
            return (f"{record['path'] or '<root>'} is {_shape_text(other)} in the checkpoint, "
                    f"{_shape_text(record)} in the state to restore into")
    if extra := [r["path"] for r in saved if r["path"] not in expected_paths]:
        return f"the checkpoint has leaves the state lacks: {', '.join(extra[:5])}"
    return None


def unplaced_sharding() -> SingleDeviceSharding:
    """Where an array given by its shape alone is put: the first local device, as JAX
    puts a new array. :class:`~jaxlean.train.step.TrainStep` compiles for the same
    place, so a step compiled from shapes runs on a state restored from shapes."""
    return SingleDeviceSharding(jax.local_devices()[0])


def _abstract(leaf: Any) -> jax.ShapeDtypeStruct:
    """Shape, dtype and placement to restore one stored array into: the template
    leaf's sharding, or the first local device for a shape without one."""
    sharding = leaf.sharding if isinstance(leaf, jax.Array | jax.ShapeDtypeStruct) else None
    if sharding is None and isinstance(leaf, jax.ShapeDtypeStruct):
        sharding = unplaced_sharding()
    if _is_key(leaf):
        data = jax.eval_shape(jax.random.key_data, leaf)
        return jax.ShapeDtypeStruct(data.shape, data.dtype, sharding=sharding)
    return jax.ShapeDtypeStruct(np.shape(leaf), leaf.dtype, sharding=sharding)


def _remove_interrupted_saves(directory: Path) -> None:
    """Delete what saves killed mid-write left: orbax writes step ``N`` as
    ``N.orbax-checkpoint-tmp*`` and renames it once complete."""
    if jax.process_index() != 0 or not directory.is_dir():
        return
    for path in directory.glob("*.orbax-checkpoint-tmp*"):
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


class Checkpointer:
    """Numbered checkpoints of a training state in one directory.

    Args:
        directory: where step directories are written (created if missing).
        keep: how many most recent steps to keep (``None``: all).
        async_save: write in the background; :meth:`save` returns once the
            arrays are copied off the devices. :meth:`wait` or :meth:`close`
            (or leaving a ``with`` block) waits for the write to finish.
    """

    def __init__(self, directory: str | Path, *, keep: int | None = 3, async_save: bool = True):
        if keep is not None and keep < 1:
            raise CheckpointError(f"keep must be at least 1 (or None for all), got {keep}")
        self.directory = Path(directory).expanduser().absolute()
        _remove_interrupted_saves(self.directory)
        import orbax.checkpoint as ocp  # here, not at import: fit without checkpoints skips it

        options = ocp.CheckpointManagerOptions(max_to_keep=keep, create=True,
                                               enable_async_checkpointing=async_save)
        self._manager = ocp.CheckpointManager(self.directory, options=options,
                                              item_names=("arrays", "meta"))
        self._in_flight: list[int] = []

    def save(self, step: int, state: Any, metadata: dict | None = None) -> None:
        """Start writing ``state`` (and the JSON-serialisable ``metadata``) as checkpoint ``step``.

        With ``async_save`` this returns once the arrays are copied off the devices,
        before the checkpoint is on disk: :meth:`newly_saved` reports it once it is
        committed, and :meth:`wait` waits for it. A later save first waits for this one.
        """
        import orbax.checkpoint as ocp

        leaves, _ = jax.tree_util.tree_flatten_with_path(state)
        records, arrays = [], {}
        for i, (path, leaf) in enumerate(leaves):
            record = {"path": jax.tree_util.keystr(path), **_describe(leaf)}
            records.append(record)
            if record["kind"] == "key":
                arrays[f"a{i}"] = jax.random.key_data(leaf)
            elif record["kind"] == "array":
                arrays[f"a{i}"] = leaf
        meta = {"format": _FORMAT, "leaves": records, "metadata": metadata or {}}
        try:
            json.dumps(meta)
        except (TypeError, ValueError) as err:
            raise CheckpointError(f"checkpoint metadata must be JSON-serialisable: {err}") from None
        self._manager.save(step, args=ocp.args.Composite(
            arrays=ocp.args.StandardSave(arrays), meta=ocp.args.JsonSave(meta)), force=True)
        self._in_flight.append(step)

    def newly_saved(self) -> list[int]:
        """The steps whose save (started by :meth:`save`) is now committed on disk, each
        reported once, oldest first; never blocks.

        A step reported here is what a job killed from now on resumes from (unless a
        later one is committed meanwhile). A step that ``keep`` already deleted again
        is not reported.
        """
        if not self._in_flight:
            return []
        # saves run one at a time (each save waits for the previous), so every started
        # save but the last is finished, and the last one is once none is in progress
        finished = self._in_flight if not self._manager.is_saving_in_progress() \
            else self._in_flight[:-1]
        self._in_flight = self._in_flight[len(finished):]
        return [step for step in finished if (self.directory / str(step)).is_dir()]

    def _meta(self, step: int) -> dict:
        import orbax.checkpoint as ocp

        try:
            meta = self._manager.restore(step, args=ocp.args.Composite(
                meta=ocp.args.JsonRestore()))["meta"]
        except Exception as err:
            raise CheckpointError(f"cannot read checkpoint step {step} in {self.directory}: "
                                  f"{type(err).__name__}: {err}") from None
        if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
            raise CheckpointError(f"checkpoint step {step} in {self.directory} is not a "
                                  f"jaxlean checkpoint (format {_FORMAT})")
        return meta

    def _step(self, step: int | None) -> int:
        self.wait()
        steps = self.all_steps()
        if step is None:
            if not steps:
                raise CheckpointError(f"no checkpoint in {self.directory}")
            return steps[-1]
        if step not in steps:
            raise CheckpointError(f"no checkpoint step {step} in {self.directory}; "
                                  f"steps there: {steps}")
        return step

    def restore(self, like: Any, step: int | None = None) -> Any:
        """The state saved at ``step`` (default: the latest), in the structure of ``like``.

        Args:
            like: a state of the same structure (e.g. the freshly initialised
                one, or its shapes from ``jax.eval_shape``); its non-array leaves
                and array shardings are used.
            step: which checkpoint; ``None`` for the latest.

        Raises:
            CheckpointError: no such step, an unreadable checkpoint, or one whose
                leaves differ from ``like`` (the message names the pytree path).
        """
        import orbax.checkpoint as ocp

        step = self._step(step)
        meta = self._meta(step)
        leaves, treedef = jax.tree_util.tree_flatten_with_path(like)
        expected = [{"path": jax.tree_util.keystr(p), **_describe(x)} for p, x in leaves]
        if difference := _first_difference(meta["leaves"], expected):
            raise CheckpointError(f"checkpoint step {step} in {self.directory} does not match "
                                  f"the state to restore into: {difference}")
        abstract = {f"a{i}": _abstract(leaf) for i, ((_, leaf), record) in
                    enumerate(zip(leaves, expected, strict=True))
                    if record["kind"] in ("array", "key")}
        try:
            arrays = self._manager.restore(step, args=ocp.args.Composite(
                arrays=ocp.args.StandardRestore(abstract)))["arrays"] if abstract else {}
        except Exception as err:
            raise CheckpointError(f"cannot read the arrays of checkpoint step {step} in "
                                  f"{self.directory}: {type(err).__name__}: {err}") from None
        out = []
        for i, ((_, leaf), saved) in enumerate(zip(leaves, meta["leaves"], strict=True)):
            if saved["kind"] == "key":
                out.append(jax.random.wrap_key_data(arrays[f"a{i}"], impl=saved["impl"]))
            elif saved["kind"] == "array":
                value = arrays[f"a{i}"]
                out.append(np.asarray(value) if isinstance(leaf, np.ndarray) else value)
            elif saved["kind"] == "value":
                out.append(type(leaf)(saved["value"]))
            else:
                out.append(leaf)
        return jax.tree_util.tree_unflatten(treedef, out)

    def restore_in_background(self, like: Any, step: int | None = None) -> Future:
        """Start :meth:`restore` in a background thread; ``.result()`` is the state.

        Reading a checkpoint and compiling the step that uses it are independent:
        the compile needs only the state's shapes and placements. A restarted job
        starts the read, compiles meanwhile (``TrainStep.compile`` on ``like``,
        which may be shapes only: ``jax.eval_shape`` of the initial state), then
        takes the result. Errors of :meth:`restore` are raised by ``.result()``.
        """
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jaxlean-restore")
        pending = pool.submit(self.restore, like, step)
        pool.shutdown(wait=False)  # the thread ends when the read does
        return pending

    def metadata(self, step: int | None = None) -> dict:
        """The ``metadata`` dict saved with ``step`` (default: the latest)."""
        return self._meta(self._step(step))["metadata"]

    def all_steps(self) -> list[int]:
        """The steps on disk, oldest first."""
        return sorted(self._manager.all_steps())

    def latest_step(self) -> int | None:
        """The newest step on disk, or ``None`` when there is none."""
        steps = self.all_steps()
        return steps[-1] if steps else None

    def wait(self) -> None:
        """Block until background saves are on disk (:meth:`newly_saved` then lists them)."""
        self._manager.wait_until_finished()

    def close(self) -> None:
        """Finish background saves and release resources."""
        self._manager.close()

    def __enter__(self) -> Checkpointer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
