"""Write NEURON's own ``Random`` values (tests/models/neuron/nmodl/fixtures/neuron_random.json).

Each case of :data:`CASES` is a hoc ``Random`` made step by step as a model's hoc makes
it (``Random123_globalindex`` first, as NEURON advises, then ``new Random(seed)``,
``Random123``/``MCellRan4``, ``seq`` and a distribution, which draws one value),
followed by :data:`PICKS` ``repick()`` calls; the fixture keeps the value the
distribution call returned and the picks (float64, as JSON keeps them exactly). Needs
``neuron`` (``pip install neuron==9.0.2``):

    python scripts/make_neuron_random_fixture.py [--out DIR]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "models" / "neuron" / "nmodl" / "fixtures"
PICKS = 12

CASES: list[dict] = [
    {"seed": 7, "distribution": ["uniform", 0.0, 1.0]},
    {"seed": 3, "distribution": ["negexp", 1.0]},
    {"seed": 123456789, "size": 20, "distribution": ["uniform", -2.0, 5.0]},
    {"random123": [1, 2, 3], "distribution": ["negexp", 2.5]},
    {"random123": [4294967295, 0, 77], "distribution": ["uniform", 3.0, 1.0]},
    {"random123": [9, 8, 7], "global_index": 5, "distribution": ["uniform", 0.0, 1.0]},
    {"random123": [1, 2, 3], "seq": 4 * 2**32 - 5, "distribution": ["uniform", 0.0, 1.0]},
    {"mcellran4": [5, 0], "distribution": ["uniform", -1.0, 3.0]},
    {"mcellran4": [4294967290, 3], "distribution": ["negexp", 1.0]},
    {"mcellran4": [1000, 42], "seq": 17, "distribution": ["negexp", 0.5]},
]


def run(case: dict) -> dict:
    """NEURON's values for ``case``: ``first`` (the distribution call's) and ``picks``."""
    from neuron import h

    h.Random().Random123_globalindex(case.get("global_index", 0))  # before the stream
    r = h.Random(case.get("seed", 0), case.get("size", 55))
    if "random123" in case:
        r.Random123(*case["random123"])
    if "mcellran4" in case:
        r.MCellRan4(*case["mcellran4"])
    if "seq" in case:
        r.seq(case["seq"])
    kind, *arguments = case["distribution"]
    first = getattr(r, kind)(*arguments)
    picks = [r.repick() for _ in range(PICKS)]
    r.Random123_globalindex(0)
    return {**case, "first": first, "picks": picks}


def main(out: Path) -> None:
    import neuron

    fixture = {"neuron_version": neuron.__version__, "cases": [run(case) for case in CASES]}
    out.mkdir(parents=True, exist_ok=True)
    (out / "neuron_random.json").write_text(json.dumps(fixture, indent=1) + "\n")


if __name__ == "__main__":
    arguments = sys.argv[1:]
    main(Path(arguments[1]) if arguments[:1] == ["--out"] else OUT)
