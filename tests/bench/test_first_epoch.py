"""The first_epoch benchmark finds pyPMM where it is told to (its same-model check runs in
the benchmark, before any timing: pyPMM is not a test dependency)."""

from jaxlean.bench import first_epoch


def test_pypmm_sides_come_from_the_environment(monkeypatch):
    monkeypatch.delenv("JAXLEAN_PYPMM_BRANCH", raising=False)
    monkeypatch.delenv("JAXLEAN_PYPMM_MAIN", raising=False)
    monkeypatch.setattr(first_epoch.importlib.util, "find_spec", lambda name: None)
    assert first_epoch._pypmm_paths() == {}
    monkeypatch.setenv("JAXLEAN_PYPMM_MAIN", "/somewhere")
    assert first_epoch._pypmm_paths() == {"pypmm_main": "/somewhere"}
    monkeypatch.delenv("JAXLEAN_PYPMM_MAIN")
    monkeypatch.setattr(first_epoch.importlib.util, "find_spec", lambda name: object())
    assert first_epoch._pypmm_paths() == {"pypmm_branch": None}
