"""One process of the ``first_epoch`` benchmark: pyPMM's seed benchmark, or jaxlean's, run once.

``python -m jaxlean.bench._pypmm_fresh SIDE DEPTH`` builds the seed's model
(``DEPTH`` of pyPMM's ``AffineObservablePMM`` in a chain, n = 12, 6 eigenvectors,
smoothing 1, X and Y ones of shape (20, 5)), times its first epoch (wall and
CPU seconds, all of the process's threads) and prints one JSON line. Sides:

- ``pypmm``: pyPMM's own ``NonSequentialModel.train`` (mse, 1 epoch, batch 20,
  quiet), as its ``tests/test_compile_time.py`` times it; the line says which
  pyPMM ran (``scan``: the seed branch's scanned chain is in it);
- ``jaxlean`` / ``jaxlean_optimised``: :func:`jaxlean.train.fit.fit` on the same
  chain with pyPMM's complex Adam, ``quick_compile`` by its default rule / off;
- ``aot_step`` / ``aot_step_quick``: the ahead-of-time compile (trace, lower,
  compile) of the bare gradient + optimizer step of the same chain, nothing run:
  the floor, with XLA's default options / fit's quick ones;
- ``same``: both models with pyPMM's parameters on random inputs: output and
  gradient differences, and outputs after one epoch of each one's training.

pyPMM imports ``PRNGKeyArray`` (for type hints only) from a JAX module that newer
JAX moved; when that import fails the child names the same class under the old
module, so pyPMM's unmodified code runs on the installed JAX.
"""

from __future__ import annotations

import json
import sys
import time
import types
from typing import Any

WIDTH, EXAMPLES, LEARNING_RATE = 5, 20, 1e-3
SEED_MODULE = {"matrix_size": 12, "num_eig": 6, "num_secondaries": 1, "smoothing": 1.0}


def import_pypmm() -> Any:
    """pyPMM's package (``parametricmatrixmodels``); ImportError if it is not installed."""
    import jax

    try:
        import parametricmatrixmodels
    except ModuleNotFoundError as error:
        if error.name != "jax._src.prng":
            raise
        moved = types.ModuleType("jax._src.prng")
        moved.PRNGKeyArray = type(jax.random.key(0))
        sys.modules["jax._src.prng"] = moved
        import parametricmatrixmodels
    return parametricmatrixmodels


def _pypmm_model(pmm: Any, depth: int, seed: int = 42) -> Any:
    modules = {f"mod{i}": pmm.modules.AffineObservablePMM(
        output_size=WIDTH, bias_term=True, **SEED_MODULE) for i in range(depth)}
    connections = {"input": "mod0", f"mod{depth - 1}": "output",
                   **{f"mod{i}": f"mod{i + 1}" for i in range(depth - 1)}}
    model = pmm.NonSequentialModel(modules, connections)
    model.compile(seed, (WIDTH,))
    return model


def _seed_data() -> tuple[Any, Any]:
    import jax.numpy as jnp

    return jnp.ones((EXAMPLES, WIDTH), jnp.float32), jnp.ones((EXAMPLES, WIDTH), jnp.float32)


def _mse(graph: Any, batch: tuple[Any, Any]) -> Any:
    import jax.numpy as jnp

    x, y = batch
    return jnp.mean((graph(x) - y) ** 2)


def _pypmm_first_epoch(depth: int) -> dict[str, Any]:
    pmm = import_pypmm()
    model = _pypmm_model(pmm, depth)
    x, y = _seed_data()
    start, cpu = time.perf_counter(), time.process_time()
    model.train(x, y, loss_fn="mse", epochs=1, batch_size=EXAMPLES, verbose=False)
    return {"first_epoch_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu,
            "scan": hasattr(pmm.NonSequentialModel, "_can_use_scan")}


def _chain(depth: int) -> Any:
    import jax

    from jaxlean.models.pmm import pmm_chain

    return pmm_chain(depth, WIDTH, key=jax.random.key(42), **SEED_MODULE)


def _jaxlean_first_epoch(depth: int, quick_compile: bool | None) -> dict[str, Any]:
    import jax

    from jaxlean.models.pmm import complex_adam
    from jaxlean.train.fit import fit

    graph, data = _chain(depth), _seed_data()
    start, cpu = time.perf_counter(), time.process_time()
    fit(_mse, graph, data, complex_adam(LEARNING_RATE), epochs=1, batch_size=EXAMPLES,
        key=jax.random.key(0), progress=False, quick_compile=quick_compile)
    return {"first_epoch_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu}


def _aot_step(depth: int, compiler_options: dict | None = None) -> dict[str, Any]:
    import equinox as eqx
    import jax
    import optax

    from jaxlean.models.pmm import complex_adam

    params, static = eqx.partition(_chain(depth), eqx.is_array)
    tx, data = complex_adam(LEARNING_RATE), _seed_data()
    opt_state = tx.init(params)

    def step(params, opt_state, batch):
        loss, grads = jax.value_and_grad(lambda p: _mse(eqx.combine(p, static), batch))(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    start, cpu = time.perf_counter(), time.process_time()
    jax.jit(step).trace(params, opt_state, data).lower().compile(compiler_options)
    return {"compile_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu}


def _relative(a: Any, b: Any) -> float:
    import numpy as np

    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-30))


def _same(depth: int) -> dict[str, Any]:
    """pyPMM's and jaxlean's chain with pyPMM's parameters: outputs, gradients, one epoch."""
    import jax
    import jax.numpy as jnp

    from jaxlean.models.pmm import complex_adam
    from jaxlean.train.fit import fit

    pmm = import_pypmm()
    model = _pypmm_model(pmm, depth)
    x = jax.random.normal(jax.random.key(1), (EXAMPLES, WIDTH), jnp.float32)
    y = jnp.sin(x)
    names = [f"mod{i}" for i in range(depth)]

    params = model.get_params()
    ours = _rebuild(depth, params, names)
    forward = model._get_callable()
    state, rng = model.get_state(), model.get_rng()
    theirs_out = forward(params, x, False, state, rng)[0]
    theirs_loss = lambda p: jnp.mean((forward(p, x, False, state, rng)[0] - y) ** 2)
    theirs_grad = jax.grad(theirs_loss)(params)
    ours_grad = jax.grad(lambda g: _mse(g, (x, y)))(ours)
    grad_error = max(
        _relative(getattr(ours_grad.node(f"pmm{i}"), field), theirs_grad[name][index])
        for i, name in enumerate(names) for field, index in (("ms", 0), ("ds", 2), ("bias", 3)))
    trained, _ = fit(_mse, ours, (x, y), complex_adam(LEARNING_RATE), epochs=1,
                     batch_size=EXAMPLES, key=jax.random.key(0), progress=False)
    model.train(x, y, loss_fn="mse", epochs=1, batch_size=EXAMPLES, verbose=False)
    after = forward(model.get_params(), x, False, model.get_state(), rng)[0]
    return {"output": _relative(ours(x), theirs_out), "gradient": grad_error,
            "after_one_epoch": _relative(trained(x), after),
            "scan": hasattr(pmm.NonSequentialModel, "_can_use_scan")}


def _rebuild(depth: int, pypmm_params: dict, names: list[str]) -> Any:
    """jaxlean's chain holding pyPMM's parameters (same ``ms``, ``ds``, ``bias`` per module)."""
    import equinox as eqx

    from jaxlean.nn.graph import Graph, chain_edges

    graph = _chain(depth)
    nodes = {}
    for node, name in zip(graph.plan.nodes, names, strict=True):
        ms, _, ds, bias = pypmm_params[name]
        nodes[node] = eqx.tree_at(lambda m: (m.ms, m.ds, m.bias), graph.node(node),
                                  (ms, ds, bias))
    return Graph(nodes, chain_edges(list(nodes)))


def run_side(side: str, depth: int) -> dict[str, Any]:
    """What one fresh process measures (see the module docstring)."""
    from jaxlean.compile.quick import quick_compile_options

    sides = {"pypmm": lambda: _pypmm_first_epoch(depth),
             "jaxlean": lambda: _jaxlean_first_epoch(depth, None),
             "jaxlean_optimised": lambda: _jaxlean_first_epoch(depth, False),
             "aot_step": lambda: _aot_step(depth),
             "aot_step_quick": lambda: _aot_step(depth, quick_compile_options()),
             "same": lambda: _same(depth)}
    return sides[side]()


if __name__ == "__main__":
    import jax

    jax.config.update("jax_enable_compilation_cache", False)
    print(json.dumps(run_side(sys.argv[1], int(sys.argv[2]))), flush=True)
