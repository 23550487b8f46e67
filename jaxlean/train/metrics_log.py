"""Per-step training metrics written where people look: TensorBoard event files and JSONL.

:class:`MetricsLogger` takes each step's :class:`~jaxlean.train.step.StepMetrics` (or any
mapping of names to scalars) and writes it as TensorBoard scalars (``train/loss``,
``train/grad_norm``, ``train/learning_rate``, as Hugging Face's ``Trainer`` names them;
the optional extra ``tensorboard``, which installs ``tensorboardX``) and as one JSON line
per step in ``metrics.jsonl``, adding the throughput: tokens per second and, given the
model's training FLOPs per token, model FLOPs utilisation (MFU), the fraction of the
devices' peak FLOP/s the model's arithmetic uses. :func:`throughput` computes both on their
own; :func:`peak_flops` is the documented default peak per device kind and
:func:`training_flops_per_token` the usual estimate of a decoder's FLOPs per token.
"""

from __future__ import annotations

import json
import math
import re
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from jaxlean.errors import ConfigError, DataError

__all__ = ["JSONL_NAME", "PEAK_FLOPS", "MetricsLogger", "peak_flops", "throughput",
           "training_flops_per_token"]

JSONL_NAME = "metrics.jsonl"
INSTALL = "pip install 'jaxlean[tensorboard]'"

# Dense bfloat16 peak FLOP/s of one JAX device, from the vendors' data sheets (without
# sparsity). A row matches a device kind (``jax.Device.device_kind``) whose words include
# all of the row's words, case ignored; the first matching row wins. TPU rows match exactly.
PEAK_FLOPS: tuple[tuple[str, float], ...] = (
    ("TPU v4", 275e12),
    ("TPU v5 lite", 197e12),  # v5e
    ("TPU v5p", 459e12),
    ("TPU v5", 459e12),  # v5p's device kind
    ("TPU v6 lite", 918e12),  # v6e (Trillium)
    ("H100 PCIe", 756e12),
    ("H100 NVL", 835e12),
    ("H100", 989e12),  # SXM: "NVIDIA H100 80GB HBM3"
    ("H200 NVL", 835e12),
    ("H200", 989e12),
    ("GH200", 989e12),
    ("H800", 989e12),
    ("B200", 2250e12),
    ("A100", 312e12),
    ("L40S", 362e12),
    ("L4", 121e12),
    ("A10", 125e12),
)


def _words(text: str) -> set[str]:
    return set(re.split(r"[\s_-]+", text.strip().lower())) - {""}


def peak_flops(device_kind: str | None = None) -> float | None:
    """The dense bfloat16 peak FLOP/s of one device of ``device_kind`` (:data:`PEAK_FLOPS`).

    Args:
        device_kind: as ``jax.Device.device_kind`` spells it (default: the first device's).

    Returns:
        FLOP/s, or None for a kind the table lacks (a CPU, an unlisted accelerator).
    """
    if device_kind is None:
        import jax

        device_kind = jax.devices()[0].device_kind
    kind = _words(device_kind)
    for name, flops in PEAK_FLOPS:
        if name.startswith("TPU"):
            if _words(name) == kind:
                return flops
        elif _words(name) <= kind:
            return flops
    return None


def training_flops_per_token(num_params: int, *, num_layers: int = 0, attention_dim: int = 0,
                             seq_len: int = 0) -> float:
    """FLOPs of one token's forward and backward pass through a decoder: ``6 N + 12 L d T``.

    The estimate of PaLM (Chowdhery et al. 2022, appendix B) that nanoGPT and torchtitan
    report MFU with: ``6 N`` for the matmuls over ``N = num_params`` (the weights each
    token multiplies through: leave out the input embedding table, keep the output head),
    ``12 L d T`` for attention over a context of ``T = seq_len`` tokens in ``L`` layers of
    width ``d = attention_dim`` (heads times head size). Rematerialised recomputation is
    not counted: MFU counts the model's arithmetic, not the hardware's.
    """
    for name, value in (("num_params", num_params), ("num_layers", num_layers),
                        ("attention_dim", attention_dim), ("seq_len", seq_len)):
        if value < 0:
            raise ConfigError(f"training_flops_per_token: {name}={value} must be >= 0")
    return 6.0 * num_params + 12.0 * num_layers * attention_dim * seq_len


def throughput(tokens: float, seconds: float, *, flops_per_token: float | None = None,
               peak_flops: float | None = None,
               num_devices: int | None = None) -> dict[str, float]:
    """Tokens per second and, given ``flops_per_token``, model FLOPs utilisation.

    ``mfu = tokens / seconds * flops_per_token / (peak_flops * num_devices)``.

    Args:
        tokens: tokens processed in ``seconds`` (all devices together).
        seconds: the time they took.
        flops_per_token: training FLOPs per token (see :func:`training_flops_per_token`).
        peak_flops: one device's peak FLOP/s (default: :func:`peak_flops` of this device kind).
        num_devices: devices sharing the work (default: ``jax.device_count()``).

    Returns:
        ``{"tokens_per_s": ...}``, with ``"mfu"`` when ``flops_per_token`` is given and a
        peak is known.
    """
    if not seconds > 0:
        raise ConfigError(f"throughput: seconds={seconds} must be > 0")
    if tokens < 0:
        raise ConfigError(f"throughput: tokens={tokens} must be >= 0")
    out = {"tokens_per_s": tokens / seconds}
    if flops_per_token is None:
        return out
    if not flops_per_token > 0:
        raise ConfigError(f"throughput: flops_per_token={flops_per_token} must be > 0")
    peak = _peak(peak_flops)
    if peak is None:
        return out
    if num_devices is None:
        import jax

        num_devices = jax.device_count()
    if num_devices < 1:
        raise ConfigError(f"throughput: num_devices={num_devices} must be >= 1")
    out["mfu"] = out["tokens_per_s"] * flops_per_token / (peak * num_devices)
    return out


def _peak(given: float | None) -> float | None:
    if given is None:
        return peak_flops()
    if not given > 0:
        raise ConfigError(f"peak_flops={given} must be > 0 (FLOP/s of one device)")
    return float(given)


def _scalars(metrics: Any) -> dict[str, float | int]:
    """``metrics`` (a mapping or a NamedTuple such as ``StepMetrics``) as Python numbers.

    None values (``learning_rate`` without an injected one) are left out; arrays are read
    from the device, which waits for the step that computes them.
    """
    if hasattr(metrics, "_asdict"):
        metrics = metrics._asdict()
    if not isinstance(metrics, Mapping):
        raise DataError(f"MetricsLogger.log: metrics must be a mapping of names to scalars or "
                        f"a NamedTuple such as StepMetrics, not {type(metrics).__name__}")
    out: dict[str, float | int] = {}
    for name, value in metrics.items():
        if not isinstance(name, str):
            raise DataError(f"MetricsLogger.log: metric names must be strings, not {name!r}")
        if value is None:
            continue
        array = np.asarray(value)
        if array.size != 1:
            raise DataError(f"MetricsLogger.log: metrics[{name!r}] has shape {array.shape}: "
                            f"log scalars (reduce it first)")
        if array.dtype.kind not in "biuf":
            raise DataError(f"MetricsLogger.log: metrics[{name!r}] is {array.dtype}, not a "
                            f"number")
        scalar = array.reshape(()).item()
        out[name] = int(scalar) if array.dtype.kind in "biu" else float(scalar)
    return out


class MetricsLogger:
    """Writes each logged step's metrics to TensorBoard event files and ``metrics.jsonl``.

    Each :meth:`log` adds ``tokens_per_s`` (and ``mfu`` when ``flops_per_token`` is given)
    when the metrics hold ``tokens`` and the step time is known: ``seconds=`` if passed,
    else the wall time since the previous :meth:`log` divided by the steps between them
    (so logging every k-th step still reports one step's throughput). The first
    :meth:`log` without ``seconds=`` has no throughput. In a multi-process run only
    process 0 writes. ``tensorboard --logdir directory`` shows the scalars; the JSONL
    file is appended to, one object per step (``step``, ``time``, the metrics; a
    non-finite value as ``null``), flushed at once.

    Args:
        directory: where the event files and ``metrics.jsonl`` go (created if needed).
        tensorboard: write TensorBoard event files (needs ``tensorboardX``:
            ``pip install 'jaxlean[tensorboard]'``).
        jsonl: write ``metrics.jsonl``.
        flops_per_token: training FLOPs per token, for MFU
            (see :func:`training_flops_per_token`).
        peak_flops: one device's peak FLOP/s (default: :func:`peak_flops` of the device
            kind; MFU is left out, with a warning, where it is unknown).
        num_devices: the devices the step runs on (default: ``jax.device_count()``).
        prefix: prepended to TensorBoard tags of names without a ``/``.
        flush_secs: the longest time an event waits in memory before it is written.
    """

    def __init__(self, directory: str | Path, *, tensorboard: bool = True, jsonl: bool = True,
                 flops_per_token: float | None = None, peak_flops: float | None = None,
                 num_devices: int | None = None, prefix: str = "train/",
                 flush_secs: float = 10.0) -> None:
        import jax

        self.directory = Path(directory)
        self.flops_per_token = flops_per_token
        self.num_devices = num_devices
        self.prefix = prefix
        self._peak_flops = None if peak_flops is None else _peak(peak_flops)
        self._last: tuple[int, float] | None = None
        self._writer: Any = None
        self._jsonl: Any = None
        if flops_per_token is not None and not flops_per_token > 0:
            raise ConfigError(f"MetricsLogger: flops_per_token={flops_per_token} must be > 0")
        if jax.process_index() != 0:
            return
        if tensorboard:
            try:
                from tensorboardX import SummaryWriter
            except ImportError as error:
                raise ConfigError(f"MetricsLogger(tensorboard=True) needs tensorboardX, which "
                                  f"is not installed: {INSTALL} (or pass tensorboard=False)"
                                  ) from error
            self.directory.mkdir(parents=True, exist_ok=True)
            self._writer = SummaryWriter(str(self.directory), flush_secs=max(1, int(flush_secs)))
        if jsonl:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._jsonl = open(self.directory / JSONL_NAME, "a", encoding="utf-8")  # noqa: SIM115

    def log(self, step: int, metrics: Any, *, seconds: float | None = None) -> dict[str, Any]:
        """Write ``metrics`` of ``step``; return what was written (with the throughput).

        Args:
            step: the step number (TensorBoard's x axis).
            metrics: a :class:`~jaxlean.train.step.StepMetrics` or a mapping of names to
                scalars (Python numbers or one-element arrays); None values are skipped.
            seconds: this step's duration (default: measured between calls, see above).
        """
        values: dict[str, Any] = _scalars(metrics)  # waits for the step before the clock
        now = time.time()
        step = int(step)
        if seconds is None and self._last is not None and step > self._last[0]:
            seconds = (now - self._last[1]) / (step - self._last[0])
        if "tokens" in values and seconds is not None and seconds > 0:
            values.update(self._throughput(values["tokens"], seconds))
        self._last = (step, now)
        if self._writer is not None:
            for name, value in values.items():
                tag = name if "/" in name else self.prefix + name
                self._writer.add_scalar(tag, value, global_step=step, walltime=now)
        if self._jsonl is not None:
            finite = {k: (v if math.isfinite(v) else None) for k, v in values.items()}
            self._jsonl.write(json.dumps({"step": step, "time": now, **finite}) + "\n")
            self._jsonl.flush()
        return values

    def _throughput(self, tokens: float, seconds: float) -> dict[str, float]:
        flops = self.flops_per_token
        if flops is not None and self._peak_flops is None:
            self._peak_flops = _peak(None)
            if self._peak_flops is None:
                import jax

                warnings.warn(f"MetricsLogger: MFU is not logged: no peak FLOP/s is known for "
                              f"device kind {jax.devices()[0].device_kind!r} (pass "
                              f"peak_flops=)", stacklevel=3)
                self.flops_per_token = flops = None
        return throughput(tokens, seconds, flops_per_token=flops, peak_flops=self._peak_flops,
                          num_devices=self.num_devices)

    def flush(self) -> None:
        """Write buffered events to disk."""
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        """Flush and close the files (a second call does nothing)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._jsonl is not None:
            self._jsonl.close()
            self._jsonl = None

    def __enter__(self) -> MetricsLogger:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
