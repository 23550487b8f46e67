"""``jaxlean cache info|clear|prune|check``: look after the persistent compilation cache.

``info``, ``clear`` and ``prune`` act on a cache directory (default: the one
:func:`jaxlean.compile.cache.enable_compilation_cache` uses); ``info`` also
checks its health (:mod:`jaxlean.compile.health`); ``check`` runs a command
twice in fresh processes and says, per compiled function, whether the second run
hit the cache and, for a miss, why the key changed.

Every subcommand that prints ``error:`` exits non-zero: 1 when the cache has an
error finding or a check found misses, 2 when the command could not do what was
asked (bad arguments, files it cannot read or remove).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import functools
import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from jaxlean._units import format_bytes
from jaxlean.compile.check import compare, run_once
from jaxlean.compile.directory import clear, default_cache_dir, list_entries, parse_size, prune
from jaxlean.compile.health import check_directory, repair
from jaxlean.errors import CacheError

__all__ = ["add_cache_parser"]

console = Console(soft_wrap=True)


def _when(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M:%S")


def _directory(args: argparse.Namespace) -> Path:
    return Path(args.path).expanduser() if args.path else default_cache_dir()


_STYLE = {"error": "bold red", "warning": "yellow", "note": "dim"}

Handler = Callable[[argparse.Namespace], int]


def _error(message: str) -> int:
    """Print ``error: message``; the exit status of a command that could not do what was asked."""
    console.print(f"[bold red]error[/bold red]: {message}", highlight=False)
    return 2


def _guarded(handler: Handler) -> Handler:
    """``handler`` with a cache error or an OS error (permissions, a file in the way)
    reported as ``error:`` and exit status 2 instead of a traceback."""
    @functools.wraps(handler)
    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except (CacheError, OSError) as err:
            return _error(str(err) if isinstance(err, CacheError) else
                          f"{type(err).__name__}: {err}")
    return run


def _size_limit(args: argparse.Namespace) -> int | None:
    """``--max-size``, else JAX's ``JAX_COMPILATION_CACHE_MAX_SIZE`` (bytes; -1 is no limit)."""
    if args.max_size:
        return parse_size(args.max_size)
    value = os.environ.get("JAX_COMPILATION_CACHE_MAX_SIZE", "-1")
    limit = parse_size(value) if value.strip() != "-1" else None
    return limit if limit else None


def _health(args: argparse.Namespace, directory: Path) -> int:
    """Print the health findings (repairing them with ``--repair``); 1 if any error is left."""
    findings = check_directory(directory, _size_limit(args), verify=args.verify)
    if args.repair and any(f.repairable for f in findings):
        console.print(f"repaired: removed {repair(findings)} files")
        findings = check_directory(directory, _size_limit(args), verify=args.verify)
    if not findings:
        console.print("[green]healthy[/green]: writable"
                      + (", every entry decodes" if args.verify else ""))
        return 0
    for finding in findings:
        style = _STYLE[finding.severity]
        console.print(f"[{style}]{finding.severity}[/{style}]: {finding.problem}; "
                      f"fix: {finding.fix}")
        for path in finding.paths[:5]:
            console.print(f"    {path.name}", markup=False, highlight=False)
        if len(finding.paths) > 5:
            console.print(f"    ... and {len(finding.paths) - 5} more")
    return 1 if any(f.severity == "error" for f in findings) else 0


def _info(args: argparse.Namespace) -> int:
    directory = _directory(args)
    _size_limit(args)  # a bad --max-size is an error before anything is printed
    entries = list_entries(directory)
    if not entries:
        console.print(f"{directory}: no cache entries")
        return _health(args, directory)
    total = format_bytes(sum(e.size for e in entries))
    console.print(f"{directory}: {len(entries)} entries, {total}; "
                  f"oldest used {_when(entries[0].last_used)}, "
                  f"newest used {_when(entries[-1].last_used)}")
    per_function: dict[str, list] = collections.defaultdict(list)
    for entry in entries:
        per_function[entry.function].append(entry)
    table = Table("function", "entries", "size", "last used")
    for name, group in sorted(per_function.items(), key=lambda item: -len(item[1])):
        table.add_row(name, str(len(group)), format_bytes(sum(e.size for e in group)),
                      _when(max(e.last_used for e in group)))
    console.print(table)
    return _health(args, directory)


def _clear(args: argparse.Namespace) -> int:
    directory = _directory(args)
    count, freed = clear(directory)
    console.print(f"{directory}: removed {count} entries ({format_bytes(freed)})")
    return 0


def _prune(args: argparse.Namespace) -> int:
    directory = _directory(args)
    limit = parse_size(args.max_size)
    removed = prune(directory, limit)
    left = list_entries(directory)
    console.print(f"{directory}: removed {len(removed)} least recently used entries "
                  f"({format_bytes(sum(e.size for e in removed))}); {len(left)} entries, "
                  f"{format_bytes(sum(e.size for e in left))} left (limit {format_bytes(limit)})")
    return 0


def _check(args: argparse.Namespace) -> int:
    command = [part for part in args.command if part != "--"] if args.command else []
    if not command:
        return _error("give the command to check after `--`, e.g. "
                      "`jaxlean cache check -- python train.py`")
    with tempfile.TemporaryDirectory(prefix="jaxlean-cache-check-") as scratch:
        workdir = Path(args.keep) if args.keep else Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        clear(workdir / "cache")  # run 1 must start cold, also in a kept directory
        runs = []
        for index in (1, 2):
            console.print(f"run {index}: {' '.join(command)}")
            try:
                run = run_once(command, workdir, index, args.timeout)
            except subprocess.TimeoutExpired:
                return _error(f"run {index} took longer than --timeout {args.timeout:g} s")
            if run.returncode != 0:
                tail = run.stderr.read_text(errors="replace").splitlines()
                tail = [line for line in tail if not line.startswith("DEBUG:")][-15:]
                console.print(*tail, sep="\n", markup=False)
                return _error(f"run {index} exited with status {run.returncode}")
            runs.append(run)
        verdicts = compare(*runs)
        if not verdicts:
            console.print("no compiles went through the persistent cache in run 2 "
                          "(did the command compile anything with jax?)")
            return 1
        table = Table("function", "run 1", "run 2", "why it missed", title="cache check")
        for verdict in verdicts:
            style = "green" if verdict.second == "hit" else "bold red"
            table.add_row(verdict.name, verdict.first, f"[{style}]{verdict.second}[/{style}]",
                          "\n".join(verdict.causes))
        console.print(table)
        for verdict in verdicts:
            if verdict.diff:
                console.print(f"lowered module diff for {verdict.name}:")
                console.print("\n".join(verdict.diff), markup=False, highlight=False)
        misses = sum(v.second != "hit" for v in verdicts)
        console.print(f"{len(verdicts) - misses} of {len(verdicts)} compiles hit on the "
                      f"second run" + (f" (logs and cache kept in {workdir})" if args.keep else ""))
        return 1 if misses else 0


def add_cache_parser(commands: argparse._SubParsersAction) -> None:
    """Add ``cache info|clear|prune|check`` to the ``jaxlean`` parser's subcommands."""
    cache = commands.add_parser(
        "cache", help="inspect, trim or check the compilation cache",
        description="Every subcommand exits non-zero when it prints an error: 1 for a cache "
                    "that does not work (info) or misses (check), 2 when it could not do "
                    "what was asked.")
    actions = cache.add_subparsers(dest="cache_command", required=True)
    default = "default: $JAXLEAN_CACHE_DIR or ~/.cache/jaxlean/xla"
    info = actions.add_parser(
        "info", help="entries, size, per-function counts, and a health check (exit 1 when an "
                     "error stops the cache from working)")
    info.add_argument("path", nargs="?", help=f"cache directory ({default})")
    info.add_argument("--max-size", metavar="SIZE",
                      help="the size limit to check against (default: "
                           "$JAX_COMPILATION_CACHE_MAX_SIZE when set)")
    info.add_argument("--verify", action="store_true",
                      help="read and decompress every entry to find damaged ones")
    info.add_argument("--repair", action="store_true",
                      help="remove orphaned, damaged and leftover files")
    info.set_defaults(handler=_guarded(_info))
    clear_ = actions.add_parser("clear", help="remove every cache entry")
    clear_.add_argument("path", nargs="?", help=f"cache directory ({default})")
    clear_.set_defaults(handler=_guarded(_clear))
    prune_ = actions.add_parser("prune", help="remove least recently used entries")
    prune_.add_argument("path", nargs="?", help=f"cache directory ({default})")
    prune_.add_argument("--max-size", required=True, metavar="SIZE",
                        help="keep at most this much, e.g. 10GB or 500MiB")
    prune_.set_defaults(handler=_guarded(_prune))
    check = actions.add_parser(
        "check", help="run a command twice; explain second-run misses",
        usage="jaxlean cache check [--keep DIR] [--timeout S] -- COMMAND ...")
    check.add_argument("--keep", metavar="DIR", help="keep the cache, logs and IR dumps in DIR")
    check.add_argument("--timeout", type=float, help="seconds allowed per run")
    check.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    check.set_defaults(handler=_guarded(_check))
