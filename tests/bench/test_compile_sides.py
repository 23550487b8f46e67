"""The compile benchmark's hand-written scan+packed loops train the same model as fit's loop."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.bench._measure import SidesDisagreeError
from jaxlean.bench._pmm_by_hand import check_same_losses, make_by_hand_train_fn
from jaxlean.bench.compile import BATCH, LEARNING_RATE, WIDTH, _data, mse
from jaxlean.models.pmm import complex_adam, pmm_chain
from jaxlean.train.fit import make_train_fn

DEPTH = 3
EPOCHS = 3
RTOL = 1e-4  # float32 complex eigh and Adam, 24 steps


@pytest.fixture(scope="module")
def case():
    key = jax.random.key(3)
    data = _data(key)
    graph = pmm_chain(DEPTH, WIDTH, key=jax.random.fold_in(key, 1))
    fn, args = make_train_fn(mse, graph, data, complex_adam(LEARNING_RATE), epochs=EPOCHS,
                             batch_size=BATCH, key=jax.random.fold_in(key, 2))
    out = jax.jit(fn)(*args)
    modules = [graph.node(name) for name in graph.plan.nodes]
    return key, data, modules, out.train_loss, float(jax.jit(mse)(out.params, data))


def _by_hand(modules, data, key, layout):
    by_hand = make_by_hand_train_fn(modules, data, epochs=EPOCHS, batch_size=BATCH,
                                    key=jax.random.fold_in(key, 2), learning_rate=LEARNING_RATE,
                                    layout=layout)
    out = jax.jit(by_hand.fn)(*by_hand.args)
    return by_hand, out


@pytest.mark.parametrize("layout", ["pypmm", "stacked"])
def test_by_hand_losses_equal_fit_losses(case, layout):
    key, data, modules, fit_losses, fit_final = case
    by_hand, out = _by_hand(modules, data, key, layout)
    assert [b.dtype for b in out.buffers] == [jnp.complex64, jnp.float32]
    assert np.all(np.diff(np.asarray(fit_losses)) < 0), "the chain should learn"
    np.testing.assert_allclose(out.train_loss, fit_losses, rtol=RTOL)
    check_same_losses({layout: out.train_loss, "jaxlean": fit_losses}, "jaxlean", RTOL)
    final = float(jax.jit(by_hand.loss)(out.buffers, data))
    assert final == pytest.approx(fit_final, rel=RTOL)


def test_same_model_check_refuses_a_different_model(case):
    key, data, modules, fit_losses, _ = case
    perturbed = [jax.tree.map(lambda leaf: leaf * 1.05, module) for module in modules]
    _, out = _by_hand(perturbed, data, key, "stacked")
    with pytest.raises(SidesDisagreeError, match="do not train the same model"):
        check_same_losses({"by hand": out.train_loss, "jaxlean": fit_losses}, "jaxlean", RTOL)


def test_same_model_check_refuses_non_finite_or_missing_epochs():
    good = np.array([0.3, 0.2])
    with pytest.raises(SidesDisagreeError):
        check_same_losses({"a": np.array([0.3, np.nan]), "b": good}, "b", 1e-4)
    with pytest.raises(SidesDisagreeError):
        check_same_losses({"a": good[:1], "b": good}, "b", 1e-4)
    check_same_losses({"a": good * (1 + 1e-6), "b": good}, "b", 1e-4)
