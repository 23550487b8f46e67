"""A PMM chain's training run written by hand in plain JAX: scan over modules, packed Adam.

This is the comparison side a researcher writes without jaxlean, following
pyPMM's scan+packing branch (github.com/Parametric-Matrix-Models/pyPMM, branch
``copilot/reduce-nonsequential-compile-time``, commit
1f5eb52fe4c4702ec09f358ea511d0f45e50b453: ``NonSequentialModel._get_scan_callable``
and the packing in ``training.train`` / ``training._train``):

- the trainable arrays are packed into one flat buffer per dtype (complex
  matrices, real biases), each raveled with ``jax.flatten_util.ravel_pytree``;
- the loss unpacks the buffers, stacks the modules' arrays
  (``jax.tree.map(jnp.stack, ...)``) and runs the chain as one ``lax.scan``;
- pyPMM's ``complex_adam`` (gradient conjugated for complex buffers, second
  moment ``g conj(g)``) updates each buffer;
- epochs run in a ``lax.while_loop``, the minibatches of an epoch in a
  ``lax.fori_loop`` over the shuffled data.

``layout="pypmm"`` packs the list of per-module arrays in module order and
stacks them inside the loss at every step, as the branch does;
``layout="stacked"`` stacks once before packing, so the loss only reshapes
slices of the buffer (the leanest hand-written loop).

What pyPMM's loop also does and this one leaves out, since the jaxlean side of
the benchmark does not do it either: validation each epoch, keeping the best
state, patience and target-loss stopping, the trainable mask multiplied into
the buffers, gradient clipping (off by default in pyPMM), the per-step model
RNG and progress callbacks. Shuffling is jaxlean's (epoch ``e`` visits
``jax.random.permutation(jax.random.fold_in(key, e), n)`` in consecutive
batches, the last partial batch dropped) so that both sides see the same
minibatches and their losses can be compared step for step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.flatten_util import ravel_pytree

from jaxlean.bench._measure import SidesDisagreeError

Layout = Literal["pypmm", "stacked"]


class ByHandOutput(NamedTuple):
    """What the hand-written training function returns."""

    buffers: tuple[jax.Array, ...]
    train_loss: jax.Array


@dataclasses.dataclass(frozen=True)
class ByHand:
    """A hand-written training run: ``fn(*args) -> ByHandOutput`` (not jitted) and its loss.

    ``loss(buffers, (x, y))`` is the mean squared error of the chain held in
    ``buffers``, to evaluate trained buffers on any data.
    """

    fn: Callable[..., ByHandOutput]
    args: tuple
    loss: Callable[[tuple[jax.Array, ...], tuple[jax.Array, jax.Array]], jax.Array]


def _pack(tree: Any) -> tuple[tuple[jax.Array, ...], Callable[[Sequence[jax.Array]], Any]]:
    """One flat buffer per dtype (sorted by name, as pyPMM's groups) and the inverse."""
    leaves, treedef = jax.tree.flatten(tree)
    groups: dict[str, list[int]] = {}
    for index, leaf in enumerate(leaves):
        groups.setdefault(jnp.dtype(leaf.dtype).name, []).append(index)
    names = sorted(groups)
    raveled = [ravel_pytree([leaves[i] for i in groups[name]]) for name in names]

    def unpack(buffers: Sequence[jax.Array]) -> Any:
        out: list[Any] = [None] * len(leaves)
        for name, buffer, (_, unravel) in zip(names, buffers, raveled, strict=True):
            for index, leaf in zip(groups[name], unravel(buffer), strict=True):
                out[index] = leaf
        return jax.tree.unflatten(treedef, out)

    return tuple(flat for flat, _ in raveled), unpack


def _stack(modules: Sequence[Any]) -> Any:
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *modules)


def _complex_adam(x: jax.Array, m: jax.Array, v: jax.Array, dx: jax.Array, step: jax.Array,
                  learning_rate: float, b1: float = 0.9, b2: float = 0.999,
                  eps: float = 1e-8) -> tuple[jax.Array, jax.Array, jax.Array]:
    """pyPMM's ``complex_adam`` update of one buffer (``step`` counts from 0)."""
    if jnp.iscomplexobj(x):
        dx = jnp.conj(dx)
        v = b2 * v + (1 - b2) * (dx * jnp.conj(dx))
    else:
        v = b2 * v + (1 - b2) * dx**2
    m = b1 * m + (1 - b1) * dx
    m_hat = m / (1 - b1 ** (step + 1)).astype(jnp.float32)
    v_hat = v / (1 - b2 ** (step + 1)).astype(jnp.float32)
    return x - learning_rate * m_hat / (jnp.sqrt(v_hat) + eps), m, v


def make_by_hand_train_fn(modules: Sequence[eqx.Module], data: tuple[jax.Array, jax.Array], *,
                          epochs: int, batch_size: int, key: jax.Array, learning_rate: float,
                          layout: Layout = "stacked") -> ByHand:
    """The hand-written training run of the chain ``modules[-1](...modules[0](x))``.

    Args:
        modules: the chain's modules, all of one type and shapes; their array
            leaves are the trainable parameters.
        data: ``(x, y)`` with a leading example axis; the loss is the mean squared error.
        epochs, batch_size: loop sizes.
        key: PRNG key for shuffling.
        learning_rate: Adam's step size.
        layout: ``"pypmm"`` (pack per module, stack in the loss) or ``"stacked"``.

    Returns:
        A :class:`ByHand`; ``jax.jit(by_hand.fn)(*by_hand.args)`` trains.
    """
    stack_first = layout == "stacked"
    buffers, unpack = _pack(_stack(modules) if stack_first else list(modules))
    examples = data[0].shape[0]
    batches = examples // batch_size

    def loss(buffers: Sequence[jax.Array], batch: tuple[jax.Array, jax.Array]) -> jax.Array:
        chain = unpack(buffers) if stack_first else _stack(unpack(buffers))
        x, y = batch
        out, _ = lax.scan(lambda h, module: (module(h), None), x, chain)
        return jnp.mean((out - y) ** 2)

    loss_and_grad = jax.value_and_grad(loss)

    def train(buffers, moments, data, key) -> ByHandOutput:
        x, y = data

        def epoch(state):
            e, buffers, moments, step, history = state
            order = jax.random.permutation(jax.random.fold_in(key, e), examples)
            xs, ys = x[order], y[order]

            def minibatch(b, carry):
                buffers, moments, step, total = carry
                start = b * batch_size
                batch = (lax.dynamic_slice_in_dim(xs, start, batch_size),
                         lax.dynamic_slice_in_dim(ys, start, batch_size))
                value, grads = loss_and_grad(buffers, batch)
                updated = [_complex_adam(p, m, v, g, step, learning_rate)
                           for p, (m, v), g in zip(buffers, moments, grads, strict=True)]
                return (tuple(p for p, _, _ in updated), tuple((m, v) for _, m, v in updated),
                        step + 1, total + value)

            buffers, moments, step, total = lax.fori_loop(
                0, batches, minibatch, (buffers, moments, step, jnp.zeros((), jnp.float32)))
            return e + 1, buffers, moments, step, history.at[e].set(total / batches)

        start = (jnp.zeros((), jnp.int32), buffers, moments, jnp.zeros((), jnp.int32),
                 jnp.full((epochs,), jnp.nan, jnp.float32))
        _, buffers, _, _, history = lax.while_loop(lambda s: s[0] < epochs, epoch, start)
        return ByHandOutput(buffers, history)

    moments = tuple((jnp.zeros_like(b), jnp.zeros_like(b)) for b in buffers)
    return ByHand(train, (buffers, moments, data, key), loss)


def check_same_losses(losses: Mapping[str, Any], reference: str, rtol: float) -> None:
    """Raise :class:`SidesDisagreeError` unless every side's losses match ``reference``'s.

    ``losses`` maps a side to its per-epoch training losses from the same
    parameters, data and shuffling; they must be finite and agree within ``rtol``.
    """
    expected = np.asarray(losses[reference], dtype=np.float64)
    for side, values in losses.items():
        values = np.asarray(values, dtype=np.float64)
        if (values.shape != expected.shape or not np.all(np.isfinite(values))
                or not np.allclose(values, expected, rtol=rtol, atol=0.0)):
            raise SidesDisagreeError(
                f"{side} and {reference} do not train the same model: per-epoch losses "
                f"{values.tolist()} vs {expected.tolist()} (rtol {rtol}); no speed-up is "
                "reported for sides that compute different things")
