"""Multi-process CPU runs keep XLA:CPU's collectives in order before a cache is enabled."""

import os

import pytest

from jaxlean.compile import _jax_private, cpu_collectives
from jaxlean.compile.cache import enable_compilation_cache
from jaxlean.errors import CacheError


@pytest.mark.parametrize(("flags", "want"), [
    ("", "--xla_cpu_enable_concurrency_optimized_scheduler=false"),
    ("--xla_force_host_platform_device_count=2",
     "--xla_force_host_platform_device_count=2 "
     "--xla_cpu_enable_concurrency_optimized_scheduler=false"),
    # the user's own setting wins
    ("--xla_cpu_enable_concurrency_optimized_scheduler=true",
     "--xla_cpu_enable_concurrency_optimized_scheduler=true"),
])
def test_initialize_turns_the_scheduler_off_unless_the_user_set_it(monkeypatch, flags, want):
    monkeypatch.setenv("XLA_FLAGS", flags)
    cpu_collectives.keep_collectives_in_order()
    cpu_collectives.keep_collectives_in_order()
    assert os.environ["XLA_FLAGS"] == want


@pytest.mark.parametrize("flags", ["", "--xla_cpu_enable_concurrency_optimized_scheduler",
                                   "--xla_cpu_enable_concurrency_optimized_scheduler=false "
                                   "--xla_cpu_enable_concurrency_optimized_scheduler=true"])
def test_a_multi_process_cpu_cache_with_the_scheduler_on_is_refused(monkeypatch, tmp_path, flags):
    monkeypatch.setenv("XLA_FLAGS", flags)
    monkeypatch.setattr(_jax_private, "process_count", lambda: 2)
    with pytest.raises(CacheError, match=r"collective mismatch.*scheduler=false"):
        enable_compilation_cache(tmp_path / "cache")


def test_the_check_passes_with_the_scheduler_off_or_one_process(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_concurrency_optimized_scheduler=false")
    monkeypatch.setattr(_jax_private, "process_count", lambda: 2)
    cpu_collectives.check_cache_is_safe()
    monkeypatch.setenv("XLA_FLAGS", "")
    monkeypatch.setattr(_jax_private, "process_count", lambda: 1)
    cpu_collectives.check_cache_is_safe()


@pytest.mark.parametrize("flags", ["--xla_force_host_platform_device_count=4",
                                   "--xla_force_host_platform_device_count=8 "
                                   "--xla_cpu_enable_concurrency_optimized_scheduler=true"])
def test_one_process_with_several_cpu_devices_and_the_scheduler_on_is_refused(
        monkeypatch, tmp_path, flags):
    """Several CPU devices in one process exchange collectives in-process: a loaded program
    hung there with the scheduler on (module docstring), so the cache is refused."""
    monkeypatch.setenv("XLA_FLAGS", flags)
    assert cpu_collectives.forced_cpu_devices() > 1
    with pytest.raises(CacheError, match=r"CPU devices in one process.*scheduler=false"):
        enable_compilation_cache(tmp_path / "cache")
    monkeypatch.setenv("XLA_FLAGS", flags + " --xla_cpu_enable_concurrency_optimized_scheduler"
                                            "=false")
    cpu_collectives.check_cache_is_safe()
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=1")
    assert cpu_collectives.forced_cpu_devices() == 1
    cpu_collectives.check_cache_is_safe()
