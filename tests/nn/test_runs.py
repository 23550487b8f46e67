"""One run planner for Sequential and Graph: same plans, same options, same values as a loop."""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean import ConfigError, GraphError, Sequential, StructureError
from jaxlean._pytree import first_difference
from jaxlean._random import normal
from jaxlean.nn._runs import Run, chain_runs
from jaxlean.nn.graph import Graph, chain_edges
from jaxlean.nn.layers import stack, take_layers

KEYS = list(jax.random.split(jax.random.key(0), 16))


class Mix(eqx.Module):
    """Sums the leaves of its input, then a dense tanh layer: a tuple in, an array out."""

    weight: jax.Array

    def __init__(self, key: jax.Array, width: int = 4):
        self.weight = normal(key, (width, width)) / width**0.5

    def __call__(self, x):
        return jnp.tanh(sum(jax.tree.leaves(x)) @ self.weight)


def linear(key, n_in=4, n_out=4):
    return eqx.nn.Linear(n_in, n_out, key=key)


def mlp(key):
    return eqx.nn.MLP(4, 4, 8, 1, key=key)


def tanh():
    return eqx.nn.Lambda(jnp.tanh)


CHAINS = {
    "identical": lambda: [linear(k) for k in KEYS[:6]],
    "first-last-differ": lambda: [linear(KEYS[0], 3, 4), *[linear(k) for k in KEYS[1:6]],
                                  linear(KEYS[6], 4, 2)],
    "period-2": lambda: [linear(KEYS[0], 3, 4),
                         *[f(k) for k, f in zip(KEYS[1:9], [linear, mlp] * 4, strict=True)]],
    "paramless-in-pattern": lambda: [m for k in KEYS[:3] for m in (linear(k), tanh())],
    "paramless-only": lambda: [tanh() for _ in range(3)],
    "first-changes-shape": lambda: [Mix(k) for k in KEYS[:5]],
}
EXPECTED_RUNS = {
    "identical": (Run(0, 1, 6),),
    "first-last-differ": (Run(0, 1, 1), Run(1, 1, 5), Run(6, 1, 1)),
    "period-2": (Run(0, 1, 1), Run(1, 2, 4)),
    "paramless-in-pattern": (Run(0, 2, 3),),
    "paramless-only": (Run(0, 1, 1), Run(1, 1, 1), Run(2, 1, 1)),
    "first-changes-shape": (Run(0, 1, 5),),
}


def _input(name):
    if name == "first-changes-shape":
        return (normal(KEYS[14], (2, 4)), normal(KEYS[15], (2, 4)))
    width = 3 if name in ("first-last-differ", "period-2") else 4
    return normal(KEYS[13], (width,))


def loop(layers, x):
    for layer in layers:
        x = layer(x)
    return x


def _pair(layers, **options):
    """The same chain as a Sequential and as a Graph with the same node names."""
    nodes = {str(i): layer for i, layer in enumerate(layers)}
    return Sequential(layers, **options), Graph(nodes, chain_edges(nodes), **options)


def _count(jaxpr, names) -> int:
    """Equations whose primitive is in ``names``, in ``jaxpr`` and every sub-jaxpr."""
    total = 0
    for eqn in jaxpr.eqns:
        total += eqn.primitive.name in names
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple | list) else (value,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    total += _count(inner, names)
    return total


def _structure_counts(model, x) -> tuple[int, int]:
    """(scans, remat checkpoints) in the jaxpr of the gradient of ``sum(model(x)**2)``."""
    grad = jax.grad(lambda m, x: jnp.sum(m(x) ** 2))
    jaxpr = jax.make_jaxpr(lambda m, x: grad(m, x))(model, x).jaxpr
    return _count(jaxpr, {"scan"}), _count(jaxpr, {"remat2", "checkpoint"})


def _close(a, b, tol):
    arrays_a, arrays_b = eqx.filter(a, eqx.is_array), eqx.filter(b, eqx.is_array)
    for x, y in zip(jax.tree.leaves(arrays_a), jax.tree.leaves(arrays_b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", list(CHAINS))
def test_sequential_and_graph_plan_a_chain_alike(name):
    layers = CHAINS[name]()
    sequential, graph = _pair(layers)
    assert sequential.runs == EXPECTED_RUNS[name]
    assert sequential.graph.plan == graph.plan
    assert tuple(step.run for step in graph.plan.steps) == EXPECTED_RUNS[name]
    assert chain_runs(layers) == EXPECTED_RUNS[name]
    unrolled, unrolled_graph = _pair(layers, scan=False)
    assert unrolled.runs == tuple(Run(i, 1, 1) for i in range(len(layers)))
    assert unrolled.graph.plan == unrolled_graph.plan and unrolled_graph.plan.num_chains == 0


OPTIONS = [
    {}, {"remat": "full"}, {"remat": "dots", "nested": 2}, {"nested": "auto"},
    {"remat": "full", "nested": 3}, {"scan": False}, {"scan": False, "remat": "full"},
]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in
                                                                   o.items()) or "default")
@pytest.mark.parametrize("name", ["first-last-differ", "period-2", "paramless-in-pattern",
                                  "first-changes-shape"])
def test_values_and_gradients_match_an_unrolled_loop(name, options):
    ref_value, (ref_grads, ref_x_grad) = _loop_value_and_grads(name)
    for value, (grads, x_grad) in _chain_values_and_grads(name)[OPTIONS.index(options)]:
        np.testing.assert_allclose(value, ref_value, rtol=1e-5, atol=1e-6)
        got = grads.layers if isinstance(grads, Sequential) else \
            [grads.node(node) for node in grads.plan.nodes]
        _close(got, ref_grads, 1e-4)
        _close(x_grad, ref_x_grad, 1e-4)


@functools.cache  # every option's Sequential and Graph of one chain in one program
def _chain_values_and_grads(name):
    layers = CHAINS[name]()
    models = [_pair(layers, **options) for options in OPTIONS]
    return eqx.filter_jit(lambda models, x: [[_value_and_grads(model, x) for model in pair]
                                             for pair in models])(models, _input(name))


def _value_and_grads(model, x):
    """``sum(sin(model(x)))`` and its gradients w.r.t. the model's arrays and ``x``."""
    return eqx.filter_value_and_grad(lambda both: jnp.sum(jnp.sin(both[0](both[1]))))((model, x))


@functools.cache  # the reference loop: one compile per chain, shared by the options
def _loop_value_and_grads(name):
    loss = lambda both: jnp.sum(jnp.sin(loop(*both)))
    return eqx.filter_jit(eqx.filter_value_and_grad(loss))((CHAINS[name](), _input(name)))


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(
    f"{k}={v}" for k, v in o.items()) or "default")
def test_remat_nested_and_scan_mean_the_same_in_both(options):
    layers = CHAINS["first-last-differ"]()
    x = _input("first-last-differ")
    sequential, graph = _pair(layers, **options)
    scans, remats = _structure_counts(graph, x)
    assert _structure_counts(sequential, x) == (scans, remats)
    if not options.get("scan", True):
        assert scans == 0
    elif isinstance(options.get("nested"), int):
        assert scans > 2  # blocks of layers scanned inside a scan over blocks
    else:
        assert scans == 2  # the forward and the backward scan of the one scanned run
    if options.get("remat"):
        steps = 3 if options.get("scan", True) else len(layers)
        assert remats >= steps  # every step is a checkpoint: both lone layers and the scan body
    else:
        assert remats == 0


def test_remat_covers_the_layers_run_alone():
    layers = CHAINS["first-last-differ"]()
    x = _input("first-last-differ")
    middle_only = _structure_counts(Sequential(layers[1:-1], remat="full"), layers[0](x))[1]
    for model in _pair(layers, remat="full"):
        assert _structure_counts(model, x)[1] == middle_only + 2


def test_a_first_node_that_changes_shape_runs_alone_then_the_rest_scans():
    layers = CHAINS["first-changes-shape"]()
    x = _input("first-changes-shape")
    for model in _pair(layers):
        assert _structure_counts(model, x)[0] == 2  # one scan forward, one backward
        _close(model(x), loop(layers, x), 1e-5)
    assert _structure_counts(Sequential(layers, scan=False), x)[0] == 0


def test_graph_scans_a_repeating_pattern_and_slices_its_nodes():
    layers = CHAINS["period-2"]()
    _, graph = _pair(layers)
    (scanned,) = [step for step in graph.plan.steps if step.chain is not None]
    assert scanned.nodes == tuple(str(i) for i in range(1, 9))
    assert "scan 4 x [Linear, MLP]: 1 -> 2 -> ... -> 8" in str(graph.plan)
    for i, layer in enumerate(layers):
        _close(graph.node(str(i)), layer, 0)
    assert "layers 1..8: scan 4 x [Linear, MLP]" in repr(Sequential(layers))


def test_empty_sequential_is_the_identity():
    x = jnp.arange(3.0)
    _close(Sequential([])(x), x, 0)
    assert Sequential([]).runs == ()


def test_errors_name_the_option_or_the_node():
    layers = CHAINS["identical"]()
    for build in (lambda **o: Sequential(layers, **o), lambda **o: _pair(layers, **o)[1]):
        with pytest.raises(ConfigError, match="nested must be a positive number"):
            build(nested=0)
        with pytest.raises(ConfigError, match="nested must be"):
            build(nested=True)
        with pytest.raises(ConfigError, match="unknown remat option 'everything'"):
            build(remat="everything")
        with pytest.raises(ConfigError, match="scan must be True or False, got 'yes'"):
            build(scan="yes")
    with pytest.raises(GraphError, match="node '1' is neither a callable module"):
        Sequential([layers[0], 3])
    with pytest.raises(GraphError, match="no node '9'"):
        Sequential(layers).graph.node("9")


def test_take_layers_is_the_one_slice_of_a_stack():
    layers = CHAINS["identical"]()
    stacked = stack(layers)
    _close(take_layers(stacked, 2), layers[2], 0)
    tail = take_layers(stacked, slice(4, None))
    assert tail.weight.shape == (2, 4, 4) and tail.in_features == 4


def test_first_difference_compares_shapes_of_abstract_values():
    a = {"h": jax.ShapeDtypeStruct((2, 4), jnp.float32)}
    assert first_difference(a, {"h": jax.ShapeDtypeStruct((2, 4), jnp.float32)}) is None
    assert "float32[2, 4] vs float32[2, 5]" in first_difference(
        a, {"h": jax.ShapeDtypeStruct((2, 5), jnp.float32)})
    with pytest.raises(StructureError, match=r"\.weight"):
        stack([linear(KEYS[0]), linear(KEYS[1], 4, 3)])
