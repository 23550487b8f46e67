"""TRL's ``GRPOTrainer`` as one call: prompts and reward functions of the decoded text in,
a trained policy out, the rollout and the train step each compiled once per shape.

Each iteration takes ``per_device_train_batch_size * gradient_accumulation_steps /
num_generations`` prompts, repeats each ``num_generations`` times in a row (TRL's layout,
the groups :func:`~jaxlean.loss.advantages.group_advantages` compares), samples completions
with the policy itself (its LoRA adapters included) through ``generate``, decodes them,
scores them with every reward function (TRL's signature: ``f(prompts=, completions=,
completion_ids=, **columns) -> list[float | None]``, ``None`` for "cannot score"), and takes
``num_iterations`` clipped policy-gradient updates (:func:`~jaxlean.models.lm.heads.policy_loss`
with TRL's ``loss_type``, ``epsilon``/``epsilon_high``, ``beta`` KL to a frozen reference:
the policy without its adapters, or a copy of the model passed in).

With ``output_dir``, the policy, optimizer state, sampling key and prompt order are saved
every ``save_steps``; ``resume_from_checkpoint=True`` continues from the latest save.

The models, the optimizer state and the sampling key are placed on the device once, inside,
committed as a checkpoint restores them and as the step returns them, so the rollout and the
step compile once: nothing compiles after the first iteration, nor after a resume, and a
fresh process on the same persistent compilation cache loads every program.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.errors import ConfigError
from jaxlean.loss.advantages import group_advantages
from jaxlean.models.lm.causal_loss import logprobs
from jaxlean.models.lm.generate import generate
from jaxlean.models.lm.heads import policy_loss
from jaxlean.models.lm.lora import lora_mask
from jaxlean.models.lm.post_train import TrainResult, report_skipped
from jaxlean.models.lm.preference import without_adapters
from jaxlean.models.lm.rollout_batch import rollout_batch
from jaxlean.models.lm.tokens import count_tokens
from jaxlean.models.lm.trl_config import GRPOConfig, make_optimizer, total_steps
from jaxlean.train.step import make_train_step

__all__ = ["grpo_train", "loss_options"]

#: Rows of the loss that each normalisation averages over, for gradient accumulation.
_WEIGHTS = {"grpo": "rows", "dr_grpo": "rows", "bnpo": "tokens", "dapo": "tokens"}


def _loss(model, *, options, **batch):
    out = policy_loss(model, **batch, **options)
    return out.loss, out


def _weight(kind: str):
    def weight(*, mask, **_):
        return jnp.sum(mask) if kind == "tokens" else mask.shape[0]
    return weight


def loss_options(config: GRPOConfig) -> dict[str, Any]:
    """The :func:`~jaxlean.models.lm.heads.policy_loss` options ``config`` stands for."""
    options = dict(kl_coef=config.beta, clip_eps=config.epsilon,
                   clip_eps_high=config.epsilon_high, normalization=config.loss_type,
                   temperature=config.temperature)
    if config.loss_type == "dr_grpo":
        options["max_completion_length"] = config.max_completion_length
    return options


def _filters(config: GRPOConfig) -> dict[str, Any]:
    """TRL's ``top_k=0`` / ``top_p=1.0`` turn the filters off. A ``generate`` that reads a
    checkpoint's generation defaults (its ``generation_config`` argument: ``top_k=50``
    unless set, as ``transformers``) is given them as they are, which turns them off there;
    an older one takes None for off."""
    if "generation_config" in inspect.signature(generate).parameters:
        return dict(top_k=config.top_k, top_p=config.top_p, min_p=config.min_p)
    return dict(top_k=config.top_k or None, top_p=None if config.top_p == 1.0 else config.top_p,
                min_p=config.min_p)


def _prompt_ids(tokenizer: Any, prompt: Any) -> list[int]:
    if isinstance(prompt, str):
        return tokenizer.encode(prompt)
    return tokenizer.apply_chat_template(prompt, add_generation_prompt=True)["input_ids"]


def grpo_train(model: Any, prompts: Sequence[dict[str, Any]], reward_funcs: Callable | Sequence,
               tokenizer: Any, config: GRPOConfig | None = None, *, ref_model: Any = None,
               on_log: Callable[[dict], None] | None = None) -> TrainResult:
    """TRL's ``GRPOTrainer(model, reward_funcs, args=config, train_dataset=prompts).train()``.

    Args:
        model: the policy (with LoRA adapters, only they train).
        prompts: records with a ``prompt`` (a string or chat messages) and any other
            columns, passed to the reward functions by name.
        reward_funcs: one function or several (summed with ``reward_weights``).
        tokenizer: the model's :class:`~jaxlean.models.lm.data.tokenizer.Tokenizer`.
        config: a :class:`~jaxlean.models.lm.trl_config.GRPOConfig`.
        ref_model: the frozen KL reference (default: the policy without its adapters, or
            the model as passed in); used only when ``beta`` is not 0.
        on_log: called with each logged row.

    Logs TRL's ``reward``, ``reward_std``, ``rewards/<name>/mean``, ``kl``,
    ``clip_ratio/region_mean``, ``completions/mean_length``, ``completions/clipped_ratio``,
    ``entropy``, ``loss``, ``grad_norm``, ``learning_rate``, ``num_tokens``.
    """
    config = config or GRPOConfig()
    funcs = [reward_funcs] if callable(reward_funcs) else list(reward_funcs)
    weights = np.ones(len(funcs)) if config.reward_weights is None else np.asarray(
        config.reward_weights, float)
    if len(weights) != len(funcs):
        raise ConfigError(f"reward_weights has {len(weights)} weights for {len(funcs)} reward "
                          f"functions")
    records = [dict(p) for p in prompts]
    if not records or any("prompt" not in r for r in records):
        raise ConfigError("grpo_train: every prompt record needs a 'prompt' field")
    group = config.num_generations
    rows = config.per_device_train_batch_size * config.gradient_accumulation_steps
    per_step = rows // group
    steps = total_steps(config, max(1, len(records) // per_step))
    adapters = any(jax.tree.leaves(lora_mask(model)))
    if ref_model is None and config.beta:
        ref_model = without_adapters(model) if adapters else jax.tree.map(lambda x: x, model)
    tx = make_optimizer(config, steps * config.num_iterations)
    # Everything the loop carries is committed to one device, as the step's outputs and a
    # checkpoint's restored arrays are: a committed argument is lowered with a placement
    # (another program, another cache key), so a fresh run and a resumed one, in this
    # process or the next, run the same rollout and step programs.
    device = jax.devices()[0]
    model, ref_model = jax.device_put((model, ref_model), device)
    state = jax.device_put(tx.init(model), device)
    options = loss_options(config)
    k = config.gradient_accumulation_steps
    step = make_train_step(functools.partial(_loss, options=options), tx, has_aux=True,
                           metrics=True, count_tokens=count_tokens, micro_batches=k,
                           loss_weight=_weight(_WEIGHTS[config.loss_type]) if k > 1 else None)
    reference = eqx.filter_jit(logprobs)
    rng = np.random.default_rng(config.seed)
    key = jax.device_put(jax.random.key(config.seed), device)
    order, position, history, tokens = rng.permutation(len(records)), 0, [], 0
    start, checkpointer = 0, None
    if config.output_dir is not None:
        from jaxlean.train.checkpoint import Checkpointer
        checkpointer = Checkpointer(Path(config.output_dir) / "checkpoints",
                                    keep=config.save_total_limit)
        if config.resume_from_checkpoint and checkpointer.latest_step() is not None:
            start = checkpointer.latest_step()
            model, state, key = checkpointer.restore((model, state, key), start)
            saved = checkpointer.metadata(start)
            rng.bit_generator.state = saved["rng"]
            order, position, tokens = np.asarray(saved["order"]), saved["position"], saved["tokens"]
    for i in range(start, steps):
        if position + per_step > len(order):
            order, position = rng.permutation(len(records)), 0
        picked = [records[j] for j in order[position:position + per_step]]
        position += per_step
        repeated = [r for r in picked for _ in range(group)]
        key, sample = jax.random.split(key)
        rollout = generate(model, [_prompt_ids(tokenizer, r["prompt"]) for r in repeated],
                           max_new_tokens=config.max_completion_length,
                           temperature=config.temperature, key=sample,
                           **_filters(config),
                           eos_id=tokenizer.eos_token_id, pad_id=tokenizer.pad_token_id)
        texts = tokenizer.decode_batch(rollout)
        ids = [list(np.asarray(t)[:n]) for t, n in zip(rollout.tokens,
                                                       np.asarray(rollout.lengths), strict=True)]
        columns = {c: [r.get(c) for r in repeated] for c in repeated[0] if c != "prompt"}
        scores = np.stack([np.asarray([np.nan if v is None else v for v in f(
            prompts=[r["prompt"] for r in repeated], completions=texts, completion_ids=ids,
            **columns)], float) for f in funcs], axis=1)
        rewards = np.nansum(scores * weights, axis=1)
        rewards[np.isnan(scores).all(axis=1)] = np.nan
        advantages = group_advantages(rewards, group, scale_rewards=config.scale_rewards)
        batch = rollout_batch(rollout,
                              mask_truncated_completions=config.mask_truncated_completions)
        if config.beta:
            batch["ref_logprobs"] = reference(ref_model, batch["input_ids"],
                                              targets=batch["targets"],
                                              attention_mask=batch["attention_mask"])
        for _ in range(config.num_iterations):
            model, state, (out, stats) = step(model, state, **batch,
                                              advantages=advantages.astype(jnp.float32))
            report_skipped(out, i + 1)
        tokens += int(out.tokens)
        lengths = np.asarray(rollout.lengths)
        row = {"step": i + 1, "loss": float(out.loss), "grad_norm": float(out.grad_norm),
               "learning_rate": float(out.learning_rate), "num_tokens": float(tokens),
               "reward": float(np.nanmean(rewards)),
               "reward_std": float(np.nanmean(np.nanstd(rewards.reshape(-1, group), axis=1,
                                                        ddof=1))),
               "kl": float(stats.kl), "entropy": float(stats.entropy),
               "clip_ratio/region_mean": float(stats.clip_fraction),
               "completions/mean_length": float(lengths.mean()),
               "completions/clipped_ratio": float(np.mean(np.asarray(rollout.finish_reason)
                                                          == 0))}
        for f, column in zip(funcs, scores.T, strict=True):
            row[f"rewards/{getattr(f, '__name__', 'reward')}/mean"] = float(np.nanmean(column))
        if (i + 1) % config.logging_steps == 0 or i + 1 == steps:
            history.append(row)
            if on_log is not None:
                on_log(row)
        if checkpointer is not None and ((i + 1) % config.save_steps == 0 or i + 1 == steps):
            checkpointer.save(i + 1, (model, state, key),
                              {"rng": rng.bit_generator.state, "order": order.tolist(),
                               "position": position, "tokens": tokens})
    if checkpointer is not None:
        checkpointer.close()
    return TrainResult(model, state, history, steps)
