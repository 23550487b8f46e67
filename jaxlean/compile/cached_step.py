"""A training step whose compiled executable survives a restart (no tracing on a warm start)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import equinox as eqx
import optax

from jaxlean.compile.executable_cache import ExecutableCache, commit, signature
from jaxlean.train.step import TrainStep

__all__ = ["CachedTrainStep", "cached_train_step"]


class CachedTrainStep:
    """:class:`jaxlean.train.step.TrainStep` with executables from an :class:`ExecutableCache`.

    Called like the step it wraps, ``(model, opt_state, *batch) -> (model,
    opt_state, loss)``, with the same placement rules. The key covers the loss
    function, the optimizer (its functions and hyperparameters), ``has_aux``,
    ``donate``, the model's non-array part and every input's shape, dtype and
    sharding.
    """

    def __init__(self, step: TrainStep, cache: ExecutableCache):
        self.step = step
        self.cache = cache
        self._program = step.program
        self._executables: dict[tuple, Callable] = {}

    def __call__(self, model: Any, opt_state: optax.OptState, *batch: Any) -> tuple:
        jitted, (arrays, opt_state, static) = self.step.prepare(model, opt_state)
        args = commit((arrays, opt_state, *batch))
        key = (id(jitted), signature(batch))
        executable = self._executables.get(key)
        if executable is None:
            executable = self.cache.executable(jitted, (self._program, static), args)
            self._executables[key] = executable
        arrays, opt_state, value = executable(*args)
        return eqx.combine(arrays, static), opt_state, value


def cached_train_step(step: TrainStep, cache: ExecutableCache | str | Path | None = None
                      ) -> CachedTrainStep:
    """Wrap a step from :func:`jaxlean.train.step.make_train_step` so a restarted
    process loads its executable instead of tracing and compiling it.

    Args:
        step: the training step.
        cache: an :class:`ExecutableCache` or its directory (default directory when ``None``).
    """
    if not isinstance(cache, ExecutableCache):
        cache = ExecutableCache(cache)
    return CachedTrainStep(step, cache)
