"""The command line every NEURON fixture script shares: one case per process.

``python scripts/make_X_fixtures.py [--out DIR] [CASE ...]`` writes every case (or those
named) to DIR. Each case runs in a fresh process, because NEURON's sections and compiled
mechanisms stay in the process that made them and cases must never mix.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path


def run_cases(script: str, names: list[str], out: Path, cases: Iterable[str],
              write_one: Callable[[str, Path], None]) -> None:
    """Write case ``names[0]`` here when it is the only one named, else start one process of
    ``script`` per case; an unknown name stops with the list of known ones."""
    cases = list(cases)
    out.mkdir(parents=True, exist_ok=True)
    if len(names) == 1 and names[0] in cases:
        write_one(names[0], out)
        return
    unknown = sorted(set(names) - set(cases))
    if unknown:
        raise SystemExit(f"unknown case(s) {unknown}; have {sorted(cases)}")
    for name in names or cases:
        subprocess.run([sys.executable, script, "--out", str(out), name], check=True)


def nrnivmodl_and_load(folder: Path) -> None:
    """Compile the ``.mod`` files in ``folder`` with ``nrnivmodl`` (this Python's, else the
    one on PATH) and load them into NEURON; stop with its output when it fails."""
    import neuron

    nrnivmodl = Path(sys.executable).parent / "nrnivmodl"
    done = subprocess.run([str(nrnivmodl) if nrnivmodl.exists() else "nrnivmodl"], cwd=folder,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"nrnivmodl failed in {folder}:\n{done.stdout}\n{done.stderr}")
    neuron.load_mechanisms(str(folder))


def command_line(main: Callable[[list[str], Path], None], default_out: Path) -> None:
    """Parse ``[--out DIR] [CASE ...]`` from ``sys.argv`` and call ``main(names, out)``."""
    arguments = sys.argv[1:]
    destination = default_out
    if arguments[:1] == ["--out"]:
        destination, arguments = Path(arguments[1]), arguments[2:]
    main(arguments, destination)
