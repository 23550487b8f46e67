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


def test_each_fresh_process_gives_wall_and_cpu_seconds(monkeypatch):
    calls = []

    def child(side, depth, path=None):
        calls.append((side, depth))
        key = "compile_s" if side.startswith("aot") else "first_epoch_s"
        return {key: 2.0 if side == "pypmm_branch" else 1.0, "cpu_s": 3.0 * len(calls)}

    monkeypatch.setattr(first_epoch, "_child", child)
    wall, cpu = first_epoch._first_epochs((16,), 2, {"pypmm_branch": None},
                                          first_epoch.BenchContext(quick=True))
    assert calls == [("jaxlean", 16), ("aot_step", 16), ("pypmm_branch", 16)] * 2
    assert wall[16, "pypmm_branch"].samples == (2.0, 2.0)
    assert cpu[16, "jaxlean"].samples == (3.0, 12.0)
