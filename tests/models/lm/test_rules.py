"""The transformer's own partition rules cover every leaf of every supported variant."""

import jax
from jax.sharding import PartitionSpec as P

from jaxlean.models.lm.lora import add_lora
from jaxlean.models.lm.rules import transformer_rules
from jaxlean.models.lm.transformer import Transformer, TransformerConfig
from jaxlean.parallel.mesh import FSDP, TENSOR, make_mesh, partition_specs


def _model():
    config = TransformerConfig(vocab_size=8, hidden_size=8, intermediate_size=8, num_layers=2,
                               num_heads=2, qkv_bias=True, qk_norm=True)
    model = Transformer(config, key=jax.random.key(0))
    return add_lora(model, rank=2, key=jax.random.key(1),
                    targets=("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                             "down_proj", "lm_head"))


def test_rules_alone_cover_biases_norms_and_adapters():
    specs = partition_specs(_model(), make_mesh(), transformer_rules())  # no catch-all rule
    assert specs.layers.attn.q_bias == P(None, TENSOR)
    assert specs.layers.attn.k_norm.weight == P(None, None)
    assert specs.layers.mlp.up_proj.weight == P(None, FSDP, TENSOR)


def test_tensor_layout_is_megatron_and_adapters_follow_their_base():
    specs = partition_specs(_model(), make_mesh(), transformer_rules())
    layers = specs.layers
    for linear in (layers.attn.q_proj, layers.attn.k_proj, layers.attn.v_proj,
                   layers.mlp.gate_proj, layers.mlp.up_proj):  # split by output features
        assert linear.weight == P(None, FSDP, TENSOR)
        assert linear.lora.a == P(None, None, None, None)
        assert linear.lora.b == P(None, None, None, TENSOR)
    for linear in (layers.attn.o_proj, layers.mlp.down_proj):  # split by input features
        assert linear.weight == P(None, (TENSOR, FSDP), None)
        assert linear.lora.a == P(None, None, TENSOR, None)
        assert linear.lora.b == P(None, None, None, None)
    assert specs.lm_head.weight == P(None, FSDP)
    assert specs.lm_head.lora.b == P(None, None, None)
    # without a tensor axis: FSDP alone, every projection's input over fsdp
    fsdp_only = partition_specs(_model(), make_mesh(), transformer_rules(tensor=None))
    assert fsdp_only.layers.attn.o_proj.weight == P(None, FSDP, None)
    assert fsdp_only.layers.attn.q_proj.weight == P(None, FSDP, None)
    assert fsdp_only.layers.attn.q_proj.lora.b == P(None, None, None, None)
