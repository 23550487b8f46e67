"""XLA options for programs that run for less time than XLA takes to optimise them.

XLA:CPU compiles most of a small program's time into code generation of its
fusion kernels: its direct LLVM IR emitters (instead of the MLIR fusion
emitters) without LLVM optimisation compile faster and run slower. On the PMM
seed workload (16 modules, batch 20) the training program traces, lowers and
compiles in a fraction of the time and steps slower, so they pay off for short
runs only (measured in ``jaxlean bench first_epoch``, see BENCHMARKS.md).
``fit`` uses them for short runs (:func:`resolve_quick_compile`, the rule of
:data:`QUICK_COMPILE_MAX_STEPS`), packed's probe and optimizer inits. Not every
jaxlib knows both options (jaxlib 0.12 has no ``xla_cpu_use_fusion_emitters``),
so each is tried once on a trivial program and kept only if this XLA accepts it.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import numpy as np

from jaxlean.errors import ConfigError

__all__ = ["QUICK_COMPILE_MAX_STEPS", "WANTED", "quick_compile_options", "resolve_quick_compile"]

WANTED: dict[str, Any] = {"xla_backend_optimization_level": 0,
                          "xla_cpu_use_fusion_emitters": False}


@functools.cache
def _accepted() -> tuple[tuple[str, Any], ...]:
    """The ``(name, value)`` pairs of :data:`WANTED` this XLA compiles with, checked once."""
    def xla_option_check(x):
        return x + 1

    kept = []
    for name, value in WANTED.items():
        try:
            jax.jit(xla_option_check).lower(np.float32(0)).compile(compiler_options={name: value})
        except jax.errors.JaxRuntimeError as error:
            if "No such compile option" not in str(error):
                raise
            continue
        kept.append((name, value))
    return tuple(kept)


def quick_compile_options() -> dict[str, Any]:
    """:data:`WANTED`, less the options this XLA does not have: a new dict for
    ``jax.jit(..., compiler_options=...)`` or ``.compile(compiler_options=...)``."""
    return dict(_accepted())


QUICK_COMPILE_MAX_STEPS = 32
"""``fit(quick_compile=None)`` compiles with :func:`quick_compile_options` when the run has
at most this many steps (``epochs`` x minibatches), no checkpoint and runs on XLA:CPU (where
the rule was measured; elsewhere it stays off unless asked). On the PMM chain at depth 16
quick compiling saves more compile time than it costs in slower steps over a run of this
many steps (``jaxlean bench first_epoch``; figures in BENCHMARKS.md); in general, for a run
of this many steps, it pays off while a step takes less than about 1/30 of the optimised
compile."""


def resolve_quick_compile(quick_compile: bool | None, steps: int, checkpointed: bool,
                          platform: str) -> bool:
    """Whether ``fit`` compiles its loop with :func:`quick_compile_options`.

    ``None`` decides by the run's length (:data:`QUICK_COMPILE_MAX_STEPS`) on the ``"cpu"``
    platform, except with a checkpoint: a checkpointed run is off unless asked, so one
    extended by more epochs resumes with the same compiled loop.

    Raises:
        ConfigError: ``quick_compile`` is not True, False or None.
    """
    if quick_compile is None:
        return platform == "cpu" and not checkpointed and steps <= QUICK_COMPILE_MAX_STEPS
    if not isinstance(quick_compile, bool):
        raise ConfigError(f"quick_compile must be True, False or None, got {quick_compile!r}")
    return quick_compile
