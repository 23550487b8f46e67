"""Choose how a transformer's training step runs so that it fits a memory budget.

:func:`plan_memory` takes a model, a batch shape and a budget in bytes, and
chooses the four options that trade memory for time without changing what
the step computes: the rematerialisation policy of the layer run
(``remat``), the nested (sqrt-N) block size (``nested``), the tokens per loss
chunk (``chunk_size`` of :func:`~jaxlean.models.lm.causal_loss.loss`) and the
attention computation and its tile (``attention``, ``attention_tile``). A
small cost model (:mod:`jaxlean.models.lm._memory_cost`: bytes kept per
layer, recomputed FLOPs) orders the candidates from fastest to leanest and
prunes those another candidate beats on both counts; the search
(:func:`jaxlean.compile.memory_budget.search_budget`) then compiles the loss
and gradient of the fastest one predicted to fit, ahead of time and never
run, and reads its footprint from ``compiled.memory_analysis()``. Usually one
to three compiles decide.

The footprint is the whole compiled loss + gradient: the parameters and the
batch going in, the gradients coming out and XLA's temporary buffers. An
optimizer's state lives outside it: leave room for it in the budget. The
gradient is taken with respect to every floating leaf (full fine-tuning); a
model with LoRA adapters trains fewer, so its plan errs on the safe side.
The transformer's layers are one stacked run, so one remat policy (and one
nesting) covers all of them.

With ``mesh=`` the plan is of one device of a sharded step: the model placed by
partition rules (default :func:`~jaxlean.models.lm.rules.transformer_rules`), the
batch split over the mesh's ``data`` and ``fsdp`` axes, each sequence over its ``seq``
axis (context parallelism; attention is then flash attention, never dense), heads and MLP
features over its ``tensor`` axis; the step is compiled for the mesh, whose
``memory_analysis()`` is per device, and the budget is one device's.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxlean._args import as_int
from jaxlean._units import format_bytes
from jaxlean.compile.memory_budget import (
    BudgetSearch,
    Candidate,
    StepMemory,
    device_memory,
    search_budget,
)
from jaxlean.errors import ConfigError
from jaxlean.models.lm._memory_cost import (
    Choice,
    StepShape,
    itemsize,
    predicted_cost,
    predicted_temp,
)
from jaxlean.models.lm.attention import choose_attention
from jaxlean.models.lm.causal_loss import loss
from jaxlean.models.lm.rules import transformer_rules
from jaxlean.models.lm.transformer import Transformer
from jaxlean.nn.attention_mask import AttentionMask
from jaxlean.nn.remat import REMAT_NAMES, has_pinned_host
from jaxlean.parallel.mesh import (
    BATCH_AXES,
    SEQ,
    TENSOR,
    Rules,
    axis_names,
    batch_spec,
    named_shardings,
    partition_specs,
)
from jaxlean.parallel.tensor import check_divisible

__all__ = ["MemoryPlan", "plan_memory", "step_memory"]

DEFAULT_REMATS = (None, "dots_no_batch", "dots", "full")
"""Remat policies searched by default (``"offload"`` too where the device has pinned host
memory)."""
_OPTIONS = ("budget", "remats", "nested_sizes", "chunk_sizes", "attention_tiles",
            "max_compiles", "progress", "mesh", "rules")


@dataclasses.dataclass(frozen=True)
class MemoryPlan:
    """A chosen way to run the training step, with its predicted and compiled memory.

    Apply it with :meth:`apply` (the model's structure options) and :meth:`loss`
    (the loss with the chosen chunk); ``str(plan)`` is the report.

    Attributes:
        remat, nested, attention, attention_tile: the model's structure options.
        chunk_size: tokens per loss chunk.
        budget: the budget in bytes.
        predicted: the cost model's footprint in bytes (after the search's correction).
        memory: the compiled step's :class:`~jaxlean.compile.memory_budget.StepMemory`.
        search: every compile of the search, and the candidates it chose among.
    """

    remat: str | None
    nested: int | None
    chunk_size: int
    attention: str
    attention_tile: int
    budget: int
    predicted: int
    memory: StepMemory
    search: BudgetSearch = dataclasses.field(repr=False, compare=False)
    planned: Any = dataclasses.field(default=None, repr=False, compare=False)
    """The planned model's config (``apply`` refuses a model with another)."""

    @property
    def options(self) -> dict[str, Any]:
        """The structure options for :meth:`Transformer.with_options`."""
        return dict(remat=self.remat, nested=self.nested, attention=self.attention,
                    attention_tile=self.attention_tile)

    def apply(self, model: Transformer) -> Transformer:
        """``model`` running as planned (same weights, other structure options).

        Raises:
          ConfigError: ``model``'s config differs from the planned model's in anything but
            the options a plan sets (its memory was never measured).
        """
        if self.planned is not None:
            ours, theirs = dataclasses.asdict(self.planned), dataclasses.asdict(model.config)
            differ = sorted(k for k in ours if k not in self.options and ours[k] != theirs[k])
            if differ:
                raise ConfigError(f"MemoryPlan.apply: this plan was made for another model "
                                  f"(config {differ} differ); plan this one with plan_memory")
        return model.with_options(**self.options)

    def loss(self, fn: Callable[..., Any] = loss) -> Callable[..., Any]:
        """``fn`` (the transformer's :func:`loss` by default) with the planned ``chunk_size``,
        ready for :func:`~jaxlean.train.step.make_train_step`."""
        return functools.partial(fn, chunk_size=self.chunk_size)

    def __str__(self) -> str:
        lines = [f"memory plan: remat={self.remat!r}, nested={self.nested!r}, loss chunk "
                 f"{self.chunk_size}, {self.attention} attention"
                 + (f" (tile {self.attention_tile})" if self.attention == "flash" else ""),
                 f"  budget     {format_bytes(self.budget)}",
                 f"  predicted  {format_bytes(self.predicted)}",
                 f"  compiled   {self.memory}",
                 f"  searched   {self.search.candidates} candidates, "
                 f"{len(self.search.front)} on the speed/memory front, "
                 f"{len(self.search.tried)} compiled:"]
        for done in self.search.tried:
            mark = "fits" if done.memory.total <= self.budget else "over"
            chosen = "  <- chosen" if done is self.search.chosen else ""
            lines.append(f"    {done.candidate.option}: predicted {format_bytes(done.predicted)}"
                         f", compiled {format_bytes(done.memory.total)} ({mark}){chosen}")
        return "\n".join(lines)


def _is_leaf_array(x: Any) -> bool:
    return eqx.is_array(x) or isinstance(x, jax.ShapeDtypeStruct)


def _parts(mesh: Any, entry: Any) -> int:
    return math.prod(int(mesh.shape[name]) for name in axis_names(entry))


def _device_bytes(tree: Any, mesh: Any, rules: Rules | None) -> int:
    """Bytes of ``tree``'s arrays one device holds (all of them without a mesh)."""
    arrays = [x for x in jax.tree.leaves(tree) if _is_leaf_array(x)]
    if mesh is None:
        return sum(math.prod(x.shape) * np.dtype(x.dtype).itemsize for x in arrays)
    specs = [spec for spec in jax.tree.leaves(
        partition_specs(tree, mesh, rules),
        is_leaf=lambda x: isinstance(x, jax.sharding.PartitionSpec)) if spec is not None]
    return sum(math.prod(x.shape) * np.dtype(x.dtype).itemsize
               // math.prod(_parts(mesh, entry) for entry in spec)
               for x, spec in zip(arrays, specs, strict=True))


def _batch_axes(mesh: Any) -> tuple[str, ...]:
    return tuple(name for name in BATCH_AXES if name in mesh.axis_names)


def _shape(model: Transformer, batch_shape: Sequence[int], mesh: Any = None,
           rules: Rules | None = None) -> StepShape:
    """The step's sizes on one device (the whole step's without a mesh)."""
    c = model.config
    batch, tensor, layer_bytes = batch_shape[0], 1, _device_bytes(model.layers, None, None)
    param_bytes = _device_bytes(model, mesh, rules)
    length = batch_shape[1]
    if mesh is not None:
        batch //= _parts(mesh, _batch_axes(mesh))
        length //= _seq(mesh)
        tensor = int(mesh.shape[TENSOR]) if TENSOR in mesh.axis_names else 1
        layer_bytes = layer_bytes * param_bytes // max(_device_bytes(model, None, None), 1)
    return StepShape(c, batch, length, itemsize(c, model.embed.dtype), param_bytes,
                     layer_bytes // c.num_layers, tensor)


def _seq(mesh: Any) -> int:
    """The size of the mesh's ``seq`` axis (1 without one)."""
    return int(mesh.shape[SEQ]) if mesh is not None and SEQ in mesh.axis_names else 1


def step_memory(model: Transformer, batch_shape: Sequence[int], chunk_size: int = 1024,
                mesh: Any = None, rules: Rules | None = None) -> StepMemory:
    """The compiled memory of the loss + gradient of ``model`` as configured, on token ids
    of ``batch_shape`` (compiled ahead of time, never run; the model may be abstract).

    With ``mesh`` (and partition ``rules``, default the transformer's own) it is one
    device's: the model placed by the rules, the ids split over the mesh's batch axes,
    traced under ``jax.set_mesh(mesh)`` (so a ``tensor`` axis keeps the Megatron layout).
    """
    ids = jax.ShapeDtypeStruct(tuple(batch_shape), jnp.int32)

    def step(model, input_ids, targets):
        return jax.value_and_grad(loss)(model, input_ids, targets=targets,
                                        chunk_size=chunk_size)

    if mesh is None:
        return StepMemory.of(jax.jit(step).lower(model, ids, ids).compile())
    rules = _default_rules() if rules is None else rules
    model_shardings = named_shardings(model, mesh, rules)
    id_sharding = jax.sharding.NamedSharding(
        mesh, batch_spec(2, _batch_axes(mesh), SEQ if _seq(mesh) > 1 else None))
    jitted = jax.jit(step, in_shardings=(model_shardings, id_sharding, id_sharding))
    with jax.set_mesh(mesh):
        return StepMemory.of(jitted.lower(model, ids, ids).compile())


def _default_rules() -> Rules:
    return (*transformer_rules(), (r".*", jax.sharding.PartitionSpec()))


def _check_mesh(model: Transformer, batch: int, mesh: Any, length: int = 1) -> None:
    """Refuse a mesh the batch or the model's heads and features do not fit, naming them."""
    if not isinstance(mesh, jax.sharding.Mesh):
        raise ConfigError(f"plan_memory: mesh must be a jax.sharding.Mesh (e.g. "
                          f"jaxlean.parallel.mesh.make_mesh(...)), got {type(mesh).__name__}")
    parts = _parts(mesh, _batch_axes(mesh))
    if batch % parts:
        raise ConfigError(f"plan_memory: a batch of {batch} examples cannot be split over the "
                          f"{parts} devices of mesh axes {_batch_axes(mesh)}")
    if length % _seq(mesh):
        raise ConfigError(f"plan_memory: sequences of {length} tokens cannot be split over "
                          f"the {_seq(mesh)} devices of the mesh's {SEQ!r} axis")
    if TENSOR in mesh.axis_names and mesh.shape[TENSOR] > 1:
        c = model.config
        check_divisible({"num_heads": c.num_heads, "num_kv_heads": c.num_kv_heads,
                         "intermediate_size": c.intermediate_size},
                        int(mesh.shape[TENSOR]), "plan_memory")


def _choices(model: Transformer, batch_shape: tuple[int, int], remats, nested_sizes,
             chunk_sizes, attention_tiles) -> list[Choice]:
    c = model.config
    batch, length = batch_shape
    dtype = c.compute_dtype or model.embed.dtype
    q = jax.ShapeDtypeStruct((batch, length, c.num_heads, c.head_dim), dtype)
    k = jax.ShapeDtypeStruct((batch, length, c.num_kv_heads, c.head_dim), dtype)
    kind = choose_attention(c.attention, q, k, AttentionMask(causal=True,
                                                             window=c.sliding_window))
    attentions = [(kind, c.attention_tile)]
    if kind != "cudnn":
        attentions = [("flash", tile) for tile in attention_tiles]
        if kind == "dense":
            attentions.insert(0, ("dense", c.attention_tile))
    nesteds = [None, *nested_sizes] if c.scan else [None]
    return [Choice(remat, nested, chunk, attention, tile) for remat, nested, chunk,
            (attention, tile) in itertools.product(remats, nesteds, chunk_sizes, attentions)]


def _defaults(model: Transformer, batch_shape: tuple[int, int]) -> dict[str, tuple]:
    c = model.config
    depth, tokens = c.num_layers, batch_shape[0] * batch_shape[1]
    divisors = [k for k in range(2, depth // 2 + 1) if depth % k == 0]
    nested = sorted(sorted(divisors, key=lambda k: abs(math.log(k / math.sqrt(depth))))[:3])
    chunk = min(1024, tokens)
    tile = min(c.attention_tile, batch_shape[1])
    remats = (*DEFAULT_REMATS, "offload") if has_pinned_host() else DEFAULT_REMATS
    return dict(remats=remats, nested_sizes=tuple(nested),
                chunk_sizes=tuple(sorted({max(chunk // d, 1) for d in (1, 4, 16)},
                                         reverse=True)),
                attention_tiles=tuple(sorted({max(tile // d, 8) for d in (1, 2, 4)},
                                             reverse=True)))


def _positive_ints(values: Any, name: str) -> tuple[int, ...]:
    values = tuple(values) if isinstance(values, Sequence) else (values,)
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ConfigError(f"plan_memory: {name} must be positive ints, got {value!r}")
    if not values:
        raise ConfigError(f"plan_memory: {name} must name at least one value")
    return tuple(int(v) for v in values)


def _search_space(model: Transformer, batch_shape: tuple[int, int], given: dict[str, Any]
                  ) -> dict[str, tuple]:
    space = _defaults(model, batch_shape)
    if given["remats"] is not None:
        remats = (given["remats"] if isinstance(given["remats"], Sequence)
                  and not isinstance(given["remats"], str) else (given["remats"],))
        unknown = [r for r in remats if r is not None and r not in REMAT_NAMES]
        if unknown or not remats:
            raise ConfigError(f"plan_memory: remats={given['remats']!r} must be a list of "
                              f"None and {list(REMAT_NAMES)}; unknown: {unknown}")
        space["remats"] = tuple(remats)
    for name in ("nested_sizes", "chunk_sizes", "attention_tiles"):
        if given[name] is not None:
            space[name] = _positive_ints(given[name], name)
    return space


def _batch_shape(batch_shape: Any) -> tuple[int, int]:
    shape = tuple(batch_shape) if isinstance(batch_shape, Sequence) else None
    if (shape is None or len(shape) != 2 or any(
            isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1
            for n in shape)):
        raise ConfigError(f"plan_memory: batch_shape must be (batch, length) of positive ints, "
                          f"got {batch_shape!r}")
    return int(shape[0]), int(shape[1])


def _budget(budget: Any) -> int:
    if budget is None:
        limit = device_memory()
        if limit is None:
            raise ConfigError(
                f"plan_memory: the {jax.default_backend()!r} backend does not report its "
                "memory, so pass budget= in bytes (e.g. budget=8 * 2**30)")
        return limit
    if (isinstance(budget, bool) or not isinstance(budget, (int, float, np.number))
            or not budget > 0 or not math.isfinite(budget)):
        raise ConfigError(f"plan_memory: budget must be a positive number of bytes, got "
                          f"{budget!r}")
    return int(budget)


def plan_memory(model: Transformer, batch_shape: Sequence[int], budget: float | None = None,
                *, remats: Sequence[str | None] | None = None,
                nested_sizes: Sequence[int] | None = None,
                chunk_sizes: Sequence[int] | None = None,
                attention_tiles: Sequence[int] | None = None, max_compiles: int = 6,
                progress: bool | Callable[[str], None] = True, mesh: Any = None,
                rules: Rules | None = None, **unknown: Any) -> MemoryPlan:
    """The fastest way to run ``model``'s loss + gradient on ``batch_shape`` within ``budget``.

    Candidates are compiled ahead of time (``jax.jit(...).lower(...).compile()``),
    never run; the model may be abstract (``eqx.filter_eval_shape``), so a model
    too large to hold can be planned.

    Args:
        model: the transformer (its weights, or their shapes).
        batch_shape: ``(batch, length)`` of the token ids of one step.
        budget: bytes the step may use; default the device's memory. The CPU does not
            report its memory, so there it must be given.
        remats: remat policies to consider; default ``None``, ``"dots_no_batch"``,
            ``"dots"``, ``"full"`` (and ``"offload"`` where the device has pinned host
            memory).
        nested_sizes: nested block sizes to consider besides none; default up to three
            divisors of the depth nearest its square root.
        chunk_sizes: loss chunks to consider; default 1024 (or the batch's tokens), a
            quarter and a sixteenth of it.
        attention_tiles: flash tiles to consider; default the model's tile, half and a
            quarter of it. Dense attention is a candidate where the model's
            ``attention`` resolves to it; cuDNN's is kept as it is.
        max_compiles: the most compiles the search makes (one more when nothing fits).
        progress: a line per compile on stderr (True), a callable given each line, or
            False.
        mesh: plan one device of a sharded step on this mesh (``make_mesh(data, fsdp,
            tensor)``): the budget is then one device's, and the footprint each device's.
        rules: partition rules placing the model on ``mesh``; default
            :func:`~jaxlean.models.lm.rules.transformer_rules` and the rest replicated.

    Returns:
        The :class:`MemoryPlan`; ``print(plan)`` reports it.

    Raises:
        MemoryBudgetError: nothing searched fits; names the smallest footprint compiled.
        ConfigError: an unknown keyword, a budget that is not a positive number (or
            missing on a backend that does not report its memory), a bad batch shape or
            search option, naming it.
    """
    if unknown:
        raise ConfigError(f"plan_memory: unknown option(s) {sorted(unknown)}; it takes "
                          f"model, batch_shape and {list(_OPTIONS)}")
    if not isinstance(model, Transformer):
        raise ConfigError(f"plan_memory plans a jaxlean Transformer, got "
                          f"{type(model).__name__}")
    max_compiles = as_int(max_compiles, "plan_memory: max_compiles", minimum=1)
    shape_ = _batch_shape(batch_shape)
    budget = _budget(budget)
    space = _search_space(model, shape_, dict(remats=remats, nested_sizes=nested_sizes,
                                              chunk_sizes=chunk_sizes,
                                              attention_tiles=attention_tiles))
    if mesh is not None:
        _check_mesh(model, shape_[0], mesh, shape_[1])
        rules = _default_rules() if rules is None else rules
    elif rules is not None:
        raise ConfigError("plan_memory: rules= places the model on a mesh; pass mesh= too")
    sizes = _shape(model, shape_, mesh, rules)
    ids_bytes = 2 * sizes.tokens * 4  # one device's ids and targets
    fixed = 2 * sizes.param_bytes + ids_bytes
    candidates = [Candidate(choice, predicted_cost(sizes, choice), fixed,
                            predicted_temp(sizes, choice))
                  for choice in _choices(model, shape_, **space)
                  if _seq(mesh) == 1 or choice.attention != "dense"]  # dense is never split

    def measure(choice: Choice) -> StepMemory:
        options = dict(remat=choice.remat, nested=choice.nested, attention=choice.attention,
                       attention_tile=choice.attention_tile)
        return step_memory(model.with_options(**options), shape_, choice.chunk_size, mesh,
                           rules)

    search = search_budget(candidates, measure, budget, max_compiles=max_compiles,
                           progress=progress, label="plan_memory")
    chosen = search.chosen.candidate.option
    plan = MemoryPlan(chosen.remat, chosen.nested, chosen.chunk_size, chosen.attention,
                      chosen.attention_tile, budget, search.chosen.predicted,
                      search.chosen.memory, search, model.config)
    if progress:
        for line in str(plan).splitlines():
            (progress if callable(progress) else _stderr)(line)
    return plan


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
