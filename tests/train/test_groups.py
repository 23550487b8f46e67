"""packed with groups against optax.multi_transform of the same transformations; errors."""

import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxlean.errors import ConfigError, StructureError
from jaxlean.train.muon import matrix_transform, muon
from jaxlean.train.packed import packed

from .sharded_steps import MIXED_2X2, PRELUDE
from .test_packed import assert_trees_close, random_grads, random_params

GROUPS = {
    "decay": lambda: optax.adamw(1e-2, weight_decay=0.1),
    "no_decay": lambda: optax.adamw(1e-2, weight_decay=0.0),
    "embed": lambda: optax.chain(optax.clip_by_global_norm(0.5), optax.adam(3e-2)),
}
LABELS = {"enc": {"w": "embed", "b": "no_decay"}, "scale": "no_decay",
          "blocks": ["decay", ("no_decay", "decay")]}
FROZEN = {"enc": {"w": True, "b": False}, "scale": True, "blocks": [True, (False, True)]}


def run_steps(tx, params, grads_seq):
    state = tx.init(params)
    update = jax.jit(tx.update)
    outs = []
    for grads in grads_seq:
        updates, state = update(grads, state, params)
        params = optax.apply_updates(params, updates)
        outs.append(params)
    return outs, state


@pytest.mark.parametrize("frozen", [False, True], ids=["all", "frozen"])
def test_groups_match_multi_transform_step_by_step(frozen):
    params = random_params(0)  # float32 and bfloat16 leaves
    grads_seq = random_grads(params, 1)
    transforms = {name: make() for name, make in GROUPS.items()}
    labels = LABELS
    if frozen:
        labels = jax.tree.map(lambda label, f: label if f else "frozen", LABELS, FROZEN)
        transforms["frozen"] = optax.set_to_zero()
    reference = optax.multi_transform(transforms, labels)
    expected, _ = run_steps(reference, params, grads_seq)
    got, state = run_steps(packed({name: make() for name, make in GROUPS.items()},
                                  FROZEN if frozen else None, param_labels=labels),
                           params, grads_seq)
    for e, g in zip(expected, got, strict=True):
        assert_trees_close(g, e, f32_tol=1e-4)  # clip's bf16 norm sums round per buffer
    moved = [not np.array_equal(a, b) for a, b in zip(jax.tree.leaves(got[-1]),
                                                       jax.tree.leaves(params), strict=True)]
    assert moved == (jax.tree.leaves(FROZEN) if frozen else [True] * len(moved))
    # One buffer per (group, dtype): the state does not grow with the number of leaves.
    buffers = state.layout.buffers
    assert len(buffers) == len({(b.part, b.dtype) for b in buffers})


def test_state_is_o_groups_times_dtypes():
    def count(n_leaves):
        params = {f"l{i}": jax.device_put(np.ones((i + 1,), jnp.bfloat16 if i % 2 else np.float32))
                  for i in range(n_leaves)}
        labels = {name: "a" if i % 3 else "b" for i, name in enumerate(params)}
        tx = packed({"a": optax.adam(1e-3), "b": optax.adamw(1e-3)}, param_labels=labels)
        # the state's leaves, traced as init makes them (no compile per shape)
        return len(jax.tree.leaves(jax.eval_shape(tx.init, params)))

    assert count(6) == count(60) == 2 * (1 + 2 * 2)  # per group: count, mu and nu per dtype


def test_label_function_and_muon_with_adam_in_one_call():
    params = {"w": jnp.ones((3, 4, 4)), "norm": jnp.ones(4), "emb": jnp.ones((10, 4))}
    label = lambda p: {"w": "muon", "norm": "adam", "emb": "adam"}
    tx = packed({"muon": muon(0.02), "adam": optax.adam(1e-3)}, param_labels=label)
    state = tx.init(params)
    shapes = sorted(x.shape for x in jax.tree.leaves(state) if x.ndim)
    assert (3, 4, 4) in shapes and (44,) in shapes  # muon momentum; adam mu/nu of 4 + 40


def test_extra_args_reach_the_inner_transformation():
    def scale_by_value():
        return optax.GradientTransformationExtraArgs(
            lambda params: optax.EmptyState(),
            lambda updates, state, params=None, *, value: (
                jax.tree.map(lambda u: u * value, updates), state))

    params = {"a": jnp.ones(3), "b": jnp.ones((2, 2))}
    tx = packed(scale_by_value())
    updates, _ = tx.update(params, tx.init(params), params, value=4.0)
    np.testing.assert_array_equal(updates["b"], 4 * np.ones((2, 2)))


def test_errors_name_the_path_and_say_what_to_do():
    params = {"a": jnp.ones(2), "b": {"c": jnp.ones((3, 3))}}
    with pytest.raises(StructureError,
                       match=r"param_labels\['a'\] is 'nope', which names no group"):
        packed({"x": optax.adam(1e-3)}, param_labels={"a": "nope", "b": "x"}).init(params)
    with pytest.raises(StructureError, match=r"params\['a'\] has shape \(2,\).*fallback"):
        packed(matrix_transform(optax.sgd(0.1))).init(params)
    with pytest.raises(StructureError,
                       match=r"params\['b'\]\['c'\] has no entry in `param_labels`"):
        packed({"x": optax.adam(1e-3)}, param_labels={"a": "x", "b": {"d": "x"}}).init(params)
    with pytest.raises(ConfigError, match="no param_labels="):
        packed({"x": optax.adam(1e-3)})
    with pytest.raises(ConfigError, match="needs tx to be a dict"):
        packed(optax.adam(1e-3), param_labels={"a": "x", "b": "x"})
    masked = optax.adamw(1e-3, mask={"a": False, "b": True})
    with pytest.raises(ConfigError, match="param_labels= instead"):
        packed(masked).init(params)
    with pytest.raises(ConfigError, match="param_labels= instead"):
        packed(optax.masked(optax.adam(1e-3), lambda p: {"a": True, "b": {"c": False}})
               ).init(params)


def test_the_former_labels_keyword_raises_naming_param_labels():
    with pytest.raises(ConfigError, match="'labels' is now called 'param_labels'"):
        packed({"x": optax.adam(1e-3)}, labels={"a": "x"})
    with pytest.raises(TypeError, match="unexpected keyword"):
        packed(optax.adam(1e-3), label={"a": "x"})


# run on 4 devices by tests/train/test_four_devices.py, with the other trainers' checks
SHARDED_SCRIPT = PRELUDE + MIXED_2X2 + textwrap.dedent("""
    labels = {"a": "decay", "b": "plain", "c": "plain", "d": "decay", "e": "frozen"}
    loss = lambda p: sum(jnp.sum(jnp.sin(x.astype(jnp.float32))) for x in jax.tree.leaves(p))
    groups = lambda: {"decay": optax.adamw(0.1, weight_decay=0.5), "plain": optax.adam(0.05)}
    reference = optax.multi_transform({**groups(), "frozen": optax.set_to_zero()}, labels)
    ours = packed(groups(), {"a": True, "b": True, "c": True, "d": True, "e": False},
                  param_labels=labels)

    results = run_both([("packed", ours), ("plain", reference)], params, loss,
                       r"all-gather|all-to-all|collective-permute")
    for name in params:
        got, want = results["packed"][name], results["plain"][name]
        assert got.sharding.spec == want.sharding.spec, name
        np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                                   rtol=1e-6, atol=1e-6, err_msg=name)
    print("ok")
""")
