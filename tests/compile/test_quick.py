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


def test_the_probe_options_add_one_part_codegen_and_the_quick_ones_never_do(monkeypatch):
    quick._accepted.cache_clear()
    try:
        probe, options = quick.probe_compile_options(), quick.quick_compile_options()
        assert probe == {**options, **quick.ONE_PART}  # this jaxlib has every option
        assert not set(options) & set(quick.ONE_PART)  # fit's loop: its last bits unchanged
        monkeypatch.setattr(quick, "ONE_PART", {"xla_no_such_split_option": 1})
        quick._accepted.cache_clear()
        assert quick.probe_compile_options() == quick.quick_compile_options() == options
    finally:
        quick._accepted.cache_clear()


def test_an_error_that_is_not_a_refused_option_is_raised():
    error = RuntimeError("INVALID_ARGUMENT: something else went wrong")
    assert quick._refused(error, ["xla_backend_optimization_level"]) is None
    refused = RuntimeError("INVALID_ARGUMENT: No such compile option: 'xla_b'")
    assert quick._refused(refused, ["xla_a", "xla_b"]) == "xla_b"
