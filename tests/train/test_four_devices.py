"""The trainers' multi-device checks on 4 forced CPU devices, in one child process.

Each check's script lives next to its one-device tests (packed, groups, Muon, Muon on
``jax.make_mesh`` meshes in :mod:`tests.train.muon_mesh`, checkpoint, accumulate, fit's
cache); here they run as sections of one child
(:func:`~tests.parallel.sections.run_sections`), so JAX's start with 4 devices is paid once,
not once per module; one test, so xdist's worksteal runs the child on one worker only. Every
section runs whatever the others did; a failing one is reported by name with its traceback.
fit's section is last: it sets the progress module's report interval for the process.
"""

import pytest

from tests.parallel.sections import check_sections, run_sections
from tests.train import (
    muon_mesh,
    test_accumulate,
    test_checkpoint,
    test_fit_cache,
    test_groups,
    test_muon,
    test_packed,
)


def _line(stdout: str, start: str) -> str:
    return next(line for line in stdout.splitlines() if line.startswith(start))


def _packed(stdout: str) -> None:
    """Sharded leaves pack without an all-gather."""
    assert "packed collectives: []" in stdout


def _groups(stdout: str) -> None:
    """Groups on sharded leaves match multi_transform, and pack without collectives."""
    assert "packed collectives: []" in stdout


def _muon(stdout: str) -> None:
    """FSDP stacks are orthogonalised without an all-gather (per leaf, XLA gathers)."""
    assert "all-gather" not in _line(stdout, "packed"), stdout
    assert "all-gather" in _line(stdout, "per-leaf"), stdout  # the check could fail


def _muon_mesh(stdout: str) -> None:
    """Muon on Explicit and Auto meshes matches optax and keeps shardings; an Explicit FSDP
    stack is resplit (all-to-all), not gathered."""
    collectives = _line(stdout, "collectives")
    assert "all-to-all" in collectives and "all-gather" not in collectives, stdout


def _fit_cache(stdout: str) -> None:
    """Params sharded over a mesh: the calls of a chunked fit share one compile."""
    assert "True 1" in stdout and "False 1" in stdout


SECTIONS = {  # name: (script, check of its stdout)
    "packed": (test_packed.SHARDED_SCRIPT, _packed),
    "groups": (test_groups.SHARDED_SCRIPT, _groups),
    "muon": (test_muon.SHARDED_SCRIPT, _muon),
    "muon_mesh": (muon_mesh.SCRIPT, _muon_mesh),
    "checkpoint": (test_checkpoint._SHARDED, lambda stdout: None),
    "accumulate": (test_accumulate.MESH_SCRIPT, lambda stdout: None),
    "fit_cache": (test_fit_cache.MESH_SCRIPT, _fit_cache),
}


@pytest.mark.slow
def test_training_checks_on_four_devices(tmp_path):
    results = run_sections(tmp_path, "import jax\n",
                           {name: script for name, (script, _) in SECTIONS.items()}, devices=4)
    stdout = check_sections(results)
    for name, (_, check) in SECTIONS.items():
        assert stdout[name].strip().endswith("ok"), (name, stdout[name][-3000:])
        check(stdout[name])
