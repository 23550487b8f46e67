"""The transformer's own partition rules cover every leaf of every supported variant."""

import jax
from jax.sharding import PartitionSpec as P

from jaxlean.models.lm.lora import add_lora
from jaxlean.models.lm.rules import transformer_rules
from jaxlean.models.lm.transformer import Transformer, TransformerConfig
from jaxlean.parallel.mesh import FSDP, make_mesh, partition_specs


def test_rules_alone_cover_biases_norms_and_adapters():
    config = TransformerConfig(vocab_size=8, hidden_size=8, intermediate_size=8, num_layers=2,
                               num_heads=2, qkv_bias=True, qk_norm=True)
    model = add_lora(Transformer(config, key=jax.random.key(0)), rank=2, key=jax.random.key(1))
    specs = partition_specs(model, make_mesh(), transformer_rules())  # no catch-all rule
    assert specs.layers.attn.q_bias == P(None, None)
    assert specs.layers.attn.k_norm.weight == P(None, None)
    assert specs.layers.mlp.up_proj.weight == P(None, FSDP, None)
