"""NEURON's names where jaxlean once had its own: a former name is refused with an error
naming NEURON's, so a NEURON user's words work and an old script does not run silently."""

from __future__ import annotations

import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.morphology import discretize
from jaxlean.models.neuron.simulation.cable import Cell


def test_dlambda_takes_neurons_names_and_refuses_the_former_ones():
    rule = discretize.DLambda(Ra=35.4, d_lambda=0.1, freq=100.0, cm=1.0)
    assert (rule.Ra, rule.d_lambda, rule.freq, rule.cm) == (35.4, 0.1, 100.0, 1.0)
    assert discretize.DLambda(35.4) == rule  # NEURON's geom_nseg defaults
    for old, new in (("axial_resistivity", "Ra"), ("frequency", "freq"),
                     ("capacitance", "cm")):
        with pytest.raises(ConfigError, match=f"'{old}' is now called '{new}', NEURON's name"):
            discretize.DLambda(35.4, **{old: 1.0})
    with pytest.raises(ConfigError, match="unknown argument 'lambda_f'"):
        discretize.DLambda(35.4, lambda_f=1.0)
    with pytest.raises(ConfigError, match=r"Ra .* is required"):
        discretize.DLambda()


def test_dlambda_segments_grow_with_frequency_as_neurons_rule():
    cell_swc = "1 1 0 0 0 5 -1\n2 3 0 0 0 0.5 1\n3 3 800 0 0 0.5 2\n"
    few = Cell.from_swc(cell_swc, nseg=discretize.DLambda(100.0, freq=10.0))
    many = Cell.from_swc(cell_swc, nseg=discretize.DLambda(100.0, freq=1000.0))
    assert few.n < many.n


def test_hh_and_pas_take_neurons_names_and_the_former_ones_are_refused():
    from jaxlean.models.neuron.mechanisms.channels import hh, pas
    from jaxlean.models.neuron.simulation.cable import simulate

    assert set(hh.parameters) == {"gnabar_hh", "gkbar_hh", "gl_hh", "el_hh"}
    assert "il_hh" in hh.currents and set(pas.currents) == {"i_pas"}
    cell = Cell.from_swc("1 1 0 0 0 5 -1\n2 1 10 0 0 5 1\n", ncomp=1).insert(hh).insert(pas)
    for old, new in (("g_na", "gnabar_hh"), ("g_k", "gkbar_hh"), ("gl", "gl_hh"),
                     ("el", "el_hh")):
        params = {**cell.params(), old: 1.0}
        params.pop(new)
        with pytest.raises(ConfigError, match=f"'{old}' is now called '{new}', NEURON's name"):
            simulate(cell, params, [], 0.025, 0.1)
    for old, new in (("i_leak", "i_pas"), ("i_l", "il_hh")):
        with pytest.raises(ConfigError, match=f"cannot record '{old}': it is now called '{new}'"):
            simulate(cell, cell.params(), [], 0.025, 0.1, states=(old,))
