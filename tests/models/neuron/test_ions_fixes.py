"""Fixes that came with ions (issue 36): ``simulate``'s program cache and JAX's configuration,
and the import circle of ``_import3d`` and ``swc``."""

import ast
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.models.neuron.simulation.cable import Cell, Stimulus, rest_state, simulate

NEURON = pathlib.Path(__file__).resolve().parents[3] / "jaxlean" / "models" / "neuron"


def _cell() -> Cell:
    return Cell.from_parents([-1, 0, 1, 1], [20.0, 50.0, 40.0, 40.0], [5.0, 1.0, 0.5, 0.5])


@pytest.mark.parametrize("first", [True, False])
def test_simulate_follows_x64_both_ways(first):
    """The same cell simulated with 64-bit mode on, then off (or the other way round): each
    runs in its own precision instead of failing on a program traced for the other."""
    cell = _cell()
    runs = {}
    for x64 in (first, not first):
        with jax.enable_x64(x64):
            out = simulate(cell, cell.params("hh"), [Stimulus(0, 0.3)], 0.025, 2.0)
            grad = jax.jit(jax.grad(lambda g: simulate(
                cell, {**cell.params("hh"), "gnabar_hh": g}, [Stimulus(0, 0.3)], 0.025, 2.0,
                progress=False)["v"][-1, 0]))(jnp.asarray(0.12))
            rest = rest_state(cell, cell.params("hh"))
        runs[x64] = out["v"]
        assert out["v"].dtype == (jnp.float64 if x64 else jnp.float32)
        assert rest["v"].dtype == out["v"].dtype
        assert np.isfinite(float(grad))
    np.testing.assert_allclose(runs[False], runs[True], atol=1e-3)


def test_matmul_precision_is_part_of_the_program_key():
    from jaxlean.models.neuron import cable

    keys = []
    for precision in ("default", "highest"):
        with jax.default_matmul_precision(precision):
            keys.append(cable._jax_configuration())
    with jax.enable_x64(True):
        keys.append(cable._jax_configuration())
    assert len(set(keys)) == 3


def _imports(path: pathlib.Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_import3d_does_not_import_swc():
    """``swc`` uses ``_import3d``; the section type they share lives in ``_section``."""
    imported = _imports(NEURON / "morphology" / "_import3d.py")
    assert not any(name.endswith("morphology.swc")
                   or name.startswith("jaxlean.models.neuron.morphology.swc") for name in imported)
    assert "jaxlean.models.neuron.morphology._section" in imported
    from jaxlean.models.neuron.morphology import _section, swc

    assert swc.Section is _section.Section
