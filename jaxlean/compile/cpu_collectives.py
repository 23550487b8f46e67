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

One process with several CPU devices (``--xla_force_host_platform_device_count``
or ``jax_num_cpu_devices``) has the same fault with XLA:CPU's in-process
communicator instead of Gloo: measured on jaxlib 0.10.2 with a context-parallel
transformer step on 8 forced devices (``tests/parallel/test_context_parallel.py``),
the step compiled in the process ran every time, and loaded from the persistent
cache it hung in each of the 5 runs that loaded it (some devices waiting in an
all-to-all, the others in an all-gather, until XLA's 40 s rendezvous timeout aborted
the process); with the scheduler off, every later run that loaded it ran. So the cache
is refused there too unless the scheduler is off.
"""

from __future__ import annotations

import os
import re

import jax

from jaxlean.compile import _jax_private
from jaxlean.errors import CacheError

__all__ = ["FLAG", "SETTING", "check_cache_is_safe", "forced_cpu_devices",
           "keep_collectives_in_order"]

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


def forced_cpu_devices() -> int:
    """How many CPU devices this process is told to make (``XLA_FLAGS``'
    ``--xla_force_host_platform_device_count`` or ``jax_num_cpu_devices``), read without
    starting a backend; 1 where neither says more."""
    counts = re.findall(r"--xla_force_host_platform_device_count=(\d+)",
                        os.environ.get("XLA_FLAGS", ""))
    configured = getattr(jax.config, "jax_num_cpu_devices", -1)
    return max(int(counts[-1]) if counts else 1,
               configured if isinstance(configured, int) else 1, 1)


def check_cache_is_safe() -> None:
    """Raise CacheError in a run whose CPU devices exchange collectives (several processes,
    or several CPU devices in one) with XLA:CPU's scheduler free to reorder them (see the
    module docstring); nothing otherwise."""
    devices = forced_cpu_devices()
    if _jax_private.process_count() <= 1:
        if devices > 1 and _flag_value() not in ("false", "0"):
            raise CacheError(
                f"enable_compilation_cache: with {devices} CPU devices in one process, "
                "executables loaded from the cache can run their collectives in different "
                "orders on different devices and hang (XLA:CPU's rendezvous aborts after "
                f"40 s) unless {SETTING} is in XLA_FLAGS before JAX starts; set it, or call "
                "jaxlean.compile.keep_collectives_in_order() before JAX's first use")
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
