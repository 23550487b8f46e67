"""scan_layers against an unrolled Python loop over the unstacked layers; stack/unstack."""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean import ConfigError, StructureError, scan_layers, stack, unstack
from jaxlean._random import normal
from jaxlean.nn.layers import auto_block_size


def make_layers(depth, width=5, seed=0):
    keys = jax.random.split(jax.random.key(seed), depth)
    return [
        {"w": normal(k, (width, width)) / np.sqrt(width),
         "b": 0.1 * normal(jax.random.fold_in(k, 1), (width,)),
         "act": jnp.tanh}
        for k in keys
    ]


def layer_fn(layer, h, x):
    h = layer["act"](h @ layer["w"] + layer["b"] + (0.0 if x is None else x))
    return h, jnp.sum(h**2)


def unrolled(layers, h, xs=None):
    ys = []
    for i, layer in enumerate(layers):
        h, y = layer_fn(layer, h, None if xs is None else xs[i])
        ys.append(y)
    return h, jnp.stack(ys)


def loss_of(run):
    def loss(layers, h):
        carry, ys = run(layers, h)
        return jnp.sum(jnp.sin(carry)) + jnp.sum(ys)

    return loss


REMATS = [None, "full", "dots", "dots_no_batch", "offload",
          jax.checkpoint_policies.everything_saveable]


CASES = (
    [(remat, None) for remat in REMATS]
    + [("full", nested) for nested in (1, 3, 4, 7, 9)]
    + [(None, 3), ("dots", 4), ("offload", 3), ("full", "auto"), (None, "auto")]
)


def _inputs():
    return (make_layers(7), normal(jax.random.key(1), (3, 5)),
            normal(jax.random.key(2), (7, 3, 5)))


def _values_and_grads(run, layers, h, xs):
    """``run``'s (carry, ys) and the gradients of ``loss_of(run)`` w.r.t. the layers and h."""
    loss = loss_of(lambda layers, h: run(layers, h, xs))
    return run(layers, h, xs), eqx.filter_grad(lambda both: loss(*both))((layers, h))


@functools.cache  # the unrolled reference: one compile, shared by every case
def _reference():
    layers, h0, xs = _inputs()
    (carry, ys), (grads, h_grad) = eqx.filter_jit(_values_and_grads)(unrolled, layers, h0, xs)
    return carry, ys, stack(grads), h_grad


@pytest.mark.parametrize(("remat", "nested"), CASES)
def test_scan_layers_matches_unrolled_loop(remat, nested):
    layers, h0, xs = _inputs()

    def scanned(stacked, h, xs):
        return scan_layers(layer_fn, stacked, h, xs, remat=remat, nested=nested)

    # values and both gradients in one program: one compile per case
    (carry, ys), (grads, h_grad) = eqx.filter_jit(_values_and_grads)(scanned, stack(layers),
                                                                     h0, xs)
    ref_carry, ref_ys, ref_grads, ref_h_grad = _reference()
    np.testing.assert_allclose(carry, ref_carry, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ys, ref_ys, rtol=1e-5, atol=1e-5)
    for name in ("w", "b"):
        np.testing.assert_allclose(grads[name], ref_grads[name], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(h_grad, ref_h_grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("unroll", [1, 2, True])
def test_unroll_gives_same_values(unroll):
    layers = make_layers(6)
    h0 = jnp.ones((2, 5))
    carry, ys = scan_layers(layer_fn, stack(layers), h0, unroll=unroll)
    ref_carry, ref_ys = unrolled(layers, h0)
    np.testing.assert_allclose(carry, ref_carry, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ys, ref_ys, rtol=1e-5, atol=1e-5)


def test_pytree_carry_and_per_layer_outputs():
    """A dict carry and pytree per-layer xs/ys (as a per-layer KV cache would be)."""
    layers = make_layers(4)
    cache = {"k": jnp.arange(4 * 5.0).reshape(4, 5), "v": jnp.ones((4, 5))}

    def f(layer, carry, x):
        h = jnp.tanh(carry["h"] @ layer["w"] + x["k"])
        return {"h": h, "n": carry["n"] + 1}, {"k": x["k"] + h, "v": x["v"] * 2}

    carry, new_cache = scan_layers(f, stack(layers), {"h": jnp.ones(5), "n": 0}, cache, nested=3)
    h = jnp.ones(5)
    for i, layer in enumerate(layers):
        h = jnp.tanh(h @ layer["w"] + cache["k"][i])
        np.testing.assert_allclose(new_cache["k"][i], cache["k"][i] + h, rtol=1e-6)
    np.testing.assert_allclose(carry["h"], h, rtol=1e-6)
    assert int(carry["n"]) == 4
    np.testing.assert_array_equal(new_cache["v"], 2 * cache["v"])


def test_stack_unstack_round_trip_exactly():
    layers = make_layers(5)
    back = unstack(stack(layers))
    assert len(back) == 5
    for original, restored in zip(layers, back, strict=True):
        assert jax.tree.structure(original) == jax.tree.structure(restored)
        for a, b in zip(jax.tree.leaves(original), jax.tree.leaves(restored), strict=True):
            if isinstance(a, jax.Array):
                assert a.dtype == b.dtype
                np.testing.assert_array_equal(a, b)
            else:
                assert a is b


def test_stack_keeps_numpy_and_static_leaves():
    layers = [{"w": np.full((2,), i, np.float64), "n": 3, "name": "block"} for i in range(3)]
    stacked = stack(layers)
    assert isinstance(stacked["w"], np.ndarray) and stacked["w"].shape == (3, 2)
    assert stacked["n"] == 3 and stacked["name"] == "block"
    assert unstack(stacked)[2]["w"].tolist() == [2.0, 2.0]


@pytest.mark.parametrize(
    ("second", "expected"),
    [
        ({"w": jnp.zeros((5, 4)), "b": jnp.zeros(5), "act": jnp.tanh},
         r"layer 0 and layer 2.*\['w'\].*float32\[5, 5\] vs float32\[5, 4\]"),
        ({"w": jnp.zeros((5, 5), jnp.int32), "b": jnp.zeros(5), "act": jnp.tanh},
         r"\['w'\]: float32\[5, 5\] vs int32\[5, 5\]"),
        ({"w": jnp.zeros((5, 5)), "b": jnp.zeros(5), "act": jax.nn.relu},
         r"\['act'\]"),
        ({"w": jnp.zeros((5, 5)), "b": jnp.zeros(5)}, r"only in first: \[\"\['act'\]\"\]"),
    ],
)
def test_stack_errors_name_path_and_layers(second, expected):
    layers = [*make_layers(2), second]
    with pytest.raises(StructureError, match=expected):
        stack(layers)


def test_stack_error_on_equinox_static_field():
    keys = jax.random.split(jax.random.key(0), 2)
    a = eqx.nn.MLP(3, 3, 4, 1, key=keys[0])
    b = eqx.nn.MLP(3, 3, 4, 1, activation=jax.nn.gelu, key=keys[1])
    with pytest.raises(StructureError, match=r"\.activation"):
        stack([a, b])
    with pytest.raises(StructureError, match="empty"):
        stack([])


def test_scan_layers_rejects_bad_inputs():
    stacked = stack(make_layers(3))
    with pytest.raises(StructureError, match=r"xs\['k'\].*number of layers \(3\)"):
        scan_layers(layer_fn, stacked, jnp.ones(5), {"k": jnp.ones((2, 5))})
    with pytest.raises(ConfigError, match="nested"):
        scan_layers(layer_fn, stacked, jnp.ones(5), nested=0)
    with pytest.raises(ConfigError, match="unknown remat option 'everything'"):
        scan_layers(layer_fn, stacked, jnp.ones(5), remat="everything")
    with pytest.raises(StructureError, match="disagree on the number of layers"):
        scan_layers(layer_fn, {"w": jnp.ones((3, 5, 5)), "b": jnp.ones((2, 5)),
                               "act": jnp.tanh}, jnp.ones(5))


def test_auto_block_size_balances_block_carries_against_block_gradients():
    assert auto_block_size(64, carry_bytes=1, layer_bytes=0) == 8
    assert auto_block_size(64, carry_bytes=1, layer_bytes=3) == 4
    assert auto_block_size(4, carry_bytes=1, layer_bytes=4) == 1
    assert auto_block_size(32, carry_bytes=4, layer_bytes=1) == 4
    # 7 layers cannot be split evenly: a remainder block costs a parameter-sized buffer.
    assert auto_block_size(7, carry_bytes=1, layer_bytes=10) == 1
    assert auto_block_size(7, carry_bytes=100, layer_bytes=1) == 2
