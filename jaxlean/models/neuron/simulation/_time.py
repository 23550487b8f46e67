"""Time loops and the memory of their backward pass: segments, and nested checkpointed scans.

A plain ``lax.scan`` over T steps keeps every step's residuals for the backward
pass. :func:`scan_in_segments` (``simulate``'s default) runs the plain scan but
takes its derivatives from the same loop cut into short segments, each keeping
only what its ``keep`` policy selects (the solves' results) and recomputing the
rest from the segment's first state: one vector per step, nothing solved twice.
:func:`scan_steps` (``remat="sqrt"`` or lengths) nests ``jax.checkpoint``-ed
scans that keep only each segment's first state; the backward pass recomputes one
segment at a time. Two levels of ``sqrt(T)`` steps keep about ``2 sqrt(T)``
states for one extra forward pass; more levels keep fewer still.

Long checkpointed runs report their progress: each outer segment calls the
host (``jax.debug.callback``, once per segment, also when the backward pass
recomputes it), and :class:`SegmentProgress` prints a plain line on stderr
every ``$JAXLEAN_PROGRESS_INTERVAL`` seconds; a run shorter than that prints nothing.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Sequence
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxlean._progress import interval
from jaxlean.errors import ConfigError

__all__ = ["KEEP_STATES_BYTES", "Remat", "SegmentProgress", "default_remat", "kept_state_bytes",
           "scan_in_segments", "scan_steps", "segment_lengths"]

Remat = Literal["sqrt", "segments"] | Sequence[int] | None
"""``simulate``'s ``remat`` option: ``None``, ``"segments"``, ``"sqrt"`` or segment lengths,
outermost first."""


def segment_lengths(remat: Remat, steps: int) -> tuple[int, ...]:
    """The segment lengths, outermost first, of a ``remat`` option for ``steps`` steps.

    Raises:
      ConfigError: an unknown option, a length below 1, or lengths whose
        product is smaller than ``steps``.
    """
    if remat is None or remat == "segments":
        return (steps,)
    if remat == "sqrt":
        inner = max(1, math.isqrt(steps - 1) + 1) if steps > 1 else 1
        return (-(-steps // inner), inner)
    if isinstance(remat, str) or not all(isinstance(k, int) for k in remat):
        raise ConfigError(f"remat must be None, 'segments', 'sqrt' or a sequence of segment "
                          f"lengths; got {remat!r}")
    lengths = tuple(remat)
    if not lengths or min(lengths) < 1 or math.prod(lengths) < steps:
        raise ConfigError(f"remat lengths must be >= 1 with a product of at least {steps} "
                          f"(the number of steps); got {lengths}")
    return lengths


KEEP_STATES_BYTES = 256 * 2**20
"""``remat=None`` keeps every step's whole state (as ``remat=(T // every,)``: JAX's own
gradient of the loop, each step recomputed once in the backward pass) when that takes at
most this many bytes (:func:`kept_state_bytes`); above it, segments of
:data:`~._program.SEGMENT_STEPS` steps. Segments need three compiled copies of the step
(the forward, a segment's recomputation storing every intermediate of its steps, their
transpose), the whole state two; on the L5PC of ``jaxlean bench l5pc`` (45 compartments,
20,000 steps, 82 MB of states) the whole state compiled the gradient in about 0.6x the
CPU time and ran it in about 0.4x (figures in BENCHMARKS.md). Under ``vmap`` the bytes are
per example."""


def kept_state_bytes(carry: dict, steps: int) -> int:
    """Bytes of keeping a loop's state (``carry``) and its solve's result at each of
    ``steps`` steps: what ``remat=(T // every,)`` stores for the backward pass."""
    leaves = jax.tree.leaves(carry)
    step = sum(int(np.prod(leaf.shape)) * np.dtype(leaf.dtype).itemsize for leaf in leaves)
    return steps * (step + int(np.prod(carry["v"].shape)) * np.dtype(carry["v"].dtype).itemsize)


def default_remat(state_bytes: int, blocks: int) -> Remat:
    """What ``remat=None`` runs for a loop of ``blocks`` recorded blocks whose every state takes
    ``state_bytes`` (:func:`kept_state_bytes`): ``(blocks,)``, every state kept, up to
    :data:`KEEP_STATES_BYTES`; above it ``"segments"``."""
    return (blocks,) if state_bytes <= KEEP_STATES_BYTES else "segments"


class SegmentProgress:
    """Host side of a checkpointed run's progress, fed the index of each outer segment.

    Segments arrive in order 0..K-1 in the forward pass and K-1..0 when a
    backward pass recomputes them; the direction names the pass. Lines are
    printed only once a pass has run for an interval, so short runs stay quiet.
    Lines are printed from the callback itself, not by a timer thread, so a run
    stopped mid-way leaves nothing running; the interval is read when traced.
    """

    def __init__(self, label: str, segments: int, steps: int):
        self.label, self.segments, self.steps = label, segments, steps
        self.every = interval()
        self.phase: str | None = None
        self.start = self.last_line = 0.0
        self.printed = False

    def __call__(self, index: jax.Array) -> None:
        i, last = int(index), self.segments - 1
        now = time.perf_counter()
        if self.phase is None or (self.phase == "forward ended" and i != last):
            self.phase, self.start, self.last_line, self.printed = "forward", now, now, False
        elif self.phase == "forward ended":
            self.phase, self.start, self.last_line, self.printed = "backward", now, now, False
        done = i + 1 if self.phase == "forward" else self.segments - i
        if now - self.last_line >= self.every:
            self._line(f"{self.phase} pass, {self._steps(done)}/{self.steps} steps", now)
        if done == self.segments:
            if self.printed:
                self._line(f"{self.phase} pass done, {self.steps} steps", now)
            self.phase = "forward ended" if self.phase == "forward" else None

    def _steps(self, segments: int) -> int:
        return min(self.steps, -(-self.steps * segments // self.segments))

    def _line(self, text: str, now: float) -> None:
        print(f"{self.label}: {text} ({now - self.start:.1f} s)", file=sys.stderr, flush=True)
        self.last_line, self.printed = now, True


def scan_in_segments(step: Callable, carry, xs, keep: Callable, length: int):
    """``lax.scan(step, carry, xs)``, differentiated about ``length`` steps at a time.

    Without differentiation this is the plain scan. Its derivatives (``jax.grad``,
    ``jax.jvp``, under ``vmap`` too) are those of the same loop cut into segments of about
    ``length`` steps (:func:`_even_length`), each a ``jax.checkpoint`` with policy ``keep``:
    the backward pass stores what ``keep`` selects at every step and each segment's first
    carry, and recomputes everything else one segment at a time; the steps and their order
    are those of the plain scan. Why: JAX's gradient of a plain scan writes every step's
    residuals (for the cable: four vectors per compartment) to freshly allocated memory,
    and on XLA:CPU writing, faulting in and reading back that memory is a large share of
    the gradient's time (``jaxlean bench solver``).
    """
    converted, consts = jax.closure_convert(step, carry, jax.tree.map(lambda x: x[0], xs))

    @jax.custom_jvp
    def scan(consts, carry, xs):
        return lax.scan(lambda c, x: converted(c, x, *consts), carry, xs)

    @scan.defjvp
    def _derivative(primals, tangents):
        return jax.jvp(lambda *args: _segmented(converted, keep, length, *args), primals,
                       tangents)

    return scan(consts, carry, xs)


def _segmented(step: Callable, keep: Callable, length: int, consts, carry, xs):
    """The loop of :func:`scan_in_segments` as segments of about ``length`` steps."""
    steps = jax.tree.leaves(xs)[0].shape[0]
    length = _even_length(steps, length)
    segments = -(-steps // length)
    one, xs = _padded(lambda c, x: step(c, x, *consts), xs, steps, segments * length)
    xs = jax.tree.map(lambda x: x.reshape(segments, length, *x.shape[1:]), xs)
    segment = jax.checkpoint(lambda c, block: lax.scan(one, c, block), policy=keep,
                             prevent_cse=False)
    carry, ys = lax.scan(segment, carry, xs)
    return carry, jax.tree.map(lambda y: y.reshape(segments * length, *y.shape[2:])[:steps], ys)


def _even_length(steps: int, target: int) -> int:
    """A segment length near ``target`` that wastes few padding steps: the divisor of ``steps``
    in ``[target / 2, 2 target]`` nearest ``target``, else equal segments, the last one
    padded by fewer steps than there are segments."""
    if steps <= target:
        return steps
    divisors = [k for k in range(max(1, target // 2), 2 * target + 1) if steps % k == 0]
    if divisors:
        return min(divisors, key=lambda k: (abs(k - target), k))
    return -(-steps // -(-steps // target))


def _padded(step: Callable, xs, steps: int, total: int):
    """``step`` and ``xs`` padded with zero steps up to ``total``; a padding step leaves the
    carry as it was (its outputs are to be dropped)."""
    if total == steps:
        return step, xs
    valid = jnp.arange(total) < steps
    xs = jax.tree.map(
        lambda x: jnp.concatenate([x, jnp.zeros((total - steps, *x.shape[1:]), x.dtype)]), xs)
    return _skipping_padding(step), (valid, xs)


def _nested(step: Callable, lengths: tuple[int, ...]) -> Callable:
    if len(lengths) == 1:
        return lambda carry, xs: lax.scan(step, carry, xs)
    segment = jax.checkpoint(_nested(step, lengths[1:]), prevent_cse=False)
    return lambda carry, xs: lax.scan(segment, carry, xs)


def scan_steps(step: Callable, carry, xs, remat: Remat, progress: str | None = None):
    """``lax.scan(step, carry, xs)`` with the backward memory set by ``remat``.

    ``xs`` (a pytree of arrays with the steps first) is padded with zeros up to
    the product of the segment lengths; a padding step leaves the carry as it
    was and its outputs are dropped, so the final carry is that of the last
    real step. With a ``progress`` label and more than one segment, long runs
    report under that label (see :class:`SegmentProgress`).
    """
    steps = jax.tree.leaves(xs)[0].shape[0]
    lengths = segment_lengths(remat, steps)
    total = math.prod(lengths)
    step, xs = _padded(step, xs, steps, total)
    xs = jax.tree.map(lambda x: x.reshape(*lengths, *x.shape[1:]), xs)
    if progress is None or len(lengths) == 1 or lengths[0] == 1:
        carry, ys = _nested(step, lengths)(carry, xs)
    else:
        report = SegmentProgress(progress, lengths[0], steps)
        inner = _nested(step, lengths[1:])

        def reported(carry, indexed):
            jax.debug.callback(report, indexed[0])
            return inner(carry, indexed[1])

        segment = jax.checkpoint(reported, prevent_cse=False)
        carry, ys = lax.scan(segment, carry, (jnp.arange(lengths[0]), xs))
    return carry, jax.tree.map(lambda y: y.reshape(total, *y.shape[len(lengths):])[:steps], ys)


def _skipping_padding(step: Callable) -> Callable:
    def masked(carry, x):
        valid, x = x
        new, y = step(carry, x)
        return jax.tree.map(lambda a, b: jnp.where(valid, a, b), new, carry), y

    return masked
