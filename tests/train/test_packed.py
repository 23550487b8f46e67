"""packed(tx) against plain optax on the pytree: same updates, dtypes, frozen leaves, errors."""

import textwrap

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxlean.errors import StructureError
from jaxlean.train.packed import PackedLayout, packed

from .sharded_steps import MIXED_2X2, PRELUDE

SCHEDULE = optax.linear_schedule(1e-2, 1e-3, transition_steps=3)
TRANSFORMS = {
    "adam": lambda: optax.adam(1e-2),
    "adamw": lambda: optax.adamw(1e-2, weight_decay=0.1),
    "clip_adam_schedule": lambda: optax.chain(optax.clip_by_global_norm(0.5),
                                              optax.adam(SCHEDULE)),
}


def random_params(seed, dtypes=(jnp.float32, jnp.bfloat16)):
    """A nested pytree (dict, list, tuple) of random leaves of mixed shapes and dtypes
    (NumPy-made: no eager compile per shape)."""
    rng = np.random.default_rng(seed)
    shapes = [(3, 4), (5,), (), (2, 3, 2), (7,), (4, 1)]
    leaves = [jax.device_put(np.asarray(rng.standard_normal(s), np.float32)
                          .astype(dtypes[i % len(dtypes)])) for i, s in enumerate(shapes)]
    return {"enc": {"w": leaves[0], "b": leaves[1]}, "scale": leaves[2],
            "blocks": [leaves[3], (leaves[4], leaves[5])]}


def random_grads(params, seed, n=4):
    """``n`` random gradients shaped and typed like ``params``, three times a standard
    normal (NumPy-made)."""
    rng = np.random.default_rng(seed)
    return [jax.tree.map(lambda x: jax.device_put(
        (3 * np.asarray(rng.standard_normal(x.shape), np.float32)).astype(x.dtype)), params)
        for _ in range(n)]


FROZEN = {"enc": {"w": True, "b": False}, "scale": True, "blocks": [True, (False, True)]}


def reference_steps(tx, params, grads_seq, trainable):
    """Plain optax on the pytree of trainable leaves only; frozen leaves never move."""
    flags = jax.tree.leaves(trainable)
    select = lambda tree: [x if f else None for x, f in zip(jax.tree.leaves(tree), flags,
                                                            strict=True)]
    theta = select(params)
    state = tx.init(theta)
    update = jax.jit(tx.update)  # one compile, not one per eager operation and shape
    outs = []
    for grads in grads_seq:
        updates, state = update(select(grads), state, theta)
        theta = optax.apply_updates(theta, updates)
        leaves = [t if f else p for t, p, f in zip(theta, jax.tree.leaves(params), flags,
                                                    strict=True)]
        outs.append(jax.tree.unflatten(jax.tree.structure(params), leaves))
    return outs


def packed_steps(tx, params, grads_seq, trainable):
    ptx = packed(tx, trainable)
    state = ptx.init(params)
    update = jax.jit(ptx.update)
    outs = []
    for grads in grads_seq:
        updates, state = update(grads, state, params)
        for u, p, f in zip(jax.tree.leaves(updates), jax.tree.leaves(params),
                           jax.tree.leaves(trainable), strict=True):
            assert u.dtype == p.dtype and u.shape == p.shape
            if not f:
                assert np.all(np.asarray(u) == 0)
        params = optax.apply_updates(params, updates)
        outs.append(params)
    return outs


def assert_trees_close(a, b, f32_tol=1e-6):
    for path_x, y in zip(jax.tree_util.tree_leaves_with_path(a), jax.tree.leaves(b), strict=True):
        path, x = path_x
        assert x.dtype == y.dtype, path
        tol = 2e-2 if x.dtype == jnp.bfloat16 else f32_tol if x.dtype == jnp.float32 else 1e-12
        np.testing.assert_allclose(np.asarray(x, np.float64), np.asarray(y, np.float64),
                                   rtol=tol, atol=tol, err_msg=jax.tree_util.keystr(path))


@pytest.mark.parametrize("name", list(TRANSFORMS))
@pytest.mark.parametrize("trainable", [None, FROZEN], ids=["all", "frozen"])
def test_packed_matches_plain_optax_step_by_step(name, trainable):
    params = random_params(0)
    mask = trainable or jax.tree.map(lambda _: True, params)
    grads_seq = random_grads(params, 1)
    expected = reference_steps(TRANSFORMS[name](), params, grads_seq, mask)
    got = packed_steps(TRANSFORMS[name](), params, grads_seq, mask)
    # The global norm sums bf16 leaves in bf16: one sum over the bf16 buffer rounds
    # differently from per-leaf sums, so the clip factor (and the f32 leaves) differ slightly.
    f32_tol = 1e-4 if name.startswith("clip") else 1e-6
    for e, g in zip(expected, got, strict=True):
        assert_trees_close(g, e, f32_tol)
    moved = [not np.array_equal(a, b) for a, b in zip(jax.tree.leaves(got[-1]),
                                                       jax.tree.leaves(params), strict=True)]
    assert moved == jax.tree.leaves(mask)


def test_float64_leaves_stay_float64_and_match():
    with jax.enable_x64():
        params = random_params(1, dtypes=(jnp.float64, jnp.float32, jnp.bfloat16))
        grads_seq = [jax.tree.map(lambda x, i=i: jax.device_put(
            np.cos(np.asarray(x, np.float32) * i).astype(x.dtype)), params) for i in range(1, 4)]
        mask = jax.tree.map(lambda _: True, params)
        tx = TRANSFORMS["adamw"]
        for e, g in zip(reference_steps(tx(), params, grads_seq, mask),
                        packed_steps(tx(), params, grads_seq, mask), strict=True):
            assert_trees_close(g, e)
        state = packed(tx()).init(params)
        buffer_dtypes = {x.dtype for x in jax.tree.leaves(state) if x.ndim == 1}
        assert buffer_dtypes == {jnp.dtype(jnp.float64), jnp.dtype(jnp.float32),
                                 jnp.dtype(jnp.bfloat16)}


def test_state_is_a_few_buffers_with_original_dtypes():
    def count(n_leaves):
        params = {f"l{i}": jax.device_put(np.ones((i + 1,), jnp.bfloat16 if i % 2 else np.float32))
                  for i in range(n_leaves)}
        # the state's shapes and dtypes, traced as init makes them (no compile per shape)
        state = jax.eval_shape(packed(optax.adam(1e-3)).init, params)
        return jax.tree.leaves(state)

    small, large = count(4), count(40)
    assert len(small) == len(large) == 1 + 2 * 2  # count, mu and nu per dtype group
    assert {x.dtype for x in large if x.ndim} == {jnp.dtype(jnp.float32), jnp.dtype(jnp.bfloat16)}
    assert sum(x.size for x in large if x.ndim) == 2 * sum(range(1, 41))


def test_frozen_leaves_have_no_state_and_predicate_form_agrees():
    params = random_params(2)
    n_trainable = sum(x.size for x, f in zip(jax.tree.leaves(params), jax.tree.leaves(FROZEN),
                                             strict=True) if f)
    state = packed(optax.adam(1e-3), FROZEN).init(params)
    assert sum(x.size for x in state.inner[0][0].mu) == n_trainable

    def by_path(path):
        return jax.tree_util.keystr(path) not in ("['enc']['b']", "['blocks'][1][0]")

    grads = jax.tree.map(lambda x: jax.device_put(np.ones(x.shape, x.dtype)), params)
    with_tree = packed(optax.sgd(0.1), FROZEN)
    with_predicate = packed(optax.sgd(0.1), by_path)
    u_tree, _ = with_tree.update(grads, with_tree.init(params), params)
    u_pred, _ = with_predicate.update(grads, with_predicate.init(params), params)
    for a, b in zip(jax.tree.leaves(u_tree), jax.tree.leaves(u_pred), strict=True):
        np.testing.assert_array_equal(a, b)


def test_prefix_mask_and_integer_leaves_are_frozen():
    params = {"enc": {"w": jnp.ones(3), "b": jnp.ones(2)}, "steps": jnp.arange(4),
              "dec": jnp.ones(5)}
    ptx = packed(optax.sgd(1.0), {"enc": False, "steps": True, "dec": True})
    grads = {"enc": {"w": jnp.ones(3), "b": jnp.ones(2)}, "steps": jnp.zeros(4, jnp.int32),
             "dec": jnp.ones(5)}
    updates, _ = ptx.update(grads, ptx.init(params), params)
    assert updates["steps"].dtype == jnp.int32 and not updates["steps"].any()
    assert not updates["enc"]["w"].any() and not updates["enc"]["b"].any()
    np.testing.assert_array_equal(updates["dec"], -np.ones(5))


def test_clipping_sees_the_same_global_norm():
    params = random_params(3, dtypes=(jnp.float32,))
    # packed by one program; the norms in NumPy (float64): no eager program per operation
    buffers = jax.jit(PackedLayout.plan(params).pack)(params)
    norm = lambda tree: np.sqrt(sum(np.sum(np.square(np.asarray(x, np.float64)))
                                    for x in jax.tree.leaves(tree)))
    np.testing.assert_allclose(norm(buffers), norm(params), rtol=1e-6)
    outer = optax.chain(optax.clip_by_global_norm(0.1), packed(optax.adam(1e-2)))
    inner = packed(optax.chain(optax.clip_by_global_norm(0.1), optax.adam(1e-2)))
    grads = jax.tree.map(lambda x: jax.device_put(10 * np.asarray(x)), params)
    # init and update in one program per transformation
    first_update = lambda tx: jax.jit(lambda g, p: tx.update(g, tx.init(p), p))(grads, params)
    u_outer, _ = first_update(outer)
    u_inner, _ = first_update(inner)
    assert_trees_close(u_outer, u_inner)


def test_pack_unpack_round_trip_keeps_static_and_frozen_leaves():
    params = {"fn": jnp.tanh, "w": jnp.arange(6.0).reshape(2, 3), "n": 3,
              "h": jnp.ones(2, jnp.bfloat16), "ids": jnp.arange(3)}
    layout = PackedLayout.plan(params,
                               {"fn": False, "w": True, "n": False, "h": True, "ids": False})
    buffers, frozen = layout.pack(params), layout.frozen(params)
    assert {b.dtype for b in buffers} == {jnp.dtype(jnp.float32), jnp.dtype(jnp.bfloat16)}
    assert len(frozen) == 1  # ids; fn and n are static
    back = layout.merge(layout.unpack(buffers), frozen)
    assert back["fn"] is jnp.tanh and back["n"] == 3
    np.testing.assert_array_equal(jax.jit(lambda b: layout.unpack(b)["w"])(buffers), params["w"])
    for name in ("w", "h", "ids"):
        assert back[name].dtype == params[name].dtype
        np.testing.assert_array_equal(back[name], params[name])


def test_structure_errors_name_the_path():
    params = {"a": jnp.ones(2), "b": {"c": jnp.ones(3)}}
    with pytest.raises(StructureError, match=r"params\['b'\]\['c'\] has no entry"):
        packed(optax.adam(1e-3), {"a": True, "b": {"d": True}}).init(params)
    with pytest.raises(StructureError, match=r"trainable\['z'\] does not match"):
        packed(optax.adam(1e-3), {"a": True, "b": True, "z": False}).init(params)
    with pytest.raises(StructureError, match=r"trainable\['a'\] is 1"):
        packed(optax.adam(1e-3), {"a": 1, "b": True}).init(params)
    ptx = packed(optax.adam(1e-3))
    with pytest.raises(StructureError, match="updates has structure"):
        ptx.update({"a": jnp.ones(2)}, ptx.init(params), params)


# run on 4 devices by tests/train/test_four_devices.py, with the other trainers' checks
SHARDED_SCRIPT = PRELUDE + MIXED_2X2 + textwrap.dedent("""
    loss = lambda p: sum(jnp.sum(jnp.sin(x.astype(jnp.float32))) for x in jax.tree.leaves(p))

    def check(name, state, found):
        if name == "packed":
            assert not found, found
            assert len(state.inner[0][0].mu) == 4, state.layout.buffers

    results = run_both([("packed", packed(optax.adamw(0.1))), ("plain", optax.adamw(0.1))],
                       params, loss, r"all-gather|all-to-all|collective-permute", check)
    for name in params:
        got, want = results["packed"][name], results["plain"][name]
        assert got.sharding.spec == want.sharding.spec, name
        np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                                   rtol=1e-2 if got.dtype == jnp.bfloat16 else 1e-6, err_msg=name)
    print("ok")
""")


def test_equinox_module_mask_is_a_pytree_not_a_predicate():
    """A callable Equinox model used as a bool mask (eqx-style) selects leaves by position."""
    model = eqx.nn.Linear(3, 2, key=jax.random.key(0))
    mask = eqx.tree_at(lambda m: (m.weight, m.bias), model, (True, False))
    tx = packed(optax.sgd(1.0), trainable=mask)
    grads = jax.tree.map(jnp.ones_like, model)
    updates, _ = tx.update(grads, tx.init(model), model)
    np.testing.assert_array_equal(updates.weight, -np.ones((2, 3)))
    np.testing.assert_array_equal(updates.bias, np.zeros(2))


def test_gradients_must_match_the_params_by_path_shape_and_dtype_class():
    params = {"a": jnp.ones((8, 4)), "b": jnp.ones(3, jnp.bfloat16)}
    ptx = packed(optax.sgd(0.1))
    state = ptx.init(params)
    good = {"a": jnp.ones((8, 4)), "b": jnp.ones(3, jnp.bfloat16)}
    with pytest.raises(StructureError, match=r"updates\['a'\] has shape \(4, 8\), but "
                                             r"params\['a'\] has shape \(8, 4\)"):
        ptx.update({**good, "a": jnp.ones((4, 8))}, state, params)
    with pytest.raises(StructureError, match=r"updates\['b'\] has dtype int32.*bfloat16"):
        ptx.update({**good, "b": jnp.ones(3, jnp.int32)}, state, params)
    with pytest.raises(StructureError, match=r"updates\['a'\] is dict"):
        ptx.update({**good, "a": {"x": jnp.ones((8, 4))}}, state, params)
    with pytest.raises(StructureError, match="updates has structure"):
        ptx.update({"a": good["a"]}, state, params)
    updates, _ = ptx.update({**good, "b": jnp.ones(3, jnp.float32)}, state, params)
    assert updates["b"].dtype == jnp.bfloat16  # another float dtype is cast to the param's


def test_a_trainable_selection_of_nothing_is_refused_naming_it():
    def is_lora_path(path):
        return "lora" in jax.tree_util.keystr(path)

    params = {"w": jnp.ones((2, 2)), "ids": jnp.arange(3)}
    with pytest.raises(StructureError, match=r"no parameter trains: trainable=.*is_lora_path "
                                             r"selected none of the 2 array leaves"):
        packed(optax.adam(1e-3), is_lora_path).init(params)
    with pytest.raises(StructureError, match="no parameter trains: trainable=None"):
        packed(optax.adam(1e-3)).init({"ids": jnp.arange(3)})


def test_the_former_name_layout_warns_and_is_packed_layout():
    import jaxlean
    import jaxlean.train.packed as module

    with pytest.warns(DeprecationWarning, match="now called PackedLayout"):
        assert module.Layout is PackedLayout
    assert jaxlean.PackedLayout is PackedLayout and "Layout" not in jaxlean.__all__
    with pytest.warns(DeprecationWarning, match="now called PackedLayout"):
        assert jaxlean.__getattr__("Layout") is PackedLayout
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018
