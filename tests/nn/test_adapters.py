"""scan_layers with Equinox modules (filter_vmap-built stacks) and Flax NNX: modules passed to
Sequential directly, and the split/merge recipe (scan_layers, or shared (fn, params) pairs)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxlean import Sequential, scan_layers, stack
from jaxlean._random import normal


class Block(eqx.Module):
    linear: eqx.nn.Linear
    norm: eqx.nn.LayerNorm

    def __init__(self, key):
        self.linear = eqx.nn.Linear(6, 6, key=key)
        self.norm = eqx.nn.LayerNorm(6)

    def __call__(self, x):
        return x + jax.nn.gelu(self.linear(self.norm(x)))


def test_equinox_filter_vmap_stack_matches_loop_and_stack():
    keys = jax.random.split(jax.random.key(0), 5)
    vmapped = eqx.filter_vmap(Block)(keys)
    blocks = [Block(k) for k in keys]
    stacked = stack(blocks)
    x = normal(jax.random.key(1), (6,))

    # jitted: one compile per program, not one per eager op
    @eqx.filter_jit
    def run(blocks, x):
        return scan_layers(lambda block, h, _: (block(h), None), blocks, x, remat="full")[0]

    def loop(blocks, h):
        for block in blocks:
            h = block(h)
        return h

    ref, ref_grads = eqx.filter_jit(lambda blocks: (loop(blocks, x), eqx.filter_grad(
        lambda blocks: jnp.sum(loop(blocks, x)))(blocks)))(blocks)
    np.testing.assert_allclose(run(vmapped, x), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(run(stacked, x), ref, rtol=1e-5, atol=1e-6)
    grads = eqx.filter_jit(eqx.filter_grad(lambda b: jnp.sum(run(b, x))))(stacked)
    for got, want in zip(jax.tree.leaves(grads), jax.tree.leaves(stack(ref_grads)), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_flax_nnx_recipe_split_stack_scan_merge():
    """The documented NNX recipe: nnx.split each layer, stack the states, merge inside f."""
    layers = [nnx.Linear(4, 4, rngs=nnx.Rngs(i)) for i in range(4)]
    graphdef = nnx.split(layers[0])[0]
    states = stack([nnx.split(layer)[1] for layer in layers])
    x = jnp.linspace(-1.0, 1.0, 4)

    def run(states, x):
        def f(state, h, _):
            return jnp.tanh(nnx.merge(graphdef, state)(h)), None

        return scan_layers(f, states, x, remat="dots")[0]

    ref = x
    for layer in layers:
        ref = jnp.tanh(layer(ref))
    # jitted: one compile per program, not one per eager op
    np.testing.assert_allclose(jax.jit(run)(states, x), ref, rtol=1e-5, atol=1e-6)

    grads = jax.jit(jax.grad(lambda s: jnp.sum(run(s, x))))(states)

    def loop_loss(states_list):
        h = x
        for state in states_list:
            h = jnp.tanh(nnx.merge(graphdef, state)(h))
        return jnp.sum(h)

    ref_grads = stack(jax.jit(jax.grad(loop_loss))([nnx.split(layer)[1] for layer in layers]))
    for got, want in zip(jax.tree.leaves(grads), jax.tree.leaves(ref_grads), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_flax_nnx_modules_go_into_sequential_directly_and_scan():
    layers = [nnx.Linear(4, 4, rngs=nnx.Rngs(i)) for i in range(4)]
    model = Sequential(layers)
    assert [run.repeats for run in model.runs] == [4]
    x = jnp.linspace(-1.0, 1.0, 8).reshape(2, 4)
    want = x
    for layer in layers:
        want = layer(want)
    # jitted: one compile per program, not one per eager op
    np.testing.assert_allclose(jax.jit(lambda m, x: m(x))(model, x), want, rtol=1e-5,
                               atol=1e-6)
    grads = jax.jit(jax.grad(lambda m: jnp.sum(m(x) ** 2)))(model)
    assert jax.tree.structure(grads) == jax.tree.structure(model)


def test_flax_nnx_split_merge_as_shared_fn_params_pairs_scan():
    layers = [nnx.Linear(4, 4, rngs=nnx.Rngs(i)) for i in range(4)]
    graphdef = nnx.split(layers[0])[0]

    def apply(state, h):  # one function object for every layer
        return nnx.merge(graphdef, state)(h)

    model = Sequential([(apply, nnx.split(layer)[1]) for layer in layers])
    assert [run.repeats for run in model.runs] == [4]
    x = jnp.linspace(-1.0, 1.0, 4)
    want = x
    for layer in layers:
        want = layer(want)
    np.testing.assert_allclose(model(x), want, rtol=1e-5, atol=1e-6)
