"""packed on meshes as ``jax.make_mesh`` makes them: Explicit and Auto axes, 4 forced devices.

One subprocess runs the cases in three sections (AdamW, LAMB, Muon and the matrix
transformation), each leaf keeping its sharding, all in one test (xdist's worksteal
hands a module's tests to both workers, and each ran the module's child): packed AdamW
against optax per leaf, on Explicit axes (with and without ``jax.set_mesh``) and
on Auto axes; packed LAMB (its trust ratios on per-leaf views of the sharded
buffers) on Explicit axes under ``jax.set_mesh`` and on Auto axes; packed Muon
(``[B, m, n]`` buffers of sharded stacks) against unpacked Muon on Explicit axes
under ``jax.set_mesh``, and a matrix transformation against
``optax.multi_transform`` on Auto axes. packed's exactness probe (small unplaced arrays)
compiles for one device even under ``jax.set_mesh`` of an Explicit mesh.
"""

import textwrap

import pytest

from tests.parallel.sections import check_sections, run_sections

SCRIPT = textwrap.dedent("""
    import contextlib
    import jax, jax.numpy as jnp, numpy as np, optax
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
    from jaxlean._random import normal
    from jaxlean.train.muon import matrix_transform, muon
    from jaxlean.train import _packed_probe
    from jaxlean.train.packed import packed

    def normalize_matrices():
        # per matrix (last two axes): a matrix optimizer's contract, like Muon's
        def update(u, state, params=None):
            return jax.tree.map(
                lambda x: x / jnp.sqrt(jnp.sum(x * x, axis=(-2, -1), keepdims=True)), u), state
        return optax.GradientTransformation(lambda p: optax.EmptyState(), update)

    def matrix_or_vector(params):
        return jax.tree.map(lambda x: "m" if x.ndim >= 2 else "v", params)

    def cases(explicit, use_mesh):
        yield "adamw", packed(optax.adamw(0.1, weight_decay=0.1)), optax.adamw(
            0.1, weight_decay=0.1)
        if use_mesh or not explicit:  # a trust ratio per leaf: on views of the sharded buffers
            yield "lamb", packed(optax.lamb(0.1)), optax.lamb(0.1)
        if explicit and use_mesh:  # Muon is a matrix transformation too: its own packing
            yield "muon", packed(muon(0.05)), muon(0.05)
        elif not explicit:
            mat = optax.chain(normalize_matrices(), optax.sgd(0.05))
            yield "matrix", packed(matrix_transform(mat, fallback=optax.adamw(0.1))), \\
                optax.multi_transform({"m": mat, "v": optax.adamw(0.1)}, matrix_or_vector)

    loss = lambda p: sum(jnp.sum(jnp.sin(x.astype(jnp.float32))) for x in jax.tree.leaves(p))

    def run(tx, params):
        def step(params, state):
            updates, state = tx.update(jax.grad(loss)(params), state, params)
            return optax.apply_updates(params, updates), state
        step = jax.jit(step)
        state = tx.init(params)
        for _ in range(3):
            params, state = step(params, state)
        return params

    def check(wanted):
        for axis_type, use_mesh in [(AxisType.Explicit, True), (AxisType.Explicit, False),
                                    (AxisType.Auto, False)]:
            mesh = jax.make_mesh((2, 2), ("x", "y"), axis_types=(axis_type,) * 2)
            put = lambda x, spec: jax.device_put(x, NamedSharding(mesh, spec))
            keys = jax.random.split(jax.random.key(0), 6)
            params = {
                "stack": put(normal(keys[0], (8, 4, 6)), P("x", None, "y")),
                "w": put(normal(keys[1], (4, 4)), P("x", None)),
                "b": put(normal(keys[2], (16,)), P("x")),
                "c": put(normal(keys[3], (3,)), P()),
                "d": put(normal(keys[4], (4, 8)), P(None, ("x", "y"))),
                "e": put(normal(keys[5], (4, 6)).astype(jnp.bfloat16), P("y", "x")),
            }
            context = jax.set_mesh(mesh) if use_mesh else contextlib.nullcontext()
            for name, ours, plain in cases(axis_type == AxisType.Explicit, use_mesh):
                if name not in wanted:
                    continue
                with context:
                    got, want = run(ours, params), run(plain, params)
                for key, x in params.items():
                    where = (str(axis_type), use_mesh, name, key)
                    assert got[key].sharding.is_equivalent_to(x.sharding, x.ndim), \
                        (where, got[key].sharding)
                    assert got[key].dtype == x.dtype, where
                    np.testing.assert_allclose(
                        np.asarray(got[key], np.float32), np.asarray(want[key], np.float32),
                        rtol=1e-2 if x.dtype == jnp.bfloat16 else 1e-5, atol=1e-6,
                        err_msg=str(where))
                probes = {d for compiled in _packed_probe._COMPILED.values()
                          for s in jax.tree.leaves(compiled.input_shardings) for d in s.device_set}
                assert len(probes) == 1, (where, "probe compiled for", probes)
                print("passed", axis_type, use_mesh, name)
""")


CASES = {"adamw": ({"adamw"}, 3), "lamb": ({"lamb"}, 2), "muon_matrix": ({"muon", "matrix"}, 2)}


@pytest.mark.slow
def test_packed_keeps_shardings_on_explicit_and_auto_axes_on_four_devices(tmp_path):
    results = run_sections(tmp_path, SCRIPT,
                           {name: f"check({names!r})" for name, (names, _) in CASES.items()},
                           devices=4)
    stdout = check_sections(results)
    for case, (_, count) in CASES.items():
        assert stdout[case].count("passed") == count, (case, stdout[case])
