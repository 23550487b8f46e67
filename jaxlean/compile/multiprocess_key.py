"""A persistent-cache key that is the same in every process of a multi-process CPU run.

JAX hashes the XLA topology fingerprint of the devices into each cache key. On
CPU that fingerprint differs from process to process (measured: two processes over the
same 8 global devices get different fingerprints), so the entries process 0
writes are never found by the others and every other process compiles again.
JAX strips the per-process part for GPUs only.

For multi-process runs whose devices are all CPUs, :func:`install` replaces
that one component with what identifies the compiled code without naming the
process: the kinds of the devices (their global ids and assignment are in the
hashed compile options already) and this host's CPU model and instruction-set
flags, so a host with a different CPU computes a different key and compiles
its own code instead of loading incompatible code.
"""

from __future__ import annotations

import hashlib
import platform
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import jax

from jaxlean.compile import _jax_private

__all__ = ["INTERNAL", "host_cpu_signature", "install"]

INTERNAL = "jax._src.cache_key._hash_accelerator_config"
_MARK = "_jaxlean_process_invariant"


@cache
def host_cpu_signature() -> bytes:
    """Digest of this host's CPU model and instruction-set flags (``/proc/cpuinfo`` on Linux)."""
    wanted = ("model name", "flags", "Features", "CPU part")
    lines = []
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key = line.split(":", 1)[0].strip()
            if key in wanted and line not in lines:
                lines.append(line)
    except OSError:
        pass
    lines.append(f"{platform.machine()} {platform.processor()}")
    return hashlib.sha256("\n".join(lines).encode()).digest()


def install() -> bool:
    """Make cache keys of multi-process CPU programs process-invariant; False if not possible.

    Idempotent. Programs on other platforms, or in single-process runs, keep
    JAX's own key. Returns ``False`` when the installed JAX hashes devices
    elsewhere (:data:`INTERNAL` missing or reshaped); the key is then JAX's own.
    """
    return _jax_private.replace_accelerator_hash(_process_invariant)


def _process_invariant(original: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    """``original`` with the multi-process CPU case replaced (``original`` if already so)."""
    if getattr(original, _MARK, False):
        return original

    def hash_accelerator_config(hash_obj: Any, accelerators: Any) -> None:
        devices = list(accelerators.flat)
        if jax.process_count() > 1 and devices and all(d.platform == "cpu" for d in devices):
            for device in devices:
                hash_obj.update(device.device_kind.encode())
            hash_obj.update(host_cpu_signature())
            return
        original(hash_obj, accelerators)

    setattr(hash_accelerator_config, _MARK, True)
    return hash_accelerator_config
