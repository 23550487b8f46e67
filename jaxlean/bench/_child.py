"""Benchmarks that need several devices run in a child process with forced CPU devices.

The device count is fixed when JAX starts, so ``scale`` and ``optim`` measure
their multi-device parts in ``python -m <module> [--quick]`` with
``--xla_force_host_platform_device_count`` added to the caller's ``XLA_FLAGS``.
The child reports progress on stderr (relayed to the parent's progress line) and
prints its measurements as one JSON line on stdout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import deque
from pathlib import Path
from typing import Any

from jaxlean.bench._registry import BenchContext

_PROGRESS = "bench-progress: "


def progress(message: str) -> None:
    """In the child: tell the parent what is being measured now."""
    print(_PROGRESS + message, file=sys.stderr, flush=True)


def finish(measured: dict[str, Any]) -> None:
    """In the child: hand the measurements to the parent."""
    print(json.dumps(measured), flush=True)


def run_child(module: str, devices: int, ctx: BenchContext) -> dict[str, Any]:
    """Run ``python -m module`` on ``devices`` forced CPU devices; return what it measured."""
    root = str(Path(__file__).resolve().parents[2])
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}"
    env = {**os.environ, "XLA_FLAGS": flags.strip(), "JAX_PLATFORMS": "cpu",
           "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", module, *(["--quick"] if ctx.quick else [])]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    tail: deque[str] = deque(maxlen=40)
    for line in proc.stderr:
        if line.startswith(_PROGRESS):
            ctx.step(line[len(_PROGRESS):].strip())
        else:
            tail.append(line)
    lines = [line for line in proc.stdout.read().splitlines() if line.strip()]
    if proc.wait() or not lines:
        raise RuntimeError(f"{module} child process failed:\n" + "".join(tail)[-3000:])
    return json.loads(lines[-1])
