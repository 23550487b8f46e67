"""Parameter transforms for fitting: bounded and positive parameters as unconstrained ones.

An optimiser moves parameters anywhere; a conductance must stay positive and a
fitted value within its bounds. A transform maps an unconstrained value ``x`` to
the constrained one (``forward``) and back (``inverse``), as jaxley's
``ParamTransform`` does::

    transform = ParamTransform({"gnabar_hh": SigmoidTransform(0.05, 0.5),
                                "gl_hh": SoftplusTransform(0.0)})
    free = transform.inverse(params)             # start from the model's values
    loss = lambda free: fit_error(transform.forward(free))   # optimise ``free``

* :class:`SigmoidTransform` ``(lower, upper)``: ``lower + (upper - lower) sigmoid(x)``;
* :class:`SoftplusTransform` ``(lower=0)``: ``lower + log(1 + exp(x))``.

Both are computed in their stable forms (``logaddexp``, ``expm1``, the logit from both
distances to the bounds), so
``inverse(forward(x))`` returns ``x`` to float64 precision wherever ``forward(x)``
is not within rounding of a bound (for the sigmoid, ``|x|`` up to about 10, where
``forward`` still resolves ``x``), and ``forward(inverse(y))`` returns ``y``.
Bounds are scalars or arrays broadcasting against the parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.errors import ConfigError, StructureError

__all__ = ["ParamTransform", "SigmoidTransform", "SoftplusTransform", "Transform"]


class Transform(eqx.Module):
    """A bijection from the real line to a parameter's allowed values."""

    def forward(self, x: jax.Array) -> jax.Array:
        """Unconstrained to constrained."""
        raise NotImplementedError

    def inverse(self, y: jax.Array) -> jax.Array:
        """Constrained to unconstrained."""
        raise NotImplementedError

    def check(self, y: object, where: str) -> None:
        """Raise ConfigError if a concrete ``y`` lies outside the allowed values."""


def _concrete(value: object) -> np.ndarray | None:
    if isinstance(value, jax.core.Tracer):
        return None
    return np.asarray(value)


def _at(values: np.ndarray, flat: int) -> str:
    """`` at index (i, j)`` of an element of an array (nothing for a scalar)."""
    if values.size <= 1:
        return ""
    index = np.unravel_index(flat, values.shape)
    return f" at index {index[0] if len(index) == 1 else tuple(int(i) for i in index)}"


class SigmoidTransform(Transform):
    """``lower + (upper - lower) * sigmoid(x)``: values strictly between the bounds."""

    lower: jax.Array | float
    upper: jax.Array | float

    def __check_init__(self):
        lower, upper = _concrete(self.lower), _concrete(self.upper)
        if lower is None or upper is None:
            return
        if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))
                and np.all(lower < upper)):
            raise ConfigError(f"SigmoidTransform: need finite lower < upper; got lower={lower}, "
                              f"upper={upper}")

    def forward(self, x: jax.Array) -> jax.Array:
        return self.lower + (self.upper - self.lower) * jax.nn.sigmoid(x)

    def inverse(self, y: jax.Array) -> jax.Array:
        # logit(s) with s = (y - lower) / (upper - lower), from both distances to the bounds
        # (each one rounding; no 1 - s to cancel, and no log1p, which XLA rounds coarsely)
        return jnp.log((y - self.lower) / (self.upper - y))

    def check(self, y: object, where: str) -> None:
        values, lower, upper = _concrete(y), _concrete(self.lower), _concrete(self.upper)
        if values is None or lower is None or upper is None:
            return
        values, lower, upper = np.broadcast_arrays(values, lower, upper)
        outside = ~((values > lower) & (values < upper))
        if outside.any():
            k = np.flatnonzero(outside.ravel())[0]
            raise ConfigError(f"{where}{_at(values, k)}: {values.ravel()[k]} is outside the "
                              f"open bounds ({lower.ravel()[k]}, {upper.ravel()[k]}) of its "
                              "SigmoidTransform")


class SoftplusTransform(Transform):
    """``lower + softplus(x) = lower + log(1 + exp(x))``: values above ``lower``."""

    lower: jax.Array | float = 0.0

    def __check_init__(self):
        lower = _concrete(self.lower)
        if lower is not None and not np.all(np.isfinite(lower)):
            raise ConfigError(f"SoftplusTransform: lower must be finite; got {lower}")

    def forward(self, x: jax.Array) -> jax.Array:
        return self.lower + jnp.logaddexp(x, 0.0)

    def inverse(self, y: jax.Array) -> jax.Array:
        t = y - self.lower
        return t + jnp.log(-jnp.expm1(-t))

    def check(self, y: object, where: str) -> None:
        values, lower = _concrete(y), _concrete(self.lower)
        if values is None or lower is None:
            return
        values, lower = np.broadcast_arrays(values, lower)
        outside = ~(values > lower)
        if outside.any():
            k = np.flatnonzero(outside.ravel())[0]
            raise ConfigError(f"{where}{_at(values, k)}: {values.ravel()[k]} is not above the "
                              f"lower bound {lower.ravel()[k]} of its SoftplusTransform")


class ParamTransform:
    """Transforms applied to a pytree of parameters.

    ``transforms`` has the structure of the parameters down to where a transform
    applies: a :class:`Transform` transforms every leaf below it; ``None``, or a key
    absent from a dict, leaves the parameter as it is. A dict may name only keys
    the parameters have (a typo is an error, never ignored).
    """

    def __init__(self, transforms: object):
        _validate(transforms, "transforms")
        self.transforms = transforms

    def forward(self, params: object) -> object:
        """Unconstrained parameters to the model's (apply each transform's ``forward``)."""
        return _apply(self.transforms, params, lambda t, leaf, where: t.forward(leaf), "params")

    def inverse(self, params: object) -> object:
        """The model's parameters to unconstrained ones; a value outside its transform's
        range raises ConfigError naming its path."""
        def inverse(t: Transform, leaf: object, where: str) -> jax.Array:
            t.check(leaf, where)
            return t.inverse(jnp.asarray(leaf, dtype=jnp.result_type(leaf, float)))

        return _apply(self.transforms, params, inverse, "params")

    def __repr__(self) -> str:
        return f"ParamTransform({self.transforms!r})"


def _validate(spec: object, where: str) -> None:
    if spec is None or isinstance(spec, Transform):
        return
    if isinstance(spec, Mapping):
        for key, value in spec.items():
            _validate(value, f"{where}[{key!r}]")
    elif isinstance(spec, list | tuple):
        for k, value in enumerate(spec):
            _validate(value, f"{where}[{k}]")
    else:
        raise ConfigError(f"ParamTransform: {where} must be a Transform (SigmoidTransform, "
                          f"SoftplusTransform), None, or a dict/list/tuple of them; got "
                          f"{type(spec).__name__}")


def _apply(spec: object, params: object, fn: Callable, where: str) -> object:
    if spec is None:
        return params
    if isinstance(spec, Transform):
        paths, treedef = jax.tree_util.tree_flatten_with_path(params)
        leaves = [fn(spec, leaf, where + jax.tree_util.keystr(path)) for path, leaf in paths]
        return jax.tree_util.tree_unflatten(treedef, leaves)
    if isinstance(spec, Mapping):
        if not isinstance(params, Mapping):
            raise StructureError(f"ParamTransform: {where} is a {type(params).__name__}, but "
                                 f"its transforms are a dict")
        unknown = sorted(map(str, set(spec) - set(params)))
        if unknown:
            raise StructureError(f"ParamTransform: transforms name {unknown} under {where}, "
                                 f"which has no such key (it has {sorted(map(str, params))})")
        out = {key: _apply(spec.get(key), value, fn, f"{where}[{key!r}]")
               for key, value in params.items()}
        return type(params)(out) if isinstance(params, dict) else out
    if not isinstance(params, list | tuple) or len(params) != len(spec):
        raise StructureError(f"ParamTransform: {where} must be a list or tuple of "
                             f"{len(spec)} entries, as its transforms are; got "
                             f"{type(params).__name__}"
                             + (f" of {len(params)}" if isinstance(params, list | tuple)
                                else ""))
    return type(params)(_apply(s, p, fn, f"{where}[{k}]")
                        for k, (s, p) in enumerate(zip(spec, params, strict=True)))
