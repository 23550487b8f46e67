"""Shared test setup: the suite's persistent compilation cache (``tests/xla_cache.py``), the
environment of child processes, and running a check script on several forced CPU devices."""

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import xla_cache
from tests.xla_cache import _suite_xla_cache  # noqa: F401 - an autouse fixture

ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config):
    xla_cache.configure(config)  # before any test compiles


def pytest_sessionfinish(session):
    xla_cache.session_finish(session)


QUICK_EMITTERS = "--xla_cpu_use_fusion_emitters=false"  # make test's quick-compile flag
IN_DEFAULT_EMITTERS_CHILD = "JAXLEAN_TEST_DEFAULT_EMITTERS_CHILD"


def pytest_pyfunc_call(pyfuncitem):
    """A test marked ``default_emitters`` checks a result of XLA's default CPU code (bit for
    bit, or to a tolerance the quick emitters' rounding exceeds): where ``make test`` turned
    the fusion emitters off, it runs in a child pytest with them on, and passes as it does."""
    if (pyfuncitem.get_closest_marker("default_emitters") is None
            or QUICK_EMITTERS not in os.environ.get("XLA_FLAGS", "")
            or os.environ.get(IN_DEFAULT_EMITTERS_CHILD)):
        return None
    flags = os.environ["XLA_FLAGS"] + " --xla_cpu_use_fusion_emitters=true"  # the later wins
    env = dict(os.environ, XLA_FLAGS=flags, **{IN_DEFAULT_EMITTERS_CHILD: "1"})
    env.pop("PYTEST_XDIST_WORKER", None)
    command = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
               pyfuncitem.nodeid]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    return True


def pytest_terminal_summary(terminalreporter):
    if lines := xla_cache.summary_lines():
        terminalreporter.write_sep("-", "XLA compilation cache")
        for line in lines:
            terminalreporter.write_line(line)


def child_env(*paths: Path | str, devices: int | None = None) -> dict[str, str]:
    """The environment of a test's child process: ``paths`` then this checkout on
    ``PYTHONPATH`` (so it imports this ``jaxlean``), JAX on CPU and, with ``devices``,
    that many forced CPU devices (after the caller's ``XLA_FLAGS``), with XLA:CPU's
    scheduler keeping collectives in order where there are several (a program loaded from
    the suite's cache may hang otherwise: ``jaxlean/compile/cpu_collectives.py``)."""
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               PYTHONPATH=os.pathsep.join([*map(str, paths), str(ROOT)]))
    if devices is not None:
        count = f"--xla_force_host_platform_device_count={devices}"  # after the caller's flags
        if devices > 1:  # loaded programs keep their collectives in order (cpu_collectives)
            count += " --xla_cpu_enable_concurrency_optimized_scheduler=false"
        env["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {count}".strip()
    return env


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
        counts = tmp_path / "xla_cache_counts.json"  # one process: on the suite's cache
        command, env = xla_cache.child_command([sys.executable, str(path)],
                                               child_env(devices=devices), counts)
        done = subprocess.run(command, env=env, capture_output=True, text=True,
                              timeout=timeout)
        xla_cache.add_child_counts(counts)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
        assert done.stdout.strip().endswith("ok"), done.stdout[-3000:]
        return done.stdout

    return run


# The live NEURON parity tests run the fixture scripts, which compile .mod files.
needs_nrnivmodl = pytest.mark.skipif(
    importlib.util.find_spec("neuron") is None
    or not (shutil.which("nrnivmodl") or (Path(sys.executable).parent / "nrnivmodl").exists()),
    reason="neuron (with nrnivmodl) not installed")
