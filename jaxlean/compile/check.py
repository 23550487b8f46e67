"""``jaxlean cache check``: run a command twice and explain every persistent-cache miss.

Both runs get a fresh cache directory, a zero compile-time threshold and JAX's
own debug logging of the cache key (``jax._src.cache_key`` logs the hash of each
key component: computation, jax_lib version, backend version, XLA flags,
compile_options, accelerator_config, compression, custom_hook; and
``jax._src.compiler`` logs each hit or miss with the module name). A miss in the
second run is explained by the components whose hash changed; when the
computation changed, the lowered modules (dumped with ``JAX_DUMP_IR_TO``) are diffed.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import subprocess
from pathlib import Path

__all__ = ["CAUSES", "Compile", "Run", "Verdict", "check_environment", "compare", "parse_log",
           "run_once"]

CAUSES = {
    "computation": "the lowered module differs (a traced constant, shape, dtype or "
                   "Python-side value changed between runs)",
    "jax_lib version": "a different jaxlib version",
    "backend version": "a different backend, driver or device kind",
    "XLA flags": "different XLA_FLAGS (or flags set by the program itself)",
    "compile_options": "different compile options (jax config flags, device assignment, "
                       "FDO profile)",
    "accelerator_config": "different devices or topology",
    "compression": "a different compression library (zstandard installed in one run only)",
    "custom_hook": "jax's cache_key.custom_hook returned something different",
}
_COMPONENT = re.compile(r"get_cache_key hash of serialized (.+?): ([0-9a-f]+)\s*$")
_OUTCOME = re.compile(r"(Persistent compilation cache hit|PERSISTENT COMPILATION CACHE MISS) "
                      r"for '(.+?)' with key '(.+?)'")
_XLA_FLAG = re.compile(r"Including XLA flag in cache key: (\S+)")
_NOT_WRITTEN = re.compile(r"Not writing persistent cache entry (?:for '(.+?)' )?"
                          r"(because .+|since .+)$")
_DIFF_LINES = 24


@dataclasses.dataclass
class Compile:
    """One compile seen in a run's log: module name, cache key, outcome, key components."""

    name: str
    key: str
    hit: bool
    components: dict[str, str]
    xla_flags: list[str] = dataclasses.field(default_factory=list)
    not_written: str | None = None
    ir_text: str | None = None


@dataclasses.dataclass
class Run:
    """One run of the command: exit status, compiles in order, where its output went."""

    returncode: int
    compiles: list[Compile]
    stdout: Path
    stderr: Path


@dataclasses.dataclass
class Verdict:
    """What happened to one compile of the second run, and why when it missed."""

    name: str
    first: str
    second: str
    causes: list[str]
    diff: list[str]


def parse_log(text: str) -> list[Compile]:
    """Compiles in log order. Each log line may appear twice (JAX attaches two handlers)."""
    compiles: list[Compile] = []
    components: dict[str, str] = {}
    flags: set[str] = set()
    for line in text.splitlines():
        if match := _COMPONENT.search(line):
            components[match.group(1)] = match.group(2)
        elif match := _XLA_FLAG.search(line):
            flags.add(match.group(1))
        elif match := _OUTCOME.search(line):
            if not components:  # the duplicate of the previous outcome line
                continue
            hit = match.group(1).startswith("Persistent")
            compiles.append(Compile(match.group(2), match.group(3), hit, components,
                                    sorted(flags)))
            components, flags = {}, set()
        elif (match := _NOT_WRITTEN.search(line)) and compiles:
            target = next((c for c in reversed(compiles)
                           if match.group(1) in (None, c.name)), None)
            if target is not None:
                target.not_written = match.group(2)
    return compiles


def _attach_ir(compiles: list[Compile], ir_dir: Path) -> None:
    """Give each compile its dumped lowered module (dumps and compiles share one order)."""
    dumps: dict[str, list[Path]] = {}
    for path in sorted(ir_dir.glob("jax_ir*_compile.mlir")):
        name = re.sub(r"^jax_ir\d+_(.*)_compile\.mlir$", r"\1", path.name)
        dumps.setdefault(name, []).append(path)
    for compile_ in compiles:
        files = dumps.get(re.sub(r"[^\w.)( -]", "", compile_.name))
        if files:
            compile_.ir_text = files.pop(0).read_text()


def check_environment(cache_dir: Path, ir_dir: Path) -> dict[str, str]:
    """The environment of a checked run: cache on for everything, key logging, IR dumps."""
    return {
        **os.environ,
        "JAX_ENABLE_COMPILATION_CACHE": "true",
        "JAX_COMPILATION_CACHE_DIR": str(cache_dir),
        "JAXLEAN_CACHE_DIR": str(cache_dir),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
        # JAX's debug handler only prints when the "jax" logger has a level above DEBUG.
        "JAX_LOGGING_LEVEL": "WARNING",
        "JAX_DEBUG_LOG_MODULES": "jax._src.cache_key,jax._src.compiler",
        "JAX_DUMP_IR_TO": str(ir_dir),
        "JAX_DUMP_IR_MODES": "stablehlo",
        "JAX_INCLUDE_DEBUG_INFO_IN_DUMPS": "false",
    }


def run_once(command: list[str], workdir: Path, index: int, timeout: float | None) -> Run:
    """Run ``command`` with the shared cache in ``workdir/cache``; logs in ``workdir``."""
    ir_dir = workdir / f"ir_run{index}"
    ir_dir.mkdir(parents=True, exist_ok=True)
    for stale in ir_dir.glob("jax_ir*.mlir"):
        stale.unlink()
    stdout, stderr = workdir / f"run{index}.stdout", workdir / f"run{index}.stderr"
    with stdout.open("w") as out, stderr.open("w") as err:
        proc = subprocess.run(command, env=check_environment(workdir / "cache", ir_dir),
                              stdout=out, stderr=err, timeout=timeout, check=False)
    compiles = parse_log(stderr.read_text(errors="replace"))
    _attach_ir(compiles, ir_dir)
    return Run(proc.returncode, compiles, stdout, stderr)


def _short_diff(before: str | None, after: str | None) -> list[str]:
    if before is None or after is None:
        return []
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), "run 1",
                                      "run 2", n=1, lineterm=""))
    if len(lines) > _DIFF_LINES:
        lines = [*lines[:_DIFF_LINES], f"... ({len(lines) - _DIFF_LINES} more diff lines)"]
    return lines


def _explain(first: Compile | None, second: Compile) -> tuple[list[str], list[str]]:
    if first is None:
        return ["not compiled in run 1: the program took a different path or shapes changed"], []
    if first.key == second.key:
        reason = first.not_written or "the entry was not found on disk"
        return [f"key unchanged, but run 1 did not write the entry ({reason})"], []
    changed = [name for name in CAUSES if first.components.get(name) != second.components.get(name)]
    causes = [f"key changed: {name}: {CAUSES[name]}" for name in changed]
    if "XLA flags" in changed:
        causes.append(f"XLA flags in run 1: {' '.join(first.xla_flags) or '(none)'}; "
                      f"in run 2: {' '.join(second.xla_flags) or '(none)'}")
    diff = _short_diff(first.ir_text, second.ir_text) if "computation" in changed else []
    return causes or ["key changed for a reason the key log does not show"], diff


def compare(first: Run, second: Run) -> list[Verdict]:
    """One verdict per compile of the second run, matched to run 1 by name and occurrence."""
    earlier: dict[str, list[Compile]] = {}
    for compile_ in first.compiles:
        earlier.setdefault(compile_.name, []).append(compile_)
    seen: dict[str, int] = {}
    verdicts = []
    for compile_ in second.compiles:
        index = seen.get(compile_.name, 0)
        seen[compile_.name] = index + 1
        candidates = earlier.get(compile_.name, [])
        match = candidates[index] if index < len(candidates) else None
        label = compile_.name if index == 0 else f"{compile_.name} (#{index + 1})"
        first_outcome = "-" if match is None else ("hit" if match.hit else "miss")
        if compile_.hit:
            verdicts.append(Verdict(label, first_outcome, "hit", [], []))
            continue
        causes, diff = _explain(match, compile_)
        verdicts.append(Verdict(label, first_outcome, "MISS", causes, diff))
    return verdicts
