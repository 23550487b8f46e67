"""Write the NEURON parity fixture of jaxlean's ions (tests/models/neuron/fixtures/ions_shell.npz).

Needs ``neuron`` (``pip install neuron``) and a C compiler for ``nrnivmodl``. The
three ``.mod`` files of ``tests/models/neuron/fixtures/ions_mods/`` are compiled:
a high-voltage Ca channel (``hva``: ``USEION ca READ eca WRITE ica``), a calcium
shell as ``CaDynamics_E2.mod`` (``cad``: ``USEION ca READ ica WRITE cai``), an
SK channel reading the calcium (``sk``: ``USEION ca READ cai``) and a T-type
channel with a GHK current (``cat``: ``USEION ca READ cai, cao WRITE ica``). The
cell: a one-segment soma with two children, ``dend`` and ``apic``:

* soma: ``hh``, ``hva``, ``cad``, ``sk``, ``cat``: ``cai`` is a state, ``eca`` follows it;
* dend: ``pas``, ``hva``, ``sk``: ``cai`` is read only, so ``eca`` is computed from
  ``cai0``/``cao0`` at ``finitialize`` (not NEURON's default ``eca``);
* apic: ``pas``, ``hva``: no concentration in use, ``eca`` is the parameter.

An ``IClamp`` drives the soma; backward Euler (``secondorder = 0``), ``dt = 0.025`` ms.
The fixture also holds NEURON's ion defaults, its ``FARADAY`` as the ``.mod`` sees it,
``ghk``/``nernst`` samples and the mechanisms' order. Run from the repository root:

    python scripts/make_ion_fixtures.py [--out DIR]
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
from _fixture_cli import nrnivmodl_and_load  # scripts/ is on sys.path

ROOT = Path(__file__).resolve().parents[1]
MODS = ROOT / "tests" / "models" / "neuron" / "fixtures" / "ions_mods"
OUT = ROOT / "tests" / "models" / "neuron" / "fixtures"

CASE = {"soma_L": 20.0, "soma_diam": 20.0, "dend_L": 200.0, "dend_diam": 2.0, "dend_nseg": 5,
        "apic_L": 120.0, "apic_diam": 1.5, "apic_nseg": 3, "Ra": 100.0, "cm": 1.0,
        "v_init": -65.0, "celsius": 16.3, "dt": 0.025, "t_max": 40.0,
        "iclamp": {"amp": 0.35, "delay": 2.0, "dur": 30.0},
        "pas": {"g": 3e-4, "e": -65.0},
        "hva": {"soma": 2e-3, "dend": 1e-3, "apic": 1.5e-3},
        "cad": {"gamma": 0.05, "decay": 80.0, "depth": 0.1, "minCai": 1e-4},
        "sk": {"soma": 3e-3, "dend": 1e-3}, "cat": {"soma": 2e-5}}
"""The cell and its values (NEURON's names, ``hh`` at its defaults)."""
RECORD = {"soma": ["v", "cai", "ica", "eca", "ik", "m_hva", "z_sk", "m_cat"],
          "dend": ["v", "eca", "ica", "cai", "z_sk"], "apic": ["v", "eca", "ica"]}
"""What is recorded at the centre of each section (the middle segment)."""
GHK_SAMPLES = [(-80.0, 1e-4, 2.0), (-1e-3, 5e-5, 2.0), (0.0, 1e-4, 2.0), (30.0, 2e-4, 1.5)]


def _compile(folder: Path) -> None:
    """Compile the ``.mod`` files with ``nrnivmodl`` in ``folder`` and load them."""
    for mod in sorted(MODS.glob("*.mod")):
        shutil.copy(mod, folder / mod.name)
    nrnivmodl_and_load(folder)


def _mechanism_order(h) -> list[str]:
    """Names of the mechanism types in NEURON's order (the order their states advance in)."""
    types = h.MechanismType(0)
    names = []
    for i in range(int(types.count())):
        types.select(i)
        name = h.ref("")
        types.selected(name)
        names.append(name[0])
    return names


def run() -> dict[str, np.ndarray]:
    from neuron import h

    h.load_file("stdrun.hoc")
    h.usetable_hh = 0
    _compile(Path(tempfile.mkdtemp(prefix="jaxlean_ions_")))
    probe = h.Section(name="probe")
    probe.insert("hva")
    defaults = {"eca": probe.eca, "cai0": h.cai0_ca_ion, "cao0": h.cao0_ca_ion,
                "nai0": h.nai0_na_ion, "nao0": h.nao0_na_ion, "ki0": h.ki0_k_ion,
                "ko0": h.ko0_k_ion, "faraday_mod": h.faraday_cad(), "faraday_hoc": h.FARADAY,
                "R_hoc": h.R}
    del probe
    sections = {"soma": h.Section(name="soma"), "dend": h.Section(name="dend"),
                "apic": h.Section(name="apic")}
    soma = sections["soma"]
    soma.L, soma.diam, soma.nseg = CASE["soma_L"], CASE["soma_diam"], 1
    for name in ("dend", "apic"):
        section = sections[name]
        section.L, section.diam = CASE[f"{name}_L"], CASE[f"{name}_diam"]
        section.nseg = CASE[f"{name}_nseg"]
        section.connect(soma(1), 0)
        section.insert("pas")
        for segment in section:
            segment.pas.g, segment.pas.e = CASE["pas"]["g"], CASE["pas"]["e"]
    soma.insert("hh")
    for name, section in sections.items():
        section.Ra, section.cm = CASE["Ra"], CASE["cm"]
        section.insert("hva")
        for segment in section:
            segment.hva.gbar = CASE["hva"][name]
        if name in CASE["sk"]:
            section.insert("sk")
            for segment in section:
                segment.sk.gbar = CASE["sk"][name]
    soma.insert("cad")
    soma.insert("cat")
    soma(0.5).cat.pbar = CASE["cat"]["soma"]
    for key, value in CASE["cad"].items():
        setattr(soma(0.5).cad, key, value)
    clamp = h.IClamp(soma(0.5))
    clamp.delay, clamp.dur, clamp.amp = (CASE["iclamp"][k] for k in ("delay", "dur", "amp"))
    references = {"m_hva": "m_hva", "z_sk": "z_sk", "m_cat": "m_cat"}
    recordings = {}
    for name, quantities in RECORD.items():
        for quantity in quantities:
            reference = references.get(quantity, quantity)
            recordings[f"{name}_{quantity}"] = h.Vector().record(
                getattr(sections[name](0.5), f"_ref_{reference}"))
    h.celsius, h.dt, h.secondorder = CASE["celsius"], CASE["dt"], 0
    h.cvode_active(0)
    h.finitialize(CASE["v_init"])
    h.continuerun(CASE["t_max"])
    steps = round(CASE["t_max"] / CASE["dt"])
    out = {name: np.asarray(vector)[: steps + 1] for name, vector in recordings.items()}
    ghk = [h.ghk(v, ci, co, 2) for v, ci, co in GHK_SAMPLES]
    nernst = [h.nernst(ci, co, 2) for _, ci, co in GHK_SAMPLES]
    order = [name for name in _mechanism_order(h)
             if name in ("hh", "pas", "hva", "cad", "sk", "cat")]
    meta = {"case": CASE, "record": RECORD, "defaults": defaults, "ghk_samples": GHK_SAMPLES,
            "ghk": ghk, "nernst": nernst, "order": order,
            "neuron_version": __import__("neuron").__version__}
    del clamp, sections
    return {**out, "meta": np.asarray(json.dumps(meta))}


if __name__ == "__main__":
    arguments = sys.argv[1:]
    destination = Path(arguments[1]) if arguments[:1] == ["--out"] else OUT
    destination.mkdir(parents=True, exist_ok=True)
    result = run()
    np.savez_compressed(destination / "ions_shell.npz", **result)
    print(f"ions_shell: {sorted(k for k in result if k != 'meta')}")
