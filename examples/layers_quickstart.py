"""A 48-layer residual MLP traced once, with per-layer remat; compare a Python loop."""

import equinox as eqx
import jax
import jax.numpy as jnp

from jaxlean import Sequential, scan_layers, stack


class Block(eqx.Module):
    norm: eqx.nn.RMSNorm
    mlp: eqx.nn.MLP

    def __init__(self, key):
        self.norm = eqx.nn.RMSNorm(64)
        self.mlp = eqx.nn.MLP(64, 64, 256, 1, activation=jax.nn.gelu, key=key)

    def __call__(self, x):
        return x + self.mlp(self.norm(x))


blocks = [Block(k) for k in jax.random.split(jax.random.key(0), 48)]
stacked = stack(blocks)  # one Block whose arrays have a leading axis of 48


@eqx.filter_jit
@eqx.filter_grad
def grad(stacked, x):
    h, _ = scan_layers(lambda block, h, _: (block(h), None), stacked, x, remat="full", nested=7)
    return jnp.sum(h**2)


x = jnp.ones(64)
print(grad(stacked, x).mlp.layers[0].weight.shape)  # (48, 256, 64): one gradient per layer

model = Sequential([eqx.nn.Linear(3, 64, key=jax.random.key(1)), *blocks], remat="full")
print(model)  # the plan: layer 0 alone, layers 1..48 scanned as one block
print(model(jnp.ones(3)).shape)
