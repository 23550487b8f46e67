"""``import jaxlean`` pays only for what is used: names load on first use, and training
without checkpoints or a terminal bar never imports orbax, rich or the benchmarks."""

import json
import subprocess
import sys

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
