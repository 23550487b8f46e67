"""Human-readable sizes, shared by the compile report, the cache CLI and the benchmarks."""

from __future__ import annotations

_BYTE_UNITS = (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))


def format_bytes(size: float) -> str:
    """``3221225472`` -> ``"3.00 GiB"``; below 1 KiB, whole bytes (``"512 B"``)."""
    for name, scale in _BYTE_UNITS:
        if abs(size) >= scale:
            return f"{size / scale:.2f} {name}"
    return f"{size:.0f} B"
