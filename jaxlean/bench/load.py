"""Benchmark ``load``: time and peak host memory to load a Hugging Face checkpoint.

A random Llama-style float32 checkpoint (about 1 GiB, ``--quick`` 100 MiB) is
written once by :func:`~jaxlean.models.lm.hf.save_pretrained`, sharded with a
``model.safetensors.index.json`` into files of a quarter of its size, and then
loaded in fresh subprocesses (``python -m jaxlean.bench.load SIDE DIR``), the
sides in turn, sample after sample:

- ``read whole``: the naive loader, ``safetensors.numpy.load_file`` of every file
  into one dict, then the same transposes, stacks and JAX arrays as the model;
- ``load_pretrained``: :func:`~jaxlean.models.lm.hf.load_pretrained`, which reads
  each tensor with plain reads (no memory map), file by file in file order, into
  its place in the model's preallocated stacked arrays;
- ``transformers``: ``AutoModelForCausalLM.from_pretrained(dir, dtype=float32)``,
  only where ``torch`` and ``transformers`` import (``-`` otherwise).

Each child reports the wall time of the load call (until the arrays exist) and
its peak extra host memory: the kernel's peak resident set size (``VmHWM``),
reset after the imports and the JAX backend's start, minus the resident size
at that point. Before timing, one more child loads the model both ways and
checks they are equal leaf by leaf; the ``transformers`` child checks its
weights against the files after its measurement. A side that differs fails
the benchmark rather than report a number for a wrong result.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jaxlean.bench._measure import SidesDisagreeError, Timing
from jaxlean.bench._registry import BenchContext, BenchResult, register

__all__ = ["checkpoint_config", "measure", "read_whole", "run", "run_child",
           "transformers_available"]

FULL_BYTES = 2**30
QUICK_BYTES = 100 * 2**20
SIDES = ("read_whole", "jaxlean", "transformers")
LABELS = {"read_whole": "read whole", "jaxlean": "load_pretrained",
          "transformers": "transformers"}
MEMORY_TARGET = 1.3
TIME_TARGET = 1.2


def _config(hidden: int, layers: int) -> Any:
    """Llama proportions at width ``hidden``: 64-wide heads, 4 query heads per kv head."""
    from jaxlean.models.lm.transformer import TransformerConfig

    heads = max(1, hidden // 64)
    return TransformerConfig(vocab_size=32 * hidden, hidden_size=hidden,
                             intermediate_size=11 * hidden // 4, num_layers=layers,
                             num_heads=heads, num_kv_heads=max(1, heads // 4), head_dim=64)


def _float32_bytes(config: Any, layers: int) -> int:
    """Bytes of the base weights of an untied ``config`` with ``layers`` layers, in float32."""
    h, kv = config.hidden_size, config.num_kv_heads * config.head_dim
    q = config.num_heads * config.head_dim
    layer = 2 * h * q + 2 * h * kv + 3 * h * config.intermediate_size + 2 * h
    return 4 * (2 * config.vocab_size * h + h + layers * layer)


def checkpoint_config(size_bytes: int) -> Any:
    """A Llama-style config whose float32 weights take about ``size_bytes``.

    The width is the largest power of two (at least 64) whose embedding and
    head take at most a third of the size; the depth fills the rest.
    """
    hidden = 64
    while _float32_bytes(_config(2 * hidden, 1), 0) <= size_bytes / 3:
        hidden *= 2
    config = _config(hidden, 1)
    head, layer = _float32_bytes(config, 0), _float32_bytes(config, 1) - _float32_bytes(config, 0)
    return _config(hidden, max(1, round((size_bytes - head) / layer)))


def _status_bytes(field: str) -> int:
    """A memory field of ``/proc/self/status`` (``VmRSS``, ``VmHWM``), in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def _reset_peak() -> int:
    """Reset the peak resident size to the current one (Linux ``clear_refs``); return it."""
    Path("/proc/self/clear_refs").write_text("5")
    return _status_bytes("VmRSS")


def read_whole(directory: Path) -> Any:
    """The naive loader: every file into one dict, then transpose, stack and convert."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import numpy as np
    from safetensors.numpy import load_file

    from jaxlean.models.lm.hf_config import config_from_hf, read_json
    from jaxlean.models.lm.hf_names import LAYER, name_table
    from jaxlean.models.lm.transformer import Transformer

    config = config_from_hf(read_json(directory))
    tensors: dict[str, Any] = {}
    for file in sorted(directory.glob("*.safetensors")):
        tensors.update(load_file(file))
    template = eqx.filter_eval_shape(lambda: Transformer(config, key=jax.random.key(0)))
    top, per_layer = name_table(config)
    wheres, arrays = [], []
    for name, where, transpose in top:
        arrays.append(jnp.asarray(tensors[name].T if transpose else tensors[name]))
        wheres.append(where)
    for suffix, where, transpose in per_layer:
        layers = [tensors[LAYER.format(i=i) + suffix] for i in range(config.num_layers)]
        arrays.append(jnp.asarray(np.stack([t.T if transpose else t for t in layers])))
        wheres.append(where)
    return eqx.tree_at(lambda m: [w(m) for w in wheres], template, arrays)


def _load_jaxlean(directory: Path) -> Any:
    from jaxlean.models.lm.hf import load_pretrained

    return load_pretrained(directory, progress=False)[0]


def _block(model: Any) -> None:
    import jax

    jax.block_until_ready(jax.tree.leaves(model))


def _measure(load: Callable[[], Any], finish: Callable[[Any], None]) -> dict[str, Any]:
    """Seconds and peak extra resident bytes of ``load()`` (``finish`` waits for its arrays)."""
    before = _reset_peak()
    start = time.perf_counter()
    model = load()
    finish(model)
    seconds = time.perf_counter() - start
    return {"load_s": seconds, "peak_extra_bytes": _status_bytes("VmHWM") - before,
            "model": model}


def _start_jax() -> None:
    """Start JAX's CPU backend so its own buffers are not counted as the load's."""
    import jax
    import numpy as np

    jax.block_until_ready(jax.device_put(np.zeros(8, np.float32)))


def _transformers_child(directory: Path) -> dict[str, Any]:
    """``from_pretrained`` measured (its model class imported first), then its weights
    compared with the files."""
    import numpy as np
    import torch
    import transformers
    from safetensors import safe_open
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    # transformers imports the model's module on first use: resolve it before measuring.
    MODEL_FOR_CAUSAL_LM_MAPPING[type(transformers.AutoConfig.from_pretrained(directory))]
    _start_jax()
    major = int(transformers.__version__.split(".")[0])
    kwargs = {"dtype" if major >= 5 else "torch_dtype": torch.float32}
    out = _measure(lambda: transformers.AutoModelForCausalLM.from_pretrained(directory, **kwargs),
                   lambda model: None)
    state = out.pop("model").state_dict()
    names: set[str] = set()
    for file in sorted(directory.glob("*.safetensors")):
        with safe_open(file, framework="np") as handle:
            for name in handle.keys():  # noqa: SIM118 - safe_open handles are not iterable
                names.add(name)
                if name not in state or not np.array_equal(
                        state[name].numpy(), handle.get_tensor(name)):
                    return {**out, "equal": False, "difference": name}
    extra = sorted(set(state) - names)
    return {**out, "equal": not extra, "difference": extra[0] if extra else None}


def _check_child(directory: Path) -> dict[str, Any]:
    """Load both ways and compare every leaf (structure, dtype, values)."""
    import jax
    import numpy as np

    whole, streamed = read_whole(directory), _load_jaxlean(directory)
    streamed = copy.copy(streamed)  # the loaded model also carries its source files (static)
    object.__setattr__(streamed, "hf_source", None)
    if jax.tree.structure(whole) != jax.tree.structure(streamed):
        return {"equal": False, "difference": "tree structure", "leaves": 0}
    paths = jax.tree_util.tree_leaves_with_path(whole)
    for (path, a), b in zip(paths, jax.tree.leaves(streamed), strict=True):
        if a.dtype != b.dtype or not np.array_equal(np.asarray(a), np.asarray(b)):
            return {"equal": False, "difference": jax.tree_util.keystr(path),
                    "leaves": len(paths)}
    return {"equal": True, "difference": None, "leaves": len(paths)}


def _generate_child(directory: Path, size_bytes: int) -> dict[str, Any]:
    """Write the random checkpoint; its shards are a quarter of its size."""
    import jax

    from jaxlean.models.lm.hf import save_pretrained
    from jaxlean.models.lm.transformer import Transformer

    config = checkpoint_config(size_bytes)
    save_pretrained(Transformer(config, key=jax.random.key(0)), directory,
                    max_shard_bytes=max(1, size_bytes // 4))
    files = sorted(directory.glob("*.safetensors"))
    return {"config": dataclasses.asdict(config), "files": len(files),
            "disk_bytes": sum(f.stat().st_size for f in files)}


def run_child(side: str, directory: Path, size_bytes: int = 0) -> dict[str, Any]:
    """One process of the benchmark: ``generate``, ``check`` or a side of :data:`SIDES`."""
    if side == "generate":
        return _generate_child(directory, size_bytes)
    if side == "check":
        return _check_child(directory)
    if side == "transformers":
        return _transformers_child(directory)
    import jaxlean.models.lm.hf  # noqa: F401 - imported before the memory baseline

    _start_jax()
    load = {"read_whole": read_whole, "jaxlean": _load_jaxlean}[side]
    out = _measure(lambda: load(directory), _block)
    del out["model"]
    return out


def _spawn(*args: str) -> dict[str, Any]:
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [root, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "jaxlean.bench.load", *args], env=env,
                          capture_output=True, text=True, check=False)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode or not lines:
        raise RuntimeError(f"load benchmark child {' '.join(args)} failed:\n"
                           f"{proc.stderr[-3000:]}")
    return json.loads(lines[-1])


def transformers_available() -> bool:
    """Whether ``torch`` and ``transformers`` are installed beside this Python."""
    return all(importlib.util.find_spec(name) is not None for name in ("torch", "transformers"))


def _refuse(side: str, report: dict[str, Any]) -> None:
    if not report["equal"]:
        raise SidesDisagreeError(f"load benchmark: the {LABELS[side]} model differs from the "
                                 f"checkpoint at {report['difference']}; not reporting its "
                                 "numbers")


def measure(size_bytes: int, repeats: int,
            step: Callable[[str], None] = lambda message: None) -> BenchResult:
    """Generate a checkpoint of about ``size_bytes`` and measure every side ``repeats`` times."""
    result = BenchResult("load", "loading a Hugging Face checkpoint: seconds and peak extra "
                                 "host memory")
    sides = [s for s in SIDES if s != "transformers" or transformers_available()]
    samples: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
    with tempfile.TemporaryDirectory(prefix="jaxlean-bench-load-") as scratch:
        directory = Path(scratch)
        step("generating the checkpoint")
        made = _spawn("generate", str(directory), str(size_bytes))
        step("checking read whole == load_pretrained")
        check = _spawn("check", str(directory))
        _refuse("jaxlean", check)
        for round_ in range(repeats):
            for side in sides:
                step(f"{LABELS[side]} ({round_ + 1}/{repeats})")
                report = _spawn(side, str(directory))
                if side == "transformers":
                    _refuse(side, report)
                samples[side].append(report)
    disk = made["disk_bytes"]
    case = f"{disk / 2**20:.0f} MiB float32, {made['files']} files"

    def timing(side: str) -> Timing | float:
        times = tuple(s["load_s"] for s in samples[side])
        return Timing(times) if times else math.nan

    def memory(side: str) -> float:
        peaks = [s["peak_extra_bytes"] for s in samples[side]]
        return float(statistics.median(peaks)) if peaks else math.nan

    for base in ("read_whole", "transformers"):
        result.compare(case, "load time", "s", timing(base), timing("jaxlean"),
                       LABELS["jaxlean"], LABELS[base])
    for base in ("read_whole", "transformers"):
        result.compare(case, "peak extra host memory", "bytes", memory(base),
                       memory("jaxlean"), LABELS["jaxlean"], LABELS[base])
    result.target(f"load_pretrained peak extra host memory <= {MEMORY_TARGET}x the "
                  "checkpoint's size on disk (ratio)", memory("jaxlean") / disk, MEMORY_TARGET)
    jaxlean_time, whole_time = timing("jaxlean"), timing("read_whole")
    result.target(f"load_pretrained load time <= {TIME_TARGET}x read whole (ratio)",
                  jaxlean_time / whole_time, TIME_TARGET)
    config = made["config"]
    result.notes += [
        f"checkpoint: random Llama-style TransformerConfig(vocab_size={config['vocab_size']}, "
        f"hidden_size={config['hidden_size']}, intermediate_size="
        f"{config['intermediate_size']}, num_layers={config['num_layers']}, num_heads="
        f"{config['num_heads']}, num_kv_heads={config['num_kv_heads']}, head_dim="
        f"{config['head_dim']}), untied, float32: {disk / 2**20:.1f} MiB in {made['files']} "
        "safetensors files written by save_pretrained",
        f"read whole and load_pretrained give equal models ({check['leaves']} leaves compared)",
        "each sample is a fresh process; time: the load call until its arrays exist; memory: "
        "peak resident size (VmHWM) during the load minus the resident size after the imports "
        "and the JAX backend's start (medians); the files are in the OS page cache (written "
        "just before), so no side waits for the disk",
    ]
    if "transformers" in sides:
        result.notes.append("transformers (its model class imported before measuring) may keep "
                            "float32 weights memory-mapped from the files: their pages are read "
                            "and counted when first used, after its load call")
    else:
        result.notes.append("torch and transformers are not installed: no transformers column")
    return result


@register("load", "load_pretrained of a ~1 GiB checkpoint: time and peak host memory vs "
                  "reading it whole and vs transformers")
def run(ctx: BenchContext) -> BenchResult:
    """Run the load benchmark: seconds and peak extra host memory to load a checkpoint."""
    return measure(QUICK_BYTES if ctx.quick else FULL_BYTES, 3 if ctx.quick else 5, ctx.step)


if __name__ == "__main__":
    print(json.dumps(run_child(sys.argv[1], Path(sys.argv[2]),
                               int(sys.argv[3]) if len(sys.argv) > 3 else 0)), flush=True)
