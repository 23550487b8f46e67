"""Loading weights reports the tensors read once it outlasts the interval; else it is silent."""

import time

import jax

from jaxlean.models.lm import _safetensors, hf
from jaxlean.models.lm.transformer import Transformer, TransformerConfig

CONFIG = TransformerConfig(vocab_size=29, hidden_size=16, intermediate_size=24, num_layers=2,
                           num_heads=4, num_kv_heads=2)


def test_load_reports_tensors_read_in_logs_only_when_long(tmp_path, monkeypatch, capsys):
    path = tmp_path / "model.safetensors"
    hf.save_safetensors(Transformer(CONFIG, key=jax.random.key(0)), path)
    hf.load_safetensors(path, CONFIG)
    assert capsys.readouterr().err == ""  # well within the default 10 s
    take = _safetensors.Reader.take
    monkeypatch.setattr(_safetensors.Reader, "take", lambda *a: (time.sleep(0.01), take(*a))[1])
    monkeypatch.setenv("JAXLEAN_PROGRESS_INTERVAL", "0.05")  # a slow disk: 21 x 10 ms
    hf.load_safetensors(path, CONFIG)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("load weights: ") and "/21 tensors (" in lines[0]
    assert lines[-1].startswith("load weights: done, 21/21 tensors (")
    hf.load_safetensors(path, CONFIG, progress=False)
    assert capsys.readouterr().err == ""
