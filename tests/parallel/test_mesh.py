"""Partition rules, mesh construction, batch placement and process start-up (one device)."""

import jax
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from jaxlean.errors import ConfigError
from jaxlean.models.lm.data import synthetic_batch
from jaxlean.models.lm.lora import add_lora
from jaxlean.models.lm.rules import transformer_rules
from jaxlean.models.lm.transformer import Transformer, TransformerConfig
from jaxlean.parallel.distributed import (
    ENV_COORDINATOR,
    ENV_NUM_PROCESSES,
    ENV_PROCESS_ID,
    initialize,
)
from jaxlean.parallel.mesh import (
    FSDP,
    TENSOR,
    init_sharded,
    make_mesh,
    partition_specs,
    shard_batch,
    shard_model,
)
from jaxlean.parallel.tensor import (
    check_divisible,
    split_over_tensor,
    tensor_size,
    whole_over_tensor,
)

CONFIG = TransformerConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_layers=2,
                           num_heads=2)
RULES = (*transformer_rules(), (r".*", P()))


def test_make_mesh_axes_and_errors():
    mesh = make_mesh()
    assert mesh.axis_names == ("data", "fsdp", "seq", "tensor")
    assert mesh.devices.shape == (1, 1, 1, 1)
    assert make_mesh(data=1, fsdp=-1).shape == {"data": 1, "fsdp": 1, "seq": 1, "tensor": 1}
    with pytest.raises(ConfigError, match="must use all 1 devices"):
        make_mesh(data=2)
    with pytest.raises(ConfigError, match=r"must use all 1 devices \(got data=-1, fsdp=1, "
                                          r"seq=1, tensor=2\)"):
        make_mesh(tensor=2)
    with pytest.raises(ConfigError, match="seq must be a positive int, got -1"):
        make_mesh(data=1, seq=-1)
    with pytest.raises(ConfigError, match="tensor must be a positive int, got -1"):
        make_mesh(data=1, tensor=-1)
    with pytest.raises(ConfigError, match="at most one"):
        make_mesh(data=-1, fsdp=-1)


def test_transformer_rules_give_every_leaf_a_spec_padded_to_its_rank():
    model = add_lora(Transformer(CONFIG, key=jax.random.key(0)), rank=2, num_adapters=2,
                     key=jax.random.key(1))
    specs = partition_specs(model, make_mesh(), RULES)
    assert specs.embed == P(FSDP, None)
    assert specs.lm_head.weight == P(None, FSDP)
    assert specs.layers.attn.q_proj.weight == P(None, FSDP, TENSOR)
    assert specs.layers.attn.q_proj.lora.a == P(None, None, None, None)
    assert specs.layers.input_norm.weight == P(None, None)
    assert specs.norm.weight == P(None)


def test_rule_errors_name_the_leaf():
    mesh = make_mesh()
    tree = {"w": np.zeros((4, 4)), "b": np.zeros(4)}
    with pytest.raises(ConfigError, match=r"no partition rule matches \['b'\] \(shape \[4\]\)"):
        partition_specs(tree, mesh, [("w", P())])
    with pytest.raises(ConfigError, match=r"\['w'\]: rule 'w' uses mesh axis 'model'"):
        partition_specs(tree, mesh, [("w", P("model")), (".*", P())])
    with pytest.raises(ConfigError, match=r"\['b'\]: rule 'b' gives .* to an array of shape"):
        partition_specs(tree, mesh, [("b", P(None, None)), (".*", P())])


@pytest.mark.default_emitters  # init_sharded equals eager init bit for bit
def test_shard_model_and_init_sharded_keep_values_and_static_fields():
    mesh = make_mesh()
    model = Transformer(CONFIG, key=jax.random.key(0))
    placed = shard_model(model, mesh, RULES)
    built = init_sharded(lambda: Transformer(CONFIG, key=jax.random.key(0)), mesh, RULES)
    for tree in (placed, built):
        assert tree.config == CONFIG
        assert tree.layers.attn.k_proj.weight.sharding.spec == P(None, FSDP, TENSOR)
        for got, want in zip(jax.tree.leaves(tree), jax.tree.leaves(model), strict=True):
            np.testing.assert_array_equal(got, want)


def test_shard_batch_splits_examples_and_checks_the_count():
    mesh = make_mesh()
    tokens, targets = shard_batch(synthetic_batch(0, 4, 8, 64), mesh)
    assert tokens.shape == targets.shape == (4, 8)
    assert tokens.sharding.spec == P(("data", "fsdp"), None)
    with pytest.raises(ConfigError, match=r"batch\[0\]: 0 examples"):
        shard_batch((np.int32(3),), mesh)


def test_synthetic_batch_is_deterministic_and_shifted():
    tokens, targets = synthetic_batch(3, 5, 16, 97, seed=1)
    again, _ = synthetic_batch(3, 5, 16, 97, seed=1)
    other, _ = synthetic_batch(4, 5, 16, 97, seed=1)
    np.testing.assert_array_equal(tokens, again)
    assert not np.array_equal(tokens, other)
    np.testing.assert_array_equal(tokens[:, 1:], targets[:, :-1])
    assert tokens.dtype == np.int32 and tokens.min() >= 0 and tokens.max() < 97


def test_initialize_without_settings_is_a_single_process(monkeypatch):
    for name in (ENV_COORDINATOR, ENV_NUM_PROCESSES, ENV_PROCESS_ID, "SLURM_JOB_ID"):
        monkeypatch.delenv(name, raising=False)
    info = initialize()
    assert (info.process_id, info.num_processes, info.how) == (0, 1, "single process")
    assert "process 0/1" in str(info)


def test_initialize_rejects_partial_or_bad_settings(monkeypatch):
    monkeypatch.setenv(ENV_COORDINATOR, "127.0.0.1:1234")
    monkeypatch.delenv(ENV_NUM_PROCESSES, raising=False)
    monkeypatch.delenv(ENV_PROCESS_ID, raising=False)
    with pytest.raises(ConfigError, match="missing num_processes, process_id"):
        initialize()
    monkeypatch.setenv(ENV_NUM_PROCESSES, "two")
    with pytest.raises(ConfigError, match="num_processes must be an integer, got 'two'"):
        initialize(process_id=0)
    with pytest.raises(ConfigError, match=r"process_id must be in \[0, 2\), got 2"):
        initialize(num_processes=2, process_id=2)


def test_tensor_helpers_leave_arrays_alone_without_a_tensor_axis():
    x = jax.numpy.ones((2, 3, 4))
    assert tensor_size() == 1 and split_over_tensor(x, 1) is x and whole_over_tensor(x) is x
    with jax.set_mesh(make_mesh()):  # a tensor axis of size 1: nothing to split
        assert tensor_size() == 1 and split_over_tensor(x, -1) is x
    with pytest.raises(ConfigError, match=r"here: num_heads=6 is not divisible by the tensor "
                                          r"axis \(size 4\)"):
        check_divisible({"num_kv_heads": 4, "num_heads": 6}, 4, "here")
