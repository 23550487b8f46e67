"""Multi-process CPU runs load cached executables only with XLA:CPU's collectives kept in order.

Measured on jaxlib 0.10.2 and 0.12.0.1 with ``examples/train_lm.py`` as two
processes of two CPU devices each (a train step with about 36 all-gathers,
all-reduces and all-to-alls, 60 steps, a loaded machine): a step compiled in
the process ran in 12 of 12 launches; the same step loaded from the persistent
cache aborted in 13 of 15 with Gloo's "Received data size doesn't match
expected size ... distributed collective mismatch", also when only one process
loaded it (its own entry). With XLA:CPU's concurrency-optimized scheduler off,
14 of 14 launches that loaded the step ran. So
:func:`jaxlean.parallel.distributed.initialize` turns the scheduler off for
multi-process runs (:func:`keep_collectives_in_order`), and
:func:`jaxlean.compile.enable_compilation_cache` refuses a multi-process CPU run
where it is on (:func:`check_cache_is_safe`).
"""

from __future__ import annotations

import os
import re

import jax

from jaxlean.compile import _jax_private
from jaxlean.errors import CacheError

__all__ = ["FLAG", "SETTING", "check_cache_is_safe", "keep_collectives_in_order"]

FLAG = "xla_cpu_enable_concurrency_optimized_scheduler"
SETTING = f"--{FLAG}=false"


def _flag_value() -> str | None:
    """The last value ``XLA_FLAGS`` gives the scheduler flag, lower case; None if unset."""
    values = re.findall(rf"--{FLAG}(?:=(\S*))?", os.environ.get("XLA_FLAGS", ""))
    return (values[-1] or "true").lower() if values else None


def keep_collectives_in_order() -> None:
    """Turn XLA:CPU's concurrency-optimized scheduler off in ``XLA_FLAGS`` unless the
    user set the flag. Call before JAX starts its CPU backend; it changes no result."""
    if _flag_value() is None:
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {SETTING}".strip()


def check_cache_is_safe() -> None:
    """Raise CacheError in a multi-process run on CPU devices whose XLA:CPU scheduler may
    reorder collectives (see the module docstring); nothing otherwise."""
    if _jax_private.process_count() <= 1:
        return
    if not all(device.platform == "cpu" for device in jax.devices()):
        return
    if _flag_value() not in ("false", "0"):
        raise CacheError(
            "enable_compilation_cache: in a multi-process run on CPU, executables loaded "
            "from the cache run their collectives out of order between devices and Gloo "
            f"aborts ('collective mismatch') unless {SETTING} is in XLA_FLAGS; start the "
            "processes with jaxlean.parallel.distributed.initialize (it sets the flag) or "
            "set it before JAX starts")
