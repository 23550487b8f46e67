"""TRL's SFT and DPO trainers as one call each, on ``make_train_step`` and ``Batches``.

:func:`sft_train` and :func:`dpo_train` take a model, a dataset (a file, a
``datasets.Dataset`` or dicts), the tokenizer and a TRL-named config
(:mod:`jaxlean.models.lm.trl_config`), and run what ``SFTTrainer`` / ``DPOTrainer`` run:
TRL's tokenization, fixed-shape batches (one compile per shape), AdamW with TRL's
defaults, gradient accumulation (``make_train_step(micro_batches=)``), metrics under TRL's
names every ``logging_steps``, and, with ``output_dir``, checkpoints every ``save_steps``
that ``resume_from_checkpoint=True`` continues from (model, optimizer and data order).
A model holding LoRA adapters trains only them; DPO's reference is then the model
without its adapters (TRL's PEFT reference), else a frozen copy of the model passed in.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxlean.errors import ConfigError
from jaxlean.models.lm.causal_loss import loss, loss_tokens
from jaxlean.models.lm.data.batches import Batches
from jaxlean.models.lm.data.conversations import tokenize_records
from jaxlean.models.lm.data.preferences import PreferenceBatches, tokenize_preferences
from jaxlean.models.lm.lora import lora_mask
from jaxlean.models.lm.preference import dpo_loss
from jaxlean.models.lm.tokens import count_tokens
from jaxlean.models.lm.trl_config import (
    DPOConfig,
    SFTConfig,
    TrainingConfig,
    make_optimizer,
    total_steps,
)
from jaxlean.train.step import make_train_step

__all__ = ["TrainResult", "dpo_train", "report_skipped", "run_steps", "sft_train"]


@dataclasses.dataclass
class TrainResult:
    """What a loop returns: the trained ``model``, its optimizer ``state``, the logged
    ``history`` (one dict per ``logging_steps``, TRL's metric names) and ``steps`` done."""

    model: Any
    state: Any
    history: list[dict[str, float]]
    steps: int


def _has_adapters(model: Any) -> bool:
    return any(jax.tree.leaves(lora_mask(model)))


def run_steps(model: Any, config: TrainingConfig, step: Callable, batches: Iterator,
              steps: int, metrics: Callable[[Any, dict], dict[str, float]],
              on_log: Callable[[dict], None] | None = None) -> TrainResult:
    """Drive ``step`` for ``steps`` updates from ``batches``, logging and checkpointing as
    ``config`` says (the loop :func:`sft_train` and :func:`dpo_train` share)."""
    tx = make_optimizer(config, steps)
    state = tx.init(model)
    step = step(tx)
    start, checkpointer = 0, None
    if config.output_dir is not None:
        from jaxlean.train.checkpoint import Checkpointer
        checkpointer = Checkpointer(Path(config.output_dir) / "checkpoints",
                                    keep=config.save_total_limit)
        if config.resume_from_checkpoint and checkpointer.latest_step() is not None:
            start = checkpointer.latest_step()
            model, state = checkpointer.restore((model, state), start)
            saved = checkpointer.metadata(start)
            source = getattr(batches, "batches", batches)
            if isinstance(source, Batches) and "batches" in saved:
                source._state = source._check_state(saved["batches"], None)
    history, window, tokens = [], [], 0
    for i in range(start, steps):
        batch = next(batches)
        model, state, (out, aux) = step(model, state, **batch)
        report_skipped(out, i + 1)
        window.append(metrics(out, aux))
        tokens += int(out.tokens) if out.tokens is not None else 0
        if (i + 1) % config.logging_steps == 0 or i + 1 == steps:
            row = {key: float(np.mean([w[key] for w in window])) for key in window[0]}
            row.update(step=i + 1, learning_rate=float(out.learning_rate),
                       num_tokens=float(tokens))
            history.append(row)
            window = []
            if on_log is not None:
                on_log(row)
        if checkpointer is not None and ((i + 1) % config.save_steps == 0 or i + 1 == steps):
            meta = {"batches": batches.state.to_dict()} if hasattr(batches, "state") else {}
            checkpointer.save(i + 1, (model, state), meta)
    if checkpointer is not None:
        checkpointer.close()
    return TrainResult(model, state, history, steps)


def report_skipped(out: Any, step: int) -> None:
    """Warn at once (not one call later) when step ``step`` was skipped as non-finite."""
    if bool(out.skipped):
        warnings.warn(f"step {step}: the loss, a gradient or an update was not finite "
                      f"(loss {float(out.loss)}); the step was skipped, the model and optimizer "
                      f"state kept as they were", RuntimeWarning, stacklevel=3)


def _step_factory(loss_fn: Callable, config: TrainingConfig, loss_weight: Callable):
    def build(tx):
        k = config.gradient_accumulation_steps
        return make_train_step(loss_fn, tx, has_aux=True, metrics=True,
                               count_tokens=count_tokens, micro_batches=k,
                               loss_weight=loss_weight if k > 1 else None)
    return build


def _sft_loss(model, **batch):
    value = loss(model, **batch)
    return value, value


def _sft_metrics(out, _) -> dict[str, float]:
    return {"loss": float(out.loss), "grad_norm": float(out.grad_norm)}


def sft_train(model: Any, dataset: Any, tokenizer: Any, config: SFTConfig | None = None, *,
              on_log: Callable[[dict], None] | None = None) -> TrainResult:
    """TRL's ``SFTTrainer(model, args=config, train_dataset=dataset).train()``.

    Conversational (``messages``), prompt-completion and text records are tokenized as TRL
    does (:func:`~jaxlean.models.lm.data.conversations.tokenize_records`), padded to
    ``max_length`` or packed (``packing=True``), and batched in ``per_device_train_batch_size
    * gradient_accumulation_steps`` rows. Logs ``loss``, ``grad_norm``, ``learning_rate``,
    ``num_tokens``.
    """
    config = config or SFTConfig()
    examples = tokenize_records(dataset, tokenizer,
                                assistant_only_loss=config.assistant_only_loss,
                                completion_only_loss=config.completion_only_loss,
                                max_length=None if config.packing else config.max_length,
                                text_field=config.dataset_text_field)
    rows = config.per_device_train_batch_size * config.gradient_accumulation_steps
    batches = Batches(examples, rows, config.max_length, pad_id=tokenizer.pad_token_id,
                      packing=config.packing, seed=config.seed)
    steps = total_steps(config, batches.steps_per_epoch)
    build = _step_factory(_sft_loss, config, loss_tokens)
    return run_steps(model, config, build, batches, steps, _sft_metrics, on_log)


def _dpo_loss(model, *, reference, beta, loss_type, label_smoothing, **batch):
    out = dpo_loss(model, reference=reference, beta=beta, loss_type=loss_type,
                   label_smoothing=label_smoothing, **batch)
    return out.loss, out


def _dpo_metrics(out, aux) -> dict[str, float]:
    return {"loss": float(out.loss), "grad_norm": float(out.grad_norm),
            "rewards/chosen": float(np.mean(aux.chosen_rewards)),
            "rewards/rejected": float(np.mean(aux.rejected_rewards)),
            "rewards/accuracies": float(aux.accuracy), "rewards/margins": float(aux.margin),
            "logps/chosen": float(np.mean(aux.chosen_logps)),
            "logps/rejected": float(np.mean(aux.rejected_logps))}


class _with:
    """``batches`` with ``extra`` keyword arguments added to every batch (and its state)."""

    def __init__(self, batches: Any, **extra: Any):
        self.batches, self.extra = batches, extra

    def __next__(self) -> dict:
        return {**next(self.batches), **self.extra}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.batches, name)


def _pairs(*, input_ids, **_: Any) -> Any:
    return input_ids.shape[0] // 2


def dpo_train(model: Any, dataset: Any, tokenizer: Any, config: DPOConfig | None = None, *,
              ref_model: Any = None, on_log: Callable[[dict], None] | None = None
              ) -> TrainResult:
    """TRL's ``DPOTrainer(model, ref_model, args=config, train_dataset=dataset).train()``.

    Preference records (``prompt``/``chosen``/``rejected``, plain or conversational) are
    tokenized and truncated as TRL does (:mod:`jaxlean.models.lm.data.preferences`); each
    batch holds ``per_device_train_batch_size * gradient_accumulation_steps`` pairs. The
    reference is ``ref_model``, else the model without its LoRA adapters when it has some,
    else the model as passed in (frozen). Logs TRL's ``loss``, ``rewards/chosen``,
    ``rewards/rejected``, ``rewards/accuracies``, ``rewards/margins``, ``logps/chosen``,
    ``logps/rejected``, ``grad_norm``, ``learning_rate``, ``num_tokens``.
    """
    config = config or DPOConfig()
    examples = tokenize_preferences(dataset, tokenizer, max_length=config.max_length,
                                    truncation_mode=config.truncation_mode)
    pairs = config.per_device_train_batch_size * config.gradient_accumulation_steps
    length = config.max_length or max(len(e) for e in examples)  # None: the longest pair
    batches = PreferenceBatches(examples, pairs, length,
                                pad_id=tokenizer.pad_token_id,
                                truncation_mode=config.truncation_mode, seed=config.seed)
    if ref_model is None:
        ref_model = "base" if _has_adapters(model) else jax.tree.map(lambda x: x, model)
    options = dict(beta=config.beta, loss_type=config.loss_type,
                   label_smoothing=config.label_smoothing)
    if isinstance(ref_model, str):
        fn = functools.partial(_dpo_loss, reference=ref_model, **options)
    else:  # an argument of the step, not a constant compiled into it
        fn = functools.partial(_dpo_loss, **options)
        batches = _with(batches, reference=ref_model)
    if config.gradient_accumulation_steps > 1:
        raise ConfigError("dpo_train: gradient_accumulation_steps > 1 is not implemented yet "
                          "(the chosen and rejected rows of a pair must stay in one "
                          "micro-batch); raise per_device_train_batch_size instead")
    steps = total_steps(config, batches.steps_per_epoch)
    return run_steps(model, config, _step_factory(fn, config, _pairs), batches, steps,
                     _dpo_metrics, on_log)
