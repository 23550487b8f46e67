"""jaxlean's defaults are NEURON's: a NEURON user who leaves a value unset gets NEURON's answer.

``fixtures/neuron_defaults.json`` was read from NEURON 9.0.2 itself by
``scripts/make_neuron_defaults_fixture.py`` (a new section's ``Ra``, ``cm``, ``nseg``; the
globals; ``hh``, ``pas``, ``ExpSyn``, ``Exp2Syn``, ``NetCon``, ``SEClamp``; the ions after
``finitialize``). Live against NEURON where it is installed. Issue 49: the default ``Ra``
was 100 ohm cm, NEURON's is 35.4, and nothing said so.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.neuron import discretize, swc
from jaxlean.models.neuron.cell.cell import Cell
from jaxlean.models.neuron.mechanisms.channels import hh, pas
from jaxlean.models.neuron.mechanisms.ions import SPECIES
from jaxlean.models.neuron.mechanisms.synapses import exp2syn, expsyn
from jaxlean.models.neuron.network.network import Network
from jaxlean.models.neuron.network.network_sim import simulate_network
from jaxlean.models.neuron.simulation.cable import simulate
from jaxlean.models.neuron.simulation.clamp import VoltageClamp

FIXTURE = Path(__file__).parent / "fixtures" / "neuron_defaults.json"
SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "make_neuron_defaults_fixture.py"


def _defaults(function, *names: str) -> dict:
    parameters = inspect.signature(function).parameters
    return {name: parameters[name].default for name in names}


def check_defaults(neuron: dict) -> None:
    cell = Cell.from_parents([-1], 20.0, 10.0).insert(hh).insert(pas)
    with jax.enable_x64():   # the values as given, not rounded to float32
        params = {name: float(np.asarray(value)) for name, value in cell.params().items()
                  if np.ndim(value) == 0}
    section, globals_ = neuron["section"], neuron["globals"]
    assert {k: params[k] for k in ("Ra", "cm")} == {k: section[k] for k in ("Ra", "cm")}
    assert {k: params[k] for k in ("celsius", "v_init")} == \
        {k: globals_[k] for k in ("celsius", "v_init")}
    neurons = {"Ra": section["Ra"], "cm": section["cm"], "v_init": globals_["v_init"],
               "celsius": globals_["celsius"]}
    assert neurons == discretize.NEURON_DEFAULTS
    assert {k: params[k] for k in neuron["hh"]} == neuron["hh"]
    assert {k: params[k] for k in neuron["pas"]} == neuron["pas"]
    assert {"ena": params["ena"], "ek": params["ek"]} == \
        {"ena": neuron["ions"]["na"]["reversal"], "ek": neuron["ions"]["k"]["reversal"]}
    for name, mechanism in (("expsyn", expsyn), ("exp2syn", exp2syn)):
        ours = {k: mechanism.parameters[f"{k}_{name}"][0] for k in neuron[name]}
        assert ours == neuron[name], name
        assert mechanism.parameters[f"weight_{name}"][0] == neuron["netcon"]["weight"]
    netcon = neuron["netcon"]
    assert _defaults(Network.connect_spiking, "delay", "threshold") == \
        {k: netcon[k] for k in ("delay", "threshold")}
    assert _defaults(simulate, "threshold") == _defaults(simulate_network, "threshold") == \
        {"threshold": netcon["threshold"]}
    assert _defaults(VoltageClamp, "rs") == neuron["seclamp"]
    for ion, values in neuron["ions"].items():
        species = SPECIES[ion]
        assert (species.inside, species.outside, species.reversal) == \
            (values["inside"], values["outside"], values["reversal"]), ion


def test_jaxleans_defaults_are_neurons():
    check_defaults(json.loads(FIXTURE.read_text()))


def test_what_neuron_defaults_and_jaxlean_does_not_is_asked_for():
    """NEURON's ``dt`` (0.025 ms) and ``nseg`` (1) are not assumed: ``simulate`` takes
    ``dt`` and a morphology needs a discretisation rule, rather than silently another value."""
    assert inspect.signature(simulate).parameters["dt"].default is inspect.Parameter.empty
    with pytest.raises(ConfigError, match="give exactly one of ncomp"):
        Cell.from_swc(swc.fixture("y"))


@pytest.mark.skipif(importlib.util.find_spec("neuron") is None, reason="neuron not installed")
def test_jaxleans_defaults_are_neurons_live(tmp_path):
    subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path)], check=True,
                   capture_output=True)
    check_defaults(json.loads((tmp_path / "neuron_defaults.json").read_text()))
