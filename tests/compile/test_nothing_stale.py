"""A warm restart never computes with a program that no longer exists.

Compiles are keyed on the lowered program (JAX's persistent cache), never on Python
source: each case that a source-keyed executable cache missed (a helper in another
module or a submodule edited between two processes, an import inside the function,
a class attribute and a module global set from the command line, a typed PRNG key
argument) computes the new program's values in the second process, with the cache
warm. A JAX config context manager inside one process gets its own program too.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import numpy as np

from tests.conftest import child_env

JOB = textwrap.dedent('''
    import json, sys
    import equinox as eqx, jax, jax.numpy as jnp, optax
    from jaxlean import cache_stats, enable_compilation_cache
    from jaxlean.train.step import make_train_step

    enable_compilation_cache(sys.argv[1], min_compile_secs=0)
    import helpers
    import pkg.ops

    class Cfg:
        scale = 1.0

    Cfg.scale = float(sys.argv[2])
    SHIFT = float(sys.argv[2])

    class Model(eqx.Module):
        w: jax.Array

        def __call__(self, x):
            return helpers.h(pkg.ops.g(self.w * x)) * Cfg.scale + SHIFT

    def inner_import(x):
        import helpers as late
        return late.h(x)

    x = jnp.arange(3.0)
    model = Model(jnp.ones(3))
    step = make_train_step(lambda m, x, key: jnp.sum(m(x) * jax.random.uniform(key, x.shape)),
                           optax.sgd(0.5))
    out = {"model": jax.jit(lambda m, x: m(x))(model, x).tolist(),
           "inner_import": jax.jit(inner_import)(x).tolist()}
    _, _, loss = step(model, optax.sgd(0.5).init(model), x, jax.random.key(0))  # donates the state
    out.update(step_loss=float(loss), hits=cache_stats().hits)
    print(json.dumps(out))
''')


def _write_helpers(where: Path, shift: float, factor: float) -> None:
    (where / "helpers.py").write_text(f"def h(x):\n    return x + {shift}\n")
    (where / "pkg").mkdir(exist_ok=True)
    (where / "pkg" / "__init__.py").write_text("")
    (where / "pkg" / "ops.py").write_text(f"def g(x):\n    return x * {factor}\n")


def _run(where: Path, scale: float) -> dict:
    env = {**child_env(where), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, str(where / "job.py"), str(where / "xla"), str(scale)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _expected(shift: float, factor: float, scale: float) -> np.ndarray:
    return ((np.arange(3.0) * factor) + shift) * scale + scale


def test_edits_between_processes_compute_the_new_program(tmp_path):
    (tmp_path / "job.py").write_text(JOB)
    _write_helpers(tmp_path, shift=1.0, factor=2.0)
    first = _run(tmp_path, scale=1.0)
    np.testing.assert_allclose(first["model"], _expected(1.0, 2.0, 1.0))
    np.testing.assert_allclose(first["inner_import"], np.arange(3.0) + 1.0)

    again = _run(tmp_path, scale=1.0)  # nothing changed: the warm cache serves it, same values
    assert again["hits"] > 0
    assert again == {**first, "hits": again["hits"]}

    _write_helpers(tmp_path, shift=10.0, factor=3.0)
    edited = _run(tmp_path, scale=2.0)
    np.testing.assert_allclose(edited["model"], _expected(10.0, 3.0, 2.0))
    np.testing.assert_allclose(edited["inner_import"], np.arange(3.0) + 10.0)
    assert edited["step_loss"] != first["step_loss"]


def test_a_config_context_gets_its_own_program():
    draw = jax.jit(lambda key: jax.random.normal(key, (8,)))
    key = jax.random.key(0)
    outside = draw(key)
    partitionable = jax.config.jax_threefry_partitionable
    with jax.threefry_partitionable(not partitionable):
        inside = draw(key)
        eager = jax.random.normal(key, (8,))
    np.testing.assert_array_equal(inside, eager)
    assert not np.array_equal(inside, outside)
    np.testing.assert_array_equal(draw(key), outside)
