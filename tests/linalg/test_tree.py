"""tree_solve against a dense jnp.linalg.solve on random diagonally dominant forests."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxlean.errors import NonFiniteError, StructureError, TreeError
from jaxlean.linalg import Tree, tree_solve, tree_solve_in_layout

SCHEDULES = ["sequential", "level"]
SETTINGS = settings(max_examples=4, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def path(n):
    return np.arange(n) - 1


def star(n):
    return np.concatenate([[-1], np.zeros(n - 1, dtype=int)])


def binary(n):
    return (np.arange(n) - 1) // 2


def forest(n):
    parents = binary(n)
    parents[n // 2] = -1
    return parents


SHAPES = {"path": path, "star": star, "binary": binary, "forest": forest}


@st.composite
def random_forests(draw):
    """Parent arrays of random forests under a random renumbering of the nodes.

    Sizes come from a short list so the dense reference compiles once per size.
    """
    n = draw(st.sampled_from([1, 7, 20]))
    parents = [-1] + [draw(st.integers(-1, i - 1)) if draw(st.booleans()) and i % 5 == 0
                      else draw(st.integers(0, i - 1)) for i in range(1, n)]
    relabel = np.asarray(draw(st.permutations(range(n))))
    out = np.full(n, -1)
    for node, parent in enumerate(parents):
        out[relabel[node]] = -1 if parent < 0 else relabel[parent]
    return out


def dominant_system(parents, seed, dtype, batch=()):
    """Random entries with |diag| larger than the sum of off-diagonals in every row and column."""
    rng = np.random.default_rng(seed)
    n = parents.size
    lower, upper = rng.uniform(-1, 1, (2, *batch, n))
    degree = np.bincount(parents[parents >= 0], minlength=n) + 1
    diag = (degree + 1.0) * rng.choice([-1, 1], (*batch, n)) * rng.uniform(1, 2, (*batch, n))
    b = rng.normal(size=(*batch, n))
    # converted in NumPy and put on the device: jnp.asarray compiles a program per shape
    return tuple(jax.device_put(np.asarray(a, dtype)) for a in (lower, diag, upper, b))


def tree_system(parents, seed, dtype, batch=()):
    """``(tree, (lower, diag, upper, b))``: the tree of ``parents`` and a dominant system on it."""
    return Tree.from_parents(parents), dominant_system(parents, seed, dtype, batch)


def dense(parents, lower, diag, upper):
    """The matrix itself, built with differentiable scatters (``parents`` may be traced)."""
    n = parents.shape[0]
    nodes = jnp.arange(n)
    is_root = parents < 0
    up = jnp.where(is_root, nodes, parents)
    a = jnp.zeros((*diag.shape[:-1], n, n), diag.dtype)
    a = a.at[..., nodes, nodes].set(diag)
    a = a.at[..., nodes, up].add(jnp.where(is_root, 0, lower))
    return a.at[..., up, nodes].add(jnp.where(is_root, 0, upper))


@jax.jit
def dense_solve(parents, lower, diag, upper, b):
    return jnp.linalg.solve(dense(jnp.asarray(parents), lower, diag, upper), b[..., None])[..., 0]


def _value_grad_jvp(solve, weights, args, tangents):
    loss = lambda *a: jnp.sum(weights * jnp.tanh(solve(*a)))
    return (solve(*args), jax.grad(loss, argnums=(0, 1, 2, 3))(*args),
            jax.jvp(loss, args, tangents)[1])


def value_grad_jvp(solve, weights, args, tangents):
    """Loss value, gradient w.r.t. all four inputs and a JVP, in one compiled call."""
    return jax.jit(functools.partial(_value_grad_jvp, solve))(weights, args, tangents)


@jax.jit
def dense_value_grad_jvp(parents, weights, args, tangents):
    """The same for the dense reference; ``parents`` is data, so it compiles once per size."""
    return _value_grad_jvp(lambda *a: dense_solve(parents, *a), weights, args, tangents)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("dtype,tol", [(jnp.float32, 2e-5), (jnp.float64, 1e-12)])
@pytest.mark.parametrize("shape", SHAPES)
def test_matches_dense_on_named_shapes(shape, dtype, tol, schedule):
    with jax.enable_x64(dtype == jnp.float64):
        parents = SHAPES[shape](17)
        tree, args = tree_system(parents, 0, dtype)
        x = tree_solve(tree, *args, schedule=schedule)
        assert x.dtype == dtype
        np.testing.assert_allclose(x, dense_solve(parents, *args), rtol=tol, atol=tol)


@pytest.mark.parametrize("schedule", SCHEDULES)
@SETTINGS
@given(parents=random_forests(), seed=st.integers(0, 2**16))
def test_random_forests_values_and_gradients(schedule, parents, seed):
    with jax.enable_x64():
        tree, args = tree_system(parents, seed, jnp.float64)
        tangents = dominant_system(parents, seed + 2, jnp.float64)
        weights = jax.device_put(np.random.default_rng(seed + 1).normal(size=parents.size))
        ours = value_grad_jvp(lambda *a: tree_solve(tree, *a, schedule=schedule),
                              weights, args, tangents)
        want = dense_value_grad_jvp(parents, weights, args, tangents)
        for got, ref in zip(jax.tree.leaves(ours), jax.tree.leaves(want), strict=True):
            np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_float32_gradients_match_dense(schedule):
    parents = binary(20)
    tree, args = tree_system(parents, 3, jnp.float32)
    weights = jnp.linspace(-1, 1, parents.size)
    ours = value_grad_jvp(lambda *a: tree_solve(tree, *a, schedule=schedule), weights, args, args)
    want = dense_value_grad_jvp(parents, weights, args, args)
    for got, ref in zip(jax.tree.leaves(ours), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_vmap_over_rhs_and_matrices_under_jit(schedule):
    with jax.enable_x64():
        parents = forest(15)
        tree, (lower, diag, upper, b) = tree_system(parents, 4, jnp.float64, batch=(3,))
        solve = jax.jit(jax.vmap(lambda lo, d, up, rhs: tree_solve(tree, lo, d, up, rhs,
                                                                   schedule=schedule)))
        want = dense_solve(parents, lower, diag, upper, b)
        np.testing.assert_allclose(solve(lower, diag, upper, b), want, rtol=1e-12)
        one_matrix = jax.jit(jax.vmap(lambda rhs: tree_solve(  # one compile, not one per op
            tree, lower[0], diag[0], upper[0], rhs, schedule=schedule)))(b)
        want = dense_solve(parents, lower[0], diag[0], upper[0], b)
        np.testing.assert_allclose(one_matrix, want, rtol=1e-12)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_batched_entries_and_several_right_hand_sides(schedule):
    with jax.enable_x64():
        parents = binary(9)
        tree, (lower, diag, upper, _) = tree_system(parents, 5, jnp.float64, batch=(2,))
        b = jax.device_put(np.random.default_rng(6).normal(size=(2, 9, 4)))
        x = jax.jit(lambda *a: tree_solve(tree, *a, schedule=schedule))(lower, diag, upper, b)
        want = jax.jit(lambda *a: jnp.linalg.solve(dense(jnp.asarray(parents), *a[:3]), a[3]))(
            lower, diag, upper, b)  # jitted: one compile each, not one per op
        assert x.shape == (2, 9, 4)
        np.testing.assert_allclose(x, want, rtol=1e-12)


def test_schedules_agree_on_a_deep_tree():
    with jax.enable_x64():
        parents = np.concatenate([path(300), 300 + binary(200)])
        parents[300] = 299
        tree, args = tree_system(parents, 7, jnp.float64)
        np.testing.assert_allclose(tree_solve(tree, *args, schedule="level"),
                                   tree_solve(tree, *args, schedule="sequential"), rtol=1e-12)


def test_tree_structure_has_children_before_parents():
    parents = np.array([3, 3, -1, 2, 0, -1])
    tree = Tree.from_parents(parents)
    position = {node: i for i, node in enumerate(tree.order)}
    assert sorted(tree.order.tolist()) == [0, 1, 3, 4]
    for child in tree.order:
        if parents[parents[child]] >= 0:
            assert position[child] < position[parents[child]]
    assert tree.depth == 3
    assert tree.levels.tolist() == [[1, 4], [0, 6], [3, 6]]


@pytest.mark.parametrize("parents,match", [
    ([-1, 0, 5], "node 2 has parent 5"),
    ([-1, -2], "node 1 has parent -2"),
    ([-1, 1], "node 1 is its own parent"),
    ([-1, 0, 3, 2], "node [23] is on a cycle"),
    ([[0]], "1-D"),
    ([0.5], "integer"),
])
def test_bad_parents_name_the_node(parents, match):
    with pytest.raises(TreeError, match=match):
        Tree.from_parents(parents)


def test_check_reports_non_finite_node():
    parents = path(4)
    tree = Tree.from_parents(parents)
    diag = jnp.array([1.0, 0.0, 1.0, 1.0])
    with pytest.raises(NonFiniteError, match="node"):
        tree_solve(tree, jnp.zeros(4), diag, jnp.zeros(4), jnp.ones(4), check=True)
    unchecked = tree_solve(tree, jnp.zeros(4), diag, jnp.zeros(4), jnp.ones(4))
    assert not bool(jnp.isfinite(unchecked).all())


def test_solver_numbering_puts_parents_first_and_is_skipped_when_already_so():
    rng = np.random.default_rng(3)
    n = 200
    parents = np.array([-1] + [int(rng.integers(0, i)) for i in range(1, n)])
    shuffle = rng.permutation(n)
    renamed = np.full(n, -1)
    renamed[shuffle] = np.where(parents < 0, -1, shuffle[parents])
    tree = Tree.from_parents(renamed)
    assert sorted(tree.permutation.tolist()) == list(range(n))
    local = tree.local.parents
    assert local[0] == -1 and np.all(local[1:] < np.arange(1, n))
    np.testing.assert_array_equal(
        local[1:], np.argsort(tree.permutation)[renamed[tree.permutation[1:]]])
    assert Tree.from_parents(np.array([-1, 0, 0, 1, 1])).local is None


@pytest.mark.parametrize("schedule,dtype,tol", [("sequential", jnp.float32, 1e-5),
                                                ("level", jnp.float64, 1e-12)])
def test_solve_in_layout_matches_tree_solve(schedule, dtype, tol):
    parents = np.array([4, -1, 1, 1, 2, 4, 3, 9, -1, 8, 5, 0])  # two roots, any numbering
    tree = Tree.from_parents(parents)
    weights = np.linspace(-1.0, 2.0, parents.size)
    with jax.enable_x64(dtype == jnp.float64):

        def layout(a, fill):  # the dummy appended, in the solver's order
            return jnp.concatenate([a, jnp.full(1, fill, dtype)])[tree.to_local]

        def in_layout(lower, diag, upper, b):  # roots' couplings zeroed, as the layout needs
            lower, upper = (jnp.where(parents < 0, 0, a) for a in (lower, upper))
            x = tree_solve_in_layout(tree.local, layout(lower, 0), layout(diag, 1),
                                     layout(upper, 0), layout(b, 0), schedule=schedule)
            x = x[tree.from_local]
            return jnp.sum(weights * x[:-1]), x

        def reference(*args):
            x = tree_solve(tree, *args, schedule=schedule)
            return jnp.sum(weights * x), x

        args = dominant_system(parents, 5, dtype)
        (_, ours), grads = jax.jit(jax.value_and_grad(in_layout, (0, 1, 2, 3), has_aux=True))(
            *args)
        (_, theirs), expected = jax.jit(jax.value_and_grad(reference, (0, 1, 2, 3),
                                                           has_aux=True))(*args)
        assert float(ours[-1]) == 0.0
        np.testing.assert_allclose(ours[:-1], theirs, rtol=tol, atol=tol)
        for mine, want in zip(grads, expected, strict=True):
            np.testing.assert_allclose(mine, want, rtol=tol, atol=tol)
    with pytest.raises(StructureError, match=r"tree\.local"):
        tree_solve_in_layout(tree, *(jnp.ones(parents.size + 1),) * 4)
    with pytest.raises(StructureError, match="nodes and the dummy"):
        tree_solve_in_layout(tree.local, *(jnp.ones(parents.size),) * 4)


def test_isolated_nodes_leave_the_solution_unchanged():
    """Nodes appended without parent or children solve to b / diag; the others are untouched."""
    parents = np.array([4, -1, 1, 1, 2, 4, 3, 9, -1, 8, 5, 0])
    tree = Tree.from_parents(parents).local
    padded = tree.with_isolated_nodes(5)
    assert padded.local is None and padded.n == tree.n + 5
    np.testing.assert_array_equal(padded.order, tree.order)
    extra_diag, extra_b = np.linspace(1.0, 2.0, 5), np.linspace(-1.0, 1.0, 5)
    with jax.enable_x64():
        lower, diag, upper, b = map(np.asarray, dominant_system(tree.parents, 3, jnp.float64))
        x = tree_solve(tree, lower, diag, upper, b)
        x_padded = tree_solve(padded, np.r_[lower, np.zeros(5)], np.r_[diag, extra_diag],
                              np.r_[upper, np.zeros(5)], np.r_[b, extra_b])
    np.testing.assert_allclose(x_padded[:tree.n], x, rtol=1e-13)
    np.testing.assert_allclose(x_padded[tree.n:], extra_b / extra_diag, rtol=1e-15)
    with pytest.raises(StructureError, match=r"tree\.local"):
        Tree.from_parents(parents).with_isolated_nodes(1)
