"""The cable benchmark times jaxley only on a cell whose voltages match jaxlean's."""

import numpy as np
import pytest

from jaxlean.bench._cable_case import (
    SAME_TOLERANCE_MV,
    _jaxlean_cell,
    branch_parents,
    check_same_model,
)
from jaxlean.bench._measure import SidesDisagreeError
from jaxlean.models.neuron.cell.cell import Cell

pytest.importorskip("jaxley", reason='the jaxley comparison needs `pip install "jaxlean[peers]"`')


def test_same_cell_agrees_within_tolerance():
    branches = branch_parents(20)
    text = check_same_model(_jaxlean_cell(branches), branches)
    assert f"tolerance {SAME_TOLERANCE_MV} mV" in text


def test_a_different_cell_is_refused():
    branches = branch_parents(20)
    thicker = _jaxlean_cell(branches)
    thicker = Cell.from_parents(thicker.parents, 10.0, np.full(thicker.n, 2.0))
    with pytest.raises(SidesDisagreeError, match="no jaxley comparison is reported"):
        check_same_model(thicker, branches)
