"""What CPU this process runs on: model, usable cores, cache sizes, load; read once.

Some of jaxlean's choices depend on the machine rather than on the program:
how many tokens a loss chunk holds (so that its logits stay in cache) and
whether XLA's quicker compile pays off for a short run (it compiles on one
core, where the optimised compile can use several). They are decided from
this description, never from one machine's tuning, and the benchmarks record
it next to every figure, since a wall-time ratio holds on the CPU it was
measured on. Everything is read from ``/proc/cpuinfo``,
``/sys/devices/system/cpu`` and ``os.sched_getaffinity``; what a platform does
not expose is ``None``.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import platform
from pathlib import Path

__all__ = ["Machine", "load_average", "parse_cache_size", "this_machine"]

_CPUINFO = Path("/proc/cpuinfo")
_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")


@dataclasses.dataclass(frozen=True)
class Machine:
    """A CPU as jaxlean's machine-dependent choices see it.

    Attributes:
        cpu: the model name (``/proc/cpuinfo``'s ``model name``), else ``platform``'s.
        cores: cores this process may run on (its affinity mask), at least 1.
        l2_bytes: the level-2 cache of one core, if known.
        l3_bytes: the last-level (level-3) cache, shared by the cores listed with it,
            if known.
    """

    cpu: str
    cores: int
    l2_bytes: int | None = None
    l3_bytes: int | None = None

    def describe(self) -> str:
        """``"AMD EPYC, 2 cores, L2 1 MiB/core, L3 32 MiB"`` (unknown caches left out)."""
        parts = [self.cpu, f"{self.cores} core{'s' if self.cores != 1 else ''}"]
        if self.l2_bytes:
            parts.append(f"L2 {_size(self.l2_bytes)}/core")
        if self.l3_bytes:
            parts.append(f"L3 {_size(self.l3_bytes)}")
        return ", ".join(parts)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def parse_cache_size(text: str) -> int | None:
    """``"1024K"`` / ``"32768K"`` / ``"32 MiB"`` -> bytes; None if it is not a size."""
    text = text.strip().replace(" ", "").upper().removesuffix("IB").removesuffix("B")
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
    digits = text[:-1] if scale > 1 else text
    return int(digits) * scale if digits.isdigit() else None


def _cpu_model(cpuinfo: str) -> str | None:
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "cpu model") and value.strip():
            return value.strip()
    return None


def _caches(root: Path) -> dict[int, int]:
    """Level -> size in bytes of the data/unified caches under ``root`` (cpu0's)."""
    found: dict[int, int] = {}
    for index in sorted(root.glob("index*")):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            size = parse_cache_size((index / "size").read_text())
        except (OSError, ValueError):
            continue
        if kind in ("Data", "Unified") and size:
            found[level] = size
    return found


def _usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def read_machine(cpuinfo: Path = _CPUINFO, caches: Path = _CACHES) -> Machine:
    """Read the description now (see :func:`this_machine` for the cached one)."""
    try:
        model = _cpu_model(cpuinfo.read_text())
    except OSError:
        model = None
    levels = _caches(caches)
    return Machine(model or platform.processor() or platform.machine() or "unknown CPU",
                   _usable_cores(), levels.get(2), levels.get(3))


@functools.cache
def this_machine() -> Machine:
    """This process's machine, read once."""
    return read_machine()


def load_average() -> tuple[float, float, float] | None:
    """The 1-, 5- and 15-minute load averages, or None where the platform has none."""
    try:
        return os.getloadavg()
    except (AttributeError, OSError):
        return None
