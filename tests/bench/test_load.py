"""The ``load`` benchmark on a tiny checkpoint: its sides, equality check and sizes."""

import math

import equinox as eqx
import pytest

from jaxlean.bench import available, load
from jaxlean.bench.load import (
    _float32_bytes,
    _refuse,
    checkpoint_config,
    measure,
    run_child,
    transformers_available,
)


@pytest.mark.parametrize("size", [4 * 2**20, 100 * 2**20, 2**30])
def test_checkpoint_config_is_about_the_requested_size(size):
    config = checkpoint_config(size)
    assert abs(_float32_bytes(config, config.num_layers) / size - 1) < 0.1
    embeddings = _float32_bytes(config, 0)
    assert embeddings <= size / 3 and config.num_layers > 1


def test_a_side_whose_model_differs_is_refused():
    with pytest.raises(RuntimeError, match=r"differs from the checkpoint at \.layers\.attn"):
        _refuse("jaxlean", {"equal": False, "difference": ".layers.attn"})
    _refuse("jaxlean", {"equal": True, "difference": None})


def test_equality_check_compares_every_leaf(tmp_path, monkeypatch):
    made = run_child("generate", tmp_path, 2**20)
    assert made["files"] == 4 and (tmp_path / "model.safetensors.index.json").is_file()
    assert run_child("check", tmp_path) == {"equal": True, "difference": None, "leaves": 12}

    streamed = load._load_jaxlean

    def off_by_one_ulp(directory):
        model = streamed(directory)
        return eqx.tree_at(lambda m: m.norm.weight, model, model.norm.weight * (1 + 2**-23))

    monkeypatch.setattr(load, "_load_jaxlean", off_by_one_ulp)
    report = run_child("check", tmp_path)
    assert not report["equal"] and report["difference"] == ".norm.weight"


@pytest.mark.slow
def test_load_benchmark_on_a_tiny_checkpoint_measures_every_side():
    assert "load" in available()
    steps = []
    result = measure(4 * 2**20, repeats=1, step=steps.append)
    assert steps[:2] == ["generating the checkpoint", "checking read whole == load_pretrained"]

    assert {row.variant for row in result.comparisons} == {"load_pretrained"}
    assert {row.metric for row in result.comparisons} == {"load time",
                                                          "peak extra host memory"}
    for row in result.comparisons:
        assert math.isfinite(row.value) and row.value > 0
        if row.baseline_name == "read whole":
            assert math.isfinite(row.baseline) and row.baseline > 0
        else:
            assert row.baseline_name == "transformers"
            assert math.isfinite(row.baseline) == transformers_available()
    assert any("give equal models (12 leaves compared)" in note for note in result.notes)
    assert len(result.targets) == 2
    assert all(math.isfinite(t.value) and t.value > 0 for t in result.targets)
