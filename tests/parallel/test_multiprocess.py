"""Two processes on localhost (2 CPU devices each) train like one process, and share a cache.

``examples/train_lm.py`` is launched as 2 processes joined by
``jax.distributed`` (coordinator on 127.0.0.1) over a global ``data x fsdp``
mesh of 4 devices (both axes 2, so each process holds half of every sharded
weight and half of the batch), with the smallest model that has a stacked layer
axis; its losses must equal a single-device run's. With a
compilation cache, only process 0 writes entries and on a second launch both
processes load the train step from the cache and give the same losses, bit for bit.
Axes that split each layer span the processes too: a tensor axis, a seq axis (context
parallelism) and both together, each over both processes' devices.
"""

import json
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import child_env

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "train_lm.py"
ARGS = ["--steps", "3", "--layers", "2", "--hidden", "32", "--batch", "8", "--length", "8",
        "--vocab", "64", "--vocab-parallel"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _result(stdout: str) -> dict:
    return _all_results(stdout)[-1]


def _all_results(stdout: str) -> list[dict]:
    lines = [line for line in stdout.splitlines() if line.startswith("result: ")]
    assert lines, stdout
    return [json.loads(line.removeprefix("result: ")) for line in lines]


def _two_processes(cache: Path | None, args: list[str] = ARGS,
                   layout: tuple[str, ...] = ("--data", "2", "--fsdp", "2"),
                   script: tuple[str, ...] = (str(SCRIPT),)) -> list[subprocess.Popen]:
    port = _free_port()
    return [subprocess.Popen(
        [sys.executable, *script, *args, "--devices", "2", *layout,
         "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", str(i),
         *(["--cache", str(cache)] if cache is not None else [])],
        env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in range(2)]


def _results(procs: list[subprocess.Popen], read=_result) -> list:
    """Wait for ``procs``; their last ``result:`` lines (``read``: all of them), or an error
    with each one's output."""
    try:
        done = [proc.communicate(timeout=300) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    if any(proc.returncode != 0 for proc in procs):
        raise AssertionError("\n".join(
            f"--- process {i}: exit {proc.returncode}\n{out[-2000:]}{err[-4000:]}"
            for i, (proc, (out, err)) in enumerate(zip(procs, done, strict=True))))
    return [read(out) for out, _ in done]


@pytest.fixture(scope="module")
def first_launch(tmp_path_factory):
    """Two processes on a fresh cache, and a single-device run beside them (all three side
    by side): ``(cache, [process 0, process 1], single)``. Both tests read this one launch;
    the second launches again onto its cache."""
    cache = tmp_path_factory.mktemp("multiprocess") / "cache"
    single = subprocess.Popen([sys.executable, str(SCRIPT), *ARGS], env=child_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    *first, want = _results([*_two_processes(cache), single])
    return cache, first, want


@pytest.mark.slow
def test_two_processes_train_like_one_device_and_only_process_0_writes_the_cache(first_launch):
    cache, first, want = first_launch
    assert want["devices"] == 1
    for result in first:
        assert (result["processes"], result["devices"]) == (2, 4)
        np.testing.assert_allclose(result["losses"], want["losses"], rtol=1e-5)
    assert first[0]["cache"]["writes"] > 0
    assert first[1]["cache"]["writes"] == 0
    assert any(cache.iterdir())


@pytest.mark.slow
def test_a_second_launch_of_two_processes_loads_the_train_step_from_the_cache(first_launch):
    cache, first, _ = first_launch
    second = _results(_two_processes(cache))
    for result in second:
        np.testing.assert_array_equal(result["losses"], first[0]["losses"])
        assert result["cache"]["step_hits"] == 1, result["cache"]
        assert "jit(step)" not in result["cache"]["missed"], result["cache"]
        assert result["cache"]["writes"] == 0, result["cache"]
    # process 1's only misses are eager ops on its own devices, which process 0 never runs;
    # a quick-compile option this XLA lacks fails its check's compile, so is never cached
    assert set(second[0]["cache"]["missed"]) <= {"jit(xla_option_check)"}, second[0]["cache"]
    assert second[0]["cache"]["misses"] <= len(second[0]["cache"]["missed"]), second[0]["cache"]


# one process trains every layout given as JSON in its first argument (train_lm's start once,
# then its train per layout: one launch, one distributed runtime, several meshes)
LAYOUTS_CHILD = f"""
import json, sys
sys.path.insert(0, {str(SCRIPT.parent)!r})
import train_lm
layouts, common = json.loads(sys.argv[1]), sys.argv[2:]
info = train_lm.start(train_lm.parse_args(common))
for layout in layouts:
    train_lm.train(train_lm.parse_args([*common, *layout]), info)
"""


@pytest.mark.slow
def test_two_processes_with_tensor_and_seq_axes_spanning_them_train_like_one_device():
    """Axes that split every layer over both processes' 2 devices each, one layout after
    another in one pair of processes: a tensor axis of 4 (every layer's heads and MLP
    features split across the processes), a seq axis of 4 (each sequence split across them:
    attention's all-to-alls cross the processes) and seq 2 x tensor 2 (a tensor pair in
    each process, the seq pairs across them). Flash attention, so a split sequence is
    attended by the Ulysses all-to-all; 10 steps each, the losses of one device."""
    args = [*ARGS, "--steps", "10", "--heads", "4", "--kv-heads", "4",  # the last flag wins
            "--attention", "flash"]
    layouts = {"tensor": ["--tensor", "4"], "seq": ["--seq", "4"],
               "seq x tensor": ["--seq", "2", "--tensor", "2"]}
    single = subprocess.Popen([sys.executable, str(SCRIPT), *args, "--fsdp", "1"],
                              env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    *spanning, (want,) = _results(
        [*_two_processes(None, args, ("--data", "1", "--fsdp", "1"),
                         script=("-c", LAYOUTS_CHILD, json.dumps(list(layouts.values())))),
         single], read=_all_results)
    assert want["devices"] == 1 and len(want["losses"]) == 10
    for results in spanning:
        assert [r["mesh"] for r in results] == [
            {"data": 1, "fsdp": 1, "seq": 1, "tensor": 4},
            {"data": 1, "fsdp": 1, "seq": 4, "tensor": 1},
            {"data": 1, "fsdp": 1, "seq": 2, "tensor": 2}], results
        for name, result in zip(layouts, results, strict=True):
            assert (result["processes"], result["devices"]) == (2, 4)
            np.testing.assert_allclose(result["losses"], want["losses"], rtol=1e-5,
                                       err_msg=name)
