"""The algorithms' chunked paths against naive full-logits versions (values and gradients),
their micro-batching rule, and their errors."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError, StructureError
from jaxlean.loss.advantages import (
    group_advantages,
    overlong_penalty,
    rloo_advantages,
    varied_groups,
)
from jaxlean.loss.policy import policy_gradient_loss, policy_objective
from jaxlean.loss.preference import dpo_loss, dpo_objective, sequence_logprobs
from tests.loss.numpy_reference import numpy_logprobs

B, T, H, V = 4, 9, 16, 200


@functools.cache  # one set of arrays per seed, made with NumPy (no eager JAX op, each a compile)
def _data(seed=0):
    rng = np.random.default_rng(seed)
    hidden = rng.normal(size=(B, T, H)).astype(np.float32)
    head = (rng.normal(size=(H, V)) * 0.5).astype(np.float32)
    targets = rng.integers(0, V, (B, T)).astype(np.int32)
    logp = numpy_logprobs(hidden, head, targets)
    old = logp + 0.3 * rng.normal(size=(B, T))
    ref = logp + 0.2 * rng.normal(size=(B, T))
    advantages = rng.normal(size=(B,))
    lengths = rng.integers(1, T + 1, (B,))
    lengths[0] = T
    mask = (np.arange(T)[None] < lengths[:, None]).astype(np.float32)
    return tuple(jnp.asarray(x, jnp.float32 if x.dtype == np.float64 else x.dtype)
                 for x in (hidden, head, targets, old, ref, advantages, mask))


def _naive_logprobs(hidden, head, targets):
    logp = jax.nn.log_softmax(hidden @ head)
    return jnp.take_along_axis(logp, targets[..., None], -1)[..., 0]


def _naive_policy(hidden, head, targets, old, adv, mask, ref, *, normalization, level,
                  kl_coef, max_len=None, num_items=None):
    """TRL's GRPO ``_compute_loss`` written out on full logits."""
    logp = _naive_logprobs(hidden, head, targets)
    log_ratio = logp - old
    if level == "sequence":
        log_ratio = (jnp.sum(log_ratio * mask, -1) / jnp.maximum(jnp.sum(mask, -1), 1))[:, None]
    ratio = jnp.exp(log_ratio)
    a = adv[:, None]
    per = -jnp.minimum(ratio * a, jnp.clip(ratio, 0.8, 1.28) * a)
    per = per + kl_coef * (jnp.exp(ref - logp) - (ref - logp) - 1)
    masked = per * mask
    if normalization == "grpo":
        return jnp.mean(jnp.sum(masked, -1) / jnp.sum(mask, -1))
    if normalization == "bnpo":
        return jnp.sum(masked) / jnp.sum(mask)
    if normalization == "dr_grpo":
        return jnp.sum(masked) / (B * (T if max_len is None else max_len))
    return jnp.sum(masked) / (jnp.sum(mask) if num_items is None else num_items)


CASES = [("grpo", "token"), ("bnpo", "token"), ("dr_grpo", "token"), ("dapo", "token"),
         ("grpo", "sequence"), ("dr_grpo", "sequence")]
PATHS = ["one_pass", "recompute", "callable"]


def _extra(normalization):
    return {"dr_grpo": dict(max_completion_length=12),
            "dapo": dict(num_items_in_batch=40.0)}.get(normalization, {})


@functools.cache  # every case's chunked loss on one path: one program per path
def _policy_losses(path):
    hidden, head, targets, old, ref, adv, mask = _data()
    ids = jnp.where(mask > 0, targets, -100)  # positions off the completion: ignored

    def ours(hidden, head, normalization, level):
        w = (lambda c: c @ head) if path == "callable" else head
        return policy_gradient_loss(
            hidden, w, targets=ids, old_logprobs=old, advantages=adv, mask=mask, clip_eps=0.2,
            clip_eps_high=0.28,
            ref_logprobs=ref, kl_coef=0.05, normalization=normalization,
            importance_sampling_level=level, chunk_size=5,
            vocab_chunk=60 if path == "recompute" else None, **_extra(normalization)).loss

    return jax.jit(lambda h, w: [jax.value_and_grad(ours, (0, 1))(h, w, *case)
                                 for case in CASES])(hidden, head)


@functools.cache  # every case's references (shared by the paths) in one program
def _policy_references():
    hidden, head, targets, old, ref, adv, mask = _data()

    def references(hidden, head, normalization, level):
        extra = _extra(normalization)
        naive = lambda h, w: _naive_policy(
            h, w, targets, old, adv, mask, ref, normalization=normalization, level=level,
            kl_coef=0.05, max_len=extra.get("max_completion_length"),
            num_items=extra.get("num_items_in_batch"))
        on_logprobs = lambda lp: policy_objective(
            lp, old, adv, mask=mask, clip_eps=0.2, clip_eps_high=0.28, ref_logprobs=ref,
            kl_coef=0.05, normalization=normalization, importance_sampling_level=level,
            **extra).loss
        return (jax.value_and_grad(naive, (0, 1))(hidden, head),
                jax.value_and_grad(on_logprobs)(_naive_logprobs(hidden, head, targets))[0])

    return jax.jit(lambda h, w: [references(h, w, *case) for case in CASES])(hidden, head)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("normalization,level", CASES)
def test_policy_loss_matches_full_logits(normalization, level, path):
    case = CASES.index((normalization, level))
    value, grads = _policy_losses(path)[case]
    (want, want_grads), on_logprobs = _policy_references()[case]
    np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6)
    for a, b in zip(grads, want_grads, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * np.abs(np.asarray(b)).max())
    np.testing.assert_allclose(on_logprobs, want, rtol=1e-5, atol=1e-6)


def test_sequence_level_is_not_token_level():
    hidden, head, targets, old, _, adv, mask = _data()
    run = lambda level: policy_gradient_loss(
        hidden, head, targets=targets, old_logprobs=old, advantages=adv, mask=mask,
        normalization="grpo",
        importance_sampling_level=level).loss
    sequence, token = jax.jit(lambda: (run("sequence"), run("token")))()  # one compile
    assert abs(float(sequence) - float(token)) > 1e-3


def test_names_alias_the_old_normalizations():
    hidden, head, targets, old, _, adv, mask = _data()
    run = lambda how: policy_gradient_loss(hidden, head, targets=targets, old_logprobs=old,
                                           advantages=adv, mask=mask,
                                           normalization=how).loss
    names = ("token", "bnpo", "sequence", "grpo", "dapo")
    loss = dict(zip(names, jax.jit(lambda: [run(how) for how in names])(), strict=True))
    np.testing.assert_array_equal(loss["token"], loss["bnpo"])
    np.testing.assert_array_equal(loss["sequence"], loss["grpo"])
    np.testing.assert_allclose(loss["dapo"], loss["bnpo"], rtol=1e-6)  # its default divisor


def test_dapo_micro_batches_add_up_to_the_whole_batch():
    """With ``num_items_in_batch`` the whole batch's token count, micro-batch losses and
    gradients add up to those of the batch (what gradient accumulation needs)."""
    hidden, head, targets, old, _, adv, mask = _data()

    def loss(head, rows, items=None):
        return policy_gradient_loss(hidden[rows], head, targets=targets[rows],
                                    old_logprobs=old[rows], advantages=adv[rows],
                                    mask=mask[rows], normalization="dapo",
                                    num_items_in_batch=items).loss

    whole, *parts = jax.jit(lambda head: [jax.value_and_grad(loss)(head, slice(None))] + [
        jax.value_and_grad(loss)(head, rows, jnp.sum(mask))
        for rows in (slice(0, 2), slice(2, None))])(head)  # one compile
    np.testing.assert_allclose(parts[0][0] + parts[1][0], whole[0], rtol=1e-5)
    np.testing.assert_allclose(parts[0][1] + parts[1][1], whole[1], rtol=1e-4, atol=1e-7)


DPO_LOSS_TYPES = ["sigmoid", "hinge", "ipo"]


@functools.cache  # every loss type's chunked loss on one path: one program per path
def _dpo_losses(path):
    hidden, head, targets, _, ref, _, mask = _data(1)
    ids = jnp.where(mask > 0, targets, -100)

    def ours(hidden, head, loss_type):
        w = (lambda c: c @ head) if path == "callable" else head
        return dpo_loss(hidden, w, targets=ids, ref_logprobs=ref, mask=mask, beta=0.2,
                        loss_type=loss_type,
                        chunk_size=4, vocab_chunk=64 if path == "recompute" else None).loss

    return jax.jit(lambda h, w: [jax.value_and_grad(ours, (0, 1))(h, w, loss_type)
                                 for loss_type in DPO_LOSS_TYPES])(hidden, head)


@functools.cache  # every loss type's reference (shared by the paths) in one program
def _dpo_references():
    hidden, head, targets, _, ref, _, mask = _data(1)

    def naive(hidden, head, loss_type):
        logp = _naive_logprobs(hidden, head, targets)
        ratio = jnp.sum((logp - ref) * mask, -1)
        c, r = ratio[:2], ratio[2:]
        if loss_type == "sigmoid":
            return jnp.mean(-jax.nn.log_sigmoid(0.2 * (c - r)))
        if loss_type == "hinge":
            return jnp.mean(jax.nn.relu(1 - 0.2 * (c - r)))
        n = jnp.sum(mask, -1)
        return jnp.mean((c / n[:2] - r / n[2:] - 1 / 0.4) ** 2)

    return jax.jit(lambda h, w: [jax.value_and_grad(naive, (0, 1))(h, w, loss_type)
                                 for loss_type in DPO_LOSS_TYPES])(hidden, head)


@pytest.mark.parametrize("loss_type", DPO_LOSS_TYPES)
@pytest.mark.parametrize("path", PATHS)
def test_dpo_loss_matches_full_logits(loss_type, path):
    value, grads = _dpo_losses(path)[DPO_LOSS_TYPES.index(loss_type)]
    want, want_grads = _dpo_references()[DPO_LOSS_TYPES.index(loss_type)]
    np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6)
    for a, b in zip(grads, want_grads, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * np.abs(np.asarray(b)).max())


def test_dpo_at_the_reference_is_log_2_and_learns_toward_chosen():
    hidden, head, targets, _, _, _, mask = _data(2)

    @jax.jit  # one program, not an eager program per operation
    def at_the_reference(hidden, head):
        logps, lengths = sequence_logprobs(hidden, head, targets=targets, mask=mask)
        out = dpo_objective(logps[:2], logps[2:], logps[:2], logps[2:], beta=0.1)
        grad = jax.grad(lambda s: dpo_objective(s[:2], s[2:], logps[:2], logps[2:]).loss)(logps)
        return lengths, out, grad

    lengths, out, grad = at_the_reference(hidden, head)
    np.testing.assert_allclose(lengths, np.sum(np.asarray(mask), -1))
    np.testing.assert_allclose(out.loss, np.log(2), rtol=1e-6)
    assert float(out.margin) == 0 and float(out.accuracy) == 0
    grad = np.asarray(grad)
    assert np.all(grad[:2] < 0) and np.all(grad[2:] > 0)


def test_advantage_properties():
    rewards = jnp.array([1.0, 0.0, 0.0, 1.0, 0.5, 0.5, 0.5, 0.5])
    adv = np.asarray(group_advantages(rewards, 4))  # sliced and summed in NumPy: no compiles
    np.testing.assert_allclose(adv[4:], 0)
    np.testing.assert_allclose(np.sum(adv[:4]), 0, atol=1e-6)
    np.testing.assert_allclose(np.asarray(group_advantages(rewards, 4, scale_rewards="none"))[:4],
                               [0.5, -0.5, -0.5, 0.5])
    np.testing.assert_allclose(np.asarray(rloo_advantages(rewards, 4))[:4],
                               [2 / 3, -2 / 3, -2 / 3, 2 / 3], rtol=1e-6)
    np.testing.assert_allclose(rloo_advantages(rewards, 1), 0)
    np.testing.assert_array_equal(varied_groups(rewards, 4), [True] * 4 + [False] * 4)
    np.testing.assert_allclose(overlong_penalty(jnp.array([10, 14, 16, 17]), 16, 4),
                               [0, -0.5, -1, -1])


def test_errors_name_the_argument():
    hidden, head, targets, old, ref, adv, _ = _data()
    call = lambda **kw: policy_gradient_loss(hidden, head, targets=targets, old_logprobs=old,
                                             advantages=adv, **kw)
    with pytest.raises(ConfigError, match=r"unknown normalization 'seq'.*'dr_grpo', 'dapo'"):
        call(normalization="seq")
    with pytest.raises(ConfigError, match="max_completion_length is used by "
                                          "normalization='dr_grpo' only"):
        call(normalization="grpo", max_completion_length=4)
    with pytest.raises(ConfigError, match="max_completion_length must be >= 1"):
        call(normalization="dr_grpo", max_completion_length=0)
    with pytest.raises(ConfigError, match="num_items_in_batch is used by normalization='dapo'"):
        call(num_items_in_batch=10)
    with pytest.raises(ConfigError, match="unknown importance_sampling_level 'seq'"):
        call(importance_sampling_level="seq")
    with pytest.raises(StructureError, match="logprobs must be"):
        policy_objective(old[0], old[0], adv)
    logps = jnp.zeros(2)
    with pytest.raises(ConfigError, match="unknown loss_type 'kto'"):
        dpo_objective(logps, logps, logps, logps, loss_type="kto")
    with pytest.raises(ConfigError, match="beta must be a number > 0"):
        dpo_objective(logps, logps, logps, logps, beta=0)
    with pytest.raises(ConfigError, match="'ipo' needs chosen_lengths"):
        dpo_objective(logps, logps, logps, logps, loss_type="ipo")
    with pytest.raises(StructureError, match="ref_chosen_logps shape"):
        dpo_objective(logps, logps, jnp.zeros(3), logps)
    with pytest.raises(StructureError, match=r"targets must be \[2B, T\]"):
        dpo_loss(hidden[:3], head, targets=targets[:3], ref_logprobs=ref[:3])
    with pytest.raises(StructureError, match="ref_logprobs must be"):
        dpo_loss(hidden, head, targets=targets, ref_logprobs=ref[:, :3])
    with pytest.raises(StructureError, match="multiple of group_size=3"):
        group_advantages(jnp.zeros(8), 3)
    with pytest.raises(ConfigError, match="group_size must be an integer"):
        rloo_advantages(jnp.zeros(8), 2.0)
    with pytest.raises(ConfigError, match="unknown scale_rewards 'std'"):
        group_advantages(jnp.zeros(8), 4, scale_rewards="std")
    with pytest.raises(ConfigError, match="soft_punish_cache must be <= max_completion_length"):
        overlong_penalty(jnp.zeros(3), 4, 5)
