"""``import jaxlean`` pays only for what is used: names load on first use, and training
without checkpoints or a terminal bar never imports orbax, rich or the benchmarks."""

import json
import pydoc
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import jaxlean

PROBE = """
import json, sys
import jaxlean
before = sorted(m for m in ("jax", "equinox", "optax") if m in sys.modules)
from jaxlean import fit, make_train_step, packed
print(json.dumps({"before": before,
                  "after": sorted(m for m in ("orbax.checkpoint", "rich", "jaxlean.bench",
                                              "safetensors") if m in sys.modules)}))
"""


def test_names_load_on_first_use_and_skip_what_is_unused():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          timeout=120, check=True)
    assert json.loads(done.stdout) == {"before": [], "after": []}


def test_every_public_name_resolves():
    assert all(getattr(jaxlean, name) is not None for name in jaxlean.__all__)
    assert set(jaxlean.__all__) <= set(dir(jaxlean))
    with pytest.raises(AttributeError, match="no_such_name"):
        jaxlean.no_such_name  # noqa: B018


LM_PROBE = """
import json, sys
import jaxlean.models.lm as lm
print(json.dumps(sorted(m for m in ("jax", "safetensors") if m in sys.modules)))
"""


def test_the_lm_package_re_exports_its_api_on_first_use():
    done = subprocess.run([sys.executable, "-c", LM_PROBE], capture_output=True, text=True,
                          timeout=120, check=True)
    assert json.loads(done.stdout) == []
    import jaxlean.models.lm as lm
    from jaxlean.models.lm.hf import load_pretrained

    assert set(lm.__all__) == {*lm._EXPORTS, *lm._SUBMODULES} <= set(dir(lm))
    assert all(getattr(lm, name) is not None for name in lm.__all__)
    assert lm.load_pretrained is load_pretrained
    with pytest.raises(AttributeError, match="no_such_name"):
        lm.no_such_name  # noqa: B018


def test_help_on_jaxlean_points_to_the_language_model_api():
    text = pydoc.render_doc(jaxlean, renderer=pydoc.plaintext)
    for name in ("jaxlean.models.lm", "load_pretrained", "save_pretrained", "add_lora",
                 "generate", "jaxlean.models.neuron"):
        assert name in text, name


def test_safetensors_is_a_core_dependency():
    with open(Path(__file__).parents[1] / "pyproject.toml", "rb") as file:
        project = tomllib.load(file)["project"]
    assert any(d.startswith("safetensors") for d in project["dependencies"])


SUBPACKAGE_PROBE = """
import json, sys
import jaxlean
import jaxlean.parallel
lazy = sorted(m for m in ("jax", "jaxlean.parallel.mesh", "jaxlean.models") if m in sys.modules)
found = [jaxlean.parallel.mesh.__name__, jaxlean.models.lm.__name__, jaxlean.models.pmm.__name__,
         jaxlean.compile.cache.__name__, jaxlean.linalg.tree.__name__,
         jaxlean.train.__name__, jaxlean.errors.ConfigError.__name__]
print(json.dumps({"lazy": lazy, "found": found,
                  "listed": [n in dir(jaxlean.parallel) for n in ("mesh", "distributed")]}))
"""


def test_subpackages_and_their_modules_load_on_attribute_access():
    done = subprocess.run([sys.executable, "-c", SUBPACKAGE_PROBE], capture_output=True,
                          text=True, timeout=120, check=True)
    assert json.loads(done.stdout) == {
        "lazy": [], "listed": [True, True],
        "found": ["jaxlean.parallel.mesh", "jaxlean.models.lm", "jaxlean.models.pmm",
                  "jaxlean.compile.cache", "jaxlean.linalg.tree", "jaxlean.train",
                  "ConfigError"]}
    import jaxlean.models
    import jaxlean.parallel

    for package in (jaxlean, jaxlean.parallel, jaxlean.models, jaxlean.compile):
        with pytest.raises(AttributeError, match="no_such_module"):
            package.no_such_module  # noqa: B018
