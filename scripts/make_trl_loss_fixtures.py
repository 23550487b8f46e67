"""Run TRL's own loss and advantage code on fixed random inputs, for jaxlean's algorithm tests.

Writes ``tests/loss/fixtures/trl/{grpo,advantages,dpo}.npz`` (float64).
``tests/loss/test_algorithms.py`` compares jaxlean against these files (no torch) and,
where torch and trl import, against :func:`compute` run live.

How TRL's code is reached, with the least machinery (no model, no trainer built):

- GRPO / GSPO losses: ``GRPOTrainer._compute_loss`` itself, called unbound on a
  stand-in ``self`` that holds the loss settings and whose
  ``_get_per_token_logps_and_entropies`` returns per-token log-probs that torch
  computed from a small ``hidden @ head`` (float64, ``requires_grad``), so TRL's loss is
  differentiated back to the log-probs, the hidden states and the head.
- DPO losses: ``DPOTrainer._compute_loss`` likewise, with a stand-in model whose
  ``log_probs`` output are those log-probs (0 outside the completion, as TRL's fused
  head gives for ``-100`` labels) and precomputed reference log-probs.
- GRPO and RLOO advantages are inline in the trainers' ``_generate_and_score_completions``:
  the lines that compute them are cut out of TRL's installed source by their first and
  last statements and executed on the rewards (so the fixture follows TRL's text).
- DAPO's dynamic sampling has no TRL function: the fixture keeps TRL's ``is_std_zero``
  (groups whose reward std is zero) from the same GRPO lines.
- The soft overlong punishment is TRL's ``trl.rewards.get_soft_overlong_punishment``.

Needs torch, trl and transformers, in a separate venv::

    python3.11 -m venv /work/venvs/algos
    /work/venvs/algos/bin/pip install torch==2.13.0 trl transformers
    /work/venvs/algos/bin/python scripts/make_trl_loss_fixtures.py
"""

from __future__ import annotations

import collections
import inspect
import textwrap
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
from trl.rewards import get_soft_overlong_punishment
from trl.trainer import grpo_trainer, rloo_trainer
from trl.trainer.dpo_trainer import DPOTrainer
from trl.trainer.grpo_trainer import GRPOTrainer
from trl.trainer.rloo_trainer import RLOOTrainer

OUT = Path(__file__).resolve().parents[1] / "tests" / "loss" / "fixtures" / "trl"

B, T, H, V = 8, 7, 6, 24  # 2 groups of 4 completions
GROUP = 4
EPS_LOW, EPS_HIGH = 0.2, 0.28

#: (name, loss_type, importance_sampling_level, beta)
GRPO_CASES = [
    ("grpo", "grpo", "token", 0.0),
    ("grpo_kl", "grpo", "token", 0.04),
    ("bnpo_kl", "bnpo", "token", 0.04),
    ("dr_grpo_kl", "dr_grpo", "token", 0.04),
    ("dapo", "dapo", "token", 0.0),
    ("gspo", "grpo", "sequence", 0.0),
    ("gspo_kl", "grpo", "sequence", 0.04),
    ("gspo_bnpo", "bnpo", "sequence", 0.0),
]
MAX_COMPLETION_LENGTH = T + 3  # dr_grpo's constant, not T: the test must pass it
NUM_ITEMS_SCALE = 1.5  # dapo's num_items_in_batch = 1.5 x this batch's tokens
DPO_CASES = [("sigmoid", 0.1), ("hinge", 0.5), ("ipo", 0.3)]


class _Accelerator:
    """The single-process accelerator that the trainers' logging code asks."""

    num_processes, process_index, sync_gradients, device = 1, 0, True, "cpu"

    def gather(self, x):
        return x

    gather_for_metrics = gather

    def reduce(self, x, reduction="sum"):
        return x


def _metrics():
    return {"train": collections.defaultdict(list), "eval": collections.defaultdict(list)}


def policy_inputs(seed: int = 0) -> dict[str, np.ndarray]:
    """Hidden states, a head, sampled tokens, a completion mask (ones then zeros, TRL's
    layout), old and reference log-probs near the policy's, and rewards in groups."""
    rng = np.random.default_rng(seed)
    hidden = rng.normal(size=(B, T, H))
    head = rng.normal(size=(H, V)) * 0.7
    targets = rng.integers(0, V, (B, T))
    lengths = rng.integers(1, T + 1, B)
    lengths[0] = T
    mask = (np.arange(T)[None] < lengths[:, None]).astype(np.float64)
    logits = hidden @ head
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    logp = np.take_along_axis(logp, targets[..., None], -1)[..., 0]
    old = logp + 0.3 * rng.normal(size=(B, T))
    ref = logp + 0.2 * rng.normal(size=(B, T))
    rewards = np.round(rng.uniform(0, 1, B), 1)
    return dict(hidden=hidden, head=head, targets=targets, mask=mask, old_logprobs=old,
                ref_logprobs=ref, rewards=rewards)


def torch_logprobs(hidden, head, targets):
    """Leaf tensors and the per-token log-probs of ``targets`` under ``hidden @ head``."""
    h = torch.tensor(hidden, requires_grad=True)
    w = torch.tensor(head, requires_grad=True)
    logp = torch.log_softmax(h @ w, -1).gather(-1, torch.tensor(targets)[..., None])[..., 0]
    logp.retain_grad()
    return h, w, logp


def grpo_loss(x: dict, loss_type: str, level: str, beta: float) -> dict[str, np.ndarray]:
    """TRL's ``GRPOTrainer._compute_loss`` on these inputs: the loss and its gradients."""
    h, w, logp = torch_logprobs(x["hidden"], x["head"], x["targets"])
    mask = torch.tensor(x["mask"])
    advantages = torch.tensor(grouped_advantages(x["rewards"], "group")["advantages"])
    num_items = torch.tensor(NUM_ITEMS_SCALE * x["mask"].sum())
    stand_in = SimpleNamespace(
        _get_per_token_logps_and_entropies=lambda *a, **k: (logp, torch.zeros_like(logp), None),
        top_entropy_quantile=1.0, off_policy_mask_threshold=None,
        importance_sampling_level=level, beta=beta, loss_type=loss_type,
        epsilon_low=EPS_LOW, epsilon_high=EPS_HIGH, use_vllm=False,
        args=SimpleNamespace(use_bias_correction_kl=False, delta=None, steps_per_generation=1),
        model=SimpleNamespace(training=True), current_gradient_accumulation_steps=1,
        max_completion_length=MAX_COMPLETION_LENGTH, accelerator=_Accelerator(),
        _entropy_bonus_enabled=False, aux_loss_enabled=False, _metrics=_metrics())
    inputs = {"prompt_ids": torch.zeros((B, 1), dtype=torch.long),
              "prompt_mask": torch.ones((B, 1), dtype=torch.long),
              "completion_ids": torch.tensor(x["targets"]), "completion_mask": mask,
              "advantages": advantages, "old_per_token_logps": torch.tensor(x["old_logprobs"]),
              "ref_per_token_logps": torch.tensor(x["ref_logprobs"]),
              "num_items_in_batch": num_items}
    loss = GRPOTrainer._compute_loss(stand_in, None, inputs)
    loss.backward()
    return {"loss": loss.detach().numpy(), "grad_logprobs": logp.grad.numpy(),
            "grad_hidden": h.grad.numpy(), "grad_head": w.grad.numpy(),
            "advantages": advantages.numpy(), "num_items_in_batch": num_items.numpy()}


def trl_lines(function, first: str, last: str) -> str:
    """The statements of ``function``'s source from the line starting ``first`` to the
    line starting ``last`` (both stripped), dedented: TRL's inline formula as text."""
    lines = inspect.getsource(function).splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(first))
    stop = next(i for i in range(start, len(lines)) if lines[i].strip().startswith(last))
    return textwrap.dedent("\n".join(lines[start:stop + 1]))


def grouped_advantages(rewards: np.ndarray, scale_rewards: str) -> dict[str, np.ndarray]:
    """GRPO's advantages by TRL's own lines (``sum_then_normalize``, one reward function)."""
    source = trl_lines(GRPOTrainer._generate_and_score_completions,
                       "rewards = (rewards_per_func * self.reward_weights",
                       "is_std_zero = torch.isclose(")
    nan_line = trl_lines(GRPOTrainer._generate_and_score_completions,
                         "advantages = torch.nan_to_num(", "advantages = torch.nan_to_num(")
    per_func = torch.tensor(rewards)[:, None]
    scope = {"torch": torch, "nanstd": grpo_trainer.nanstd, "rewards_per_func": per_func,
             "device": "cpu", "num_generations": GROUP,
             "unscorable_mask": torch.isnan(per_func).all(dim=1),
             "self": SimpleNamespace(reward_weights=torch.ones(1, dtype=torch.float64),
                                     scale_rewards=scale_rewards)}
    exec(source + "\n" + nan_line, scope)  # TRL's installed source (see the docstring)
    return {"advantages": scope["advantages"].numpy(),
            "is_std_zero": scope["is_std_zero"].numpy()}


def rloo(rewards: np.ndarray, normalize: bool) -> np.ndarray:
    """RLOO's leave-one-out advantages by TRL's own lines."""
    source = trl_lines(RLOOTrainer._generate_and_score_completions,
                       "grouped_rewards = rewards.view(-1, num_generations)",
                       "advantages = torch.nan_to_num(advantages, nan=0.0)")
    scope = {"torch": torch, "nanstd": rloo_trainer.nanstd, "rewards": torch.tensor(rewards),
             "num_generations": GROUP,
             "self": SimpleNamespace(normalize_advantages=normalize)}
    exec(source, scope)  # TRL's installed source (see the docstring)
    return scope["advantages"].numpy()


def advantage_cases() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    rewards = np.round(rng.uniform(0, 1, 4 * GROUP), 1)
    rewards[GROUP:2 * GROUP] = 0.5  # a group whose rewards are all equal
    with_nan = rewards.copy()
    with_nan[[1, 9]] = np.nan  # unscorable completions
    out = {"rewards": rewards, "rewards_nan": with_nan}
    for name, r in (("plain", rewards), ("nan", with_nan)):
        for scale in ("group", "batch", "none"):
            out[f"grpo_{scale}_{name}"] = grouped_advantages(r, scale)["advantages"]
        for normalize in (False, True):
            out[f"rloo_{normalize}_{name}"] = rloo(r, normalize)
    out["is_std_zero"] = grouped_advantages(rewards, "group")["is_std_zero"]
    lengths = np.array([0, 1, 5, 12, 13, 16, 19, 20, 21, 40])
    out["lengths"] = lengths
    for limit, cache in ((20, 8), (20, 0), (16, 16)):
        punish = get_soft_overlong_punishment(limit, cache)
        out[f"overlong_{limit}_{cache}"] = np.array(punish([[0] * n for n in lengths]))
    return out


def dpo_inputs(seed: int = 2) -> dict[str, np.ndarray]:
    """Chosen rows then rejected rows (TRL's concatenated batch) with reference log-probs."""
    x = policy_inputs(seed)
    x["ref_logprobs"] = x["ref_logprobs"] * x["mask"]  # TRL's ref log-probs are 0 off-completion
    return {k: x[k] for k in ("hidden", "head", "targets", "mask", "ref_logprobs")}


def dpo_loss(x: dict, loss_type: str, beta: float) -> dict[str, np.ndarray]:
    """TRL's ``DPOTrainer._compute_loss`` on these inputs: the loss and its gradients."""
    h, w, logp = torch_logprobs(x["hidden"], x["head"], x["targets"])
    mask = torch.tensor(x["mask"])
    rows = mask.shape[0]
    ref = (torch.tensor(x["ref_logprobs"]) * mask).sum(-1)

    def model(**kwargs):
        zeros = torch.zeros_like(logp)
        return SimpleNamespace(log_probs=logp * mask, entropy=zeros, mean_logits=zeros,
                               is_top1=zeros.bool())

    model.training = True
    stand_in = SimpleNamespace(
        model=model, accelerator=_Accelerator(), aux_loss_enabled=False, ld_alpha=None,
        precompute_ref_logps=True, f_divergence_type="reverse_kl", loss_types=[loss_type],
        loss_weights=[1.0], beta=beta, use_weighting=False, label_smoothing=0.0,
        _metrics=_metrics(), _total_train_tokens=0, _tp_size=1)
    completion_mask = torch.cat([torch.zeros((rows, 1), dtype=mask.dtype), mask], 1)
    inputs = {"input_ids": torch.zeros((rows, T + 1), dtype=torch.long),
              "attention_mask": torch.ones((rows, T + 1), dtype=torch.long),
              "completion_mask": completion_mask,
              "ref_chosen_logps": ref[:rows // 2], "ref_rejected_logps": ref[rows // 2:]}
    loss = DPOTrainer._compute_loss(stand_in, model, inputs, return_outputs=False)
    loss.backward()
    metrics = stand_in._metrics["train"]
    return {"loss": loss.detach().numpy(), "grad_logprobs": logp.grad.numpy(),
            "grad_hidden": h.grad.numpy(), "grad_head": w.grad.numpy(),
            "ref_sums": ref.numpy(), "margin": np.array(metrics["rewards/margins"][-1]),
            "accuracy": np.array(metrics["rewards/accuracies"][-1])}


def compute() -> dict[str, dict[str, np.ndarray]]:
    """Every fixture, freshly from TRL: ``{"grpo": {...}, "advantages": {...}, "dpo": {...}}``."""
    versions = np.array([f"{p}=={version(p)}" for p in ("trl", "torch", "transformers")])
    x = policy_inputs()
    grpo = dict(x, versions=versions, max_completion_length=np.array(MAX_COMPLETION_LENGTH),
                eps=np.array([EPS_LOW, EPS_HIGH]))
    for name, loss_type, level, beta in GRPO_CASES:
        grpo.update({f"{name}/{k}": v for k, v in grpo_loss(x, loss_type, level, beta).items()})
    d = dpo_inputs()
    dpo = dict(d, versions=versions)
    for loss_type, beta in DPO_CASES:
        dpo.update({f"{loss_type}/{k}": v for k, v in dpo_loss(d, loss_type, beta).items()})
    return {"grpo": grpo, "advantages": dict(advantage_cases(), versions=versions), "dpo": dpo}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, arrays in compute().items():
        np.savez(OUT / f"{name}.npz", **arrays)
        print(f"{name}.npz: {len(arrays)} arrays")


if __name__ == "__main__":
    main()
