"""TRL's ``SFTConfig``, ``DPOConfig`` and ``GRPOConfig``, by TRL's field names and defaults.

Each config is a frozen dataclass whose fields carry TRL 1.16's names and defaults
(``transformers.TrainingArguments``' for the optimizer: AdamW with no weight decay,
``max_grad_norm=1.0``, a linear decay after ``warmup_steps``). A field jaxlean does not
have is refused naming it (an allow-list: a TRL option that would change the result is
never dropped silently). :func:`make_optimizer` builds the optimizer they describe.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax.numpy as jnp
import optax

from jaxlean.errors import ConfigError

__all__ = ["DPOConfig", "GRPOConfig", "SFTConfig", "TrainingConfig", "make_optimizer",
           "total_steps"]

SCHEDULES = ("linear", "constant", "constant_with_warmup", "cosine")


class _Allowed(type):
    """Refuse unknown fields naming them, before the dataclass's own ``TypeError``."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(kwargs) - names)
        if unknown:
            raise ConfigError(f"{cls.__name__}: jaxlean has no field {unknown} (TRL's name(s) "
                              f"it does not implement; fields: {sorted(names)})")
        if args:
            raise ConfigError(f"{cls.__name__} takes its fields by name")
        return super().__call__(**kwargs)


@dataclasses.dataclass(frozen=True)
class TrainingConfig(metaclass=_Allowed):
    """The ``transformers.TrainingArguments`` fields the loops read (TRL's defaults)."""

    output_dir: str | None = None
    learning_rate: float = 5e-5
    weight_decay: float = 0.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-8
    max_grad_norm: float = 1.0
    lr_scheduler_type: str = "linear"
    warmup_steps: int | float = 0
    warmup_ratio: float = 0.0
    num_train_epochs: float = 3.0
    max_steps: int = -1
    per_device_train_batch_size: int = 8
    gradient_accumulation_steps: int = 1
    seed: int = 42
    logging_steps: int = 10
    save_steps: int = 500
    save_total_limit: int | None = None
    resume_from_checkpoint: bool = False

    def __post_init__(self) -> None:
        if self.lr_scheduler_type not in SCHEDULES:
            raise ConfigError(f"lr_scheduler_type must be one of {list(SCHEDULES)}, got "
                              f"{self.lr_scheduler_type!r}")
        for name in ("per_device_train_batch_size", "gradient_accumulation_steps",
                     "logging_steps", "save_steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")
        if isinstance(self.warmup_steps, bool) or not (
                (isinstance(self.warmup_steps, int) and self.warmup_steps >= 0)
                or (isinstance(self.warmup_steps, float) and 0.0 <= self.warmup_steps < 1.0)):
            raise ConfigError(f"warmup_steps must be an integer >= 0 or a float in [0, 1) (a "
                              f"ratio of the run, as transformers), got {self.warmup_steps!r}")
        if not 0.0 <= self.warmup_ratio < 1.0:
            raise ConfigError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio}")
        if self.max_grad_norm is not None and self.max_grad_norm < 0:
            raise ConfigError(f"max_grad_norm must be >= 0 or None, got {self.max_grad_norm}")


@dataclasses.dataclass(frozen=True)
class SFTConfig(TrainingConfig):
    """TRL's ``SFTConfig`` (``learning_rate`` 2e-5, ``max_length`` 1024)."""

    learning_rate: float = 2e-5
    max_length: int = 1024
    packing: bool = False
    assistant_only_loss: bool = False
    completion_only_loss: bool | None = None
    dataset_text_field: str = "text"


@dataclasses.dataclass(frozen=True)
class DPOConfig(TrainingConfig):
    """TRL's ``DPOConfig`` (``learning_rate`` 1e-6, ``beta`` 0.1, sigmoid loss)."""

    learning_rate: float = 1e-6
    max_length: int | None = 1024
    truncation_mode: str = "keep_start"
    beta: float = 0.1
    loss_type: str = "sigmoid"
    label_smoothing: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.loss_type, list | tuple):
            if len(self.loss_type) != 1:
                raise ConfigError(f"DPOConfig: a combination of loss types {self.loss_type} "
                                  f"(TRL's loss_weights) is not implemented; give one")
            object.__setattr__(self, "loss_type", self.loss_type[0])


@dataclasses.dataclass(frozen=True)
class GRPOConfig(TrainingConfig):
    """TRL's ``GRPOConfig`` (``learning_rate`` 1e-6, ``beta`` 0, ``loss_type="dapo"``)."""

    learning_rate: float = 1e-6
    num_generations: int = 8
    max_completion_length: int = 512
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float | None = None
    beta: float = 0.0
    epsilon: float = 0.2
    epsilon_high: float | None = None
    loss_type: str = "dapo"
    scale_rewards: str | bool = "group"
    num_iterations: int = 1
    mask_truncated_completions: bool = False
    reward_weights: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.loss_type not in ("grpo", "bnpo", "dr_grpo", "dapo"):
            raise ConfigError(f"GRPOConfig: loss_type must be 'grpo', 'bnpo', 'dr_grpo' or "
                              f"'dapo', got {self.loss_type!r}")
        if self.num_generations < 2:
            raise ConfigError(f"num_generations must be >= 2 (a group), got "
                              f"{self.num_generations}")
        rows = self.per_device_train_batch_size * self.gradient_accumulation_steps
        if rows % self.num_generations:
            raise ConfigError(f"per_device_train_batch_size * gradient_accumulation_steps = "
                              f"{rows} completions must be a multiple of num_generations="
                              f"{self.num_generations}")


def total_steps(config: TrainingConfig, steps_per_epoch: int) -> int:
    """``max_steps`` if set, else ``ceil(num_train_epochs * steps_per_epoch)``."""
    if config.max_steps > 0:
        return int(config.max_steps)
    return max(1, math.ceil(config.num_train_epochs * steps_per_epoch))


def _schedule(config: TrainingConfig, steps: int):
    ratio = config.warmup_steps if isinstance(config.warmup_steps, float) else config.warmup_ratio
    warmup = (config.warmup_steps if isinstance(config.warmup_steps, int) and config.warmup_steps
              else math.ceil(ratio * steps))
    lr, kind = float(config.learning_rate), config.lr_scheduler_type

    def schedule(count):
        step = jnp.asarray(count, jnp.float32)
        warm = step / max(1, warmup)
        if kind in ("constant", "constant_with_warmup"):
            after = jnp.ones_like(step)
        else:
            progress = (step - warmup) / max(1, steps - warmup)
            after = (jnp.maximum(0.0, 1.0 - progress) if kind == "linear"
                     else jnp.maximum(0.0, 0.5 * (1.0 + jnp.cos(jnp.pi * progress))))
        if kind == "constant":
            return lr * jnp.ones_like(step)
        return lr * jnp.where(step < warmup, warm, after)

    return schedule


def make_optimizer(config: TrainingConfig, steps: int) -> optax.GradientTransformation:
    """AdamW as ``transformers.Trainer`` builds it: gradients clipped to ``max_grad_norm``,
    the learning rate warmed up linearly over ``warmup_steps`` (or ``warmup_ratio`` of the
    run) then following ``lr_scheduler_type`` over ``steps`` updates, decoupled
    ``weight_decay`` except on norms and biases (as ``transformers``). The learning rate is an
    injected hyperparameter, so ``StepMetrics.learning_rate`` reports it."""
    adamw = optax.inject_hyperparams(optax.adamw, static_args=("mask",))(
        learning_rate=_schedule(config, steps), b1=config.adam_beta1, b2=config.adam_beta2,
        eps=config.adam_epsilon, weight_decay=config.weight_decay,
        mask=_decayed)
    if not config.max_grad_norm:
        return adamw
    return optax.chain(optax.clip_by_global_norm(config.max_grad_norm), adamw)


def _decayed(params: Any) -> Any:
    """True for every leaf but norms' and biases' (by their pytree path)."""
    import jax

    def decayed(path: tuple, _: Any) -> bool:
        text = jax.tree_util.keystr(path).lower()
        return "norm" not in text and "bias" not in text

    return jax.tree_util.tree_map_with_path(decayed, params)
