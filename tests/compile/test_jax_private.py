"""The checked JAX internals: present ones pass, missing or reshaped ones are named."""

from __future__ import annotations

import pathlib

import jax
import pytest

from jaxlean.compile import _jax_private, multiprocess_key
from jaxlean.compile.cache import enable_compilation_cache
from jaxlean.errors import CacheError

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "jaxlean"


@pytest.fixture
def rescan():
    """Re-check the internals after the test undoes its simulated JAX change."""
    saved = {name: getattr(jax.config, name) for name in
             ("jax_compilation_cache_dir", "jax_enable_compilation_cache")}
    yield _jax_private.refresh
    for name, value in saved.items():
        jax.config.update(name, value)
    _jax_private.refresh()
    _jax_private.reset_persistent_cache()


def test_installed_jax_has_every_internal():
    assert _jax_private.refresh() == {}
    for internal in _jax_private.INTERNALS:
        _jax_private.get(internal.path)
    assert _jax_private.CacheInterface is not object


def test_only_this_module_imports_jax_private_modules():
    offenders = [path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")
                 if path.name != "_jax_private.py"
                 and any(word in path.read_text() for word in
                         ("from jax._src", "import jax._src", 'import_module("jax._src'))]
    assert offenders == []


def test_missing_required_internal_is_named_with_the_jax_version(rescan, monkeypatch, tmp_path):
    monkeypatch.delattr("jax._src.compilation_cache.reset_cache")
    problems = rescan()
    assert list(problems) == ["jax._src.compilation_cache.reset_cache"]
    with pytest.raises(CacheError, match=rf"jax {jax.__version__}: "
                                         r"jax\._src\.compilation_cache\.reset_cache does not "
                                         r"exist \(jaxlean uses it to forget"):
        enable_compilation_cache(tmp_path)
    with pytest.raises(CacheError, match="reset_cache"):
        _jax_private.get("jax._src.compilation_cache.reset_cache")


def test_reshaped_internal_is_a_problem(rescan, monkeypatch):
    monkeypatch.setattr("jax._src.compilation_cache.decompress_executable",
                        lambda executable, level: executable)
    problems = rescan()
    assert "takes (executable, level), jaxlean expects (executable)" in problems[
        "jax._src.compilation_cache.decompress_executable"]


def test_missing_module_is_a_problem(rescan, monkeypatch):
    monkeypatch.setattr(_jax_private, "INTERNALS", (
        *_jax_private.INTERNALS, _jax_private.Internal("jax._src.no_such_module.thing", "test")))
    assert "jax._src.no_such_module.thing does not exist" in rescan()[
        "jax._src.no_such_module.thing"]


def test_optional_internal_warns_and_is_skipped(rescan, monkeypatch, tmp_path):
    monkeypatch.setattr("jax._src.cache_key._hash_accelerator_config",
                        lambda hash_obj, topology: None)  # reshaped: a renamed parameter
    problems = rescan()
    assert list(problems) == [multiprocess_key.INTERNAL]
    assert multiprocess_key.install() is False
    reason = r"_hash_accelerator_config takes \(hash_obj, topology\).*skipped"
    with pytest.warns(UserWarning, match=reason):
        assert enable_compilation_cache(tmp_path / "cache", min_compile_secs=0) is not None
    assert float(jax.jit(lambda x: x * 2.0)(1.5)) == 3.0


def test_process_index_falls_back_to_public_api(rescan, monkeypatch):
    monkeypatch.setattr("jax._src.distributed.global_state", object())
    rescan()
    assert _jax_private.process_index() == jax.process_index() == 0


def test_multiprocess_key_install_is_idempotent():
    assert multiprocess_key.install()
    patched = _jax_private.get(multiprocess_key.INTERNAL)
    assert getattr(patched, "_jaxlean_process_invariant", False)
    assert multiprocess_key.install()
    assert _jax_private.get(multiprocess_key.INTERNAL) is patched  # not wrapped twice
