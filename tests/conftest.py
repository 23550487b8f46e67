"""Shared fixtures: running a check script on several forced CPU devices."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def run_on_devices(tmp_path):
    """``run(script, devices)``: run ``script`` in a fresh process with ``devices`` CPU devices.

    The device count is fixed when JAX starts, so multi-device checks run in a
    subprocess and the rest of the suite keeps one device. The script must end
    by printing "ok"; its stdout is returned.
    """

    def run(script: str, devices: int, timeout: int = 600) -> str:
        path = tmp_path / "check_on_devices.py"
        path.write_text(script)
        count = f"--xla_force_host_platform_device_count={devices}"  # after the caller's flags
        env = dict(os.environ, XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} {count}".strip(),
                   JAX_PLATFORMS="cpu", PYTHONPATH=str(ROOT))
        done = subprocess.run([sys.executable, str(path)], env=env, capture_output=True,
                              text=True, timeout=timeout)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
        assert done.stdout.strip().endswith("ok"), done.stdout[-3000:]
        return done.stdout

    return run
