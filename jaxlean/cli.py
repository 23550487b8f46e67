"""The ``jaxlean`` command: ``jaxlean bench [NAME ...]`` runs benchmarks side by side;
``jaxlean cache info|clear|prune|check`` looks after the persistent compilation cache;
``jaxlean --version``."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
import traceback
from pathlib import Path

from rich.console import Console
from rich.text import Text

import jaxlean
from jaxlean._progress import Progress
from jaxlean.compile.cli import add_cache_parser

__all__ = ["build_parser", "main"]

console = Console()
DEFAULT_BASELINE = Path(__file__).resolve().parents[1] / "docs" / "benchmarks" / "baseline.json"
"""The committed results ``jaxlean bench --compare`` guards (in a source checkout)."""


def _bench(args: argparse.Namespace) -> int:

    from jaxlean.bench import (
        BenchContext,
        available,
        results_payload,
        rich_report,
        write_outputs,
    )

    if args.results is not None:
        if args.compare is None:
            console.print("[red]--results needs --compare BASELINE (what to compare it "
                          "with)[/red]")
            return 2
        return _compare(args.compare, _load(args.results))
    registry = available()
    if args.list:
        for name, bench in registry.items():
            console.print(f"[bold]{name}[/bold]  {bench.description}")
        return 0
    unknown = [name for name in args.names if name not in registry]
    if unknown:
        console.print(f"[red]unknown benchmark(s): {', '.join(unknown)}; "
                      f"available: {', '.join(registry)}[/red]")
        return 2
    # Compile times must be measured, not served from a persistent cache.
    from jaxlean.compile.cache import use_compilation_cache

    use_compilation_cache(False)  # also after a compile
    selected = [registry[name] for name in (args.names or registry)]
    command = "jaxlean " + shlex.join(sys.argv[1:])
    results, failures = [], []
    for index, bench in enumerate(selected, 1):
        start = time.perf_counter()
        try:
            with Progress(f"bench {bench.name} [{index}/{len(selected)}]", stream=sys.stdout,
                          transient=True) as progress:
                step = lambda message, progress=progress: progress.update(description=message)
                result = bench.measure(BenchContext(quick=args.quick, step=step))
        except Exception as error:  # report it, keep the other benchmarks' results
            failures.append(bench.name)
            console.print(Text(f"{bench.name} failed: {error!r}", style="bold red"))
            console.print(Text(traceback.format_exc()[-3000:], style="dim"))
            continue
        console.print(rich_report(result))
        console.print(Text(f"  {bench.name} took {time.perf_counter() - start:.1f} s\n",
                           style="dim"))
        results.append(result)
    if args.out:
        for path in write_outputs(results, Path(args.out), command):
            console.print(Text(f"wrote {path}"))
    status = _summary(results, args.strict)
    if args.compare is not None:
        status = max(status, _compare(args.compare, results_payload(results, command)))
    if failures:
        console.print(Text(f"benchmark(s) failed: {', '.join(failures)}", style="bold red"))
        return 1
    return status


def _load(path: str) -> dict:
    from jaxlean.bench import load_results

    return load_results(path)


def _compare(baseline_path: str, current: dict) -> int:
    """Print every figure of ``current`` that moved beyond its band against the baseline's;
    1 if one got worse or is missing."""
    from jaxlean.bench import compare_results

    report = compare_results(_load(baseline_path), current)
    console.print(Text(f"against {baseline_path}:", style="bold"))
    for line in report.lines():
        style = ("bold red" if line.endswith((": worse",)) or ": missing" in line
                 else "green" if line.endswith(": better") else "")
        console.print(Text(line, style=style))
    return 1 if report.flagged else 0


def _summary(results: list, strict: bool) -> int:
    """Target counts by verdict, each missed target, one sentence per benchmark; the exit
    status (1 with ``strict`` if a target was missed; "within noise" is not a miss)."""
    from jaxlean.bench import closing_lines, verdict_counts

    counts = verdict_counts(results)
    line = f"targets: {counts['met']} met, {counts['missed']} missed"
    if counts["within noise"]:
        line += f", {counts['within noise']} within noise"
    full_only = sum(len(r.full_size_targets) for r in results)
    if full_only:
        line += f" ({full_only} more hold at full sizes only: run without --quick)"
    console.print(Text(line, style="bold"))
    for result in results:
        for target in result.claimed_targets:
            if target.verdict == "missed":
                console.print(Text.assemble(("target missed ", "bold red"),
                                            f"{result.name}: {target.description}"))
    for text in closing_lines(results):
        console.print(Text(text))
    return 1 if counts["missed"] and strict else 0


def build_parser() -> argparse.ArgumentParser:
    """The ``jaxlean`` command line's parser, one subcommand per tool."""
    parser = argparse.ArgumentParser(prog="jaxlean", description=__doc__)
    parser.add_argument("--version", action="version", version=f"jaxlean {jaxlean.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    bench = commands.add_parser("bench", help="run benchmarks: baseline and jaxlean side by side")
    bench.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    bench.add_argument("--quick", action="store_true",
                       help="small sizes: about a minute per benchmark on CPU")
    bench.add_argument("--out", metavar="DIR", help="write results.json, results.md and plots")
    bench.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    bench.add_argument("--strict", action="store_true", help="exit 1 if any target is missed")
    bench.add_argument("--compare", nargs="?", const=str(DEFAULT_BASELINE), metavar="BASELINE",
                       help="report every figure that moved beyond its noise band against "
                       "BASELINE (a results.json; default: the committed "
                       "docs/benchmarks/baseline.json); exit 1 if one got worse or is missing")
    bench.add_argument("--results", metavar="RUN_JSON",
                       help="with --compare: compare this results.json instead of running")
    bench.set_defaults(handler=_bench)
    add_cache_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``jaxlean`` command line on ``argv``; return its exit status."""
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
