"""A differentiable neuron cable simulator that discretises cells as NEURON does.

* :mod:`~jaxlean.models.neuron.swc`: read SWC files, cut them into sections (Import3d's rules).
* :mod:`~jaxlean.models.neuron.discretize`: ``nseg`` rules (fixed, max length, NEURON's d_lambda)
  and NEURON's default parameters.
* :mod:`~jaxlean.models.neuron.cell`: compartments, junctions and morphology helpers (``Cell``).
* :mod:`~jaxlean.models.neuron.mechanisms`: channels and synapses as data (``Mechanism``).
* :mod:`~jaxlean.models.neuron.channels`: ``hh`` (NEURON's ``hh.mod``, with q10) and ``pas``.
* :mod:`~jaxlean.models.neuron.synapses`: ``expsyn`` and ``exp2syn``, driven by spike times.
* :mod:`~jaxlean.models.neuron.nmodl`: ``load_mod``: NEURON ``.mod`` files as mechanisms.
* :mod:`~jaxlean.models.neuron.params`: cell parameters, defaults, shapes and value checks.
* :mod:`~jaxlean.models.neuron.clamp`, :mod:`~jaxlean.models.neuron.spikes`: voltage clamp,
  spike arrival and threshold detection.
* :mod:`~jaxlean.models.neuron.cable`: ``simulate``, stimuli, rematerialisation over time, long
  runs.
* :mod:`~jaxlean.models.neuron.network`, :mod:`~jaxlean.models.neuron.network_sim`: cells joined
  by :mod:`~jaxlean.models.neuron.graded` synapses, spike-triggered connections
  (:mod:`~jaxlean.models.neuron.network_events`, NEURON's ``NetCon``) and
  :mod:`~jaxlean.models.neuron.gap_junctions`, simulated as one forest.
* :mod:`~jaxlean.models.neuron.morphology_io`: SWC, Neurolucida ASC and HDF5 files (MorphIO) as
  Import3d builds them; :mod:`~jaxlean.models.neuron.morph_edit`: axon stub, subtree deletion,
  diameter scaling.
* :mod:`~jaxlean.models.neuron.distribution`: parameters by region and by distance from the soma;
  :mod:`~jaxlean.models.neuron.transforms`: bounded and positive parameters for fitting.
* :mod:`~jaxlean.models.neuron.l5pc`: Hay et al.'s (2011) layer 5 pyramidal cell on any
  morphology, from its published ``.mod`` files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jaxlean._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see of the lazy names below
    from jaxlean.models.neuron import cable as cable
    from jaxlean.models.neuron import cell as cell
    from jaxlean.models.neuron import channels as channels
    from jaxlean.models.neuron import clamp as clamp
    from jaxlean.models.neuron import discretize as discretize
    from jaxlean.models.neuron import distribution as distribution
    from jaxlean.models.neuron import gap_junctions as gap_junctions
    from jaxlean.models.neuron import graded as graded
    from jaxlean.models.neuron import ions as ions
    from jaxlean.models.neuron import l5pc as l5pc
    from jaxlean.models.neuron import mechanisms as mechanisms
    from jaxlean.models.neuron import morph_edit as morph_edit
    from jaxlean.models.neuron import morphology_io as morphology_io
    from jaxlean.models.neuron import network as network
    from jaxlean.models.neuron import network_events as network_events
    from jaxlean.models.neuron import network_sim as network_sim
    from jaxlean.models.neuron import nmodl as nmodl
    from jaxlean.models.neuron import params as params
    from jaxlean.models.neuron import spikes as spikes
    from jaxlean.models.neuron import swc as swc
    from jaxlean.models.neuron import synapses as synapses
    from jaxlean.models.neuron import transforms as transforms
    from jaxlean.models.neuron.cable import Stimulus as Stimulus
    from jaxlean.models.neuron.cable import n_steps as n_steps
    from jaxlean.models.neuron.cable import rest_state as rest_state
    from jaxlean.models.neuron.cable import simulate as simulate
    from jaxlean.models.neuron.cable import step_current as step_current
    from jaxlean.models.neuron.cell import ATTACH as ATTACH
    from jaxlean.models.neuron.cell import Cell as Cell
    from jaxlean.models.neuron.channels import GATES as GATES
    from jaxlean.models.neuron.channels import advance as advance
    from jaxlean.models.neuron.channels import hh as hh
    from jaxlean.models.neuron.channels import pas as pas
    from jaxlean.models.neuron.channels import rates as rates
    from jaxlean.models.neuron.channels import steady_state as steady_state
    from jaxlean.models.neuron.clamp import VoltageClamp as VoltageClamp
    from jaxlean.models.neuron.clamp import check as check
    from jaxlean.models.neuron.clamp import command as command
    from jaxlean.models.neuron.clamp import values as values
    from jaxlean.models.neuron.discretize import NEURON_DEFAULTS as NEURON_DEFAULTS
    from jaxlean.models.neuron.discretize import DLambda as DLambda
    from jaxlean.models.neuron.discretize import Fixed as Fixed
    from jaxlean.models.neuron.discretize import MaxLength as MaxLength
    from jaxlean.models.neuron.discretize import PerLength as PerLength
    from jaxlean.models.neuron.discretize import compartments as compartments
    from jaxlean.models.neuron.discretize import neuron_defaults as neuron_defaults
    from jaxlean.models.neuron.discretize import section_nseg as section_nseg
    from jaxlean.models.neuron.distribution import REGIONS as REGIONS
    from jaxlean.models.neuron.distribution import Exponential as Exponential
    from jaxlean.models.neuron.distribution import Linear as Linear
    from jaxlean.models.neuron.distribution import Sigmoid as Sigmoid
    from jaxlean.models.neuron.distribution import by_region as by_region
    from jaxlean.models.neuron.distribution import distribute as distribute
    from jaxlean.models.neuron.distribution import path_distance as path_distance
    from jaxlean.models.neuron.gap_junctions import GapJunction as GapJunction
    from jaxlean.models.neuron.gap_junctions import gap_junction as gap_junction
    from jaxlean.models.neuron.graded import GradedSynapse as GradedSynapse
    from jaxlean.models.neuron.graded import ionotropic as ionotropic
    from jaxlean.models.neuron.ions import FARADAY as FARADAY
    from jaxlean.models.neuron.ions import GAS_CONSTANT as GAS_CONSTANT
    from jaxlean.models.neuron.ions import SPECIES as SPECIES
    from jaxlean.models.neuron.ions import Species as Species
    from jaxlean.models.neuron.ions import UseIon as UseIon
    from jaxlean.models.neuron.ions import ghk as ghk
    from jaxlean.models.neuron.ions import nernst as nernst
    from jaxlean.models.neuron.ions import variables as variables
    from jaxlean.models.neuron.mechanisms import Insertion as Insertion
    from jaxlean.models.neuron.mechanisms import Mechanism as Mechanism
    from jaxlean.models.neuron.mechanisms import ion_parameters as ion_parameters
    from jaxlean.models.neuron.mechanisms import parameter_table as parameter_table
    from jaxlean.models.neuron.morph_edit import delete_subtree as delete_subtree
    from jaxlean.models.neuron.morph_edit import replace_axon as replace_axon
    from jaxlean.models.neuron.morph_edit import scale_diameters as scale_diameters
    from jaxlean.models.neuron.morph_edit import stub_diameters as stub_diameters
    from jaxlean.models.neuron.morphology_io import SUFFIXES as SUFFIXES
    from jaxlean.models.neuron.morphology_io import SectionTree as SectionTree
    from jaxlean.models.neuron.morphology_io import build_cell as build_cell
    from jaxlean.models.neuron.morphology_io import load_morphology as load_morphology
    from jaxlean.models.neuron.morphology_io import segment_diameters as segment_diameters
    from jaxlean.models.neuron.network import Connection as Connection
    from jaxlean.models.neuron.network import Network as Network
    from jaxlean.models.neuron.network import check_synapse_params as check_synapse_params
    from jaxlean.models.neuron.network_events import SpikingSynapse as SpikingSynapse
    from jaxlean.models.neuron.network_events import spiking as spiking
    from jaxlean.models.neuron.network_sim import simulate_network as simulate_network
    from jaxlean.models.neuron.nmodl.load import load_mod as load_mod
    from jaxlean.models.neuron.nmodl.load import load_mod_dir as load_mod_dir
    from jaxlean.models.neuron.params import CELL as CELL
    from jaxlean.models.neuron.params import GEOMETRY as GEOMETRY
    from jaxlean.models.neuron.params import PRESETS as PRESETS
    from jaxlean.models.neuron.params import Compartments as Compartments
    from jaxlean.models.neuron.params import Params as Params
    from jaxlean.models.neuron.params import check_names as check_names
    from jaxlean.models.neuron.params import defaults as defaults
    from jaxlean.models.neuron.params import expand as expand
    from jaxlean.models.neuron.params import inferred_preset as inferred_preset
    from jaxlean.models.neuron.params import preset as preset
    from jaxlean.models.neuron.params import table as table
    from jaxlean.models.neuron.spikes import arrivals as arrivals
    from jaxlean.models.neuron.spikes import detect as detect
    from jaxlean.models.neuron.spikes import detectors as detectors
    from jaxlean.models.neuron.spikes import spike_array as spike_array
    from jaxlean.models.neuron.swc import TYPE_NAMES as TYPE_NAMES
    from jaxlean.models.neuron.swc import Morphology as Morphology
    from jaxlean.models.neuron.swc import Section as Section
    from jaxlean.models.neuron.swc import fixture as fixture
    from jaxlean.models.neuron.swc import read_swc as read_swc
    from jaxlean.models.neuron.swc import section_names as section_names
    from jaxlean.models.neuron.swc import sections as sections
    from jaxlean.models.neuron.synapses import exp2syn as exp2syn
    from jaxlean.models.neuron.synapses import expsyn as expsyn
    from jaxlean.models.neuron.transforms import ParamTransform as ParamTransform
    from jaxlean.models.neuron.transforms import SigmoidTransform as SigmoidTransform
    from jaxlean.models.neuron.transforms import SoftplusTransform as SoftplusTransform
    from jaxlean.models.neuron.transforms import Transform as Transform

_SUBMODULES = ("cable", "cell", "channels", "clamp", "discretize", "distribution",
               "gap_junctions", "graded", "ions", "mechanisms", "morph_edit", "morphology_io",
               "network", "network_events", "network_sim", "params", "spikes", "swc",
               "synapses", "transforms", "nmodl", "l5pc")

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "Stimulus": "jaxlean.models.neuron.cable",
    "n_steps": "jaxlean.models.neuron.cable",
    "rest_state": "jaxlean.models.neuron.cable",
    "simulate": "jaxlean.models.neuron.cable",
    "step_current": "jaxlean.models.neuron.cable",
    "ATTACH": "jaxlean.models.neuron.cell",
    "Cell": "jaxlean.models.neuron.cell",
    "GATES": "jaxlean.models.neuron.channels",
    "advance": "jaxlean.models.neuron.channels",
    "hh": "jaxlean.models.neuron.channels",
    "pas": "jaxlean.models.neuron.channels",
    "rates": "jaxlean.models.neuron.channels",
    "steady_state": "jaxlean.models.neuron.channels",
    "VoltageClamp": "jaxlean.models.neuron.clamp",
    "check": "jaxlean.models.neuron.clamp",
    "command": "jaxlean.models.neuron.clamp",
    "values": "jaxlean.models.neuron.clamp",
    "DLambda": "jaxlean.models.neuron.discretize",
    "Fixed": "jaxlean.models.neuron.discretize",
    "MaxLength": "jaxlean.models.neuron.discretize",
    "PerLength": "jaxlean.models.neuron.discretize",
    "NEURON_DEFAULTS": "jaxlean.models.neuron.discretize",
    "compartments": "jaxlean.models.neuron.discretize",
    "neuron_defaults": "jaxlean.models.neuron.discretize",
    "section_nseg": "jaxlean.models.neuron.discretize",
    "Exponential": "jaxlean.models.neuron.distribution",
    "Linear": "jaxlean.models.neuron.distribution",
    "REGIONS": "jaxlean.models.neuron.distribution",
    "Sigmoid": "jaxlean.models.neuron.distribution",
    "by_region": "jaxlean.models.neuron.distribution",
    "distribute": "jaxlean.models.neuron.distribution",
    "path_distance": "jaxlean.models.neuron.distribution",
    "GapJunction": "jaxlean.models.neuron.gap_junctions",
    "gap_junction": "jaxlean.models.neuron.gap_junctions",
    "GradedSynapse": "jaxlean.models.neuron.graded",
    "ionotropic": "jaxlean.models.neuron.graded",
    "FARADAY": "jaxlean.models.neuron.ions",
    "GAS_CONSTANT": "jaxlean.models.neuron.ions",
    "SPECIES": "jaxlean.models.neuron.ions",
    "Species": "jaxlean.models.neuron.ions",
    "UseIon": "jaxlean.models.neuron.ions",
    "ghk": "jaxlean.models.neuron.ions",
    "nernst": "jaxlean.models.neuron.ions",
    "variables": "jaxlean.models.neuron.ions",
    "Insertion": "jaxlean.models.neuron.mechanisms",
    "Mechanism": "jaxlean.models.neuron.mechanisms",
    "ion_parameters": "jaxlean.models.neuron.mechanisms",
    "parameter_table": "jaxlean.models.neuron.mechanisms",
    "delete_subtree": "jaxlean.models.neuron.morph_edit",
    "replace_axon": "jaxlean.models.neuron.morph_edit",
    "scale_diameters": "jaxlean.models.neuron.morph_edit",
    "stub_diameters": "jaxlean.models.neuron.morph_edit",
    "SUFFIXES": "jaxlean.models.neuron.morphology_io",
    "SectionTree": "jaxlean.models.neuron.morphology_io",
    "build_cell": "jaxlean.models.neuron.morphology_io",
    "load_morphology": "jaxlean.models.neuron.morphology_io",
    "segment_diameters": "jaxlean.models.neuron.morphology_io",
    "Connection": "jaxlean.models.neuron.network",
    "Network": "jaxlean.models.neuron.network",
    "check_synapse_params": "jaxlean.models.neuron.network",
    "SpikingSynapse": "jaxlean.models.neuron.network_events",
    "spiking": "jaxlean.models.neuron.network_events",
    "simulate_network": "jaxlean.models.neuron.network_sim",
    "load_mod": "jaxlean.models.neuron.nmodl.load",
    "load_mod_dir": "jaxlean.models.neuron.nmodl.load",
    "CELL": "jaxlean.models.neuron.params",
    "Compartments": "jaxlean.models.neuron.params",
    "GEOMETRY": "jaxlean.models.neuron.params",
    "PRESETS": "jaxlean.models.neuron.params",
    "Params": "jaxlean.models.neuron.params",
    "check_names": "jaxlean.models.neuron.params",
    "defaults": "jaxlean.models.neuron.params",
    "expand": "jaxlean.models.neuron.params",
    "inferred_preset": "jaxlean.models.neuron.params",
    "preset": "jaxlean.models.neuron.params",
    "table": "jaxlean.models.neuron.params",
    "arrivals": "jaxlean.models.neuron.spikes",
    "detect": "jaxlean.models.neuron.spikes",
    "detectors": "jaxlean.models.neuron.spikes",
    "spike_array": "jaxlean.models.neuron.spikes",
    "Morphology": "jaxlean.models.neuron.swc",
    "Section": "jaxlean.models.neuron.swc",
    "TYPE_NAMES": "jaxlean.models.neuron.swc",
    "fixture": "jaxlean.models.neuron.swc",
    "read_swc": "jaxlean.models.neuron.swc",
    "section_names": "jaxlean.models.neuron.swc",
    "sections": "jaxlean.models.neuron.swc",
    "exp2syn": "jaxlean.models.neuron.synapses",
    "expsyn": "jaxlean.models.neuron.synapses",
    "ParamTransform": "jaxlean.models.neuron.transforms",
    "SigmoidTransform": "jaxlean.models.neuron.transforms",
    "SoftplusTransform": "jaxlean.models.neuron.transforms",
    "Transform": "jaxlean.models.neuron.transforms",
}

__all__ = [
    "ATTACH",
    "CELL",
    "FARADAY",
    "GAS_CONSTANT",
    "GATES",
    "GEOMETRY",
    "NEURON_DEFAULTS",
    "PRESETS",
    "REGIONS",
    "SPECIES",
    "SUFFIXES",
    "TYPE_NAMES",
    "Cell",
    "Compartments",
    "Connection",
    "DLambda",
    "Exponential",
    "Fixed",
    "GapJunction",
    "GradedSynapse",
    "Insertion",
    "Linear",
    "MaxLength",
    "Mechanism",
    "Morphology",
    "Network",
    "ParamTransform",
    "Params",
    "PerLength",
    "Section",
    "SectionTree",
    "Sigmoid",
    "SigmoidTransform",
    "SoftplusTransform",
    "Species",
    "SpikingSynapse",
    "Stimulus",
    "Transform",
    "UseIon",
    "VoltageClamp",
    "advance",
    "arrivals",
    "build_cell",
    "by_region",
    "cable",
    "cell",
    "channels",
    "check",
    "check_names",
    "check_synapse_params",
    "clamp",
    "command",
    "compartments",
    "defaults",
    "delete_subtree",
    "detect",
    "detectors",
    "discretize",
    "distribute",
    "distribution",
    "exp2syn",
    "expand",
    "expsyn",
    "fixture",
    "gap_junction",
    "gap_junctions",
    "ghk",
    "graded",
    "hh",
    "inferred_preset",
    "ion_parameters",
    "ionotropic",
    "ions",
    "l5pc",
    "load_mod",
    "load_mod_dir",
    "load_morphology",
    "mechanisms",
    "morph_edit",
    "morphology_io",
    "n_steps",
    "nernst",
    "network",
    "network_events",
    "network_sim",
    "neuron_defaults",
    "nmodl",
    "parameter_table",
    "params",
    "pas",
    "path_distance",
    "preset",
    "rates",
    "read_swc",
    "replace_axon",
    "rest_state",
    "scale_diameters",
    "section_names",
    "section_nseg",
    "sections",
    "segment_diameters",
    "simulate",
    "simulate_network",
    "spike_array",
    "spikes",
    "spiking",
    "steady_state",
    "step_current",
    "stub_diameters",
    "swc",
    "synapses",
    "table",
    "transforms",
    "values",
    "variables",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _SUBMODULES)
