"""GRPO loss types, GSPO, DAPO, RLOO and DPO against TRL's own code (float64, 1e-6).

``scripts/make_trl_loss_fixtures.py`` ran TRL's ``GRPOTrainer._compute_loss``,
``DPOTrainer._compute_loss``, the advantage lines of ``GRPOTrainer`` and
``RLOOTrainer`` and ``get_soft_overlong_punishment`` on fixed inputs and saved
``fixtures/trl/*.npz``. Each test runs on those files (no torch needed) and, where
torch and trl import, on the same computation run live.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.loss.advantages import (
    group_advantages,
    overlong_penalty,
    rloo_advantages,
    varied_groups,
)
from jaxlean.loss.policy import policy_gradient_loss, policy_objective
from jaxlean.loss.preference import dpo_loss, dpo_objective

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures" / "trl"
NAMES = ("grpo", "advantages", "dpo")
GRPO_CASES = {  # fixture case -> (normalization, importance_sampling_level, kl_coef)
    "grpo": ("grpo", "token", 0.0),
    "grpo_kl": ("grpo", "token", 0.04),
    "bnpo_kl": ("bnpo", "token", 0.04),
    "dr_grpo_kl": ("dr_grpo", "token", 0.04),
    "dapo": ("dapo", "token", 0.0),
    "gspo": ("grpo", "sequence", 0.0),
    "gspo_kl": ("grpo", "sequence", 0.04),
    "gspo_bnpo": ("bnpo", "sequence", 0.0),
}
DPO_CASES = {"sigmoid": 0.1, "hinge": 0.5, "ipo": 0.3}
CLOSE = dict(rtol=1e-6, atol=1e-10)


def _live() -> dict[str, dict[str, np.ndarray]]:
    pytest.importorskip("torch")
    pytest.importorskip("trl")
    path = ROOT / "scripts" / "make_trl_loss_fixtures.py"
    spec = importlib.util.spec_from_file_location("make_trl_loss_fixtures", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.compute()


@pytest.fixture(scope="module", params=["fixtures", "live"])
def trl(request) -> dict[str, dict[str, np.ndarray]]:
    """TRL's results: the committed files, or computed now where TRL is installed."""
    if request.param == "live":
        return _live()
    return {name: dict(np.load(FIXTURES / f"{name}.npz")) for name in NAMES}


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64():
        yield


def test_fixtures_exist_and_stay_small():
    for name in NAMES:
        path = FIXTURES / f"{name}.npz"
        assert path.stat().st_size < 100_000, path
        assert any(str(v).startswith("trl==") for v in np.load(path)["versions"])


def _grpo_options(x, case):
    normalization, level, kl_coef = GRPO_CASES[case]
    low, high = (float(e) for e in x["eps"])
    options = dict(clip_eps=low, clip_eps_high=high, kl_coef=kl_coef,
                   normalization=normalization, importance_sampling_level=level,
                   ref_logprobs=jnp.asarray(x["ref_logprobs"]), mask=jnp.asarray(x["mask"]))
    if normalization == "dr_grpo":
        options["max_completion_length"] = int(x["max_completion_length"])
    if normalization == "dapo":
        options["num_items_in_batch"] = float(x[f"{case}/num_items_in_batch"])
    return options


@pytest.mark.parametrize("case", sorted(GRPO_CASES))
def test_grpo_objective_on_logprobs_equals_trl(trl, case):
    """On TRL's per-token log-probs: the loss and its gradient with respect to them."""
    x = trl["grpo"]
    logits = x["hidden"] @ x["head"]
    logprobs = np.take_along_axis(logits - np.log(np.exp(logits).sum(-1, keepdims=True)),
                                  x["targets"][..., None], -1)[..., 0]
    advantages = group_advantages(jnp.asarray(x["rewards"]), 4)
    np.testing.assert_allclose(advantages, x[f"{case}/advantages"], **CLOSE)
    options = _grpo_options(x, case)
    value, grad = jax.jit(jax.value_and_grad(lambda lp: policy_objective(  # one compile
        lp, jnp.asarray(x["old_logprobs"]), advantages, **options).loss))(jnp.asarray(logprobs))
    np.testing.assert_allclose(value, x[f"{case}/loss"], **CLOSE)
    np.testing.assert_allclose(grad, x[f"{case}/grad_logprobs"], **CLOSE)


@pytest.mark.parametrize("path", ["one_pass", "recompute"])
@pytest.mark.parametrize("case", sorted(GRPO_CASES))
def test_grpo_chunked_loss_equals_trl(trl, case, path):
    """From hidden states and a head, chunked: TRL's loss and its gradients with respect to
    the hidden states and the head (torch differentiated its log-softmax)."""
    x = trl["grpo"]
    advantages = jnp.asarray(x[f"{case}/advantages"])
    options = _grpo_options(x, case)
    chunks = dict(chunk_size=5, vocab_chunk=None if path == "one_pass" else 7)

    def loss(hidden, head):
        return policy_gradient_loss(hidden, head, targets=jnp.asarray(x["targets"]),
                                    old_logprobs=jnp.asarray(x["old_logprobs"]),
                                    advantages=advantages, **options,
                                    **chunks).loss

    value, (d_hidden, d_head) = jax.jit(jax.value_and_grad(loss, (0, 1)))(
        jnp.asarray(x["hidden"]), jnp.asarray(x["head"]))
    assert value.dtype == jnp.float64
    np.testing.assert_allclose(value, x[f"{case}/loss"], **CLOSE)
    np.testing.assert_allclose(d_hidden, x[f"{case}/grad_hidden"], **CLOSE)
    np.testing.assert_allclose(d_head, x[f"{case}/grad_head"], **CLOSE)


def test_loss_types_differ_on_these_inputs(trl):
    """The fixture separates the cases: no two normalisations give the same loss."""
    x = trl["grpo"]
    losses = [float(x[f"{case}/loss"]) for case in GRPO_CASES]
    assert len({round(v, 9) for v in losses}) == len(losses), losses


@pytest.mark.parametrize("scale", ["group", "batch", "none"])
@pytest.mark.parametrize("rewards", ["plain", "nan"])
def test_group_advantages_equal_trl(trl, scale, rewards):
    x = trl["advantages"]
    r = x["rewards" if rewards == "plain" else "rewards_nan"]
    got = group_advantages(jnp.asarray(r), 4, scale_rewards=scale)
    np.testing.assert_allclose(got, x[f"grpo_{scale}_{rewards}"], **CLOSE)
    as_bool = {"group": True, "none": False}.get(scale)
    if as_bool is not None:  # TRL's booleans
        np.testing.assert_array_equal(group_advantages(jnp.asarray(r), 4,
                                                       scale_rewards=as_bool), got)


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("rewards", ["plain", "nan"])
def test_rloo_advantages_equal_trl(trl, normalize, rewards):
    x = trl["advantages"]
    r = x["rewards" if rewards == "plain" else "rewards_nan"]
    got = rloo_advantages(jnp.asarray(r), 4, normalize=normalize)
    np.testing.assert_allclose(got, x[f"rloo_{normalize}_{rewards}"], rtol=1e-6, atol=1e-9)


def test_dynamic_sampling_drops_trls_zero_std_groups(trl):
    x = trl["advantages"]
    keep = np.asarray(varied_groups(jnp.asarray(x["rewards"]), 4))
    np.testing.assert_array_equal(keep, ~x["is_std_zero"])
    assert keep.any() and not keep.all()


@pytest.mark.parametrize("limit,cache", [(20, 8), (20, 0), (16, 16)])
def test_overlong_penalty_equals_trl(trl, limit, cache):
    x = trl["advantages"]
    got = overlong_penalty(jnp.asarray(x["lengths"]), limit, cache)
    np.testing.assert_allclose(got, x[f"overlong_{limit}_{cache}"], **CLOSE)


@pytest.mark.parametrize("loss_type", sorted(DPO_CASES))
def test_dpo_objective_on_sequence_logprobs_equals_trl(trl, loss_type):
    """On summed log-probs: TRL's loss, its gradient (per token: the sum's gradient on
    the completion's tokens) and its logged margin and accuracy."""
    x = trl["dpo"]
    mask = x["mask"]
    logits = x["hidden"] @ x["head"]
    logprobs = np.take_along_axis(logits - np.log(np.exp(logits).sum(-1, keepdims=True)),
                                  x["targets"][..., None], -1)[..., 0]
    sums = jnp.asarray((logprobs * mask).sum(-1))
    ref = x[f"{loss_type}/ref_sums"]
    half = len(sums) // 2

    def loss(sums):
        return dpo_objective(sums[:half], sums[half:], ref[:half], ref[half:],
                             beta=DPO_CASES[loss_type], loss_type=loss_type,
                             chosen_lengths=mask[:half].sum(-1),
                             rejected_lengths=mask[half:].sum(-1))

    def loss_and_outputs(sums):
        out = loss(sums)
        return out.loss, out

    (value, out), grad = jax.jit(jax.value_and_grad(loss_and_outputs, has_aux=True))(sums)
    np.testing.assert_allclose(value, x[f"{loss_type}/loss"], **CLOSE)
    np.testing.assert_allclose(np.asarray(grad)[:, None] * mask, x[f"{loss_type}/grad_logprobs"],
                               **CLOSE)
    np.testing.assert_allclose(out.margin, x[f"{loss_type}/margin"], **CLOSE)
    np.testing.assert_allclose(out.accuracy, x[f"{loss_type}/accuracy"], **CLOSE)


@pytest.mark.parametrize("ref", ["per_token", "per_sequence"])
@pytest.mark.parametrize("loss_type", sorted(DPO_CASES))
def test_dpo_chunked_loss_equals_trl(trl, loss_type, ref):
    """From hidden states and a head, chunked: TRL's loss and gradients."""
    x = trl["dpo"]
    ref_logprobs = x["ref_logprobs"] if ref == "per_token" else x[f"{loss_type}/ref_sums"]

    def loss(hidden, head):
        return dpo_loss(hidden, head, targets=jnp.asarray(x["targets"]),
                        ref_logprobs=jnp.asarray(ref_logprobs),
                        mask=jnp.asarray(x["mask"]), beta=DPO_CASES[loss_type],
                        loss_type=loss_type, chunk_size=5, vocab_chunk=7).loss

    value, (d_hidden, d_head) = jax.jit(jax.value_and_grad(loss, (0, 1)))(
        jnp.asarray(x["hidden"]), jnp.asarray(x["head"]))
    np.testing.assert_allclose(value, x[f"{loss_type}/loss"], **CLOSE)
    np.testing.assert_allclose(d_hidden, x[f"{loss_type}/grad_hidden"], **CLOSE)
    np.testing.assert_allclose(d_head, x[f"{loss_type}/grad_head"], **CLOSE)
