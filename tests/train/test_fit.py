"""fit() against a plain Python training loop: same steps, early stopping, errors."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxlean.errors import ConfigError, DataError, NonFiniteError, StructureError
from jaxlean.train.fit import fit, make_train_fn


def regression_data(seed, n=24, features=3):
    """Random inputs, a random linear map through tanh, and noise (NumPy-made: no eager
    compile)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, features)).astype(np.float32)
    w = rng.standard_normal(features).astype(np.float32)
    y = np.tanh(x @ w) + 0.05 * rng.standard_normal(n).astype(np.float32)
    return {"x": jax.device_put(x), "y": jax.device_put(y.astype(np.float32))}, w


def mlp_params(seed, features=3, hidden=8):
    rng = np.random.default_rng(seed)
    w1 = rng.standard_normal((features, hidden)).astype(np.float32) / 2
    w2 = rng.standard_normal(hidden).astype(np.float32) / 3
    return {"l1": {"w": jax.device_put(w1), "b": jax.device_put(np.zeros(hidden, np.float32))},
            "l2": {"w": jax.device_put(w2), "b": jax.device_put(np.zeros((), jnp.bfloat16))}}


def mlp_loss(params, batch):
    hidden = jnp.tanh(batch["x"] @ params["l1"]["w"] + params["l1"]["b"])
    pred = hidden @ params["l2"]["w"] + params["l2"]["b"].astype(jnp.float32)
    return jnp.mean((pred - batch["y"]) ** 2)


def reference_training(loss_fn, params, data, tx, *, epochs, batch_size, key, trainable=None):
    """The obvious Python loop: same per-epoch permutation, one jitted step per minibatch."""
    n = len(data["y"])
    state = tx.init(params)

    @jax.jit
    def step(params, state, batch):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        updates, state = tx.update(grads, state, params)
        if trainable is not None:
            updates = jax.tree.map(lambda u, t: u if t else jnp.zeros_like(u), updates, trainable)
        return optax.apply_updates(params, updates), state, loss

    losses = []
    arrays = {name: np.asarray(value) for name, value in data.items()}  # batches cut in NumPy
    for epoch in range(epochs):
        order = np.asarray(jax.random.permutation(jax.random.fold_in(key, epoch), n))
        for i in range(n // batch_size):
            index = order[i * batch_size:(i + 1) * batch_size]
            batch = {name: value[index] for name, value in arrays.items()}
            params, state, loss = step(params, state, batch)
            losses.append(float(loss))
    return params, np.array(losses)


def assert_params_close(got, want, rtol=1e-5):
    for (path, a), b in zip(jax.tree_util.tree_leaves_with_path(got), jax.tree.leaves(want),
                            strict=True):
        assert a.dtype == b.dtype, path
        tol = 1e-2 if a.dtype == jnp.bfloat16 else rtol
        np.testing.assert_allclose(np.asarray(a, np.float32), np.asarray(b, np.float32),
                                   rtol=tol, atol=tol, err_msg=jax.tree_util.keystr(path))


@functools.cache
def _loop_problem():
    """The problem of the step-by-step test and its Python loop's result, computed once for
    both of its parametrizations."""
    data, _ = regression_data(0)
    params, key = mlp_params(1), jax.random.key(2)
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(3e-2))
    want = reference_training(mlp_loss, params, data, tx, epochs=2, batch_size=8, key=key)
    return data, params, key, tx, want


@pytest.mark.parametrize("pack", [True, False], ids=["packed", "unpacked"])
def test_matches_python_loop_step_by_step(pack):
    data, params, ks, tx, (want_params, want_losses) = _loop_problem()
    seen = {}
    fn, args = make_train_fn(mlp_loss, params, data, tx, epochs=2, batch_size=8, key=ks,
                             log_every=1, pack=pack,
                             on_step=lambda step, epoch, loss: seen.update({int(step): loss}))
    out = jax.block_until_ready(jax.jit(fn)(*args))
    got_losses = np.array([seen[step] for step in sorted(seen)])
    assert sorted(seen) == list(range(6))
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-5)
    assert_params_close(out.params, want_params)
    np.testing.assert_allclose(out.train_loss, want_losses.reshape(2, 3).mean(1), rtol=1e-5)
    assert int(out.epochs_run) == 2 and int(out.bad_step) == -1


def test_float64_params_train_under_x64_as_the_python_loop():
    """A neuron modeller's setting: ``jax_enable_x64`` on, float64 params and data. The
    epoch's order is drawn in the loop as int64 there; it must not clash with the loop's
    int32 placeholder, and the params stay float64, packed or not."""
    rng = np.random.default_rng(8)
    with jax.enable_x64():
        data = {"x": jax.device_put(rng.standard_normal((24, 3))),
                "y": jax.device_put(rng.standard_normal(24))}
        params = {"w": jax.device_put(rng.standard_normal(3)), "b": jnp.zeros(())}
        loss = lambda p, b: jnp.mean((jnp.tanh(b["x"] @ p["w"] + p["b"]) - b["y"]) ** 2)
        tx, key = optax.chain(optax.clip_by_global_norm(0.5), optax.adam(3e-2)), jax.random.key(9)
        want, want_losses = reference_training(loss, params, data, tx, epochs=2, batch_size=8,
                                               key=key)
        for pack in (True, False):
            got, history = fit(loss, params, data, tx, epochs=2, batch_size=8, key=key,
                               pack=pack, progress=False)
            for name in params:
                assert got[name].dtype == jnp.float64, (pack, name)
                np.testing.assert_allclose(got[name], want[name], rtol=1e-12, atol=1e-14,
                                           err_msg=f"pack={pack} {name}")
            assert history.train_loss.dtype == np.float32  # History's losses, as documented
            np.testing.assert_allclose(history.train_loss, want_losses.reshape(2, 3).mean(1),
                                       rtol=1e-6)


def test_fit_reduces_loss_and_keeps_frozen_leaves():
    data, _ = regression_data(3, n=128)
    params, ks = mlp_params(4), jax.random.key(5)
    frozen = {"l1": {"w": True, "b": False}, "l2": True}
    trained, history = fit(mlp_loss, params, data, optax.adam(3e-2), epochs=30, batch_size=16,
                           key=ks, progress=False, trainable=frozen)
    assert history.train_loss.shape == (30,) and history.val_loss is None
    assert history.train_loss[-1] < 0.2 * history.train_loss[0]
    assert mlp_loss(trained, data) < 0.2 * mlp_loss(params, data)
    np.testing.assert_array_equal(trained["l1"]["b"], params["l1"]["b"])
    assert trained["l2"]["b"].dtype == jnp.bfloat16
    mask = {"l1": {"w": True, "b": False}, "l2": {"w": True, "b": True}}
    want, _ = reference_training(mlp_loss, params, data, optax.adam(3e-2), epochs=2,
                                 batch_size=16, key=ks, trainable=mask)
    by_path = lambda path: jax.tree_util.keystr(path) != "['l1']['b']"
    short, _ = fit(mlp_loss, params, data, optax.adam(3e-2), epochs=2, batch_size=16, key=ks,
                   progress=False, trainable=by_path)
    assert_params_close(short, want)


def test_early_stopping_restores_best_params():
    x = jnp.linspace(-1, 1, 32)[:, None]
    train = {"x": x, "y": 2.0 * x[:, 0]}
    val = {"x": x, "y": 1.0 * x[:, 0]}  # the val optimum lies on the way to the train optimum
    loss = lambda p, batch: jnp.mean((batch["x"][:, 0] * p["w"] - batch["y"]) ** 2)
    params = {"w": jnp.float32(0.0)}
    common = dict(batch_size=8, key=jax.random.key(2), progress=False)
    best, history = fit(loss, params, train, optax.adam(0.1), epochs=50, val_data=val,
                        patience=2, **common)
    best_epoch = int(np.argmin(history.val_loss))
    assert history.stopped_early and history.best_epoch == best_epoch > 0
    assert len(history.train_loss) == len(history.val_loss) == best_epoch + 1 + 2
    assert history.val_loss[-1] > history.val_loss[best_epoch]
    at_best, _ = fit(loss, params, train, optax.adam(0.1), epochs=best_epoch + 1, **common)
    np.testing.assert_allclose(best["w"], at_best["w"], rtol=1e-6)
    np.testing.assert_allclose(history.val_loss[best_epoch], loss(best, val), rtol=1e-5)


def test_progress_bar_reports_loss(capsys):
    data, _ = regression_data(6, n=16)
    params = mlp_params(7)
    fit(mlp_loss, params, data, optax.adam(1e-2), epochs=2, batch_size=8, key=jax.random.key(5),
        val_data=data, log_every=1)
    assert "loss" in capsys.readouterr().err


def test_data_errors_name_the_problem():
    params = {"w": jnp.zeros(3)}
    loss = lambda p, b: jnp.mean((b["x"] @ p["w"] - b["y"]) ** 2)
    good = {"x": jnp.ones((10, 3)), "y": jnp.ones(10)}
    run = lambda data, **kw: fit(loss, params, data, optax.sgd(0.1), key=jax.random.key(0),
                                 progress=False, **{"epochs": 1, "batch_size": 4, **kw})
    with pytest.raises(DataError, match=r"data\['y'\]: 9"):
        run({"x": jnp.ones((10, 3)), "y": jnp.ones(9)})
    with pytest.raises(DataError, match="batch_size 11 is larger than the data"):
        run(good, batch_size=11)
    with pytest.raises(DataError, match=r"val_data\['x'\]: 5"):
        run(good, val_data={"x": jnp.ones((5, 3)), "y": jnp.ones(4)})
    with pytest.raises(ConfigError, match="epochs"):
        run(good, epochs=0)
    with pytest.raises(StructureError, match=r"params\['w'\] has no entry"):
        run(good, trainable={"v": True})


def test_non_finite_loss_stops_and_names_the_step():
    n, batch_size, key = 16, 4, jax.random.key(6)
    x = jnp.ones((n, 1)).at[5, 0].set(jnp.nan)
    data = {"x": x, "y": jnp.zeros(n)}
    loss = lambda p, b: jnp.mean((b["x"][:, 0] * p["w"] - b["y"]) ** 2)
    order = np.asarray(jax.random.permutation(jax.random.fold_in(key, 0), n))
    step = int(np.argmax(order == 5)) // batch_size
    with pytest.raises(NonFiniteError, match=rf"loss at step {step} \(epoch 0, batch {step}\)"):
        fit(loss, {"w": jnp.float32(1.0)}, data, optax.sgd(0.1), epochs=3,
            batch_size=batch_size, key=key, progress=False)
    clean = {"x": jnp.ones((n, 1)), "y": jnp.zeros(n)}
    with pytest.raises(NonFiniteError, match=r"validation loss after step 3 \(epoch 0"):
        fit(loss, {"w": jnp.float32(1.0)}, clean, optax.sgd(0.1), epochs=3,
            batch_size=batch_size, key=key, val_data=data, progress=False)


def test_static_and_integer_leaves_pass_through():
    params = {"w": jnp.ones(2), "act": jnp.tanh, "ids": jnp.arange(2), "none": None}
    loss = lambda p, batch: jnp.mean(p["act"](batch @ p["w"]) ** 2)
    trained, _ = fit(loss, params, jnp.ones((8, 2)), optax.sgd(0.1), epochs=2, batch_size=4,
                     key=jax.random.key(7), progress=False)
    assert trained["act"] is jnp.tanh and trained["none"] is None
    np.testing.assert_array_equal(trained["ids"], params["ids"])
    assert float(loss(trained, jnp.ones((1, 2)))) < float(loss(params, jnp.ones((1, 2))))
