"""Graph: plans (chains found and scanned), pytree paths, fan-in/out, errors, gradients."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean._random import normal
from jaxlean.errors import GraphError
from jaxlean.nn.graph import FnNode, Graph, chain_edges


class Dense(eqx.Module):
    weight: jax.Array
    bias: jax.Array

    def __init__(self, d_in: int, d_out: int, key: jax.Array):
        self.weight = normal(key, (d_in, d_out)) / d_in**0.5
        self.bias = normal(jax.random.fold_in(key, 1), (d_out,)) * 0.1

    def __call__(self, x):
        return jnp.tanh(x @ self.weight + self.bias)


class Merge(eqx.Module):
    """Fan-in node: receives (chain output, branch output) as a tuple."""

    scale: jax.Array

    def __call__(self, parts):
        chain_out, branch_out = parts
        return self.scale * chain_out + branch_out ** 2


def _keys(n, seed=0):
    return list(jax.random.split(jax.random.key(seed), n))


def _close(a, b, tol=1e-5):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=tol, atol=tol)


def test_chain_runs_as_one_scan_and_matches_a_loop():
    layers = [Dense(3, 3, k) for k in _keys(5)]
    nodes = {f"l{i}": layer for i, layer in enumerate(layers)}
    edges = {"input": "l0", "l0": "l1", "l1": "l2", "l2": "l3", "l3": "l4", "l4": "output"}
    assert chain_edges(nodes) == edges
    graph = Graph(nodes, edges)
    assert [step.nodes for step in graph.plan.steps] == [tuple(nodes)]
    assert graph.plan.steps[0].chain == 0
    assert graph.chains[0].weight.shape == (5, 3, 3)
    assert graph.modules == {}
    x = normal(jax.random.key(9), (4, 3))
    expected = x
    for layer in layers:
        expected = layer(expected)
    _close(graph(x), expected)
    _close(graph.node("l3"), layers[3], tol=0)
    assert "scan 5 x Dense: l0 -> l1 -> ... -> l4" in repr(graph)


def _head_chain_branch_tail(scan=True, remat=None):
    keys = _keys(15)
    nodes = {"head": Dense(2, 4, keys[0])}
    nodes |= {f"block{i}": Dense(4, 4, keys[1 + i]) for i in range(12)}
    nodes |= {"branch": Dense(4, 4, keys[13]), "tail": Merge(jnp.array(0.5))}
    edges = {"input": "head", "head": ["block0", "branch"]}
    edges |= {f"block{i}": f"block{i + 1}" for i in range(11)}
    edges |= {"block11": "tail", "branch": "tail", "tail": "output"}
    return nodes, Graph(nodes, edges, scan=scan, remat=remat)


def test_head_chain_branch_tail_scans_the_chain():
    nodes, graph = _head_chain_branch_tail()
    steps = graph.plan.steps
    assert [s.nodes for s in steps if s.chain is None] == [("head",), ("branch",), ("tail",)]
    (chain,) = [s for s in steps if s.chain is not None]
    assert chain.nodes == tuple(f"block{i}" for i in range(12))
    assert graph.chains[0].weight.shape == (12, 4, 4)
    x = normal(jax.random.key(3), (5, 2))
    hidden = nodes["head"](x)
    out = hidden
    for i in range(12):
        out = nodes[f"block{i}"](out)
    _close(graph(x), nodes["tail"]((out, nodes["branch"](hidden))))
    assert _scans(graph, x) == 1


@pytest.mark.parametrize("remat", [None, "full"])
def test_scanned_plan_matches_node_by_node_values_and_gradients(remat):
    _, scanned = _head_chain_branch_tail(remat=remat)
    _, looped = _head_chain_branch_tail(scan=False, remat=remat)
    assert looped.plan.num_chains == 0 and len(looped.plan.steps) == 15
    x = normal(jax.random.key(4), (5, 2))

    def loss(graph, x):
        return jnp.sum(jnp.sin(graph(x)))

    value_s, grad_s = jax.jit(jax.value_and_grad(loss))(scanned, x)
    value_l, grad_l = jax.jit(jax.value_and_grad(loss))(looped, x)
    np.testing.assert_allclose(value_s, value_l, rtol=1e-5)
    assert isinstance(grad_s, Graph) and grad_s.chains[0].weight.shape == (12, 4, 4)
    for name in looped.plan.nodes:
        _close(grad_s.node(name), grad_l.node(name))
    assert np.abs(np.asarray(grad_s.node("block0").weight)).sum() > 0


def test_chain_stops_at_a_different_shape_and_at_fan_out():
    keys = _keys(6)
    nodes = {"a": Dense(3, 3, keys[0]), "b": Dense(3, 3, keys[1]), "c": Dense(3, 3, keys[2]),
             "wide": Dense(3, 5, keys[3]), "d": Dense(5, 5, keys[4]), "e": Dense(5, 5, keys[5])}
    edges = {"input": "a", "a": "b", "b": ["c", "output.b"], "c": "wide", "wide": "d",
             "d": "e", "e": "output.e"}
    graph = Graph(nodes, edges)
    assert [s.nodes for s in graph.plan.steps] == [("a", "b"), ("c",), ("wide",), ("d", "e")]
    x = jnp.ones((2, 3))
    b = nodes["b"](nodes["a"](x))
    out = graph(x)
    _close(out["b"], b)
    _close(out["e"], nodes["e"](nodes["d"](nodes["wide"](nodes["c"](b)))))


def test_fan_out_and_fan_in_as_tuple_in_edge_order():
    nodes = {"a": (lambda p, x: x * p, jnp.array(2.0)),
             "b": (lambda p, x: x + p, jnp.array(1.0)),
             "c": (lambda p, xs: p * xs[0] - xs[1], jnp.array(3.0))}
    edges = {"input": ["a", "b"], "b": "c", "a": "c", "c": "output"}
    graph = Graph(nodes, edges)
    assert isinstance(graph.modules["a"], FnNode)
    x = jnp.arange(3.0)
    _close(graph(x), 3.0 * (x + 1.0) - 2.0 * x)


def test_fan_in_by_slot_name_and_integer_slots():
    nodes = {"sub": (lambda p, xs: xs["left"] - p * xs["right"], jnp.array(2.0)),
             "cat": (lambda p, xs: jnp.concatenate(xs) * p, jnp.array(1.0))}
    edges = {"input.x": ["sub.left", "cat.1"], "input.y": "sub.right", "sub": "cat.0",
             "cat": "output"}
    graph = Graph(nodes, edges)
    x, y = jnp.array([1.0, 2.0]), jnp.array([5.0, 7.0])
    _close(graph({"x": x, "y": y}), jnp.concatenate([x - 2.0 * y, x]))


def test_dotted_paths_into_pytree_inputs_and_outputs():
    def encode(p, x):
        return {"a": x["u"] * p, "b": (x["u"] + 1.0, x["v"] - p)}

    nodes = {"enc": (encode, jnp.array(3.0)),
             "dec": (lambda p, xs: xs[0] * xs[1] + p, jnp.array(0.5))}
    edges = {"input": "enc", "enc.b.1": "dec.0", "input.v": "dec.1", "dec": "output.y",
             "enc.a": "output.z.0"}
    graph = Graph(nodes, edges)
    u, v = jnp.array([1.0, -2.0]), jnp.array([4.0, 0.5])
    out = jax.jit(lambda g, x: g(x))(graph, {"u": u, "v": v})
    assert set(out) == {"y", "z"} and isinstance(out["z"], tuple)
    _close(out["y"], (v - 3.0) * v + 0.5)
    _close(out["z"][0], u * 3.0)


def test_chain_whose_output_shape_changes_runs_unrolled():
    def grow(p, x):
        return jnp.concatenate([x, p])

    nodes = {f"g{i}": (grow, jnp.full((1,), float(i))) for i in range(3)}
    graph = Graph(nodes, {"input": "g0", "g0": "g1", "g1": "g2", "g2": "output"})
    assert graph.plan.num_chains == 1
    _close(graph(jnp.array([9.0])), jnp.array([9.0, 0.0, 1.0, 2.0]))


def _scans(graph, x):
    return str(jax.make_jaxpr(lambda g, x: g(x))(graph, x)).count(" scan[")


def test_chain_head_with_fan_in_runs_alone_then_the_rest_scans():
    def add_all(p, x):
        return p * sum(jax.tree.leaves(x))

    nodes = {f"c{i}": (add_all, jnp.full((2,), i + 1.0)) for i in range(4)}
    edges = {"input.a": "c0", "input.b": "c0", **chain_edges(nodes)}
    del edges["input"]
    graph = Graph(nodes, edges)
    assert [s.nodes for s in graph.plan.steps] == [("c0", "c1", "c2", "c3")]
    x = {"a": jnp.array([1.0, 2.0]), "b": jnp.array([3.0, -1.0])}
    _close(graph(x), 24.0 * (x["a"] + x["b"]))
    assert _scans(graph, x) == 1
    assert _scans(Graph(nodes, edges, scan=False), x) == 0


def _dense_nodes(*names):
    return {name: Dense(2, 2, key) for name, key in zip(names, _keys(len(names)), strict=True)}


def test_cycle_is_listed():
    nodes = _dense_nodes("a", "b", "c")
    with pytest.raises(GraphError, match="cycle: b -> c -> b"):
        Graph(nodes, {"input": "a", "a": "b", "b": "c", "c": ["b", "output"]})
    with pytest.raises(GraphError, match="cycle: a -> a"):
        Graph(_dense_nodes("a"), {"input": "a", "a": ["a", "output"]})


def test_unconnected_input_names_the_node():
    nodes = _dense_nodes("a", "b")
    with pytest.raises(GraphError, match="node 'b' has no input connected"):
        Graph(nodes, {"input": "a", "a": "output", "b": "output.extra"})
    nodes = {"cat": (lambda p, xs: xs, None)}
    with pytest.raises(GraphError, match=r"input cat\.1 is not connected"):
        Graph(nodes, {"input": ["cat.0", "cat.2"], "cat": "output"})
    with pytest.raises(GraphError, match="nothing is connected to 'output'"):
        Graph(_dense_nodes("a"), {"input": "a"})


def test_unknown_and_reserved_names():
    with pytest.raises(GraphError, match="unknown node 'nope'"):
        Graph(_dense_nodes("a"), {"input": "a", "a": "nope"})
    with pytest.raises(GraphError, match="'input' is reserved"):
        Graph({"input": Dense(2, 2, jax.random.key(0))}, {"input": "output"})
    with pytest.raises(GraphError, match="'output' cannot be the source"):
        Graph(_dense_nodes("a"), {"input": "a", "a": "output", "output": "a"})
    with pytest.raises(GraphError, match="'input' cannot be the target"):
        Graph(_dense_nodes("a"), {"input": "a", "a": ["output", "input"]})
    with pytest.raises(GraphError, match=r"contains '\.'"):
        Graph({"a.b": Dense(2, 2, jax.random.key(0))}, {"input": "a.b", "a.b": "output"})
    with pytest.raises(GraphError, match="node 'x' is neither"):
        Graph({"x": 3}, {"input": "x", "x": "output"})


def test_mixed_and_duplicate_slots_are_errors():
    nodes = {"f": (lambda p, x: x, None)}
    with pytest.raises(GraphError, match="both whole-input edges"):
        Graph(nodes, {"input": ["f", "f.a"], "f": "output"})
    with pytest.raises(GraphError, match=r"input f\.a is connected twice"):
        Graph(nodes, {"input": "f.a", "input.x": "f.a", "f": "output"})


def test_unused_node_warns_and_is_not_run():
    nodes = _dense_nodes("a", "dead")
    with pytest.warns(UserWarning, match="'dead' does not reach 'output'"):
        graph = Graph(nodes, {"input": ["a", "dead"], "a": "output"})
    assert graph.plan.unused == ("dead",) and graph.plan.nodes == ("a",)
    assert "unused (not run): dead" in str(graph.plan)
    with pytest.raises(GraphError, match="no node 'dead'"):
        graph.node("dead")


def test_bad_source_key_names_the_edge():
    graph = Graph({"f": (lambda p, x: {"a": x}, None)}, {"input": "f", "f.b": "output"})
    with pytest.raises(GraphError, match=r"edge 'f\.b' -> 'output'.*no key 'b'"):
        graph(jnp.ones(2))
