"""Fixtures shared by the compilation-cache tests."""

import jax
import pytest

from jaxlean.compile import _jax_private

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
