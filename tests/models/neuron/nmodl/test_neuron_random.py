"""NEURON's ``Random`` in jaxlean (:mod:`jaxlean.models.neuron.nmodl.neuron_random`),
value for value.

* against NEURON 9.0.2 itself: ``fixtures/neuron_random.json``
  (``scripts/make_neuron_random_fixture.py``; live when NEURON is installed), every value
  equal to the last bit: the default ``Random(seed, size)``, ``Random123`` with the
  counter's carry and a global index, ``MCellRan4`` with and without its low index, its
  ``seq``, ``uniform`` and ``negexp``;
* against the generators written out here from their definitions in Python integers
  (Philox4x32-10 as Random123 defines it, NEURON's ``nrnRan4int``), on random indices
  and positions;
* what it does not model is refused by name.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.nmodl import Random, load_mod, random_parameters
from tests.models.neuron.neuron_reference import run_fixture_script

HERE = Path(__file__).parent
FIXTURE = HERE / "fixtures" / "neuron_random.json"
SCRIPT = HERE.parents[3] / "scripts" / "make_neuron_random_fixture.py"
PROB = HERE / "corpus" / "249463" / "almog" / "ProbUDFsyn2.mod"
M32 = 0xFFFFFFFF


def _philox(counter, key):
    """Philox4x32-10 (Salmon et al. 2011, Random123's ``philox4x32``) in Python ints."""
    c, k = list(counter), list(key)
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & M32, (p0 >> 32) ^ c[3] ^ k[1], p0 & M32]
        k = [(k[0] + 0x9E3779B9) & M32, (k[1] + 0xBB67AE85) & M32]
    return c


def _ran4(n, m):
    """NEURON's ``nrnRan4int`` (src/gnu/mcran4.cpp), line by line, in Python ints."""
    w = n ^ 0xBAA96887
    v, w = w >> 16, w & 0xFFFF
    u = ~((v - w) * (v + w)) & M32
    m = (m ^ (((((u >> 16) | (u << 16)) & M32) ^ 0x4B0F3B58) + w * v)) & M32
    w = m ^ 0x1E17D32C
    v, w = w >> 16, w & 0xFFFF
    u = ~((v - w) * (v + w)) & M32
    return (n ^ (((((u >> 16) | (u << 16)) & M32) ^ 0xE874F0C3) + w * v)) & M32


def reference(random: Random, count: int) -> list[float]:
    """The next ``count`` values of ``random``, from the definitions above."""
    kind, a, b = random.distribution
    out = []
    for k in range(random.position, random.position + count):
        if random.generator == "random123":
            id1, id2, id3 = random.ids
            seq, word = divmod(k, 4)
            u = _philox([seq & M32, (id3 + (seq >> 32)) & M32, id1, id2],
                        [random.global_index, 0])[word]
            x = (u + 1.0) * (1.0 / 4294967297.0)
        else:
            x = _ran4((random.ids[0] + k) & M32, random.ids[1]) * (1.0 / 4294967296.0)
        out.append(min(a, b) + (max(a, b) - min(a, b)) * x if kind == "uniform"
                   else -a * math.log(x))
    return out


def build(case: dict) -> Random:
    """The :class:`Random` of a fixture case, made as its hoc makes it."""
    random = Random(case.get("seed", 0), case.get("size", 55))
    if "random123" in case:
        random = random.random123(*case["random123"])
    if "mcellran4" in case:
        random = random.mcellran4(*case["mcellran4"])
    random = random.with_global_index(case.get("global_index", 0))  # set first in hoc
    if "seq" in case:
        random = random.sequence(case["seq"])
    kind, *arguments = case["distribution"]
    return getattr(random, kind)(*arguments)


def check_fixture(fixture: dict) -> None:
    for case in fixture["cases"]:
        random = build(case)
        assert random.picks(len(case["picks"])).tolist() == case["picks"], case  # every bit
        # the distribution call drew the value before them
        drawn = dataclasses.replace(random, position=random.position - 1).picks(1)
        assert drawn.tolist() == [case["first"]], case


def test_values_are_neurons_to_the_last_bit():
    fixture = json.loads(FIXTURE.read_text())
    assert fixture["neuron_version"] == "9.0.2" and len(fixture["cases"]) >= 10
    check_fixture(fixture)


def test_values_follow_the_generators_definitions_on_random_indices():
    rng = np.random.default_rng(0)
    for _ in range(40):
        ids = [int(x) for x in rng.integers(0, 2**32, 3)]
        position = int(rng.integers(0, 2**34 - 64))
        randoms = [Random().random123(*ids).with_global_index(ids[0] ^ 5).sequence(position)
                   .uniform(0.0, 1.0),
                   Random().mcellran4(max(ids[0], 1), ids[1]).negexp(float(rng.uniform(0.1, 3)))]
        for random in randoms:
            assert random.picks(9).tolist() == reference(random, 9), random


def test_what_is_not_modelled_is_refused_by_name():
    with pytest.raises(ConfigError, match="normal"):
        Random(1).fields()  # NEURON's default distribution, normal(0, 1)
    with pytest.raises(ConfigError, match="high = 0"):
        Random().mcellran4(0)
    with pytest.raises(ConfigError, match="id2"):
        Random().random123(1, 2**32)
    with pytest.raises(ConfigError, match=r"size must be in \[7, 98\]"):
        Random(1, size=3)
    with pytest.raises(ConfigError, match="2\\*\\*34"):
        Random(1).sequence(2**34)
    mechanism = load_mod(PROB)
    with pytest.raises(ConfigError, match="no Random POINTER 'rnd'"):
        random_parameters(mechanism, "rnd", [Random(1).negexp(1)])
    params = random_parameters(mechanism, "rng", [Random(1).negexp(1), Random(2).negexp(1)])
    assert set(params) == {f"rng_ProbUDFsyn2.{f}" for f in (
        "generator", "id1", "id2", "id3", "global_index", "position", "distribution", "a",
        "b")}
    assert params["rng_ProbUDFsyn2.id1"].tolist() == [1.0, 2.0]
    assert params["rng_ProbUDFsyn2.position"].tolist() == [1.0, 1.0]  # negexp drew one


@pytest.mark.skipif(importlib.util.find_spec("neuron") is None, reason="neuron not installed")
def test_matches_neuron_live(tmp_path):
    run_fixture_script(SCRIPT, tmp_path)
    check_fixture(json.loads((tmp_path / "neuron_random.json").read_text()))
