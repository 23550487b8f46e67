"""XLA options for programs that run for less time than XLA takes to optimise them.

XLA:CPU compiles most of a small program's time into code generation of its
fusion kernels: its direct LLVM IR emitters (instead of the MLIR fusion
emitters) without LLVM optimisation compile faster and run slower. On the PMM
seed workload (16 modules, batch 20) the training program traces, lowers and
compiles in a fraction of the time and steps slower, so they pay off for short
runs only (measured in ``jaxlean bench first_epoch``, see BENCHMARKS.md).
``fit`` uses them for short runs (:func:`resolve_quick_compile`, the rule of
:data:`QUICK_COMPILE_MAX_STEPS`), packed's probe and optimizer inits; packed's
probe, whose results only decide how packing runs, also compiles its code in one
part (:func:`probe_compile_options`). Not every jaxlib knows every option (jaxlib
0.12 has no ``xla_cpu_use_fusion_emitters``): all are tried at once on a trivial
program, once per process, and one this XLA refuses is dropped by name and the rest
tried again.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import numpy as np

from jaxlean.errors import ConfigError

__all__ = ["ONE_PART", "QUICK_COMPILE_MAX_STEPS", "WANTED", "probe_compile_options",
           "quick_compile_options", "resolve_quick_compile"]

WANTED: dict[str, Any] = {"xla_backend_optimization_level": 0,
                          "xla_cpu_use_fusion_emitters": False}
ONE_PART: dict[str, Any] = {"xla_cpu_parallel_codegen_split_count": 1}
"""Code generation in one part: XLA:CPU splits a program's LLVM module into parts it
compiles on several threads, which for a program as small as packed's probe costs
more than it saves (measured: about half of the probe's compile CPU time). It changes
the code XLA emits, and with it a training program's last bits, so only programs whose
results decide something and go nowhere else use it (:func:`probe_compile_options`)."""


def _refused(error: Exception, names: list[str]) -> str | None:
    """The option of ``names`` that ``error`` says XLA does not have; None if it says
    something else (or names none of them)."""
    text = str(error)
    if "No such compile option" not in text:
        return None
    return next((name for name in names if f"'{name}'" in text), None)


@functools.cache
def _accepted() -> tuple[tuple[str, Any], ...]:
    """The ``(name, value)`` pairs of :data:`WANTED` and :data:`ONE_PART` this XLA compiles
    with, checked once: one trivial program with all of them, again without each one
    refused (only an XLA that lacks some compiles it more than once)."""
    def xla_option_check(x):
        return x + 1

    kept = {**WANTED, **ONE_PART}
    lowered = jax.jit(xla_option_check).lower(np.float32(0))
    while True:
        try:
            lowered.compile(compiler_options=kept)
            return tuple(kept.items())
        except jax.errors.JaxRuntimeError as error:
            name = _refused(error, list(kept))
            if name is None:
                raise
            del kept[name]


def quick_compile_options() -> dict[str, Any]:
    """:data:`WANTED`, less the options this XLA does not have: a new dict for
    ``jax.jit(..., compiler_options=...)`` or ``.compile(compiler_options=...)``."""
    return {name: value for name, value in _accepted() if name in WANTED}


def probe_compile_options() -> dict[str, Any]:
    """:func:`quick_compile_options` and :data:`ONE_PART` (those this XLA has): for small
    programs run once whose results only inform a decision (packed's probe), not for
    anything whose values are returned, since :data:`ONE_PART` changes their last bits."""
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
