"""``Sequential``: layers applied in order, with every run of identical layers scanned.

A ``Sequential`` is the chain graph ``input -> 0 -> 1 -> ... -> output``: it is
planned and run by the same code as :class:`~jaxlean.nn.graph.Graph`, so the
options ``remat``, ``nested`` and ``scan`` mean the same in both. At
construction the layers are grouped, once, into runs (see
:mod:`jaxlean.nn._runs`): a maximal stretch of layers of identical structure
becomes one stacked ``scan_layers`` call, a repeating pattern (A, B, A, B, ...)
becomes a scan over the pattern block, and whatever is left (a different first
or last layer) is applied alone. The result traces each distinct layer kind
once, however deep the model is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import equinox as eqx

from jaxlean.nn._runs import Run
from jaxlean.nn.graph import Graph, chain_edges
from jaxlean.nn.layers import Nested
from jaxlean.nn.remat import RematOption

__all__ = ["Sequential"]


class Sequential(eqx.Module):
    """Apply ``layers`` in order (``x = layer(x)``), scanning each run of identical layers.

    Args:
        layers: callables that are pytrees (Equinox modules, or anything callable as
            ``layer(x)``), or ``(fn, params)`` pairs called as ``fn(params, x)``.
        remat: rematerialisation of every step: each block of a scanned run and each
            layer applied alone (see :mod:`jaxlean.nn.remat`).
        nested: two-level checkpointing block size for scanned runs, or ``"auto"``
            (see :func:`~jaxlean.nn.layers.scan_layers`).
        scan: ``False`` applies every layer alone: the unrolled reference.

    Raises:
        GraphError: a layer that is not callable, named by its index.
        ConfigError: an invalid ``remat``, ``nested`` or ``scan``, named.
    """

    graph: Graph

    def __init__(self, layers: Sequence[Callable], *, remat: RematOption = None,
                 nested: Nested = None, scan: bool = True):
        nodes = {str(index): layer for index, layer in enumerate(layers)}
        self.graph = Graph(nodes, chain_edges(nodes), remat=remat, nested=nested, scan=scan,
                           label="layer")

    def __call__(self, x: Any) -> Any:
        return self.graph(x)

    @property
    def runs(self) -> tuple[Run, ...]:
        """The runs of the plan, by layer index."""
        return tuple(step.run for step in self.graph.plan.steps)

    @property
    def remat(self) -> RematOption:
        return self.graph.remat

    @property
    def nested(self) -> Nested:
        return self.graph.nested

    @property
    def scan(self) -> bool:
        return self.graph.scan

    @property
    def layers(self) -> list[Any]:
        """The layers as a flat list, in order (scanned runs unstacked)."""
        return [self.graph.node(name) for name in self.graph.plan.nodes]

    def describe_plan(self) -> str:
        """One line per run: which layers were scanned together and which run alone."""
        lines = []
        for step in self.graph.plan.steps:
            run = step.run
            span = f"layers {run.start}..{run.stop - 1}" if run.stop - run.start > 1 else \
                f"layer {run.start}"
            if run.scanned:
                lines.append(f"{span}: scan {run.repeats} x [{step.kind}]")
            else:
                lines.append(f"{span}: {step.kind} (alone)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        body = "\n".join("  " + line for line in self.describe_plan().splitlines())
        return f"Sequential({len(self.graph.plan.nodes)} layers, {self.graph.options})\n{body}"
