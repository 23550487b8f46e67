"""AffineObservablePMM against a direct NumPy transcription of pyPMM's math; gradients; fit."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxlean._random import normal
from jaxlean.errors import ConfigError, StructureError
from jaxlean.models.pmm import (
    WHICH,
    AffineObservablePMM,
    complex_adam,
    pmm_chain,
    selected_indices,
)
from jaxlean.train.fit import fit


def _herm(m):
    return (m + np.conj(np.swapaxes(m, -1, -2))) / 2


def _select(values, k, which):
    """pyPMM's eigen_util selection, written out with Python's sorted()."""
    key = values if which[1] == "A" else np.abs(values)
    order = sorted(range(len(values)), key=lambda i: key[i])
    n, half = len(values), k // 2
    if which[0] == "S":
        return order[:k]
    if which[0] == "L":
        return order[n - k:]
    if which[0] == "E":
        return order[:half] + order[n - (k - half):]
    return order[n // 2 - half: n // 2] + order[n // 2: n // 2 + k - half]


def _matrix(module, x):
    """M(x) for one sample, with the smoothing commutator as an explicit double loop."""
    ms = _herm(np.asarray(module.ms, np.complex128))
    slopes = ms[1:] if module.affine_bias_matrix else ms
    matrix = ms[0].copy() if module.affine_bias_matrix else np.zeros_like(ms[0])
    matrix += sum(x[i] * slopes[i] for i in range(len(x)))
    if module.smoothing:
        commutators = sum(ms[a] @ ms[b] - ms[b] @ ms[a]
                          for a in range(len(ms)) for b in range(a))
        matrix += module.smoothing * 1j * commutators
    return matrix


def _naive(module, x):
    """z_k = sum_m sum_ij |v_i^H D_km v_j|^2 - 1/2 sum_m ||D_km||^2 + b_k, by loops, one sample."""
    values, vectors = np.linalg.eigh(_matrix(module, x))
    v = [vectors[:, i] for i in _select(values, module.num_eig, module.which)]
    ds = _herm(np.asarray(module.ds, np.complex128))
    q, num_secondaries = ds.shape[:2]
    z = np.zeros(q) if module.bias is None else np.array(module.bias, np.float64)
    for k in range(q):
        for m in range(num_secondaries):
            d = ds[k, m]
            if module.use_expectation_values:
                z[k] += sum((vi.conj() @ d @ vi).real for vi in v)
            else:
                z[k] += sum(abs(vi.conj() @ d @ vj) ** 2 for vi in v for vj in v)
            if module.centered:
                z[k] -= 0.5 * np.max(np.abs(np.linalg.eigvalsh(d))) ** 2
    return z


def _naive_jax(module, x, picks):
    """The same loops in jax.numpy, eigenvectors chosen by precomputed ``picks`` (per sample)."""
    ms = (module.ms + jnp.conj(jnp.swapaxes(module.ms, -1, -2))) / 2
    ds = (module.ds + jnp.conj(jnp.swapaxes(module.ds, -1, -2))) / 2
    rows = []
    for sample, pick in zip(x, picks, strict=True):
        matrix = ms[0] + sum(sample[i] * ms[i + 1] for i in range(len(sample)))
        matrix += module.smoothing * 1j * sum(ms[a] @ ms[b] - ms[b] @ ms[a]
                                              for a in range(len(ms)) for b in range(a))
        vectors = jnp.linalg.eigh(matrix)[1]
        v = [vectors[:, i] for i in pick]
        outputs = []
        for k in range(ds.shape[0]):
            d = ds[k, 0]
            value = sum(jnp.abs(jnp.conj(vi) @ d @ vj) ** 2 for vi in v for vj in v)
            outputs.append(value - 0.5 * jnp.max(jnp.abs(jnp.linalg.eigvalsh(d))) ** 2)
        rows.append(jnp.stack(outputs) + module.bias)
    return jnp.stack(rows)


def _module(key=0, p=3, q=2, n=6, r=3, magnitude=1.0, dtype=jnp.complex64, **options):
    return AffineObservablePMM(p, q, matrix_size=n, num_eig=r, key=jax.random.key(key),
                               init_magnitude=magnitude, dtype=dtype, **options)


@pytest.mark.parametrize("k", [3, 4])
def test_selected_indices_follow_pypmm_for_every_mode(k):
    values = np.asarray(normal(jax.random.key(k), (5, 9)))
    for which in WHICH:
        got = np.asarray(selected_indices(jnp.asarray(values), k, which))
        assert got.shape == (5, k)
        for row, expected in zip(got, values, strict=True):
            assert list(row) == _select(expected, k, which), which


@pytest.mark.parametrize("which", WHICH)
def test_outputs_match_the_direct_transcription_of_pypmm(which):
    smoothing = 0.0 if which.endswith("M") else 0.7
    module = _module(key=len(which) + WHICH.index(which), which=which, smoothing=smoothing)
    assert module.which == which and module.ds.shape == (2, 1, 6, 6)
    assert jnp.iscomplexobj(module.ms) and module.ms.shape == (4, 6, 6)
    x = normal(jax.random.key(3), (5, 3))
    z = jax.jit(lambda m, x: m(x))(module, x)
    assert z.shape == (5, 2) and z.dtype == jnp.float32
    expected = np.stack([_naive(module, np.asarray(row, np.float64)) for row in x])
    np.testing.assert_allclose(np.asarray(z), expected, rtol=2e-4, atol=2e-4)
    np.testing.assert_allclose(np.asarray(module(x[0])), expected[0], rtol=2e-4, atol=2e-4)


def test_other_options_match_the_direct_transcription():
    for options in ({"use_expectation_values": True, "num_secondaries": 2},
                    {"affine_bias_matrix": False, "centered": False, "bias_term": False,
                     "smoothing": 0.5, "num_secondaries": 3}):
        module = _module(key=9, **options)
        x = normal(jax.random.key(4), (4, 3))
        expected = np.stack([_naive(module, np.asarray(row, np.float64)) for row in x])
        z = jax.jit(lambda m, x: m(x))(module, x)  # one compile, not one per op
        np.testing.assert_allclose(np.asarray(z), expected, rtol=2e-4, atol=2e-4)


def test_defaults_follow_pypmm():
    assert _module().which == "LM"
    smoothed = _module(smoothing=1.0)
    assert smoothed.which == "SA" and smoothed.smoothing == 1.0
    small = AffineObservablePMM(3, 2, matrix_size=4, num_eig=2, key=jax.random.key(0))
    assert float(jnp.abs(small.ms).max()) < 0.1 and small.bias.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(small.ms), np.asarray(_herm(np.asarray(small.ms))))


def test_gradients_match_autodiff_of_the_naive_version_and_finite_differences():
    with jax.enable_x64(True):
        module = _module(key=5, p=2, n=5, r=2, dtype=jnp.complex128, which="SA", smoothing=0.3)
        x = normal(jax.random.key(6), (3, 2), jnp.float64)
        picks = [_select(np.linalg.eigvalsh(_matrix(module, np.asarray(s))), 2, "SA") for s in x]
        # one program for the loss and its gradients, also used by the finite differences
        value_and_grads = jax.jit(jax.value_and_grad(lambda m, x: jnp.sum(jnp.sin(m(x))),
                                                     argnums=(0, 1)))
        loss = lambda m, x: value_and_grads(m, x)[0]
        grads = value_and_grads(module, x)[1]
        naive = jax.jit(jax.grad(lambda m, x: jnp.sum(jnp.sin(_naive_jax(m, x, picks))),
                                 argnums=(0, 1)))(module, x)  # one compile, not one per op
        # compared in NumPy: eager jnp operations would each compile a program
        grads_np = [np.asarray(g) for g in jax.tree.leaves(grads)]
        for ours, theirs in zip(grads_np, jax.tree.leaves(naive), strict=True):
            assert np.all(np.isfinite(ours))
            np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-7, atol=1e-10)
        assert np.abs(np.asarray(grads[0].ms).imag).sum() > 0

        # a random direction (complex where the leaf is), made and applied in NumPy; the
        # shifted points run the loss's program above (same shapes and dtypes)
        leaves, treedef = jax.tree.flatten((module, x))
        leaves = [np.asarray(leaf) for leaf in leaves]
        rng = np.random.default_rng(7)
        direction = [(rng.standard_normal(leaf.shape) + 1j * rng.standard_normal(leaf.shape)
                      if np.iscomplexobj(leaf) else rng.standard_normal(leaf.shape))
                     .astype(leaf.dtype) for leaf in leaves]
        shifted = lambda eps: treedef.unflatten([p + eps * d for p, d in
                                                 zip(leaves, direction, strict=True)])
        eps = 1e-6
        numeric = (loss(*shifted(eps)) - loss(*shifted(-eps))) / (2 * eps)
        # JAX's gradient of a real loss in z = a + ib is dL/da - i dL/db: Re(g d) is dL.
        analytic = sum(np.sum(g * d).real for g, d in zip(grads_np, direction, strict=True))
        np.testing.assert_allclose(float(analytic), float(numeric), rtol=1e-6)


def test_complex_adam_descends_where_plain_adam_climbs():
    target = jnp.array([1 + 2j, -0.5 - 1j], jnp.complex64)
    loss = lambda z: jnp.sum(jnp.abs(z - target) ** 2)

    def run(tx):
        @jax.jit
        def step(z, state):
            updates, state = tx.update(jax.grad(loss)(z), state, z)
            return optax.apply_updates(z, updates), state

        z = jnp.zeros(2, jnp.complex64)
        state = tx.init(z)
        for _ in range(300):
            z, state = step(z, state)
        return float(loss(z))

    assert run(complex_adam(0.05)) < 1e-3
    assert run(optax.adam(0.05)) > 1.0


def _regression_data(width=3, examples=128):
    x = normal(jax.random.key(2), (examples, width))
    return x, 1.0 + 0.5 * jnp.tanh(x @ normal(jax.random.key(3), (width, width)))


def _mse(model, batch):
    return jnp.mean((model(batch[0]) - batch[1]) ** 2)


def test_one_module_learns_with_complex_adam_and_not_with_plain_adam():
    x, y = _regression_data()
    module = _module(key=1, p=3, q=3, n=6, r=3, magnitude=0.3)
    spread = float(jnp.mean((y - y.mean(0)) ** 2))
    losses = {}
    for name, tx in (("complex", complex_adam(3e-2)), ("plain", optax.adam(3e-2))):
        _, history = fit(_mse, module, (x, y), tx, epochs=30, batch_size=32,
                         key=jax.random.key(4), progress=False)
        losses[name] = history.train_loss[-1]
    assert losses["complex"] < 0.1 * spread < losses["plain"]


def test_chain_of_16_is_one_scan_of_seed_size_and_trains_with_fit():
    seed = pmm_chain(16, key=jax.random.key(0))
    assert [len(step.nodes) for step in seed.plan.steps] == [16]
    assert sum(leaf.size for leaf in jax.tree.leaves(seed)) == 25_424

    graph = pmm_chain(16, 3, matrix_size=4, num_eig=2, key=jax.random.key(1))
    data = _regression_data()
    trained, history = fit(_mse, graph, data, complex_adam(3e-2), epochs=10, batch_size=32,
                           key=jax.random.key(4), progress=False)
    assert np.all(np.isfinite(history.train_loss))
    assert history.train_loss[-1] < 0.5 * history.train_loss[0]
    mse = jax.jit(_mse)  # one program for both models, not an eager program per operation
    assert float(mse(trained, data)) < 0.5 * float(mse(graph, data))
    assert jnp.iscomplexobj(trained.node("pmm3").ms)


def test_chain_matches_a_loop_over_its_modules():
    graph = pmm_chain(4, 3, matrix_size=4, num_eig=2, init_magnitude=0.5,
                      key=jax.random.key(0))
    x = normal(jax.random.key(1), (5, 3))

    @jax.jit
    def unrolled(graph, x):
        for name in graph.plan.nodes:
            x = graph.node(name)(x)
        return x

    np.testing.assert_allclose(np.asarray(jax.jit(lambda g, x: g(x))(graph, x)),
                               np.asarray(unrolled(graph, x)), rtol=1e-5, atol=1e-6)


def test_errors_name_the_problem():
    with pytest.raises(ConfigError, match="num_eig"):
        _module(n=3, r=4)
    with pytest.raises(ConfigError, match="which"):
        _module(which="XX")
    with pytest.raises(ConfigError, match="complex"):
        _module(dtype=jnp.float32)
    with pytest.raises(StructureError, match=r"\(\.\.\., 3\)"):
        _module()(jnp.ones((2, 4)))
    with pytest.warns(UserWarning, match="smoothing"):
        _module(which="LM", smoothing=1.0)
    module = eqx.tree_at(lambda m: m.bias, _module(), None)
    assert module(jnp.ones(3)).shape == (2,)
