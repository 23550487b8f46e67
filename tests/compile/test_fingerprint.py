"""The function digest behind the executable cache changes with everything tracing reads."""

from __future__ import annotations

import importlib
import sys
import threading
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.compile.fingerprint import Unkeyable, fingerprint


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A module of the user's own (not an installed distribution), importable as ``settings``."""
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "settings.py"

    def write(source: str):
        path.write_text(source)
        sys.modules.pop("settings", None)
        importlib.invalidate_caches()
        return importlib.import_module("settings")

    yield write
    sys.modules.pop("settings", None)


def test_same_values_same_digest_across_calls():
    def f(x):
        return jnp.tanh(x) * 2

    assert fingerprint(f, (jnp.ones(3), {"b": 1, "a": 2})) == fingerprint(
        f, (jnp.ones(3), {"a": 2, "b": 1}))


def test_source_edit_anywhere_in_the_module_changes_the_digest(user_module):
    module = user_module("def helper(x):\n    return x + 1\n\ndef f(x):\n    return helper(x)\n")
    before = fingerprint(module.f)
    module = user_module("def helper(x):\n    return x + 2\n\ndef f(x):\n    return helper(x)\n")
    assert fingerprint(module.f) != before


def test_module_attribute_set_at_run_time_changes_the_digest(user_module):
    user_module("lr = 0.1\n")
    import settings

    def f(x):
        return x * settings.lr

    before = fingerprint(f)
    settings.lr = 0.2
    assert fingerprint(f) != before


def test_array_contents_dtype_and_shape_count():
    base = fingerprint(np.zeros(4, np.float32))
    assert base != fingerprint(np.zeros(4, np.float64))
    assert base != fingerprint(np.zeros((2, 2), np.float32))
    assert base != fingerprint(np.array([0, 0, 0, 1], np.float32))


def test_unhashable_value_is_named():
    lock = threading.Lock()

    def f(x):
        with lock:
            return x

    with pytest.raises(Unkeyable, match=r"<closure lock>: cannot hash a _thread\.lock"):
        fingerprint(f)


def test_class_without_source_file_is_hashed_by_its_methods():
    def make(factor: int) -> type:
        module = types.ModuleType("typed_in")  # like code typed into a notebook: no __file__
        sys.modules["typed_in"] = module
        exec(f"class Scale:\n    def __call__(self, x):\n        return x * {factor}\n",
             module.__dict__)
        return module.Scale

    try:
        assert fingerprint(make(2)) == fingerprint(make(2))
        assert fingerprint(make(2)) != fingerprint(make(3))
    finally:
        sys.modules.pop("typed_in", None)


def test_decorator_fields_count_for_user_code():
    def double(x):
        return x * 2

    assert fingerprint(jax.jit(double)) != fingerprint(jax.jit(double, donate_argnums=0))
    rules = []
    for factor in (1.0, 2.0):
        rule = jax.custom_jvp(double)
        rule.defjvp(lambda primals, tangents, factor=factor: (double(primals[0]),
                                                              factor * tangents[0]))
        rules.append(fingerprint(rule))
    assert rules[0] != rules[1]
    assert fingerprint(jax.nn.relu) == fingerprint(jax.nn.relu)  # installed: by version
