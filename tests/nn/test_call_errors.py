"""Errors at call time name the layer or node that failed; recipes that defeat scanning warn."""

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import pytest

from jaxlean import Graph, Sequential

KEYS = jax.random.split(jax.random.key(0), 8)
_RAW = "dot_general requires contracting dimensions to have the same shape, got (5,) and (4,)"


def _layers():
    """Four identical Linear(4, 4) layers (scanned), then a Linear(5, 2) that does not fit."""
    return [*(eqx.nn.Linear(4, 4, key=k) for k in KEYS[:4]), eqx.nn.Linear(5, 2, key=KEYS[4])]


@pytest.mark.parametrize("scan", [True, False])
def test_shape_error_in_sequential_names_the_layer_and_keeps_the_message(scan):
    model = Sequential(_layers(), scan=scan)
    with pytest.raises(TypeError) as raised:
        eqx.filter_jit(model)(jnp.ones(4))
    message = str(raised.value)
    assert message.startswith("layer 4 (Linear) on input float32[4]: "), message
    assert _RAW in message


def test_shape_error_in_a_scanned_run_names_its_first_layer():
    model = Sequential(_layers())
    with pytest.raises(TypeError, match=r"^layer 0 \(Linear, the first of layers 0\.\.3 scanned "
                                        r"as one run\) on input float32\[3\]: dot_general"):
        model(jnp.ones(3))


def test_shape_error_in_graph_names_the_node():
    nodes = {"enc": eqx.nn.Linear(4, 4, key=KEYS[0]), "head": eqx.nn.Linear(5, 2, key=KEYS[1])}
    graph = Graph(nodes, {"input": "enc", "enc": "head", "head": "output"})
    with pytest.raises(TypeError, match=r"^node 'head' \(Linear\) on input float32\[4\]: "
                                        r"dot_general requires contracting"):
        jax.grad(lambda g: graph(jnp.ones(4)).sum())(graph)


class _Picky(eqx.Module):
    weight: jax.Array

    def __call__(self, x):
        if x.shape != self.weight.shape:
            raise ValueError(f"expected shape {self.weight.shape}, got {x.shape}")
        return x * self.weight


@pytest.mark.parametrize("layer, kind, raw", [
    ((lambda w, x: x + w, jnp.ones(3)), TypeError, "add got incompatible shapes"),
    (_Picky(jnp.ones(3)), ValueError, r"expected shape \(3,\), got \(4,\)"),
])
def test_the_error_keeps_its_type(layer, kind, raw):
    with pytest.raises(kind, match=rf"^layer 0 \(\w+\) on input float32\[4\]: {raw}"):
        Sequential([layer])(jnp.ones(4))


def _recorded(build):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = build()
    return result, [str(w.message) for w in caught]


def test_a_lambda_per_layer_warns_that_scanning_is_lost():
    weights = [jnp.eye(4) * (i + 1) for i in range(5)]
    model, messages = _recorded(lambda: Sequential([(lambda w, x: jnp.tanh(x @ w), w)
                                                    for w in weights]))
    assert not any(run.scanned for run in model.runs)
    assert len(messages) == 1, messages
    assert messages[0].startswith("layers 0..4 would be scanned as one run of identical modules,"
                                  " but .fn is a new function object in each (")
    assert "test_call_errors.py:" in messages[0]


def test_one_shared_function_scans_without_warning():
    weights = [jnp.eye(4) * (i + 1) for i in range(5)]

    def fn(w, x):
        return jnp.tanh(x @ w)

    model, messages = _recorded(lambda: Sequential([(fn, w) for w in weights]))
    assert messages == []
    assert [run.repeats for run in model.runs] == [5]


def test_functions_that_compute_differently_do_not_warn():
    """Closures over different values are different layers: nothing would be scanned."""

    def scaled(k):
        return lambda w, x: k * x @ w

    _, messages = _recorded(lambda: Sequential([(scaled(k), jnp.eye(4)) for k in range(4)]))
    assert messages == []


def test_graph_names_the_nodes_whose_scan_is_lost():
    nodes = {f"b{i}": (lambda w, x: x @ w, jnp.eye(3)) for i in range(3)}
    edges = {"input": "b0", "b0": "b1", "b1": "b2", "b2": "output"}
    _, messages = _recorded(lambda: Graph(nodes, edges))
    assert len(messages) == 1 and messages[0].startswith("nodes 'b0', 'b1', 'b2' would be scanned")
    _, unrolled = _recorded(lambda: Graph(nodes, edges, scan=False))  # asked for: no warning
    assert unrolled == []

