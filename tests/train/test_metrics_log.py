"""MetricsLogger: TensorBoard event files read back by tensorboard's own reader, and JSONL."""

from __future__ import annotations

import json
import math
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError, DataError
from jaxlean.train import metrics_log
from jaxlean.train.metrics_log import (
    JSONL_NAME,
    MetricsLogger,
    peak_flops,
    throughput,
    training_flops_per_token,
)
from jaxlean.train.step import StepMetrics


def scalars(directory) -> dict[str, list[tuple[int, float]]]:
    """Every scalar in ``directory``'s event files, as tensorboard itself reads them."""
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(directory))
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)]
            for tag in events.Tags()["scalars"]}


def lines(directory) -> list[dict]:
    return [json.loads(line) for line in (directory / JSONL_NAME).read_text().splitlines()]


def test_step_metrics_reach_tensorboard_and_jsonl_with_throughput_and_mfu(tmp_path):
    pytest.importorskip("tensorboardX")
    steps = {step: StepMetrics(loss=jnp.float32(2.5 / step), grad_norm=jnp.float32(0.25 * step),
                               learning_rate=jnp.float32(1e-3 * step),
                               tokens=jnp.int32(1000 * step), skipped=jnp.bool_(False))
             for step in (1, 2, 3)}
    with MetricsLogger(tmp_path, flops_per_token=6e6, peak_flops=1e12, num_devices=2) as log:
        written = {step: log.log(step, metrics, seconds=0.5) for step, metrics in steps.items()}
    expected = {step: {"loss": float(np.float32(2.5 / step)),
                       "grad_norm": float(np.float32(0.25 * step)),
                       "learning_rate": float(np.float32(1e-3 * step)), "tokens": 1000 * step,
                       "skipped": 0,  # StepMetrics' skipped-update flag, as 0/1
                       "tokens_per_s": 2000.0 * step, "mfu": 2000.0 * step * 6e6 / 2e12}
                for step in steps}
    assert written == expected
    assert [{k: v for k, v in line.items() if k != "time"} for line in lines(tmp_path)] == [
        {"step": step, **values} for step, values in expected.items()]
    assert isinstance(lines(tmp_path)[0]["tokens"], int)
    read = scalars(tmp_path)
    assert set(read) == {f"train/{name}" for name in expected[1]}
    for name in expected[1]:
        got = read[f"train/{name}"]
        assert [step for step, _ in got] == [1, 2, 3]
        np.testing.assert_allclose([value for _, value in got],
                                   [expected[step][name] for step in steps], rtol=1e-6)


def test_mappings_none_tags_with_a_slash_and_non_finite_values(tmp_path):
    pytest.importorskip("tensorboardX")
    with MetricsLogger(tmp_path) as log:
        log.log(7, {"loss": float("nan"), "eval/loss": np.float64(1.5),
                    "learning_rate": None, "reward": jnp.array([0.75])})
    (line,) = lines(tmp_path)
    assert {k: v for k, v in line.items() if k != "time"} == {
        "step": 7, "loss": None, "eval/loss": 1.5, "reward": 0.75}
    read = scalars(tmp_path)
    assert set(read) == {"train/loss", "eval/loss", "train/reward"}
    assert math.isnan(read["train/loss"][0][1]) and read["eval/loss"] == [(7, 1.5)]


def test_step_time_between_calls_covers_the_steps_between_them(tmp_path, monkeypatch):
    clock = iter([100.0, 105.0, 105.0])
    monkeypatch.setattr(metrics_log.time, "time", lambda: next(clock))
    log = MetricsLogger(tmp_path, tensorboard=False)
    first = log.log(10, {"loss": 1.0, "tokens": 512})
    assert "tokens_per_s" not in first  # no step time known yet
    assert log.log(20, {"loss": 1.0, "tokens": 512})["tokens_per_s"] == 512 / 0.5
    assert "tokens_per_s" not in log.log(20, {"tokens": 512})  # same step: no time
    log.close()
    log.close()
    assert [line["step"] for line in lines(tmp_path)] == [10, 20, 20]


def test_peak_flops_per_device_kind_and_the_mfu_formula():
    assert peak_flops("NVIDIA H100 80GB HBM3") == 989e12
    assert peak_flops("NVIDIA H100 PCIe") == 756e12
    assert peak_flops("NVIDIA A100-SXM4-80GB") == 312e12
    assert peak_flops("NVIDIA L4") == 121e12 and peak_flops("NVIDIA L40S") == 362e12
    assert peak_flops("TPU v5 lite") == 197e12 and peak_flops("TPU v5") == 459e12
    assert peak_flops("TPU v4 lite") is None and peak_flops("NVIDIA A10G") is None
    assert peak_flops("cpu") is None and peak_flops() == peak_flops(jax.devices()[0].device_kind)
    assert training_flops_per_token(10, num_layers=2, attention_dim=4, seq_len=8) == 60 + 768
    assert throughput(300, 2.0) == {"tokens_per_s": 150.0}
    assert throughput(300, 2.0, flops_per_token=4e9, peak_flops=1e12, num_devices=3) == {
        "tokens_per_s": 150.0, "mfu": 150.0 * 4e9 / 3e12}
    with pytest.raises(ConfigError, match=r"throughput: seconds=0 must be > 0"):
        throughput(300, 0)
    with pytest.raises(ConfigError, match=r"peak_flops=-1 must be > 0"):
        throughput(300, 1.0, flops_per_token=1.0, peak_flops=-1)


def test_unknown_peak_leaves_mfu_out_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.setattr(metrics_log, "peak_flops", lambda kind=None: None)
    log = MetricsLogger(tmp_path, tensorboard=False, flops_per_token=1e6)
    with pytest.warns(UserWarning, match=r"MFU is not logged: no peak FLOP/s is known for "
                                         r"device kind .*pass peak_flops="):
        assert log.log(1, {"tokens": 8}, seconds=2.0) == {"tokens": 8, "tokens_per_s": 4.0}
    assert log.log(2, {"tokens": 8}, seconds=2.0) == {"tokens": 8, "tokens_per_s": 4.0}
    log.close()


def test_bad_metrics_are_named(tmp_path):
    log = MetricsLogger(tmp_path, tensorboard=False)
    with pytest.raises(DataError, match=r"metrics\['loss'\] has shape \(2,\): log scalars"):
        log.log(1, {"loss": np.zeros(2)})
    with pytest.raises(DataError, match=r"metrics must be a mapping .* not list"):
        log.log(1, [1.0])
    with pytest.raises(DataError, match=r"metrics\['name'\] is <U1, not a number"):
        log.log(1, {"name": "x"})
    log.close()


def test_without_tensorboardx_the_writer_is_refused_by_name(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # import fails
    with pytest.raises(ConfigError, match=r"needs tensorboardX, which is not installed: pip "
                                          r"install 'jaxlean\[tensorboard\]' \(or pass "
                                          r"tensorboard=False\)"):
        MetricsLogger(tmp_path)
    with MetricsLogger(tmp_path, tensorboard=False) as log:
        log.log(1, {"loss": 1.0})
    assert lines(tmp_path)[0]["loss"] == 1.0


def test_only_process_zero_writes(tmp_path, monkeypatch):
    monkeypatch.setattr(jax, "process_index", lambda: 1)
    with MetricsLogger(tmp_path / "run") as log:
        assert log.log(1, {"loss": 1.0}) == {"loss": 1.0}
    assert not (tmp_path / "run").exists()
