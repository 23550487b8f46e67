"""The general translation (:mod:`~jaxlean.models.neuron.nmodl.generated`) against NEURON
and against the compact form on the files that fit both.

``load_mod`` loads Hay's files, ``hh.mod`` and the custom ones in the compact form (rates
with one q10); here every density file of ``mods/`` is also run by the general
translation, on the same NEURON fixtures (``scripts/make_nmodl_fixtures.py``), and the two
forms are compared with each other.
"""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest

from jaxlean.models.neuron.nmodl.generated import GeneratedMechanism, generate
from jaxlean.models.neuron.nmodl.parser import parse
from tests.models.neuron.nmodl.loaded import loaded_mod_dir
from tests.models.neuron.nmodl.test_neuron_parity import CASES, FIXTURES, MODS, assert_matches


@functools.cache
def generated_mechanisms() -> dict:
    """``load_mod_dir(MODS)`` with every density mechanism in the general form (translated
    once per session)."""
    out = {}
    compact = loaded_mod_dir(MODS)
    for path in sorted(MODS.glob("*.mod"), key=lambda p: p.name.encode()):
        model = parse(path.read_text(), str(path))
        out[model.suffix] = (compact[model.suffix] if model.point
                             else generate(parse(path.read_text(), str(path))))
    assert list(out) == list(compact)
    return out


@pytest.mark.parametrize("name", CASES)
def test_the_general_form_matches_neuron_and_the_compact_form(name):
    fixture = np.load(FIXTURES / f"nmodl_{name}.npz")
    mechanisms = generated_mechanisms()
    assert sum(isinstance(m, GeneratedMechanism) for m in mechanisms.values()) >= 14
    with jax.enable_x64():
        general = assert_matches(fixture, mechanisms)
        compact = assert_matches(fixture)
    np.testing.assert_allclose(np.asarray(general["v"]), np.asarray(compact["v"]), rtol=0,
                               atol=1e-9)
