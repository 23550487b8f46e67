"""Fixtures and child scripts shared by the compilation-cache tests."""

import textwrap

import jax
import pytest

from jaxlean.compile import _jax_private

# A child process's start: enables the cache in argv[1] and defines ``chain``, a jitted
# chain of 12 matmuls; each test appends what it runs and prints (JSON, last line).
CHAIN_CHILD = textwrap.dedent("""
    import json, sys
    import jax, jax.numpy as jnp
    from jaxlean.compile.cache import cache_stats, enable_compilation_cache

    enable_compilation_cache(sys.argv[1], min_compile_secs=0)

    @jax.jit
    def chain(x):
        for i in range(12):
            x = jnp.tanh(x @ x.T + i)
        return x.sum()
""")

_CONFIG_NAMES = ["jax_compilation_cache_dir", "jax_enable_compilation_cache",
                 "jax_persistent_cache_min_compile_time_secs",
                 "jax_persistent_cache_enable_xla_caches"]


@pytest.fixture
def restore_jax_cache_config():
    """Put JAX's cache configuration and state back as they were after the test."""
    saved = {name: getattr(jax.config, name) for name in _CONFIG_NAMES}
    yield
    for name, value in saved.items():
        jax.config.update(name, value)
    _jax_private.reset_persistent_cache()
