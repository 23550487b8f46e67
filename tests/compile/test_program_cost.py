"""compile_report's flops count every loop as often as it runs, checked against unrolled code."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from jaxlean import Sequential, compile_report
from jaxlean.compile import _jax_private

WIDTH = 8


def _mlp_chain(depth: int, scan: bool) -> Sequential:
    """``depth`` linear layers, weights drawn in NumPy (``depth`` eager inits take seconds)."""
    rng = np.random.default_rng(0)
    template = eqx.nn.Linear(WIDTH, WIDTH, key=jax.random.key(0))
    layers = [eqx.tree_at(lambda layer: (layer.weight, layer.bias), template,
                          (rng.normal(size=(WIDTH, WIDTH)).astype(np.float32),
                           rng.normal(size=WIDTH).astype(np.float32)))
              for _ in range(depth)]
    return Sequential(layers, scan=scan)


def _apply(model: Sequential, x: jax.Array) -> jax.Array:
    return jax.vmap(model)(x).sum()


def _close(scanned: float | None, unrolled: float | None) -> bool:
    return scanned is not None and unrolled is not None and abs(scanned / unrolled - 1) < 0.05


@pytest.mark.parametrize("depth", [16, 128])
def test_scanned_graph_flops_match_the_unrolled_graph(depth):
    x = jnp.ones((4, WIDTH))
    scanned = compile_report(_apply, _mlp_chain(depth, scan=True), x)
    unrolled = compile_report(_apply, _mlp_chain(depth, scan=False), x)
    assert _close(scanned.flops, unrolled.flops), (scanned.flops, unrolled.flops)
    assert unrolled.flops > depth * 2 * 4 * WIDTH * WIDTH  # every layer's matmul counted
    assert [loop.trips for loop in scanned.loops] == [depth] and unrolled.loops == ()
    assert scanned.bytes_accessed > unrolled.bytes_accessed / 2
    assert "flops (loops x trips)" in str(scanned) and f"{depth} trips" in str(scanned)


def _nested_scan(w, y):
    def outer(y, w_outer):
        return lax.scan(lambda y, w_inner: (jnp.tanh(y @ w_inner), None), y, w_outer)[0], None
    return lax.scan(outer, y, w)[0].sum()


def _nested_unrolled(w, y):
    for i in range(w.shape[0]):
        for j in range(w.shape[1]):
            y = jnp.tanh(y @ w[i, j])
    return y.sum()


def test_nested_scans_multiply_through():
    w, y = jnp.ones((4, 3, WIDTH, WIDTH)) / WIDTH, jnp.ones((2, WIDTH))
    scanned = compile_report(_nested_scan, w, y)
    assert _close(scanned.flops, compile_report(_nested_unrolled, w, y).flops)
    assert sorted(loop.trips for loop in scanned.loops) == [3, 4]
    # The same loops under a conditional: XLA counts the costlier branch.
    branch = compile_report(lambda p, w, y: lax.cond(p, _nested_scan, lambda w, y: y.sum(), w, y),
                            True, w, y)
    assert _close(branch.flops, scanned.flops)


def test_fori_loop_with_static_bounds_matches_python_loop():
    m, y = jnp.ones((WIDTH, WIDTH)) / WIDTH, jnp.ones((2, WIDTH))

    def python_loop(m, y):
        for _ in range(10):
            y = jnp.tanh(y @ m)
        return y.sum()

    fori = compile_report(lambda m, y: lax.fori_loop(0, 10, lambda i, y: jnp.tanh(y @ m), y).sum(),
                          m, y)
    assert _close(fori.flops, compile_report(python_loop, m, y).flops)
    assert [loop.trips for loop in fori.loops] == [10]


def _data_dependent(m, y, steps):
    def body(carry):
        i, y = carry
        return i + 1, jnp.tanh(y @ m)
    return lax.while_loop(lambda carry: carry[0] < steps, body, (0, y))[1].sum()


def test_data_dependent_trip_count_is_unknown_not_a_body_counted_once():
    m, y = jnp.ones((WIDTH, WIDTH)), jnp.ones((2, WIDTH))
    report = compile_report(_data_dependent, m, y, 5)
    assert report.flops is None and report.bytes_accessed is None
    [loop] = report.loops
    assert loop.trips is None and loop.flops_per_trip >= 2 * 2 * WIDTH * WIDTH
    assert report.cost_unknown == f"XLA does not know the trip count of {loop.name}"
    text = str(report)
    assert "flops" in text and "unknown" in text and "unknown trips" in text


@pytest.fixture
def without_cost_internal(monkeypatch):
    """This JAX without the per-module cost analysis; the internals re-checked after."""
    monkeypatch.delattr("jax._src.lib._jax.hlo_module_cost_analysis")
    _jax_private.refresh()
    yield
    monkeypatch.undo()
    _jax_private.refresh()


def test_missing_internal_gives_unknown_for_loops_only(without_cost_internal):
    m, y = jnp.ones((WIDTH, WIDTH)), jnp.ones((2, WIDTH))
    looped = compile_report(lambda m, y: lax.fori_loop(0, 3, lambda i, y: y @ m, y).sum(), m, y)
    assert looped.flops is None and "hlo_module_cost_analysis" in looped.cost_unknown
    assert compile_report(lambda m, y: (y @ m).sum(), m, y).flops >= 2 * 2 * WIDTH * WIDTH
