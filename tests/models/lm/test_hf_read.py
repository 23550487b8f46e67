"""The streaming safetensors reader: file order, sliced transposes and header checks."""

from __future__ import annotations

import json
import struct

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from jaxlean.errors import CheckpointError
from jaxlean.models.lm import _safetensors, hf
from jaxlean.models.lm.hf_names import LAYER, name_table
from jaxlean.models.lm.transformer import Transformer, TransformerConfig

LLAMA = TransformerConfig(vocab_size=29, hidden_size=16, intermediate_size=24, num_layers=2,
                          num_heads=4, num_kv_heads=1)


@pytest.fixture
def sharded(tmp_path):
    """The model's tensors in two files, each in a shuffled order; and the tensors."""
    hf.save_safetensors(Transformer(LLAMA, key=jax.random.key(3)), tmp_path / "all.safetensors")
    tensors = load_file(str(tmp_path / "all.safetensors"))
    (tmp_path / "all.safetensors").unlink()
    names = list(np.random.default_rng(0).permutation(sorted(tensors)))
    for i, part in enumerate((names[::2], names[1::2])):
        save_file({n: tensors[n] for n in part}, str(tmp_path / f"model-{i}.safetensors"))
    return tmp_path, tensors


def reference(tensors, dtype):
    """What each leaf must hold: the stored tensors stacked, transposed, cast (NumPy)."""
    top, per_layer = name_table(LLAMA)
    leaves = [tensors[n].T if t else tensors[n] for n, _, t in top]
    for suffix, _, t in per_layer:
        layers = [tensors[LAYER.format(i=i) + suffix] for i in range(LLAMA.num_layers)]
        leaves.append(np.stack([a.T if t else a for a in layers]))
    return [np.asarray(leaf).astype(dtype) for leaf in leaves]


@pytest.mark.parametrize("dtype", [None, jnp.bfloat16])
def test_each_file_is_read_once_in_file_order_into_the_right_places(sharded, monkeypatch,
                                                                    dtype):
    directory, tensors = sharded
    monkeypatch.setattr(_safetensors, "BLOCK_BYTES", 40)  # transposes copied in many slabs
    reads = []
    take = _safetensors.Reader.take

    def recording(reader, handle, name, out, transpose):
        reads.append((handle.name, reader.where[name].start))
        take(reader, handle, name, out, transpose)

    monkeypatch.setattr(_safetensors.Reader, "take", recording)
    model = hf.load_safetensors(directory, LLAMA, dtype=dtype, progress=False)
    assert len(reads) == len(tensors) and reads == sorted(reads)
    want = reference(tensors, ml_dtypes.bfloat16 if dtype else np.float32)
    top, per_layer = name_table(LLAMA)
    for (_, where, _), expected in zip(top + per_layer, want, strict=True):
        got = where(model)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(np.asarray(got), expected)


def write_raw(path, header, data):
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)


@pytest.mark.parametrize("header, data, named", [
    ({"a": {"dtype": "Q7", "shape": [2], "data_offsets": [0, 8]}}, bytes(8),
     r"tensor 'a' has dtype 'Q7'"),
    ({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, bytes(8),
     r"tensor 'a' has data offsets \[0, 8\] .* shape \[3\]"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
      "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, bytes(12),
     r"tensor 'b' has data offsets \[4, 12\] that do not follow byte 8"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, bytes(12),
     r"end at byte \d+ but the file has \d+"),
    ({"a": {"dtype": "F32", "shape": [2]}}, bytes(8), r"'data_offsets'"),
    ([1, 2], b"", r"not a JSON object"),
])
def test_bad_headers_name_the_file_and_the_fault(tmp_path, header, data, named):
    path = tmp_path / "model.safetensors"
    write_raw(path, header, data)
    with pytest.raises(CheckpointError, match=f"not a readable safetensors file: .*{named}"):
        hf.load_safetensors(path, LLAMA)


def test_a_file_cut_short_after_its_header_was_read_names_the_tensor_and_file(tmp_path):
    path = tmp_path / "model.safetensors"
    hf.save_safetensors(Transformer(LLAMA, key=jax.random.key(4)), path)
    reader = _safetensors.Reader([path])
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(CheckpointError, match=r"tensor '[\w.]+' of .*model\.safetensors cannot "
                                              r"be read: the file ends early"):
        hf._load(reader, LLAMA, None, False)
