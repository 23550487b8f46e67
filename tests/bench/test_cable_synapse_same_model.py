"""The user-model cable benchmark (A-type K channel, ExpSyn) times jaxley only on the same model."""

import pytest

from jaxlean.bench._cable_case import SAME_TOLERANCE_MV, branch_parents
from jaxlean.bench._cable_synapse_case import check_same_model, jaxlean_cell, synapse_sites
from jaxlean.bench._measure import SidesDisagreeError

pytest.importorskip("jaxley", reason='the jaxley comparison needs `pip install "jaxlean[peers]"`')

BRANCHES, SYNAPSES = branch_parents(20), 10


def test_same_model_with_channel_and_synapses_agrees():
    sites = synapse_sites(200, SYNAPSES)
    text = check_same_model(jaxlean_cell(BRANCHES, sites), BRANCHES, sites)
    assert f"tolerance {SAME_TOLERANCE_MV} mV" in text


def test_synapses_elsewhere_are_refused():
    sites = synapse_sites(200, SYNAPSES)
    elsewhere = jaxlean_cell(BRANCHES, synapse_sites(200, SYNAPSES, seed=5))
    with pytest.raises(SidesDisagreeError, match="no jaxley comparison is reported"):
        check_same_model(elsewhere, BRANCHES, sites)
