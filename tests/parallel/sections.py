"""Several multi-device checks in one child process.

A child with forced CPU devices pays JAX's import and the compiles of its shared opening
every time it starts; a module that runs a few such checks starts one child for all of
them (:func:`run_sections`). Every section runs, in its own copy of the opening's globals,
whatever the others did; a section's failure is its traceback, and a child that dies fails
them all. One test asserts on every section (:func:`check_sections`): tests per section
sharing a module-scoped fixture ran the child once per xdist worker they went to, since
worksteal can hand a module's tests to both.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests import xla_cache
from tests.conftest import child_env

_RUNNER = '''
import contextlib as _contextlib, io as _io, json as _json, linecache as _linecache
import traceback as _traceback
_globals = dict(globals())
for _name, _body in _json.loads(_SECTIONS):
    _out, _file = _io.StringIO(), f"<section {_name}>"
    _linecache.cache[_file] = (len(_body), None, _body.splitlines(True), _file)  # tracebacks
    try:
        with _contextlib.redirect_stdout(_out):
            exec(compile(_body, _file, "exec"), dict(_globals))
        _result = {"name": _name, "ok": True, "stdout": _out.getvalue()}
    except BaseException:
        _result = {"name": _name, "ok": False, "stdout": _out.getvalue(),
                   "error": _traceback.format_exc()}
    print("@@section " + _json.dumps(_result), flush=True)
print("ok")
'''


def run_sections(directory: Path, prelude: str, sections: dict[str, str], devices: int,
                 timeout: int = 600, default_emitters: bool = False) -> dict[str, dict]:
    """Run ``prelude`` once and then each of ``sections`` (name: script text) in one child
    process with ``devices`` CPU devices, on the suite's compilation cache. Returns
    ``{name: {"ok": bool, "stdout": str, "error": traceback}}``; raises if the child dies.

    ``default_emitters``: the child compiles with XLA's fusion emitters even where ``make
    test`` turned them off (for checks of bit-identical results between two programs, a
    property of the code XLA generates by default, which the quicker emitters do not keep)."""
    path = directory / "sections_on_devices.py"
    path.write_text(prelude + f"\n_SECTIONS = {json.dumps(json.dumps(list(sections.items())))}\n"
                    + _RUNNER)
    counts = directory / "xla_cache_counts.json"
    env = child_env(devices=devices)
    if default_emitters and "--xla_cpu_use_fusion_emitters=false" in env.get("XLA_FLAGS", ""):
        env["XLA_FLAGS"] += " --xla_cpu_use_fusion_emitters=true"  # the later flag wins
    command, env = xla_cache.child_command([sys.executable, str(path)], env, counts)
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    xla_cache.add_child_counts(counts)
    results = {}
    for line in done.stdout.splitlines():
        if line.startswith("@@section "):
            result = json.loads(line.removeprefix("@@section "))
            results[result.pop("name")] = result
    assert done.returncode == 0 and results.keys() == sections.keys(), \
        done.stdout[-3000:] + done.stderr[-5000:]
    return results


def check_sections(results: dict[str, dict]) -> dict[str, str]:
    """Fail with every failed section's traceback unless all passed; each section's stdout."""
    failed = [f"section {name} failed:\n{result['stdout'][-2000:]}{result['error']}"
              for name, result in results.items() if not result["ok"]]
    assert not failed, "\n".join(failed)
    return {name: result["stdout"] for name, result in results.items()}
