"""The one-call SFT / DPO / GRPO loops (issue 50): TRL's config names and defaults, TRL's
optimizer and schedule, the loss they minimise, and a GRPO run on text that compiles its
rollout and its step once, with no device_put by the caller."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.lm.trl_config import (
    DPOConfig,
    GRPOConfig,
    SFTConfig,
    make_optimizer,
)

pytest.importorskip("transformers")

import equinox as eqx
import jax
import jax.numpy as jnp

from jaxlean import cache_stats
from jaxlean.models.lm.data import load_tokenizer
from jaxlean.models.lm.data.toy_tokenizer import write_toy_tokenizer
from jaxlean.models.lm.lora import add_lora
from jaxlean.models.lm.transformer import Transformer, TransformerConfig


def test_configs_take_trls_names_and_defaults_and_refuse_others():
    sft, dpo, grpo = SFTConfig(), DPOConfig(), GRPOConfig()
    assert (sft.learning_rate, dpo.learning_rate, grpo.learning_rate) == (2e-5, 1e-6, 1e-6)
    for c in (sft, dpo, grpo):
        assert (c.weight_decay, c.max_grad_norm, c.lr_scheduler_type, c.warmup_steps,
                c.adam_beta1, c.adam_beta2, c.adam_epsilon) == (0.0, 1.0, "linear", 0, 0.9,
                                                                0.999, 1e-8)
    assert (dpo.beta, dpo.loss_type, dpo.max_length) == (0.1, "sigmoid", 1024)
    assert (grpo.beta, grpo.loss_type, grpo.epsilon, grpo.scale_rewards) == (0.0, "dapo", 0.2,
                                                                              "group")
    with pytest.raises(ConfigError, match="use_weighting"):
        DPOConfig(use_weighting=True)
    with pytest.raises(ConfigError, match="num_generations"):
        GRPOConfig(per_device_train_batch_size=6, num_generations=4)


def test_the_schedule_warms_up_then_decays_linearly_as_transformers():
    config = SFTConfig(learning_rate=1.0, warmup_steps=2, max_grad_norm=None)
    tx = make_optimizer(config, steps=6)
    params = {"w": jnp.ones(2)}
    state = tx.init(params)
    rates = []
    update = jax.jit(tx.update)  # one compile, not one per operation of each update
    for _ in range(6):  # the rate each update used
        _, state = update({"w": jnp.ones(2)}, state, params)
        rates.append(float(state.hyperparams["learning_rate"]))
    # transformers' get_linear_schedule_with_warmup: step/warmup, then (total-step)/(total-warmup)
    np.testing.assert_allclose(rates, [0.0, 0.5, 1.0, 0.75, 0.5, 0.25], atol=1e-6)


def _tokenizer_and_model(directory):
    """The toy tokenizer written in ``directory`` and a one-layer model for it (also built
    by the fresh process of the cache test below)."""
    tokenizer = load_tokenizer(directory)
    config = TransformerConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32,
                               num_layers=1, num_heads=2, num_kv_heads=1)
    return tokenizer, Transformer(config, key=jax.random.key(0))


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tok")
    corpus = [f"What is {a} + {b}?" for a in range(5) for b in range(5)] + [
        "user\n", "assistant\n", "0123456789"]
    write_toy_tokenizer(directory, corpus, vocab_size=64, all_bytes=False)
    return directory


@pytest.fixture(scope="module")
def setup(tokenizer_dir):
    return _tokenizer_and_model(tokenizer_dir)


# The SFT runs below share one step program (same shapes, schedule and learning rate), and so
# do the GRPO runs (same policy, prompts and config but for the steps and the checkpoints):
# a run after the first loads its programs from the suite's compilation cache.
SFT = dict(per_device_train_batch_size=4, max_length=24, learning_rate=3e-2,
           lr_scheduler_type="constant")


def test_sft_train_minimises_the_models_loss(setup):
    from jaxlean.models.lm.post_train import sft_train
    tokenizer, model = setup
    chats = [{"messages": [{"role": "user", "content": f"What is {a} + {b}?"},
                           {"role": "assistant", "content": str(a + b)}]}
             for a in range(4) for b in range(4)]
    result = sft_train(model, chats, tokenizer, SFTConfig(
        max_steps=12, logging_steps=4, assistant_only_loss=True, **SFT))
    losses = [row["loss"] for row in result.history]
    assert len(losses) == 3 and losses[-1] < losses[0]
    assert {"loss", "grad_norm", "learning_rate", "num_tokens"} <= set(result.history[0])


def test_dpo_train_first_step_is_dpo_loss(setup):
    from jaxlean.models.lm.data import PreferenceBatches, tokenize_preferences
    from jaxlean.models.lm.post_train import dpo_train
    from jaxlean.models.lm.preference import dpo_loss
    tokenizer, model = setup
    policy = add_lora(model, rank=2, key=jax.random.key(1))
    policy = jax.tree.map(lambda x: x, policy)
    pairs = [{"prompt": [{"role": "user", "content": f"What is {a} + 1?"}],
              "chosen": [{"role": "assistant", "content": str(a + 1)}],
              "rejected": [{"role": "assistant", "content": str(a + 2)}]} for a in range(4)]
    config = DPOConfig(max_steps=1, per_device_train_batch_size=4, max_length=24,
                       loss_type="robust", label_smoothing=0.1, beta=0.2, logging_steps=1)
    result = dpo_train(policy, pairs, tokenizer, config)
    batch = next(PreferenceBatches(tokenize_preferences(pairs, tokenizer, max_length=24), 4, 24,
                                   pad_id=tokenizer.pad_token_id, seed=config.seed))
    want = eqx.filter_jit(dpo_loss)(policy, **batch, reference="base", beta=0.2,
                                    loss_type="robust", label_smoothing=0.1)
    np.testing.assert_allclose(result.history[0]["loss"], want.loss, rtol=1e-5)
    np.testing.assert_allclose(result.history[0]["rewards/margins"], want.margin, atol=1e-6)


GRPO_PROMPTS = [{"prompt": [{"role": "user", "content": f"What is {a} + {b}?"}], "answer": a + b}
                for a in range(3) for b in range(3)]


def correct(prompts, completions, answer, **_):
    return [float(c.strip() == str(x)) for c, x in zip(completions, answer, strict=True)]


def digits(completions, **_):
    return [sum(ch.isdigit() for ch in c) / 4 for c in completions]


def _grpo(model, tokenizer, steps, on_log=None, **options):
    """A GRPO run of ``steps`` on ``GRPO_PROMPTS``: every run here compiles the same programs."""
    from jaxlean.models.lm.grpo_train import grpo_train
    policy = add_lora(model, rank=2, key=jax.random.key(2), targets="all-linear")
    config = GRPOConfig(max_steps=steps, per_device_train_batch_size=8, num_generations=4,
                        max_completion_length=4, beta=0.04, learning_rate=1e-2,
                        loss_type="grpo", logging_steps=1, lr_scheduler_type="constant",
                        **options)
    return grpo_train(policy, GRPO_PROMPTS, [correct, digits], tokenizer, config,
                      on_log=on_log)


def test_grpo_train_on_text_compiles_rollout_and_step_once(setup):
    tokenizer, model = setup
    compiles = []

    def count(_row):
        compiles.append(sum(f.compiles for f in cache_stats().functions.values()))

    cache_stats(reset=True)
    result = _grpo(model, tokenizer, 3, on_log=count)
    assert len(result.history) == 3
    assert compiles[1] == compiles[0] == compiles[2], compiles  # nothing after iteration 1
    row = result.history[0]
    for name in ("reward", "reward_std", "kl", "clip_ratio/region_mean", "rewards/correct/mean",
                 "rewards/digits/mean", "completions/mean_length", "loss", "grad_norm"):
        assert np.isfinite(row[name]), name


def test_weight_decay_spares_norms_and_biases_and_the_step_compiles_once():
    from jaxlean.train.step import make_train_step
    config = SFTConfig(learning_rate=0.1, weight_decay=0.5, max_grad_norm=None,
                       lr_scheduler_type="constant")
    tx = make_optimizer(config, steps=4)
    params = {"proj": jnp.ones((2, 2)), "norm": jnp.ones(2), "bias": jnp.ones(2)}
    updates, _ = tx.update(jax.tree.map(jnp.zeros_like, params), tx.init(params), params)
    np.testing.assert_allclose(updates["proj"], -0.1 * 0.5 * np.ones((2, 2)), rtol=1e-6)
    assert not np.any(updates["norm"]) and not np.any(updates["bias"])
    step = make_train_step(lambda p, x: jnp.sum(p["proj"] * x), tx)
    state = tx.init(params)
    for _ in range(3):
        params, state, _ = step(params, state, jnp.ones((2, 2)))
    assert len(step._jitted) == 1 and step._jitted[next(iter(step._jitted))]._cache_size() == 1


def test_a_non_finite_step_is_reported_at_that_step(setup):
    from jaxlean.models.lm.post_train import sft_train
    tokenizer, model = setup
    chats = [{"text": "What is 1 + 2?"}] * 4
    seen = []
    with pytest.warns(RuntimeWarning, match="step 1: .*not finite") as caught:
        sft_train(model, chats, tokenizer, SFTConfig(
            learning_rate=float("nan"), max_steps=1, per_device_train_batch_size=4,
            max_length=16, logging_steps=1), on_log=seen.append)
    assert seen and any("step 1:" in str(w.message) for w in caught)


def test_warmup_steps_below_one_is_a_ratio_as_transformers():
    config = SFTConfig(learning_rate=1.0, warmup_steps=0.5, max_grad_norm=None)
    tx = make_optimizer(config, steps=4)
    params = {"w": jnp.ones(2)}
    state, rates = tx.init(params), []
    for _ in range(4):
        _, state = tx.update({"w": jnp.ones(2)}, state, params)
        rates.append(float(state.hyperparams["learning_rate"]))
    np.testing.assert_allclose(rates, [0.0, 0.5, 1.0, 0.5], atol=1e-6)
    with pytest.raises(ConfigError, match="warmup_steps"):
        SFTConfig(warmup_steps=1.5)


def _compiles() -> dict[str, int]:
    return {name: f.compiles for name, f in cache_stats().functions.items() if f.compiles}


@pytest.fixture(scope="module")
def grpo_checkpoint(setup, tmp_path_factory):
    """The output directory of a 1-step GRPO run, made once for the two resume tests below
    (each resumes in its own copy)."""
    tokenizer, model = setup
    directory = tmp_path_factory.mktemp("grpo_1_step")
    _grpo(model, tokenizer, 1, output_dir=str(directory))
    return directory


def _copy(checkpoint, tmp_path):
    return shutil.copytree(checkpoint, tmp_path / "run")


def test_grpo_train_resumes_where_it_stopped_with_the_programs_it_ran(setup, grpo_checkpoint,
                                                                      tmp_path):
    tokenizer, model = setup
    whole = _grpo(model, tokenizer, 2)
    output_dir = _copy(grpo_checkpoint, tmp_path)  # a 1-step run's checkpoint
    cache_stats(reset=True)
    resumed = _grpo(model, tokenizer, 2, output_dir=str(output_dir), resume_from_checkpoint=True)
    assert [r["step"] for r in resumed.history] == [2]
    for a, b in zip(jax.tree.leaves(whole.model), jax.tree.leaves(resumed.model), strict=True):
        np.testing.assert_array_equal(a, b)
    # The restored policy, optimizer state and key are placed as the fresh ones were (a
    # restored array is committed to its device; so are the fresh ones): the rollout and
    # the key's split are this process's programs. Only the step is compiled again (each
    # run makes its own step; a persistent cache loads it).
    assert set(_compiles()) <= {"jit(step)"}, _compiles()


_FRESH_PROCESS = """
import json, sys
from pathlib import Path
from jaxlean import cache_stats
from tests.models.lm.test_trl_loops import _grpo, _tokenizer_and_model

tokenizer, model = _tokenizer_and_model(Path(sys.argv[1]))
cache_stats(reset=True)
result = _grpo(model, tokenizer, 2, output_dir=sys.argv[2], resume_from_checkpoint=True)
assert [r["step"] for r in result.history] == [2], result.history
stats = cache_stats()
print(json.dumps({"total": stats.to_dict(), "active": stats.active}))
"""


def test_a_fresh_process_on_the_same_cache_resumes_grpo_compiling_nothing(
        tokenizer_dir, grpo_checkpoint, tmp_path):
    """The run of the test above, resumed in a new process on this process's persistent
    compilation cache: every program it compiles is loaded from the cache (a hit), none
    is compiled by XLA, none is written, none is refused (host callbacks)."""
    import subprocess
    import sys

    from tests import xla_cache
    from tests.conftest import ROOT, child_env
    if xla_cache._SUITE is None or not xla_cache._SUITE.in_use():
        pytest.skip("the suite runs without a persistent compilation cache "
                    f"(${xla_cache.ENV}=off)")
    # a 1-step run in this process: its programs are in the cache
    output_dir = _copy(grpo_checkpoint, tmp_path)
    script = tmp_path / "resume.py"
    script.write_text(_FRESH_PROCESS)
    counts = tmp_path / "counts.json"
    command, env = xla_cache.child_command(
        [sys.executable, str(script), str(tokenizer_dir), str(output_dir)], child_env(ROOT),
        counts)
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    xla_cache.add_child_counts(counts)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    total, functions = report["total"], report["total"]["functions"]
    assert report["active"]
    assert functions["jit(_rollout)"]["hits"] == functions["jit(_rollout)"]["compiles"] == 1
    assert functions["jit(step)"]["hits"] == functions["jit(step)"]["compiles"] == 1
    assert (total["misses"], total["writes"], total["uncacheable"]) == (0, 0, 0), functions
    assert total["hits"] == total["compiles"] == total["requests"], functions


def test_sft_train_resumes_where_it_stopped(setup, tmp_path):
    from jaxlean.models.lm.post_train import sft_train
    tokenizer, model = setup
    texts = [{"text": f"What is {a} + {b}?"} for a in range(3) for b in range(3)]

    def run(steps, **options):
        return sft_train(model, texts, tokenizer, SFTConfig(
            max_steps=steps, logging_steps=1, save_steps=1, **SFT, **options))

    whole = run(4)
    run(2, output_dir=str(tmp_path))
    resumed = run(4, output_dir=str(tmp_path), resume_from_checkpoint=True)
    assert [r["step"] for r in resumed.history] == [3, 4]
    np.testing.assert_allclose([r["loss"] for r in resumed.history],
                               [r["loss"] for r in whole.history[2:]], rtol=1e-6)
    for a, b in zip(jax.tree.leaves(whole.model), jax.tree.leaves(resumed.model), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
