"""Layer stacks traced once, and rematerialisation.

- ``layers``: :func:`stack`, :func:`unstack` and :func:`scan_layers`, a run of
  identical layers as one ``lax.scan``;
- ``sequential``: :class:`Sequential`, layers in order with every run of identical
  layers scanned;
- ``graph``: :class:`Graph`, a DAG of modules whose runs of identical modules are
  scanned (:class:`FnNode`, :func:`chain_edges`);
- ``remat``: the named rematerialisation policies (``remat=``) every one of them takes.

The names below are imported on first use (PEP 562): ``import jaxlean.nn`` imports
no JAX until one is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jaxlean._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see of the lazy names below
    from jaxlean.nn import graph as graph
    from jaxlean.nn import layers as layers
    from jaxlean.nn import remat as remat
    from jaxlean.nn import sequential as sequential
    from jaxlean.nn.graph import FnNode as FnNode
    from jaxlean.nn.graph import Graph as Graph
    from jaxlean.nn.graph import chain_edges as chain_edges
    from jaxlean.nn.layers import Nested as Nested
    from jaxlean.nn.layers import auto_block_size as auto_block_size
    from jaxlean.nn.layers import depth_of as depth_of
    from jaxlean.nn.layers import scan_layers as scan_layers
    from jaxlean.nn.layers import stack as stack
    from jaxlean.nn.layers import take_layers as take_layers
    from jaxlean.nn.layers import unstack as unstack
    from jaxlean.nn.remat import REMAT_NAMES as REMAT_NAMES
    from jaxlean.nn.remat import RematOption as RematOption
    from jaxlean.nn.remat import remat_body as remat_body
    from jaxlean.nn.remat import resolve_policy as resolve_policy
    from jaxlean.nn.sequential import Sequential as Sequential

_SUBMODULES = ("graph", "layers", "remat", "sequential")

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "FnNode": "jaxlean.nn.graph",
    "Graph": "jaxlean.nn.graph",
    "chain_edges": "jaxlean.nn.graph",
    "Nested": "jaxlean.nn.layers",
    "auto_block_size": "jaxlean.nn.layers",
    "depth_of": "jaxlean.nn.layers",
    "scan_layers": "jaxlean.nn.layers",
    "stack": "jaxlean.nn.layers",
    "take_layers": "jaxlean.nn.layers",
    "unstack": "jaxlean.nn.layers",
    "REMAT_NAMES": "jaxlean.nn.remat",
    "RematOption": "jaxlean.nn.remat",
    "remat_body": "jaxlean.nn.remat",
    "resolve_policy": "jaxlean.nn.remat",
    "Sequential": "jaxlean.nn.sequential",
}

__all__ = ["REMAT_NAMES", "FnNode", "Graph", "Nested", "RematOption", "Sequential",
           "auto_block_size", "chain_edges", "depth_of", "graph", "layers", "remat", "remat_body",
           "resolve_policy", "scan_layers", "sequential", "stack", "take_layers", "unstack"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _SUBMODULES)
