"""Quick-compile options: only those the installed XLA has."""

import jax
import numpy as np

from jaxlean.compile import quick


def test_options_this_xla_lacks_are_dropped_and_the_rest_compile(monkeypatch):
    monkeypatch.setattr(quick, "WANTED", {**quick.WANTED, "xla_no_such_option_here": True})
    quick._accepted.cache_clear()
    try:
        options = quick.quick_compile_options()
    finally:
        quick._accepted.cache_clear()
    assert "xla_no_such_option_here" not in options
    assert options["xla_backend_optimization_level"] == 0
    compiled = jax.jit(lambda x: 2 * x).lower(np.float32(3)).compile(compiler_options=options)
    assert compiled(np.float32(3)) == 6
