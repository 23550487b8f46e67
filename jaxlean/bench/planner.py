"""Benchmark ``planner``: the memory planner fits a 32-layer transformer's step into budgets.

The budgets are 25 %, 50 % and 100 % of the unplanned step's compiled
footprint (the model as built: layers scanned without remat, default loss
chunk and attention). For each, :func:`~jaxlean.models.lm.memory_plan.plan_memory`
chooses remat, nested blocks, loss chunk and attention tile; the rows give its
compiled footprint against the budget (XLA's ``memory_analysis()``: exact,
compiled and never run) or its refusal with the smallest footprint. Then every
distinct plan's step runs on real weights beside the hand-picked
``remat="full"`` and ``remat=None`` steps, timed in alternation in this
process, after checking that they compute the same loss and gradient; a plan
that lowers to the same program as a hand-picked step is timed as that step.
The planner's claim is checked per budget: its step is no slower (within the
noise band) than the fastest hand-picked step whose footprint fits the budget.

The model is small in width so that its 32 layers compile and run on a CPU:
hidden 128, 4 heads (2 kv heads), MLP 352, vocabulary 1024, one sequence of
512 tokens, float32 (``--quick``: hidden 64, MLP 176, vocabulary 256, 256 tokens).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxlean._units import format_bytes
from jaxlean.bench._measure import SidesDisagreeError, time_alternating
from jaxlean.bench._registry import EXACT, BenchContext, BenchResult, register
from jaxlean.errors import MemoryBudgetError
from jaxlean.models.lm.memory_plan import MemoryPlan, plan_memory, step_memory
from jaxlean.models.lm.transformer import Transformer, TransformerConfig, loss

__all__ = ["FRACTIONS", "FULL", "QUICK", "run"]

FULL = dict(config=dict(vocab_size=1024, hidden_size=128, intermediate_size=352, num_layers=32,
                        num_heads=4, num_kv_heads=2), shape=(1, 512))
QUICK = dict(config=dict(vocab_size=256, hidden_size=64, intermediate_size=176, num_layers=32,
                         num_heads=4, num_kv_heads=2), shape=(1, 256))
FRACTIONS = (0.25, 0.5, 1.0)
WALL_NOISE = 0.10
"""Stated noise band of a wall-time ratio of alternating steps on a shared 2-core VM
(widened to the per-round spread of the ratio when that is larger)."""
SAME_RTOL = 1e-4  # float32: other chunk and tile sizes sum in another order through the layers
HAND_PICKED = {'remat="full"': dict(remat="full"), "remat=None": dict(remat=None)}


def _plans(ctx: BenchContext, result: BenchResult, model: Transformer,
           shape: tuple[int, int], unplanned: int) -> dict[float, MemoryPlan]:
    """Plan at each budget; record compiled memory against the budget, or the refusal."""
    plans = {}
    layers = model.config.num_layers
    for fraction in FRACTIONS:
        budget = int(fraction * unplanned)
        label = f"{fraction:.0%} budget"
        ctx.step(f"planning at {label} ({format_bytes(budget)})")
        case = f"{layers}-layer step, {label}"
        try:
            plan = plan_memory(model, shape, budget, progress=ctx.step)
        except MemoryBudgetError as refusal:
            result.notes.append(f"{case}: refused: {refusal}")
            result.target(f"planner at {label}: refusal's smallest footprint / budget",
                          refusal.smallest / budget, 1.0, ">=", noise=EXACT)
            continue
        plans[fraction] = plan
        result.compare(case, "compiled memory", "bytes", budget, plan.memory.total,
                       variant="planned step", baseline_name="budget")
        result.target(f"planner at {label}: compiled memory / budget",
                      plan.memory.total / budget, 1.0, "<=", noise=EXACT)
        result.notes.append(
            f"{case}: plan remat={plan.remat!r}, nested={plan.nested!r}, loss chunk "
            f"{plan.chunk_size}, {plan.attention} attention (tile {plan.attention_tile}); "
            f"predicted {format_bytes(plan.predicted)}, compiled {plan.memory}; "
            f"{len(plan.search.tried)} of {plan.search.candidates} candidates compiled.")
    return plans


def _gap(value_grad, reference) -> float:
    (value, grads), (ref_value, ref_grads) = value_grad, reference
    scale = max(float(jnp.max(jnp.abs(g))) for g in jax.tree.leaves(ref_grads))
    gaps = [float(jnp.max(jnp.abs(a - b))) / scale for a, b in
            zip(jax.tree.leaves(grads), jax.tree.leaves(ref_grads), strict=True)]
    return max([*gaps, abs(float(value - ref_value)) / abs(float(ref_value))])


def _program(step, args) -> str:
    """The step's StableHLO text: two sides that lower to the same program are one side."""
    return step.lower(*args).as_text()


def _wall(ctx: BenchContext, result: BenchResult, model: Transformer, shape: tuple[int, int],
          plans: dict[float, MemoryPlan], hand_memory: dict[str, int]) -> None:
    """Time each distinct plan's step beside the hand-picked ones, in alternation; each
    plan is held against the fastest hand-picked step within its budget
    (``hand_memory``: their compiled footprints)."""
    ids = jax.random.randint(jax.random.key(1), shape, 0, model.config.vocab_size)
    targets = jnp.roll(ids, -1, axis=1)

    def step_of(loss_fn):
        return jax.jit(jax.value_and_grad(lambda m, x, y: loss_fn(m, x, targets=y)))

    sides = {name: (step_of(loss), (model.with_options(**options), ids, targets))
             for name, options in HAND_PICKED.items()}
    programs = {_program(*side): name for name, side in sides.items()}
    labels: dict[str, list[float]] = {}
    for fraction, plan in plans.items():
        key = str(plan.search.chosen.candidate.option)
        labels.setdefault(key, []).append(fraction)
        side = (step_of(plan.loss()), (plan.apply(model), ids, targets))
        same = programs.get(_program(*side))
        if same is not None and key not in sides:
            result.notes.append(f"plan {key} lowers to the same program as the hand-picked "
                                f"{same}: timed once, as that side.")
        sides.setdefault(key, sides[same] if same is not None else side)
    ctx.step(f"running {len(sides)} steps on real weights")
    values = {name: fn(*args) for name, (fn, args) in sides.items()}
    reference = values["remat=None"]
    gap = max(_gap(value, reference) for value in values.values())
    if not gap <= SAME_RTOL:
        raise SidesDisagreeError(f"planned and hand-picked steps differ: max|diff| / max|grad| "
                                 f"= {gap:.2e} > {SAME_RTOL:.0e}")
    result.target("planner: max|loss, grad(plan) - (remat=None)| / max|.|", gap, SAME_RTOL,
                  noise=EXACT)
    ctx.step(f"timing {len(sides)} steps in alternation")
    distinct = {id(side): side for side in sides.values()}
    measured = dict(zip(distinct, time_alternating(
        *distinct.values(), repeats=5 if ctx.quick else 7, min_seconds=0.1), strict=True))
    timings = {name: measured[id(side)] for name, side in sides.items()}
    layers = model.config.num_layers
    for key, fractions in labels.items():
        variant = "plan at " + ", ".join(f"{f:.0%}" for f in fractions) + f": {key}"
        case = f"{layers}-layer step, wall time"
        for name in HAND_PICKED:
            result.compare(case, "wall time", "s", timings[name], timings[key],
                           variant=variant, baseline_name=name)
    for fraction, plan in plans.items():  # the planner's claim: the fastest that fits
        key = str(plan.search.chosen.candidate.option)
        fitting = [name for name in HAND_PICKED if hand_memory[name] <= plan.budget]
        if not fitting:
            continue
        fastest = min(fitting, key=lambda name: timings[name].median)
        result.target(f"planner at {fraction:.0%} budget: plan wall time / the fastest "
                      f"hand-picked step that fits ({fastest})", timings[key] / timings[fastest],
                      1.0, "<=", noise=WALL_NOISE,
                      spread=timings[key].ratio_spread(timings[fastest]))
    none, full = (timings[name].median * 1e3 for name in ("remat=None", 'remat="full"'))
    result.notes.append(f'wall time: remat=None {none:.1f} ms, remat="full" {full:.1f} ms per '
                        "loss + gradient.")


@register("planner", "memory planner: a 32-layer step fitted to 25/50/100% of its memory")
def run(ctx: BenchContext) -> BenchResult:
    """Run the planner benchmark: plans at 25/50/100 % of the unplanned step's memory."""
    result = BenchResult("planner", "memory planner: remat, nested, loss chunk and attention "
                                    "tile chosen to fit a budget")
    setting = QUICK if ctx.quick else FULL
    config, shape = TransformerConfig(**setting["config"]), setting["shape"]
    model = Transformer(config, key=jax.random.key(0))
    ctx.step("compiling the unplanned step")
    unplanned = step_memory(model, shape)
    result.notes.append(f"unplanned step (remat=None, default chunk and attention): {unplanned}")
    ctx.step('compiling the remat="full" step')
    hand_memory = {"remat=None": unplanned.total,  # the model as built runs without remat
                   'remat="full"': step_memory(model.with_options(remat="full"), shape).total}
    result.notes.append("hand-picked steps' compiled memory: " + ", ".join(
        f"{name} {format_bytes(total)}" for name, total in hand_memory.items()))
    plans = _plans(ctx, result, model, shape, unplanned.total)
    _wall(ctx, result, model, shape, plans, hand_memory)
    c = config
    result.notes.append(
        f"model: {c.num_layers} layers, hidden {c.hidden_size}, {c.num_heads} heads "
        f"({c.num_kv_heads} kv), MLP {c.intermediate_size}, vocab {c.vocab_size}, batch "
        f"{shape[0]} x {shape[1]} tokens, float32; memory is the whole loss + gradient "
        "(parameters, batch, gradients, temp) from XLA's memory_analysis, compiled not run.")
    fitted = [f"{f:.0%}: {format_bytes(p.memory.total)} (remat={p.remat!r}, nested={p.nested!r})"
              for f, p in plans.items()]
    result.headline = (f"the {c.num_layers}-layer step (unplanned {format_bytes(unplanned.total)}) "
                       f"planned into budgets of " + "; ".join(fitted) if fitted else
                       "no budget could be met")
    return result
