"""The network benchmark: its architecture, the jaxlean side on a tiny size, and the same-model
check against jaxley (where installed)."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.bench._network_case import Architecture, jaxlean_side, pixels
from jaxlean.bench.network import FULL, PEER_FULL, QUICK

TINY = Architecture(inputs=4, hidden=2, outputs=2, steps=80, batch=2)


def test_full_size_is_jaxleys_mnist_network():
    assert (FULL.inputs, FULL.hidden, FULL.outputs, FULL.synapses) == (784, 64, 10, 50_816)
    assert (FULL.steps, FULL.batch) == (400, 4) and QUICK.batch == 4
    assert (PEER_FULL.steps, PEER_FULL.batch, PEER_FULL.outputs) == (400, 4, 10)


def test_the_jaxlean_side_differentiates_a_batch():
    loss, gS, traces = jaxlean_side(TINY)
    images = jnp.asarray(pixels(TINY))
    value, grad = jax.jit(jax.value_and_grad(loss))(gS, images)
    assert np.isfinite(float(value)) and grad.shape == (TINY.synapses,)
    assert np.all(np.isfinite(np.asarray(grad))) and np.any(np.asarray(grad) != 0)
    v = np.asarray(jax.jit(traces)(images))
    assert v.shape == (TINY.batch, TINY.steps + 1, 8)
    assert v[..., :TINY.inputs].max() > 0            # the inputs spike


def test_same_network_agrees_with_jaxley_and_another_is_refused():
    pytest.importorskip("jaxley", reason='the jaxley comparison needs `pip install '
                                         '"jaxlean[peers]"`')
    from jaxlean.bench._measure import SidesDisagreeError
    from jaxlean.bench._network_case import jaxley_side
    from jaxlean.bench.network import _check_same

    with jax.enable_x64():                            # the bench checks in float64
        images = jnp.asarray(pixels(TINY))
        _, _, theirs = jaxley_side(TINY, record_all=True)
        assert "tolerance" in _check_same(jaxlean_side(TINY)[2], theirs, images, TINY)
        fewer = dataclasses.replace(TINY, inputs=3)    # a cell fewer: not the same network
        _, _, ours = jaxlean_side(fewer)
        with pytest.raises(SidesDisagreeError, match="no jaxley comparison is reported"):
            _check_same(lambda x: jnp.concatenate([ours(x[:, :3])[..., :1], ours(x[:, :3])],
                                                  axis=-1), theirs, images, TINY)
