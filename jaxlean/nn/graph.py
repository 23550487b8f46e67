"""Graph: a DAG of modules whose chains of identical modules are traced once.

A Python loop over N modules traces and compiles N copies of the module. A
:class:`Graph` finds, once at construction, every maximal chain of identical
modules (same type, same parameter shapes and dtypes, equal static fields)
linked one-to-one, stores each chain's parameters stacked and runs it as one
:func:`~jaxlean.nn.layers.scan_layers`; the other nodes run one by one. The graph
is an Equinox module, so it is an ordinary pytree for ``jax.grad`` and optax.

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
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import equinox as eqx
import jax

from jaxlean._pytree import is_array
from jaxlean.errors import GraphError
from jaxlean.nn._graph_plan import INPUT, OUTPUT, Edge, Plan, Spec, build_plan
from jaxlean.nn.layers import depth_of, scan_layers, stack, unstack
from jaxlean.nn.remat import RematOption, remat_body, resolve_policy


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


def _same_shapes(a: Any, b: Any) -> bool:
    leaves_a, tree_a = jax.tree.flatten(eqx.filter_eval_shape(lambda tree: tree, a))
    leaves_b, tree_b = jax.tree.flatten(eqx.filter_eval_shape(lambda tree: tree, b))
    return tree_a == tree_b and all(
        (x.shape, x.dtype) == (y.shape, y.dtype) for x, y in zip(leaves_a, leaves_b, strict=True))


def chain_edges(names: Sequence[str]) -> dict[str, str]:
    """The edges of a simple chain ``input -> names[0] -> ... -> names[-1] -> output``."""
    names = list(names)
    if not names:
        raise GraphError("a chain needs at least one node")
    return {INPUT: names[0], **dict(zip(names, [*names[1:], OUTPUT], strict=True))}


def _apply_layer(layer: Any, carry: Any, _: Any) -> tuple[Any, None]:
    return layer(carry), None


class Graph(eqx.Module):
    """A directed acyclic graph of modules; chains of identical modules run as one scan.

    Attributes:
        modules: the nodes run one by one, by name.
        chains: one stacked module per scanned chain (array leaves have a leading
            axis over the chain's nodes), in plan order.
        plan: the static execution plan (printable: ``print(graph.plan)``).
        remat: rematerialisation option of every node (see :mod:`jaxlean.nn.remat`).
    """

    modules: dict[str, Any]
    chains: tuple[Any, ...]
    plan: Plan = eqx.field(static=True)
    remat: RematOption = eqx.field(static=True)

    def __init__(self, nodes: Mapping[str, Any], edges: Mapping[str, str | list[str]], *,
                 remat: RematOption = None, scan: bool = True):
        """Validate the graph, plan its execution and stack the chains' parameters.

        Args:
            nodes: name -> module (any callable pytree, e.g. an Equinox module) or a
                ``(fn, params)`` pair called as ``fn(params, x)``. Names may not
                contain dots or be ``"input"``/``"output"``.
            edges: source -> target or list of targets, as paths (see the module
                docstring). Nodes that do not reach ``"output"`` are warned about and
                not run (their parameters are dropped).
            remat: ``None``, a name from :data:`jaxlean.nn.remat.REMAT_NAMES` or a
                ``jax.checkpoint`` policy, applied to every node (inside the scan for chains).
            scan: ``False`` runs every node one by one (no stacking), for comparison.

        Raises:
            GraphError: a cycle (listed), an unconnected input, an unknown node, a
                reserved name; the message names the node or edge.
        """
        if not isinstance(nodes, Mapping):
            raise GraphError(f"nodes must be a dict name -> module, got {type(nodes).__name__}")
        resolve_policy(remat)
        modules = {name: _as_module(name, node) for name, node in nodes.items()}
        plan = build_plan(modules, edges, scan=scan)
        for name in plan.unused:
            warnings.warn(f"graph node {name!r} does not reach 'output'; it is not run and "
                          "its parameters are dropped", UserWarning, stacklevel=2)
        self.modules = {step.nodes[0]: modules[step.nodes[0]]
                        for step in plan.steps if step.chain is None}
        self.chains = tuple(stack([modules[name] for name in step.nodes])
                            for step in plan.steps if step.chain is not None)
        self.plan = plan
        self.remat = remat

    def __call__(self, x: Any) -> Any:
        """Run the graph on ``x`` (what ``"input"`` carries) and return ``"output"``."""
        values = {INPUT: x}
        for step in self.plan.steps:
            inputs = self._gather(step.nodes[0], values)
            if step.chain is None:
                values[step.nodes[0]] = self._run_node(self.modules[step.nodes[0]], inputs)
            else:
                values[step.nodes[-1]] = self._run_chain(self.chains[step.chain], inputs)
        return self._gather(OUTPUT, values)

    def node(self, name: str) -> Any:
        """The module of node ``name`` (sliced out of its chain's stack if it is scanned)."""
        step = next((step for step in self.plan.steps if name in step.nodes), None)
        if step is None:
            raise GraphError(f"no node {name!r} is run by this graph; nodes: "
                             f"{', '.join(self.plan.nodes)}")
        if step.chain is None:
            return self.modules[name]
        return _layers(self.chains[step.chain], step.nodes.index(name), None, squeeze=True)

    def __repr__(self) -> str:
        size = sum(leaf.size for leaf in jax.tree.leaves(self) if is_array(leaf))
        return f"Graph({len(self.plan.nodes)} nodes, {size:,} parameters)\n{self.plan}"

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

    def _run_node(self, module: Any, x: Any) -> Any:
        if self.remat is None:
            return module(x)
        params, static = eqx.partition(module, is_array)
        body = remat_body(lambda carry, p: (eqx.combine(p, static)(carry), None), self.remat)
        return body(x, params)[0]

    def _run_chain(self, stacked: Any, x: Any) -> Any:
        """Run a chain as one scan over its stacked layers.

        A first node whose output differs in structure from its input (a fan-in
        tuple, say) runs alone before the scan; if the rest still differs, unrolled.
        """
        for peeled in (False, True):
            first = _layers(stacked, 0, 1, squeeze=True)
            if _same_shapes(eqx.filter_eval_shape(first, x), x):
                return scan_layers(_apply_layer, stacked, x, remat=self.remat)[0]
            if peeled or depth_of(stacked) == 1:
                break
            x = self._run_node(first, x)
            stacked = _layers(stacked, 1, None)
        for layer in unstack(stacked):
            x = self._run_node(layer, x)
        return x


def _layers(stacked: Any, start: int, stop: int | None, squeeze: bool = False) -> Any:
    """Layers ``start:stop`` of a stack (or layer ``start`` alone, with ``squeeze``)."""
    return jax.tree.map(
        lambda leaf: (leaf[start] if squeeze else leaf[start:stop]) if is_array(leaf) else leaf,
        stacked)
