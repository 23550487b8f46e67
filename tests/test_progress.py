"""jaxlean._progress: timed plain lines in logs, "compiling" while compiling, a terminal bar."""

import io
import time

import pytest

import jaxlean
from jaxlean._progress import Progress, interval
from jaxlean.cli import main
from jaxlean.errors import ConfigError


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_log_lines_name_the_compile_and_its_time():
    log = io.StringIO()
    with Progress("job", 4, unit="steps", stream=log, every=0.05) as progress:
        progress.update(compiling=True)
        time.sleep(0.2)
        progress.update(3, description="epoch 1", status="loss 0.5")
        time.sleep(0.3)
    lines = log.getvalue().splitlines()
    assert lines[:2] == ["job: started", "job: compiling..."]
    assert any(line.startswith("job: compiling (0.") for line in lines), lines
    assert any(line.startswith("job: epoch 1, 3/4 steps, loss 0.5 (") for line in lines), lines
    assert lines[-1].startswith("job: done, epoch 1, 3/4 steps, loss 0.5 (")


def test_quiet_work_that_ends_within_the_interval_prints_nothing():
    log = io.StringIO()
    with Progress("load", 3, stream=log, quiet=True, every=60) as progress:
        progress.update(3)
    assert log.getvalue() == ""
    with Progress("load", 3, stream=log, enabled=False, every=0.01) as progress:
        time.sleep(0.05)
        progress.print("hidden")
    assert log.getvalue() == ""


def test_a_failure_ends_with_a_failed_line():
    log = io.StringIO()
    with pytest.raises(RuntimeError), Progress("job", stream=log, every=60):
        raise RuntimeError("boom")
    assert log.getvalue().splitlines()[-1].startswith("job: failed (")


def test_terminal_bar_says_compiling_until_the_first_report():
    screen = Terminal()
    progress = Progress("fit", 8, stream=screen)
    progress.update(compiling=True)
    with progress:
        compiling = screen.getvalue()  # the bar is drawn once when it starts
        progress.update(2, description="epoch 1")
    assert "fit compiling" in compiling
    assert "fit epoch 1" in screen.getvalue()


def test_interval_from_the_environment(monkeypatch):
    monkeypatch.setenv("JAXLEAN_PROGRESS_INTERVAL", "0.5")
    assert interval() == 0.5
    monkeypatch.setenv("JAXLEAN_PROGRESS_INTERVAL", "soon")
    with pytest.raises(ConfigError, match=r"JAXLEAN_PROGRESS_INTERVAL .* got 'soon'"):
        interval()


def test_version_flag_prints_the_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"jaxlean {jaxlean.__version__}"
