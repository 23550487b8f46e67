"""The shared opening of the four-device optimizer checks (packed, groups, Muon).

Each check runs as a section of one child process with forced CPU devices (see
``tests/train/test_four_devices.py``); this text is the part they share: the
imports, ``put`` onto a mesh, a jitted optimizer step and :func:`run_both`, which compiles
each optimizer's step, prints the collectives its program contains and takes three steps.
A check's script is ``PRELUDE`` followed by its own parameters and assertions.
"""

import textwrap

PRELUDE = textwrap.dedent('''
    import re
    import jax, jax.numpy as jnp, numpy as np, optax
    from jaxlean._random import normal
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    from jaxlean.train.muon import muon
    from jaxlean.train.packed import packed


    def mesh_put(shape, axes):
        mesh = Mesh(np.array(jax.devices()).reshape(shape), axes)
        return lambda x, spec: jax.device_put(x, NamedSharding(mesh, spec))


    def run_both(optimizers, params, loss, collectives, check=lambda name, state, found: None):
        """{name: params after three steps} of each (name, tx); prints each program's
        collectives (those matching the regex ``collectives``) and calls ``check``."""
        def step(tx):
            def update(params, state):
                updates, state = tx.update(jax.grad(loss)(params), state, params)
                return optax.apply_updates(params, updates), state
            return jax.jit(update)

        results = {}
        for name, tx in optimizers:
            state = tx.init(params)
            compiled = step(tx).lower(params, state).compile()
            found = sorted(set(re.findall(collectives, compiled.as_text())))
            print(name, "collectives:", found)
            check(name, state, found)
            p, s = params, state
            for _ in range(3):
                p, s = compiled(p, s)
            results[name] = p
        return results
''')

MIXED_2X2 = textwrap.dedent('''
    put = mesh_put((2, 2), ("x", "y"))
    keys = jax.random.split(jax.random.key(0), 5)
    params = {  # every kind of split on a 2x2 mesh, and a bfloat16 leaf
        "a": put(normal(keys[0], (8, 4)), P("x", None)),
        "b": put(normal(keys[1], (16,)), P("x")),
        "c": put(normal(keys[2], (3,)), P()),
        "d": put(normal(keys[3], (4, 8)), P(None, ("x", "y"))),
        "e": put(normal(keys[4], (4, 6)).astype(jnp.bfloat16), P("y", "x")),
    }
''')
"""Five leaves on a 2x2 mesh ``("x", "y")``, split every way (after ``PRELUDE``)."""

__all__ = ["MIXED_2X2", "PRELUDE"]
