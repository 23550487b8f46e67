"""The static execution plan of a :class:`~jaxlean.nn.graph.Graph`, built once in Python.

From the node names and the edge dict this module validates the graph
(reserved and unknown names, cycles, unconnected inputs), orders it
topologically, finds the maximal chains (each node's whole output is the next
node's only input), has :mod:`jaxlean.nn._runs` split each chain into runs of
identical modules, and records how each node's input is assembled from the
edges. Nothing here computes on JAX arrays; the result is hashable static metadata.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Mapping, Sequence
from typing import Any

from jaxlean._args import as_names
from jaxlean.errors import ConfigError, GraphError
from jaxlean.nn._lost_scans import lost_scans
from jaxlean.nn._runs import Run, block_kind, chain_runs, module_kinds

INPUT, OUTPUT = "input", "output"
RESERVED = (INPUT, OUTPUT)

# How a node's input is assembled from its incoming edges (nested tuples, hashable):
#   ("edge", i)                        the value carried by edge i
#   ("tuple", (spec, ...))             a tuple, in edge order or by integer slot
#   ("dict", ((key, spec), ...))       a dict, by slot name
Spec = tuple


@dataclasses.dataclass(frozen=True)
class Edge:
    """One connection ``source[.path] -> target[.path]``."""

    source: str
    source_path: tuple[str, ...]
    target: str
    target_path: tuple[str, ...]

    def __str__(self) -> str:
        return (f"{'.'.join((self.source, *self.source_path))!r} -> "
                f"{'.'.join((self.target, *self.target_path))!r}")

    @property
    def plain(self) -> bool:
        """Whole output to whole input: the kind of link a chain is made of."""
        return not self.source_path and not self.target_path


@dataclasses.dataclass(frozen=True)
class Step:
    """One step of the plan: a single node, or a run of nodes executed as one scan.

    Attributes:
        nodes: the nodes of the step, in order.
        kind: the type names of one block of the run (``"Dense"``, ``"Linear, MLP"``).
        run: where the step lies in its chain (its period and number of repeats).
        chain: index of the run's stacked parameters in ``Graph.chains``; ``None``
            for a node run alone.
    """

    nodes: tuple[str, ...]
    kind: str
    run: Run
    chain: int | None = None

    def __str__(self) -> str:
        if self.chain is None:
            return f"{self.nodes[0]} ({self.kind})"
        names = self.nodes if len(self.nodes) <= 4 else (*self.nodes[:2], "...", self.nodes[-1])
        block = self.kind if self.run.period == 1 else f"[{self.kind}]"
        return f"scan {self.run.repeats} x {block}: {' -> '.join(names)}"


@dataclasses.dataclass(frozen=True)
class Plan:
    """Topologically ordered steps, the edges, and how every input is assembled.

    ``lost_scans``: stretches of neighbouring nodes that run alone only because each
    holds its own (equivalent) function object, each as ``(nodes, path, function)``:
    where in each node the function sits, and its name and source line.
    """

    steps: tuple[Step, ...]
    edges: tuple[Edge, ...]
    inputs: tuple[tuple[str, Spec], ...]
    unused: tuple[str, ...]
    lost_scans: tuple[tuple[tuple[str, ...], str, str], ...] = ()

    @property
    def nodes(self) -> tuple[str, ...]:
        """The nodes that run, in execution order."""
        return tuple(name for step in self.steps for name in step.nodes)

    @property
    def num_chains(self) -> int:
        """The number of scanned runs (the length of ``Graph.chains``)."""
        return sum(step.chain is not None for step in self.steps)

    def input_spec(self, target: str) -> Spec:
        return dict(self.inputs)[target]

    def __str__(self) -> str:
        scanned = sum(len(step.nodes) for step in self.steps if step.chain is not None)
        lines = [f"plan: {_count(len(self.steps), 'step')} for {_count(len(self.nodes), 'node')}"
                 f" ({_count(self.num_chains, 'scanned run')} covering "
                 f"{_count(scanned, 'node')})"]
        lines += [f"  {i}. {step}" for i, step in enumerate(self.steps, start=1)]
        if self.unused:
            lines.append(f"  unused (not run): {', '.join(self.unused)}")
        return "\n".join(lines)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _split(path: Any, role: str) -> tuple[str, tuple[str, ...]]:
    if not isinstance(path, str):
        raise GraphError(f"edge {role} must be a string like 'node' or 'node.key', got {path!r}")
    parts = path.split(".")
    if not all(parts):
        raise GraphError(f"malformed edge {role} {path!r}: empty name between dots")
    return parts[0], tuple(parts[1:])


def check_node_names(names: Sequence[Any]) -> None:
    """Node names are non-empty strings without dots and not ``input``/``output``."""
    for name in names:
        if not isinstance(name, str) or not name:
            raise GraphError(f"node names must be non-empty strings, got {name!r}")
        if name in RESERVED:
            raise GraphError(f"{name!r} is reserved for the graph's {name}; rename that node")
        if "." in name:
            raise GraphError(f"node name {name!r} contains '.', which separates paths in edges")


def parse_edges(edges: Any, names: Sequence[str]) -> tuple[Edge, ...]:
    """Edges in order (dict order, then list order), with unknown and reserved names rejected."""
    if not isinstance(edges, Mapping):
        raise GraphError(f"edges must be a dict source -> target(s), got {type(edges).__name__}")
    known = set(names)
    parsed = []
    for source, targets in edges.items():
        try:
            targets = as_names(targets, f"edges[{source!r}]") if isinstance(
                targets, str | list | tuple) else None
        except ConfigError:
            targets = None
        if not targets:
            raise GraphError(f"edges[{source!r}] must be a target name or a non-empty list of "
                             f"them, got {edges[source]!r}")
        src, src_path = _split(source, "source")
        for target in targets:
            dst, dst_path = _split(target, "target")
            edge = Edge(src, src_path, dst, dst_path)
            if src == OUTPUT:
                raise GraphError(f"edge {edge}: 'output' cannot be the source of an edge")
            if dst == INPUT:
                raise GraphError(f"edge {edge}: 'input' cannot be the target of an edge")
            for end in (src, dst):
                if end not in known and end not in RESERVED:
                    raise GraphError(f"edge {edge}: unknown node {end!r}; the nodes are "
                                     f"{', '.join(names) or '(none)'}")
            parsed.append(edge)
    return tuple(parsed)


def _find_cycle(left: list[str], edges: Sequence[Edge]) -> list[str]:
    """A cycle among nodes a topological sort could not place, from the first-declared node."""
    remaining = set(left)
    predecessor = {}
    for edge in edges:
        if edge.source in remaining and edge.target in remaining:
            predecessor.setdefault(edge.target, edge.source)
    walk, seen = [left[0]], {left[0]: 0}
    while True:
        previous = predecessor[walk[-1]]
        if previous in seen:
            cycle = walk[seen[previous]:][::-1]
            start = min(range(len(cycle)), key=lambda i: left.index(cycle[i]))
            cycle = cycle[start:] + cycle[:start]
            return [*cycle, cycle[0]]
        seen[previous] = len(walk)
        walk.append(previous)


def topological_order(names: Sequence[str], edges: Sequence[Edge]) -> list[str]:
    """Nodes ordered so that every edge points forward; ties keep the user's order."""
    position = {name: i for i, name in enumerate(names)}
    indegree = dict.fromkeys(names, 0)
    successors: dict[str, list[str]] = {name: [] for name in names}
    for edge in edges:
        if edge.source in position and edge.target in position:
            indegree[edge.target] += 1
            successors[edge.source].append(edge.target)
    ready = [position[name] for name in names if indegree[name] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        name = names[heapq.heappop(ready)]
        order.append(name)
        for successor in successors[name]:
            indegree[successor] -= 1
            if indegree[successor] == 0:
                heapq.heappush(ready, position[successor])
    if len(order) < len(names):
        left = [name for name in names if name not in set(order)]
        raise GraphError(f"the graph has a cycle: {' -> '.join(_find_cycle(left, edges))}")
    return order


def _used_nodes(names: Sequence[str], edges: Sequence[Edge]) -> set[str]:
    """Nodes from which 'output' can be reached."""
    used, frontier = set(), [OUTPUT]
    while frontier:
        target = frontier.pop()
        for edge in edges:
            if edge.target == target and edge.source in names and edge.source not in used:
                used.add(edge.source)
                frontier.append(edge.source)
    return used


def _slots_spec(target: str, slots: dict, prefix: tuple[str, ...]) -> Spec:
    keys = list(slots)
    where = ".".join((target, *prefix))
    if all(key.isdigit() for key in keys):
        present = sorted(int(key) for key in keys)
        missing = [i for i in range(present[-1] + 1) if i not in present]
        if missing:
            raise GraphError(f"input {where}.{missing[0]} is not connected (connected slots: "
                             f"{', '.join(map(str, present))})")
        by_index = {int(key): value for key, value in slots.items()}
        return ("tuple", tuple(_slot(target, by_index[i], (*prefix, str(i)))
                               for i in present))
    return ("dict", tuple((key, _slot(target, value, (*prefix, key)))
                          for key, value in slots.items()))


def _slot(target: str, value: Any, prefix: tuple[str, ...]) -> Spec:
    return value if isinstance(value, tuple) else _slots_spec(target, value, prefix)


def input_spec(target: str, incoming: Sequence[tuple[int, Edge]]) -> Spec:
    """How ``target``'s input is built: one value, a tuple in edge order, or slots by name."""
    whole = [(i, edge) for i, edge in incoming if not edge.target_path]
    named = [(i, edge) for i, edge in incoming if edge.target_path]
    if whole and named:
        raise GraphError(
            f"{target!r} receives both whole-input edges ({', '.join(str(e) for _, e in whole)}) "
            f"and named-slot edges ({', '.join(str(e) for _, e in named)}); use one form")
    if whole:
        leaves = tuple(("edge", i) for i, _ in whole)
        return leaves[0] if len(leaves) == 1 else ("tuple", leaves)
    slots: dict = {}
    for i, edge in named:
        level = slots
        for key in edge.target_path[:-1]:
            level = level.setdefault(key, {})
            if isinstance(level, tuple):
                raise GraphError(f"edge {edge}: its slot is inside a slot already connected")
        key = edge.target_path[-1]
        if key in level:
            what = "connected twice" if isinstance(level[key], tuple) else "also split into slots"
            raise GraphError(f"input {'.'.join((target, *edge.target_path))} is {what} "
                             f"(by edge {edge})")
        level[key] = ("edge", i)
    return _slots_spec(target, slots, ())


def _links(order: Sequence[str], edges: Sequence[Edge]) -> dict:
    """``u -> v`` where u's whole output is its only output and v's only input."""
    outgoing: dict[str, list[Edge]] = {name: [] for name in order}
    incoming: dict[str, list[Edge]] = {name: [] for name in order}
    for edge in edges:
        if edge.source in outgoing:
            outgoing[edge.source].append(edge)
        if edge.target in incoming:
            incoming[edge.target].append(edge)
    links = {}
    for name in order:
        if len(outgoing[name]) != 1:
            continue
        edge = outgoing[name][0]
        if edge.plain and edge.target in incoming and len(incoming[edge.target]) == 1:
            links[name] = edge.target
    return links


def _steps(order: Sequence[str], links: Mapping[str, str], modules: Mapping[str, Any],
           scan: bool) -> tuple[tuple[Step, ...], tuple]:
    """Each maximal chain, at its first node's place in ``order``, split into runs; and
    the stretches of each chain that a function object per node keeps from scanning."""
    linked_to = set(links.values())
    steps, chains, lost = [], 0, []
    for name in order:
        if name in linked_to:
            continue
        chain = [name]
        while chain[-1] in links:
            chain.append(links[chain[-1]])
        chain_modules = [modules[node] for node in chain]
        kinds = module_kinds(chain_modules) if scan else None
        if kinds is not None:
            lost += [(tuple(chain[found.start:found.stop]), found.path, found.function)
                     for found in lost_scans(chain_modules, kinds)]
        for run in chain_runs(chain_modules, scan=scan, kinds=kinds):
            kind = block_kind(chain_modules[run.start:run.start + run.period])
            index = None
            if run.scanned:
                index, chains = chains, chains + 1
            steps.append(Step(tuple(chain[run.start:run.stop]), kind, run, index))
    return tuple(steps), tuple(lost)


def build_plan(modules: Mapping[str, Any], edges: Any, *, scan: bool = True) -> Plan:
    """Validate the graph and compute its execution plan.

    Args:
        modules: node name -> callable pytree, in the user's order.
        edges: source -> target or list of targets (see :class:`~jaxlean.nn.graph.Graph`).
        scan: find runs of identical modules in each chain and run each as one scan.

    Returns:
        The :class:`Plan`.

    Raises:
        GraphError: naming the offending node or edge.
    """
    names = list(modules)
    check_node_names(names)
    parsed = parse_edges(edges, names)
    order = topological_order(names, parsed)
    used = _used_nodes(names, parsed)
    kept = [edge for edge in parsed if edge.target == OUTPUT or edge.target in used]
    incoming: dict[str, list[tuple[int, Edge]]] = {}
    for i, edge in enumerate(kept):
        incoming.setdefault(edge.target, []).append((i, edge))
    if OUTPUT not in incoming:
        raise GraphError("nothing is connected to 'output'; add an edge like 'last_node' -> "
                         "'output'")
    run = [name for name in order if name in used]
    for name in run:
        if name not in incoming:
            raise GraphError(f"node {name!r} has no input connected; add an edge into it "
                             f"(for example 'input' -> {name!r})")
    inputs = tuple((target, input_spec(target, incoming[target])) for target in (*run, OUTPUT))
    steps, lost = _steps(run, _links(run, kept), modules, scan)
    return Plan(steps, tuple(kept), inputs,
                tuple(name for name in names if name not in used), lost)
