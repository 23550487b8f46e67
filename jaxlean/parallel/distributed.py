"""Start JAX's multi-process runtime from flags, ``JAXLEAN_*`` variables or SLURM.

One program runs unchanged on one device, several devices of one host, or
several processes (hosts): :func:`initialize` joins the processes when it is
told how (arguments, or ``JAXLEAN_COORDINATOR`` / ``JAXLEAN_NUM_PROCESSES`` /
``JAXLEAN_PROCESS_ID``), lets ``jax.distributed`` detect a SLURM job step with
several tasks, and otherwise does nothing. After it, ``jax.devices()`` lists
every process's devices and a mesh over them is global.
"""

from __future__ import annotations

import dataclasses
import os

import jax

from jaxlean.compile import cpu_collectives
from jaxlean.errors import ConfigError

__all__ = ["ENV_COORDINATOR", "ENV_NUM_PROCESSES", "ENV_PROCESS_ID", "ProcessInfo", "initialize"]

ENV_COORDINATOR = "JAXLEAN_COORDINATOR"
ENV_NUM_PROCESSES = "JAXLEAN_NUM_PROCESSES"
ENV_PROCESS_ID = "JAXLEAN_PROCESS_ID"


@dataclasses.dataclass(frozen=True)
class ProcessInfo:
    """Where this process stands: its index, how many there are, their devices."""

    process_id: int
    num_processes: int
    local_devices: int
    global_devices: int
    how: str

    def __str__(self) -> str:
        return (f"process {self.process_id}/{self.num_processes} ({self.how}): "
                f"{self.local_devices} local of {self.global_devices} devices")


def _int_setting(value: int | str | None, name: str) -> int | None:
    if value is None or isinstance(value, int):
        return value
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {value!r}") from None


def _in_slurm_job_step() -> bool:
    return "SLURM_JOB_ID" in os.environ and int(os.environ.get("SLURM_NTASKS", "1")) > 1


def initialize(coordinator: str | None = None, num_processes: int | None = None,
               process_id: int | None = None) -> ProcessInfo:
    """Join the processes of a multi-process run, or carry on as a single process.

    Call it first, before anything touches a JAX device. Arguments win over the
    environment; with neither, a SLURM job step of several tasks is detected by
    ``jax.distributed``; otherwise the run is single-process. On CPU the
    cross-process collectives use Gloo, and XLA:CPU's concurrency-optimized scheduler
    is turned off unless ``XLA_FLAGS`` sets it: with it, executables loaded from the
    persistent cache run their collectives out of order (see
    :mod:`jaxlean.compile.cpu_collectives`).

    Args:
        coordinator: ``host:port`` of process 0 (``$JAXLEAN_COORDINATOR``).
        num_processes: how many processes take part (``$JAXLEAN_NUM_PROCESSES``).
        process_id: this process's index, 0 to ``num_processes - 1`` (``$JAXLEAN_PROCESS_ID``).

    Raises:
        ConfigError: only some of the three settings are given, or they are not valid.
    """
    coordinator = coordinator or os.environ.get(ENV_COORDINATOR) or None
    num_processes = _int_setting(
        num_processes if num_processes is not None else os.environ.get(ENV_NUM_PROCESSES),
        "num_processes")
    process_id = _int_setting(
        process_id if process_id is not None else os.environ.get(ENV_PROCESS_ID), "process_id")
    given = {"coordinator": coordinator, "num_processes": num_processes,
             "process_id": process_id}
    if any(value is not None for value in given.values()):
        missing = [name for name, value in given.items() if value is None]
        if missing:
            raise ConfigError(f"a multi-process run needs coordinator, num_processes and "
                              f"process_id; missing {', '.join(missing)} (pass them or set "
                              f"{ENV_COORDINATOR}, {ENV_NUM_PROCESSES}, {ENV_PROCESS_ID})")
        if num_processes < 1 or not 0 <= process_id < num_processes:
            raise ConfigError(f"process_id must be in [0, {num_processes}), got {process_id}")
        how = "coordinator " + coordinator
        kwargs = dict(coordinator_address=coordinator, num_processes=num_processes,
                      process_id=process_id)
    elif _in_slurm_job_step():
        how, kwargs = "SLURM", {}
    else:
        how, kwargs = "single process", None
    if kwargs is not None:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        cpu_collectives.keep_collectives_in_order()
        try:
            jax.distributed.initialize(**kwargs)
        except RuntimeError as error:
            raise ConfigError(f"jax.distributed.initialize failed ({error}); call jaxlean."
                              "distributed.initialize before any JAX computation") from error
    return ProcessInfo(jax.process_index(), jax.process_count(), jax.local_device_count(),
                       jax.device_count(), how)
