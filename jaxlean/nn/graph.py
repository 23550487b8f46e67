"""Graph: a DAG of modules whose runs of identical modules are traced once.

A Python loop over N modules traces and compiles N copies of the module. A
:class:`Graph` finds, once at construction, every maximal chain of nodes linked
one-to-one and splits it into runs of identical modules (same type, same
parameter shapes and dtypes, equal static fields), or of a repeating pattern of
them, with the planner of :mod:`jaxlean.nn._runs` that
:class:`~jaxlean.nn.sequential.Sequential` uses too. Each run's parameters are
stored stacked and run as one :func:`~jaxlean.nn.layers.scan_layers`; the other
nodes run one by one. The graph is an Equinox module, so it is an ordinary
pytree for ``jax.grad`` and optax.

Edges are a dict ``source -> target`` (or a list of targets, for fan-out).
``"input"`` and ``"output"`` are reserved names for the graph's argument and
result. Dotted paths reach into pytrees: ``"enc.a"`` is ``enc(...)["a"]`` (or
``[int]`` on a tuple, or an attribute) and ``"dec.1"`` is slot 1 of ``dec``'s input.

A node's input is assembled from its incoming edges in one of two forms:

- whole-input edges (``"a" -> "dec"``): one edge gives the value itself, several
  give a tuple in edge order (dict order of ``edges``, then list order);
- slot edges (``"a" -> "dec.x"``): the node receives a dict by slot name, or a
  tuple when the slots are ``0, 1, ..., k-1``; slots nest (``"dec.x.0"``).

The same rules build the graph's output from the edges into ``"output"``.

An error raised while a node runs (a shape mismatch is JAX's bare
``dot_general requires contracting dimensions ...``) is raised again, of the same
type, with the node (or layer, in a ``Sequential``) and its input shapes in front
of the original message. Neighbours that would be scanned together but for a new
function object each (a ``lambda`` per layer) are warned about at construction.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import equinox as eqx
import jax

from jaxlean._pytree import is_array
from jaxlean.errors import GraphError
from jaxlean.nn._graph_plan import INPUT, OUTPUT, Edge, Plan, Spec, Step, build_plan
from jaxlean.nn._runs import RunOptions, apply_alone, apply_scanned, module_of_run, stack_run
from jaxlean.nn.layers import Nested
from jaxlean.nn.remat import RematOption

__all__ = ["FnNode", "Graph", "chain_edges"]


class FnNode(eqx.Module):
    """A node given as a ``(fn, params)`` pair: calling it computes ``fn(params, x)``."""

    fn: Callable[[Any, Any], Any] = eqx.field(static=True)
    params: Any

    def __call__(self, x: Any) -> Any:
        return self.fn(self.params, x)


def _as_module(name: str, node: Any) -> Any:
    if isinstance(node, tuple) and len(node) == 2 and callable(node[0]):
        return FnNode(*node)
    if callable(node):
        return node
    raise GraphError(f"node {name!r} is neither a callable module nor a (fn, params) pair: "
                     f"got {type(node).__name__}")


def _index(value: Any, key: str, edge: Edge) -> Any:
    """``value[key]`` for dicts, ``value[int(key)]`` for sequences, else ``value.key``."""
    if isinstance(value, Mapping):
        if key in value:
            return value[key]
        if key.isdigit() and int(key) in value:
            return value[int(key)]
        raise GraphError(f"edge {edge}: the output of {edge.source!r} has no key {key!r} "
                         f"(keys: {list(value)})")
    if isinstance(value, list | tuple) and key.isdigit():
        if int(key) < len(value):
            return value[int(key)]
        raise GraphError(f"edge {edge}: the output of {edge.source!r} has only {len(value)} "
                         f"entries, no [{key}]")
    if hasattr(value, key):
        return getattr(value, key)
    raise GraphError(f"edge {edge}: cannot take {key!r} from the output of {edge.source!r}, "
                     f"a {type(value).__name__}")


def _names(nodes: Sequence[str], label: str) -> str:
    """``layers 3..9`` (a Sequential's indices) or ``nodes 'a', 'b', ..., 'z'``."""
    if label == "layer":
        return f"layer {nodes[0]}" if len(nodes) == 1 else f"layers {nodes[0]}..{nodes[-1]}"
    shown = [repr(n) for n in nodes] if len(nodes) <= 4 else \
        [repr(nodes[0]), repr(nodes[1]), "...", repr(nodes[-1])]
    return f"{label}{'s' if len(nodes) > 1 else ''} {', '.join(shown)}"


def _shapes(x: Any) -> str:
    """The input's array shapes, for an error message (``float32[8, 5]``)."""
    leaves = [f"{leaf.dtype}{list(leaf.shape)}" for leaf in jax.tree.leaves(x)
              if hasattr(leaf, "shape") and hasattr(leaf, "dtype")]
    if len(leaves) > 4:
        leaves = [*leaves[:4], "..."]
    return ", ".join(leaves) or "no arrays"


def _located(err: Exception, where: str) -> Exception:
    """``err`` again, of the same type when it can be rebuilt, with ``where`` in front."""
    message = f"{where}: {err}"
    try:
        located = type(err)(message)
    except Exception:  # a type whose constructor takes other arguments
        return GraphError(message)
    return located if str(located) == message else GraphError(message)


def chain_edges(names: Sequence[str]) -> dict[str, str]:
    """The edges of a simple chain ``input -> names[0] -> ... -> names[-1] -> output``.

    No names give ``input -> output``: the identity.
    """
    names = list(names)
    if not names:
        return {INPUT: OUTPUT}
    return {INPUT: names[0], **dict(zip(names, [*names[1:], OUTPUT], strict=True))}


class Graph(eqx.Module):
    """A directed acyclic graph of modules; runs of identical modules execute as one scan.

    Attributes:
        modules: the nodes run one by one, by name.
        chains: the stacked parameters of each scanned run (array leaves have a
            leading axis over the run's blocks), in plan order.
        plan: the static execution plan (printable: ``print(graph.plan)``).
        options: ``remat``, ``nested`` and ``scan``, as given (see :mod:`jaxlean.nn._runs`).
    """

    modules: dict[str, Any]
    chains: tuple[Any, ...]
    plan: Plan = eqx.field(static=True)
    options: RunOptions = eqx.field(static=True)
    label: str = eqx.field(static=True)

    def __init__(self, nodes: Mapping[str, Any], edges: Mapping[str, str | list[str]], *,
                 remat: RematOption = None, nested: Nested = None, scan: bool = True,
                 label: str = "node"):
        """Validate the graph, plan its execution and stack the runs' parameters.

        Args:
            nodes: name -> module (any callable pytree, e.g. an Equinox module) or a
                ``(fn, params)`` pair called as ``fn(params, x)``. Names may not
                contain dots or be ``"input"``/``"output"``.
            edges: source -> target or list of targets, as paths (see the module
                docstring). Nodes that do not reach ``"output"`` are warned about and
                not run (their parameters are dropped).
            remat: ``None``, a name from :data:`jaxlean.nn.remat.REMAT_NAMES` or a
                ``jax.checkpoint`` policy, applied to every step: each block of a
                scanned run, and each node run alone.
            nested: two-level checkpointing of every scanned run: ``k`` layers per
                block or ``"auto"`` (see :func:`~jaxlean.nn.layers.scan_layers`).
            scan: ``False`` runs every node one by one (no stacking): the unrolled
                reference, with the same values.
            label: what errors and warnings call a node (``Sequential`` says
                ``"layer"``: its nodes are the layer indices).

        Raises:
            GraphError: a cycle (listed), an unconnected input, an unknown node, a
                reserved name; the message names the node or edge.
            ConfigError: an invalid ``remat``, ``nested`` or ``scan``, named.
        """
        if not isinstance(nodes, Mapping):
            raise GraphError(f"nodes must be a dict name -> module, got {type(nodes).__name__}")
        options = RunOptions(remat, nested, scan)
        modules = {name: _as_module(name, node) for name, node in nodes.items()}
        plan = build_plan(modules, edges, scan=scan)
        for name in plan.unused:
            warnings.warn(f"graph node {name!r} does not reach 'output'; it is not run and "
                          "its parameters are dropped", UserWarning, stacklevel=2)
        for lost, path, function in plan.lost_scans:
            warnings.warn(
                f"{_names(lost, label)} would be scanned as one run of identical modules, "
                f"but {path} is a new function object in each ({function}), so each "
                f"{label} is traced and compiled on its own; create the function once and "
                f"give every {label} that same object", UserWarning, stacklevel=2)
        self.modules = {step.nodes[0]: modules[step.nodes[0]]
                        for step in plan.steps if step.chain is None}
        self.chains = tuple(stack_run([modules[name] for name in step.nodes], step.run.period)
                            for step in plan.steps if step.chain is not None)
        self.plan = plan
        self.options = options
        self.label = label

    @property
    def remat(self) -> RematOption:
        return self.options.remat

    @property
    def nested(self) -> Nested:
        return self.options.nested

    @property
    def scan(self) -> bool:
        return self.options.scan

    def __call__(self, x: Any) -> Any:
        """Run the graph on ``x`` (what ``"input"`` carries) and return ``"output"``."""
        values = {INPUT: x}
        for step in self.plan.steps:
            inputs = self._gather(step.nodes[0], values)
            try:
                if step.chain is None:
                    values[step.nodes[0]] = apply_alone(self.modules[step.nodes[0]], inputs,
                                                        self.options)
                else:
                    values[step.nodes[-1]] = apply_scanned(self.chains[step.chain], inputs,
                                                           self.options)
            except (TypeError, ValueError) as err:
                raise _located(err, self._where(step, inputs)) from err
        return self._gather(OUTPUT, values)

    def _where(self, step: Step, inputs: Any) -> str:
        """The failing node in the user's terms: ``layer 3 (Linear) on float32[8, 5]``."""
        kind = type(self.modules[step.nodes[0]]).__name__ if step.chain is None else step.kind
        where = f"{_names(step.nodes[:1], self.label)} ({kind}"
        if step.chain is not None:
            where += f", the first of {_names(step.nodes, self.label)} scanned as one run"
        return f"{where}) on input {_shapes(inputs)}"

    def node(self, name: str) -> Any:
        """The module of node ``name`` (sliced out of its run's stack if it is scanned)."""
        step = next((step for step in self.plan.steps if name in step.nodes), None)
        if step is None:
            raise GraphError(f"no node {name!r} is run by this graph; nodes: "
                             f"{', '.join(self.plan.nodes)}")
        if step.chain is None:
            return self.modules[name]
        return module_of_run(self.chains[step.chain], step.run.period, step.nodes.index(name))

    def __repr__(self) -> str:
        size = sum(leaf.size for leaf in jax.tree.leaves(self) if is_array(leaf))
        return (f"Graph({len(self.plan.nodes)} nodes, {size:,} parameters, {self.options})\n"
                f"{self.plan}")

    def _gather(self, target: str, values: dict[str, Any]) -> Any:
        return self._assemble(self.plan.input_spec(target), values)

    def _assemble(self, spec: Spec, values: dict[str, Any]) -> Any:
        kind, content = spec
        if kind == "edge":
            edge = self.plan.edges[content]
            value = values[edge.source]
            for key in edge.source_path:
                value = _index(value, key, edge)
            return value
        if kind == "tuple":
            return tuple(self._assemble(part, values) for part in content)
        return {key: self._assemble(part, values) for key, part in content}
