"""BluePyOpt's format refuses what it cannot build exactly, naming the file, entry and key.

A small SWC cell with ``pas`` only (no ``.mod`` files, no MorphIO): every refusal of
``formats.bluepyopt`` and one accepted cell whose values are worked out by hand.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.formats import bluepyopt
from jaxlean.models.neuron.morphology.swc import fixture

MECHS = {"all": ["pas"]}
BASE = [{"param_name": "v_init", "type": "global", "value": -70},
        {"param_name": "cm", "sectionlist": "all", "type": "section", "dist_type": "uniform",
         "value": 1.0},
        {"param_name": "cm", "sectionlist": "basal", "type": "section",
         "dist_type": "uniform", "value": 2.0},
        {"param_name": "g_pas", "sectionlist": "all", "type": "range", "dist_type": "uniform",
         "bounds": [0, 1e-3]},
        {"param_name": "g_pas", "mech": "pas", "mech_param": "g", "sectionlist": "basal",
         "type": "range", "dist_type": "exp", "value": 1e-4,
         "dist": "{value} * (1 + {distance} / 100)"}]


def load(parameters=None, mechanisms=None, **kwargs):
    return bluepyopt.load(fixture("pyramidal"), mechanisms or MECHS,
                          BASE if parameters is None else parameters, None,
                          replace_axon=False, **kwargs)


def test_a_small_cell_by_hand():
    model = load()
    assert model.free == ("g_pas.all",) and model.frozen["cm.basal"] == 2.0
    cell = model.cell
    basal = cell.kind == 3
    with jax.enable_x64():
        params = model.params({"g_pas.all": 5e-4})
    np.testing.assert_array_equal(np.asarray(params["cm"]), np.where(basal, 2.0, 1.0))
    d = model.distances[("soma[0]", 0.5)]
    np.testing.assert_allclose(np.asarray(params["g_pas"]),
                               np.where(basal, 1e-4 * (1 + d / 100), 5e-4), rtol=1e-12)
    assert float(params["v_init"]) == -70.0


def _with(index: int, **change) -> list:
    entries = [dict(e) for e in BASE]
    entries[index].update(change)
    return [{k: v for k, v in e.items() if v is not None} for e in entries]


@pytest.mark.parametrize(("parameters", "match"), [
    (_with(1, scale=2), r"entry 1 \(cm\): unknown key\(s\) \['scale'\]"),
    (_with(1, dist_type="gauss"), "unknown dist_type 'gauss'"),
    (_with(1, sectionlist="dendrites"), "sectionlist must be one of"),
    (_with(1, type="point"), "type must be 'global', 'section' or 'range'"),
    (_with(1, value=None), "give 'value' \\(frozen\\) or 'bounds' \\(free\\)"),
    (_with(0, sectionlist="all"), r"unknown key\(s\) \['sectionlist'\] for a global"),
    (_with(0, param_name="secondorder"), "global parameter 'secondorder' is not one"),
    (_with(1, dist_type="exp", dist="{value}"), "BluePyOpt scales it only with dist_type"),
    (_with(4, dist=None), "needs 'dist'"),
    (_with(4, mech_param="gbar"), "do not make param_name 'g_pas'"),
    (_with(3, param_name="gbar_hh"), "parameter 'gbar_hh' belongs to no mechanism"),
    (_with(4, soma_ref_location=0.2, ref_section="dend[0]"), "not both"),
    (_with(4, ref_section="dend[999]"), r"reference section 'dend\[999\]'"),
    ([*BASE, BASE[1]], r"a second parameter named 'cm.all' \(entry 1\)"),
])
def test_bad_parameters_are_refused_by_name(parameters, match):
    with pytest.raises(ConfigError, match=match):
        load(parameters)


def test_bad_mechanisms_are_refused_by_name():
    with pytest.raises(ConfigError, match=r"names \['NaTs2_t'\].*no mods folder"):
        load(mechanisms={"all": ["pas"], "apical": ["NaTs2_t"]})
    with pytest.raises(ConfigError, match="unknown section list 'dendrite'"):
        load(mechanisms={"dendrite": ["pas"]})
    with pytest.raises(ConfigError, match="where no inserted mechanism has 'g_pas'"):
        load(mechanisms={"somatic": ["pas"]})


def test_bad_parameter_sets_are_refused_by_name():
    model = load()
    with pytest.raises(ConfigError, match=r"\['g_pas.all'\]: free \('bounds'\) and not given"):
        model.params({})
    with pytest.raises(ConfigError, match=r"\['gbar.all'\]: unknown"):
        model.params({"g_pas.all": 1e-4, "gbar.all": 1.0})
    with pytest.raises(ConfigError, match=r"\['cm.all'\]: frozen"):
        model.params({"g_pas.all": 1e-4, "cm.all": 1.0})
    with pytest.raises(ConfigError, match=r"g_pas.all = 0.5 is outside its bounds"):
        model.params({"g_pas.all": 0.5})
