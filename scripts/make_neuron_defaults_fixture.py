"""Write NEURON's defaults, the values a NEURON user gets without setting them, to
``tests/models/neuron/fixtures/neuron_defaults.json``.

Needs ``neuron`` (``pip install jaxlean[neuron-parity]``). Read from NEURON itself, never
typed in: a new ``h.Section()``'s ``Ra``, ``cm`` and ``nseg``; the globals ``celsius``,
``v_init`` and ``dt`` after ``stdrun.hoc``; ``hh``'s and ``pas``'s parameters; ``ExpSyn``'s
and ``Exp2Syn``'s; a ``NetCon``'s ``threshold``, ``delay`` and ``weight[0]``; ``SEClamp``'s
``rs``; and each ion's concentrations and reversal after ``finitialize`` (``na`` and ``k``
where ``hh`` uses them, ``ca`` on a section holding only the ion).
``tests/models/neuron/test_neuron_defaults.py`` checks jaxlean's defaults against it.
Run from the repository root:

    python scripts/make_neuron_defaults_fixture.py [--out DIR]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "models" / "neuron" / "fixtures"


def read_defaults() -> dict:
    """NEURON's defaults, read from a fresh NEURON."""
    import neuron
    from neuron import h

    h.load_file("stdrun.hoc")
    section = h.Section(name="soma")
    out = {"section": {"Ra": section.Ra, "cm": section.cm, "nseg": section.nseg},
           "globals": {"celsius": h.celsius, "v_init": h.v_init, "dt": h.dt}}
    section.insert("hh")
    section.insert("pas")
    segment = section(0.5)
    out["hh"] = {name: getattr(segment, name)
                 for name in ("gnabar_hh", "gkbar_hh", "gl_hh", "el_hh")}
    out["pas"] = {name: getattr(segment, name) for name in ("g_pas", "e_pas")}
    expsyn, exp2syn = h.ExpSyn(segment), h.Exp2Syn(segment)
    out["expsyn"] = {"tau": expsyn.tau, "e": expsyn.e}
    out["exp2syn"] = {"tau1": exp2syn.tau1, "tau2": exp2syn.tau2, "e": exp2syn.e}
    netcon = h.NetCon(segment._ref_v, expsyn, sec=section)
    out["netcon"] = {"threshold": netcon.threshold, "delay": netcon.delay,
                     "weight": netcon.weight[0]}
    out["seclamp"] = {"rs": h.SEClamp(segment).rs}
    h.ion_register("ca", 2)   # as a mechanism that uses ca registers it
    calcium = h.Section(name="calcium")
    calcium.insert("ca_ion")
    h.finitialize()
    ions = {"na": (segment, "nai", "nao", "ena"), "k": (segment, "ki", "ko", "ek"),
            "ca": (calcium(0.5), "cai", "cao", "eca")}
    out["ions"] = {ion: {"inside": getattr(where, i), "outside": getattr(where, o),
                         "reversal": getattr(where, e)}
                   for ion, (where, i, o, e) in ions.items()}
    out["neuron_version"] = neuron.__version__
    return out


def main() -> None:
    arguments = sys.argv[1:]
    out = Path(arguments[1]) if arguments[:1] == ["--out"] else OUT
    out.mkdir(parents=True, exist_ok=True)
    (out / "neuron_defaults.json").write_text(json.dumps(read_defaults(), indent=1) + "\n")


if __name__ == "__main__":
    main()
