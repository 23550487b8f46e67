"""Muon on meshes as ``jax.make_mesh`` makes them (Explicit axes) and on Auto axes, 4 devices.

Values against ``optax.contrib.muon`` on one device (stacks: its last-two-axes
dimension numbers), and every parameter and momentum keeps its sharding. The script runs
in tests/train/test_four_devices.py, with the other trainers' 4-device checks.
"""

import textwrap

SCRIPT = textwrap.dedent('''
    import re
    import jax, jax.numpy as jnp, numpy as np, optax
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
    from optax.contrib import MuonDimensionNumbers
    from jaxlean._random import normal
    from jaxlean.train.muon import muon

    LEAVES = {  # name: (shape, spec on a 2 x 2 mesh ("a", "b"))
        "stack_layers": ((4, 8, 16), P(("a", "b"))),    # layer axis over all devices
        "stack_fsdp": ((4, 16, 8), P(None, "b")),        # a matrix axis split (FSDP)
        "stack_4d": ((2, 2, 8, 8), P("a", None, "b")),  # two leading axes, a matrix axis split
        "matrix": ((8, 16), P("a", "b")),               # a 2-D matrix split both ways
        "vector": ((16,), P("a")),
        "scalar": ((), P()),
    }
    keys = jax.random.split(jax.random.key(0), len(LEAVES))
    host = {name: normal(k, shape) for (name, (shape, _)), k in zip(LEAVES.items(), keys)}
    last_two = lambda p: jax.tree.map(
        lambda x: MuonDimensionNumbers(x.ndim - 2, x.ndim - 1) if x.ndim >= 2 else None, p)

    def train(tx, params, steps=3):
        def step(carry, scale):
            params, state = carry
            loss = lambda p: sum(jnp.sum(jnp.sin(x * scale) * x) for x in jax.tree.leaves(p))
            updates, state = tx.update(jax.grad(loss)(params), state, params)
            return (optax.apply_updates(params, updates), state), None
        run = jax.jit(lambda p, s: jax.lax.scan(step, (p, s), jnp.linspace(1, 2, steps))[0])
        return run(params, tx.init(params))

    want, _ = train(optax.contrib.muon(0.02, weight_decay=0.1,
                                       muon_weight_dimension_numbers=last_two), host)
    for axis_type in (AxisType.Explicit, AxisType.Auto):
        mesh = jax.make_mesh((2, 2), ("a", "b"), axis_types=(axis_type, axis_type))
        params = {name: jax.device_put(host[name], NamedSharding(mesh, spec))
                  for name, (_, spec) in LEAVES.items()}
        got, state = train(muon(0.02, weight_decay=0.1), params)
        momentum = state.matrix[0].mu
        for name, x in params.items():
            assert got[name].sharding.is_equivalent_to(x.sharding, x.ndim), (name, got[name])
            if x.ndim >= 2:
                assert momentum[name].sharding.is_equivalent_to(x.sharding, x.ndim), name
            np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6,
                                       err_msg=f"{axis_type} {name}")
        print(axis_type, "values and shardings ok")

    # Explicit FSDP stack: resplit along the layer axis (all-to-all), no gather of the matrices.
    mesh = jax.make_mesh((4,), ("fsdp",), axis_types=(AxisType.Explicit,))
    params = {"w": jax.device_put(host["stack_fsdp"], NamedSharding(mesh, P(None, "fsdp")))}
    tx = muon(0.02)
    text = jax.jit(tx.update).lower(params, tx.init(params), params).compile().as_text()
    print("collectives:", sorted(set(re.findall(r"all-gather|all-to-all", text))))
    print("ok")
''')

