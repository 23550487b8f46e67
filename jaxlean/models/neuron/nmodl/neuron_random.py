"""NEURON's ``Random``, value for value: the streams a ``.mod`` file draws from through a
POINTER (Blue Brain's ``setRNG``/``erand`` idiom, :mod:`~.random_streams`).

A hoc model makes one ``Random`` per synapse and hands it to the synapse::

    r = new Random(seed)      // NEURON 9: the Random123 stream (seed, 55, 0)
    r.negexp(1)               // the distribution; this call itself draws one value
    syn.setRNG(r)

:class:`Random` is that object, immutable: ``Random(seed).negexp(1)``. Its values are
NEURON 9's, bit for bit (a fixture made by NEURON 9.0.2 checks them):

* generators: ``Random(seed, size)`` and ``.random123(id1, id2, id3)`` (hoc's
  ``Random123``) are Philox4x32-10 with counter ``(seq, id3, id1, id2)`` and key
  ``(global_index, 0)``, four 32-bit words per counter, a word ``u`` read as
  ``(u + 1) / (2**32 + 1)``; ``.mcellran4(high, low)`` (hoc's ``MCellRan4``) is the
  32-bit hash of ``(high + k, low)`` read as ``u / 2**32``.
* distributions: ``uniform(low, high)`` gives ``low + (high - low) * x``; ``negexp(mean)``
  gives ``-mean * log(x)``. NEURON's default (``normal(0, 1)``, which caches a second
  value) is refused by name when the Random is used; its other distributions (``normal``,
  ``poisson``, ``erlang``, ...) have no method here.
* choosing a distribution draws one value, as in NEURON (hoc's ``r.negexp(1)`` returns
  it): the first value a run draws is then the stream's second. :meth:`Random.picks`
  gives the next values (hoc's ``r.repick()``), :attr:`Random.position` how far along the
  stream is (hoc's ``r.seq()`` for Random123; the ``high`` index for MCellRan4).

Each instance of a point process gets its own ``Random`` (:func:`random_parameters`
turns one per instance into the POINTER's parameters); one ``Random`` shared by several
synapses, whose draws NEURON interleaves in event order, is not modelled.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.errors import ConfigError

__all__ = ["FIELDS", "Random", "pick", "random_parameters"]

FIELDS = ("generator", "id1", "id2", "id3", "global_index", "position", "distribution",
          "a", "b")
"""The parameters a Random POINTER ``p`` of mechanism ``sfx`` takes, ``p_sfx.<field>``:
the generator (1 Random123, 2 MCellRan4), its indices, where the stream stands as the
run starts, the distribution (1 uniform, 2 negexp) and its two arguments."""

_GENERATORS = {"random123": 1, "mcellran4": 2}
_DISTRIBUTIONS = {"uniform": 1, "negexp": 2}
_U32 = 2**32


def _check_u32(name: str, value) -> int:
    if not (isinstance(value, int | np.integer) or float(value).is_integer()) \
            or not 0 <= int(value) < _U32:
        raise ConfigError(f"Random: {name} must be a whole number in [0, 2**32); got {value!r}")
    return int(value)


@dataclasses.dataclass(frozen=True)
class Random:
    """One NEURON ``Random`` (see the module docstring). ``Random(seed, size=55)`` is
    hoc's ``new Random(seed, size)``: in NEURON 9 the Random123 stream ``(seed, size, 0)``.
    """

    seed: int = 0
    size: int = 55
    generator: str = "random123"
    ids: tuple[int, int, int] | None = None
    global_index: int = 0
    position: int = 0
    distribution: tuple = ("normal", 0.0, 1.0)

    def __post_init__(self):
        if self.ids is None:
            if not 7 <= int(self.size) <= 98:
                raise ConfigError(f"Random: size must be in [7, 98] as NEURON requires; got "
                                  f"{self.size}")
            object.__setattr__(self, "ids", (int(self.seed) % _U32, int(self.size), 0))
        object.__setattr__(self, "ids", tuple(
            _check_u32(f"id{k + 1}", x) for k, x in enumerate(self.ids)))
        _check_u32("global_index", self.global_index)
        if self.generator not in _GENERATORS:
            raise ConfigError(f"Random: generator {self.generator!r} is not one of "
                              f"{sorted(_GENERATORS)}")
        if int(self.position) < 0:
            raise ConfigError(f"Random: position must be >= 0; got {self.position}")

    def random123(self, id1: int = 0, id2: int = 0, id3: int = 0) -> Random:
        """hoc's ``r.Random123(id1, id2, id3)``: a new Random123 stream at its start."""
        return dataclasses.replace(self, generator="random123", ids=(id1, id2, id3),
                                   position=0)

    def mcellran4(self, high: int, low: int = 0) -> Random:
        """hoc's ``r.MCellRan4(high, low)``: the MCellRan4 stream from index ``high``
        (``high = 0``, where NEURON picks one from a count of its own, is refused)."""
        if _check_u32("high", high) == 0:
            raise ConfigError("Random.mcellran4: high = 0 lets NEURON choose the seed from "
                              "how many MCellRan4 the process made; give one")
        return dataclasses.replace(self, generator="mcellran4", ids=(high, low, 0),
                                   position=0)

    def with_global_index(self, index: int) -> Random:
        """The stream under hoc's ``Random123_globalindex(index)``: NEURON's process-wide
        key, here one per Random. NEURON keeps the four values of the current counter
        computed under the key in effect when the stream was made or moved (``seq``), so
        set it first, as NEURON advises; it is this stream's key from its start here."""
        return dataclasses.replace(self, global_index=index)

    def sequence(self, position: int) -> Random:
        """The stream moved to ``position`` (hoc's ``r.seq(position)``): for Random123
        ``4 * counter + word``; for MCellRan4 the index ``high`` itself."""
        if self.generator == "mcellran4":
            return dataclasses.replace(self, ids=(position, self.ids[1], 0), position=0)
        if not 0 <= int(position) < 2**34:
            raise ConfigError(f"Random.sequence: a Random123 position is in [0, 2**34) as "
                              f"NEURON's seq() takes it; got {position}")
        return dataclasses.replace(self, position=int(position))

    def uniform(self, low: float, high: float) -> Random:
        """hoc's ``r.uniform(low, high)``, which draws one value."""
        return self._choose(("uniform", float(low), float(high)))

    def negexp(self, mean: float) -> Random:
        """hoc's ``r.negexp(mean)``, which draws one value."""
        return self._choose(("negexp", float(mean), 0.0))

    def _choose(self, distribution: tuple) -> Random:
        return dataclasses.replace(self, distribution=distribution,
                                   position=self.position + 1)

    def fields(self) -> dict[str, float]:
        """The values of :data:`FIELDS` for this Random."""
        kind, a, b = self.distribution
        if kind not in _DISTRIBUTIONS:
            raise ConfigError(f"Random: the {kind!r} distribution is not supported (uniform "
                              f"and negexp are); choose one, e.g. Random(seed).negexp(1)")
        return dict(zip(FIELDS, map(float, (
            _GENERATORS[self.generator], *self.ids, self.global_index, self.position,
            _DISTRIBUTIONS[kind], a, b)), strict=True))

    def picks(self, count: int) -> np.ndarray:
        """The next ``count`` values (hoc's ``r.repick()`` ``count`` times), float64."""
        with jax.enable_x64(True):
            fields = {k: np.full((count,), v) for k, v in self.fields().items()}
            return np.asarray(_jitted_pick(fields, np.arange(count, dtype=np.float64)))


def random_parameters(mechanism, pointer: str, randoms: Sequence[Random]) -> dict:
    """The parameters of POINTER ``pointer`` of point process ``mechanism`` for one
    :class:`Random` per instance: ``{f"{pointer}_{suffix}.{field}": (instances,)}``."""
    name = f"{pointer}_{mechanism.name}"
    keys = [f"{name}.{field}" for field in FIELDS]
    table = getattr(mechanism, "parameters", {})
    if keys[0] not in table:
        raise ConfigError(f"{mechanism.name} has no Random POINTER {pointer!r} (a POINTER "
                          f"its file draws from with nrn_random_pick)")
    rows = [r.fields() for r in randoms]
    return {key: jnp.asarray([row[field] for row in rows], dtype=float)
            for key, field in zip(keys, FIELDS, strict=True)}


# -- the generators, in uint32 arithmetic (no 64-bit integers needed) --------------------

def _mulhilo(a, b):
    """``(a * b) >> 32`` and ``(a * b) mod 2**32`` of uint32 arrays."""
    mask = jnp.uint32(0xFFFF)
    a_hi, a_lo, b_hi, b_lo = a >> 16, a & mask, b >> 16, b & mask
    low, mid1, mid2 = a_lo * b_lo, a_hi * b_lo, a_lo * b_hi
    carry = ((low >> 16) + (mid1 & mask) + (mid2 & mask)) >> 16
    return a_hi * b_hi + (mid1 >> 16) + (mid2 >> 16) + carry, a * b


def _philox4x32_10(c0, c1, c2, c3, k0, k1):
    for _ in range(10):
        hi0, lo0 = _mulhilo(jnp.uint32(0xD2511F53), c0)
        hi1, lo1 = _mulhilo(jnp.uint32(0xCD9E8D57), c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0, k1 = k0 + jnp.uint32(0x9E3779B9), k1 + jnp.uint32(0xBB67AE85)
    return c0, c1, c2, c3


def _ran4(n, m):
    """NEURON's ``nrnRan4int(&n, m)`` (the value; NEURON then steps ``n``)."""
    mask = jnp.uint32(0xFFFF)

    def half(x, y, c1, c2):
        w = x ^ jnp.uint32(c1)
        v, w = w >> 16, w & mask
        u = ~((v - w) * (v + w))
        return y ^ (((u >> 16) | (u << 16)) ^ jnp.uint32(c2)) + w * v

    m = half(n, m, 0xbaa96887, 0x4b0f3b58)
    return half(m, n, 0x1e17d32c, 0xe874f0c3)


def _u32(x):
    return jnp.asarray(x).astype(jnp.uint32)


def pick(fields: dict, picks) -> jnp.ndarray:
    """The value each instance's Random (``fields``: :data:`FIELDS` as arrays) gives at
    ``picks`` draws after its position; elementwise, in the dtype of ``position``."""
    dtype = jnp.result_type(fields["position"])
    position = jnp.asarray(fields["position"]) + picks
    counter = jnp.floor(position / 4)
    word = (position - 4 * counter).astype(jnp.int32)
    high_counter = jnp.floor(counter / 4294967296.0)
    c0 = _u32(counter - high_counter * 4294967296.0)
    c1 = _u32(fields["id3"]) + _u32(high_counter)
    words = _philox4x32_10(c0, c1, _u32(fields["id1"]), _u32(fields["id2"]),
                           _u32(fields["global_index"]), jnp.zeros_like(c0))
    u123 = jnp.select([word == k for k in range(3)], list(words[:3]), words[3])
    x123 = (u123.astype(dtype) + 1.0) * (1.0 / 4294967297.0)
    steps = _u32(position - jnp.floor(position / 4294967296.0) * 4294967296.0)  # one a draw
    x4 = _ran4(_u32(fields["id1"]) + steps, _u32(fields["id2"])).astype(dtype) * (
        1.0 / 4294967296.0)
    x = jnp.where(jnp.asarray(fields["generator"]) == 2, x4, x123)
    kind, a, b = fields["distribution"], jnp.asarray(fields["a"]), jnp.asarray(fields["b"])
    low, high = jnp.minimum(a, b), jnp.maximum(a, b)
    uniform = low + (high - low) * x
    negexp = -a * jnp.log(x)
    return jnp.where(jnp.asarray(kind) == 2, negexp, uniform).astype(dtype)


_jitted_pick = jax.jit(pick)
