"""``distance_from`` (h.distance from any point) against the compartment graph's path lengths.

Reference: ``distribution.path_distance(cell, origin=c)``, which walks the solver's tree
from compartment ``c``; from a segment's centre both must agree, on an SWC cell with a
stub (children at soma(0.5) and soma(1)), for random origins. A point inside a segment
stands for its centre, as in NEURON.
"""

from __future__ import annotations

import numpy as np

from jaxlean.models.neuron import Cell, discretize, morphology_io
from jaxlean.models.neuron.cell import distribution
from jaxlean.models.neuron.cell.point_distance import distance_from
from jaxlean.models.neuron.morphology import axon_stub
from jaxlean.models.neuron.morphology.swc import fixture


def test_distance_from_any_segment_centre_equals_the_graph_walk():
    tree = axon_stub.replace_axon(morphology_io.load_morphology(fixture("pyramidal")))
    cell = Cell.from_morphology(tree, nseg=discretize.PerLength(20))
    rng = np.random.default_rng(1)
    for k in [*rng.choice(len(tree), 8, replace=False).tolist(), 0]:
        where = cell.compartments_of(k)
        j = int(rng.integers(where.size))
        x = (j + 0.5) / where.size
        reference = distribution.path_distance(cell, origin=int(where[j]))
        np.testing.assert_allclose(distance_from(cell, tree, k, x), reference, atol=1e-9)
        inside = (j + float(rng.uniform(0.01, 0.99))) / where.size    # the same node
        np.testing.assert_allclose(distance_from(cell, tree, k, inside), reference, atol=1e-9)
    np.testing.assert_allclose(distance_from(cell, tree, "soma[0]", 0.5),
                               distribution.path_distance(cell), atol=1e-9)
