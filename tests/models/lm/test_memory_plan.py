"""The memory planner on a tiny transformer: plans fit their budget, compute the same step."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError, MemoryBudgetError
from jaxlean.models.lm.memory_plan import MemoryPlan, plan_memory, step_memory
from jaxlean.models.lm.transformer import Transformer, TransformerConfig, loss

# 16 layers, so that activations (not parameters) dominate the unplanned step's memory
CONFIG = TransformerConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_layers=16,
                           num_heads=2, num_kv_heads=1, attention_tile=32)
SHAPE = (2, 128)


@pytest.fixture(scope="module")
def model() -> Transformer:
    return Transformer(CONFIG, key=jax.random.key(0))


@pytest.fixture(scope="module")
def unplanned(model) -> int:
    return step_memory(model, SHAPE).total


@pytest.mark.parametrize("fraction", [0.25, 0.5, 1.0])
def test_plans_fit_their_budget(model, unplanned, fraction):
    budget = int(fraction * unplanned)
    lines: list[str] = []
    try:
        plan = plan_memory(model, SHAPE, budget, progress=lines.append)
    except MemoryBudgetError as refusal:  # allowed, if it names a footprint over the budget
        assert refusal.smallest > budget and "smallest footprint" in str(refusal)
        return
    assert isinstance(plan, MemoryPlan)
    assert plan.memory.total <= budget
    assert step_memory(plan.apply(model), SHAPE, plan.chunk_size) == plan.memory
    assert any("compiling" in line for line in lines) and "budget" in str(plan)
    assert len(plan.search.tried) <= 3  # the cost model keeps the compiles few
    if fraction == 1.0:  # the unplanned step fits: nothing is recomputed
        assert plan.remat is None and plan.nested is None
    else:
        assert plan.remat is not None or plan.nested is not None


def test_a_budget_below_any_option_is_refused_with_the_smallest_footprint(model, unplanned):
    with pytest.raises(MemoryBudgetError, match="smallest footprint compiled") as refusal:
        plan_memory(model, SHAPE, unplanned // 50, progress=False)
    assert refusal.value.budget == unplanned // 50
    assert unplanned // 50 < refusal.value.smallest < unplanned


def test_the_applied_plan_computes_the_unplanned_loss_and_gradient(model, unplanned):
    plan = plan_memory(model, SHAPE, int(0.3 * unplanned), chunk_sizes=(64,),
                       attention_tiles=(16,), progress=False)
    assert (plan.chunk_size, plan.attention_tile, plan.remat) == (64, 16, "full")
    other = Transformer(dataclasses.replace(CONFIG, num_layers=8), key=jax.random.key(0))
    with pytest.raises(ConfigError, match=r"made for another model \(config \['num_layers'\]"):
        plan.apply(other)
    rng = np.random.default_rng(0)
    ids = rng.integers(0, CONFIG.vocab_size, SHAPE).astype(np.int32)  # NumPy: no eager programs
    targets = np.roll(ids, -1, axis=1)
    value_and_grad = jax.jit(jax.value_and_grad(lambda m, f: f(m, ids, targets=targets)),
                             static_argnums=1)
    value, grads = value_and_grad(model, loss)
    planned_value, planned_grads = value_and_grad(plan.apply(model), plan.loss())
    np.testing.assert_allclose(planned_value, value, rtol=1e-6)
    for a, b in zip(jax.tree.leaves(planned_grads), jax.tree.leaves(grads), strict=True):
        # float32: other chunk and tile sizes sum in another order through 16 layers
        a, b = np.asarray(a), np.asarray(b)
        assert np.max(np.abs(a - b)) <= 1e-4 * np.max(np.abs(b))


@pytest.mark.parametrize(("arguments", "named"), [
    (dict(budget=-1), "budget must be a positive"),
    (dict(budget=float("nan")), "budget must be a positive"),
    (dict(budget=1000, colour="red"), r"unknown option\(s\) \['colour'\]"),
    (dict(budget=1000, remats=("fast",)), r"remats=\('fast',\).*unknown: \['fast'\]"),
    (dict(budget=1000, chunk_sizes=(0,)), "chunk_sizes must be positive ints"),
    (dict(budget=1000, max_compiles=0), "max_compiles must be >= 1"),
])
def test_bad_inputs_are_errors_naming_them(model, arguments, named):
    with pytest.raises(ConfigError, match=named):
        plan_memory(model, SHAPE, **arguments)


def test_a_bad_batch_shape_or_model_is_named(model):
    with pytest.raises(ConfigError, match="batch_shape"):
        plan_memory(model, (2, 0), 1000)
    with pytest.raises(ConfigError, match="plans a jaxlean Transformer"):
        plan_memory({"w": jnp.ones(3)}, SHAPE, 1000)


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the CPU reports no memory")
def test_on_the_cpu_the_budget_is_required(model):
    with pytest.raises(ConfigError, match=r"does not report its memory, so pass budget="):
        plan_memory(model, SHAPE)
