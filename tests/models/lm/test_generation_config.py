"""``generate`` takes what the call leaves unset from the checkpoint's generation config, as
``transformers`` does: eos ids (one or several), pad id, sampling, lengths, positions."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.lm.generate import generate
from jaxlean.models.lm.generation_config import (
    GenerationDefaults,
    generation_defaults,
    parse_generation_config,
)
from jaxlean.models.lm.hf import load_pretrained, save_pretrained
from jaxlean.models.lm.sampling import Sampling, resolve_sampling
from jaxlean.models.lm.transformer import Transformer, TransformerConfig

CONFIG = TransformerConfig(vocab_size=41, hidden_size=32, intermediate_size=40, num_layers=2,
                           num_heads=4, num_kv_heads=2)
PROMPTS = [[5, 9, 2, 7, 30], [11, 3], [8, 8, 1, 20, 17, 6, 2]]
NEW = 8


@pytest.fixture(scope="module")
def base():
    return Transformer(CONFIG, key=jax.random.key(0))


@pytest.fixture(scope="module")
def free(base):
    """Greedy completions without any eos id."""
    return np.asarray(generate(base, PROMPTS, max_new_tokens=NEW).tokens)


def checkpoint(base, folder, generation: dict | None = None, **config_fields):
    """``base`` saved and loaded back with these generation_config.json / config.json fields."""
    save_pretrained(base, folder)
    if config_fields:
        path = folder / "config.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **config_fields}))
    if generation is not None:
        (folder / "generation_config.json").write_text(json.dumps(generation))
    return load_pretrained(folder, progress=False)[0]


def _first(row: np.ndarray, ids: list[int]) -> int:
    hits = np.flatnonzero(np.isin(row, ids))
    return int(hits[0]) + 1 if hits.size else NEW


@pytest.mark.parametrize("two", [False, True], ids=["one eos id", "two eos ids"])
def test_eos_from_generation_config_stops_rows_and_masks_after(base, free, tmp_path, two):
    eos = [int(free[0, 2])] + ([int(free[1, 4])] if two else [])
    model = checkpoint(base, tmp_path, {"eos_token_id": eos if two else eos[0],
                                        "pad_token_id": 40})
    out = generate(model, PROMPTS, max_new_tokens=NEW)
    tokens = np.asarray(out.tokens)
    lengths = [_first(row, eos) for row in free]
    assert lengths[0] <= 3 and (not two or lengths[1] <= 5)
    np.testing.assert_array_equal(out.lengths, lengths)
    for row, length in enumerate(lengths):
        np.testing.assert_array_equal(tokens[row, :length], free[row, :length])
        assert (tokens[row, length:] == 40).all()  # the config's pad id
        assert (np.asarray(out.logprobs[row, length:]) == 0).all()
        np.testing.assert_array_equal(out.completion_mask[row], np.arange(NEW) < length)
    assert out.finish_reasons()[0] == "stop"
    # an explicit argument wins: no eos id, every row runs to the limit
    np.testing.assert_array_equal(generate(model, PROMPTS, max_new_tokens=NEW, eos_id=()).tokens,
                                  free)


def test_num_return_sequences_repeats_each_prompt_consecutively(base):
    keys = jax.random.split(jax.random.key(7), 6)
    options = dict(max_new_tokens=NEW, do_sample=True, temperature=1.5, key=keys)
    out = generate(base, PROMPTS[:2], num_return_sequences=3, **options)
    assert out.tokens.shape == (6, NEW) and out.prompt.shape[0] == 6
    repeated = [PROMPTS[0]] * 3 + [PROMPTS[1]] * 3
    want = generate(base, repeated, **options)
    np.testing.assert_array_equal(out.tokens, want.tokens)
    np.testing.assert_array_equal(out.prompt, want.prompt)
    assert len({tuple(row) for row in np.asarray(out.tokens[:3])}) > 1  # sampled, not copies
    with pytest.raises(ConfigError, match="num_return_sequences=3 needs sampling"):
        generate(base, PROMPTS, max_new_tokens=NEW, num_return_sequences=3)
    with pytest.raises(ConfigError, match=r"one per returned row \(6\)"):
        generate(base, PROMPTS[:2], num_return_sequences=3, **{**options, "key": keys[:2]})


def test_do_sample_false_is_greedy_whatever_the_config_says(base, free, tmp_path):
    np.testing.assert_array_equal(
        generate(base, PROMPTS, max_new_tokens=NEW, do_sample=False, temperature=0.7).tokens,
        free)
    model = checkpoint(base, tmp_path, {"do_sample": True, "temperature": 0.6, "top_p": 0.9})
    with pytest.raises(ConfigError, match="needs a PRNG key"):  # the config samples
        generate(model, PROMPTS, max_new_tokens=NEW)
    np.testing.assert_array_equal(
        generate(model, PROMPTS, max_new_tokens=NEW, do_sample=False).tokens, free)
    np.testing.assert_array_equal(
        generate(model, PROMPTS, max_new_tokens=NEW, temperature=0).tokens, free)


def test_sampling_defaults_as_transformers():
    stated = GenerationDefaults(do_sample=True, temperature=0.6, from_checkpoint=True)
    none = (None,) * 5
    # transformers' top_k=50 where the checkpoint leaves it unset, capped at the vocabulary
    assert resolve_sampling(stated, 41, *none) == Sampling(0.6, 41)
    assert resolve_sampling(stated, 100, *none) == Sampling(0.6, 50)
    assert resolve_sampling(stated, 100, None, 0.9, 0, 1.0, None) == Sampling(0.9)  # off
    assert resolve_sampling(stated, 100, False, *none[1:]) == Sampling(0.0)
    assert resolve_sampling(GenerationDefaults(), 100, True, *none[1:]) == Sampling(1.0)


def test_length_limits_from_the_config_and_max_positions(base, tmp_path):
    model = checkpoint(base, tmp_path, {"max_length": 12}, max_position_embeddings=16)
    assert generation_defaults(model).max_positions == 16
    out = generate(model, PROMPTS, eos_id=())
    np.testing.assert_array_equal(out.lengths, [7, 10, 5])  # max_length less each prompt
    with pytest.raises(ConfigError, match=r"prompt 2 has 7 tokens and max_new_tokens is 10: "
                                          r"17 positions, more than the model's "
                                          r"max_position_embeddings=16"):
        generate(model, PROMPTS, max_new_tokens=10)
    with pytest.raises(ConfigError, match="needs max_new_tokens"):
        generate(base, PROMPTS)


def test_unknown_or_unsupported_fields_are_refused_by_name(base, tmp_path):
    assert parse_generation_config({"transformers_version": "5.0", "num_beams": 1,
                                    "repetition_penalty": 1.0, "temperature": None,
                                    "bos_token_id": 1, "eos_token_id": [2, 3]}) == {
        "eos_token_id": (2, 3)}
    with pytest.raises(ConfigError, match=r"repetition_penalty=1.05 changes what transformers"):
        parse_generation_config({"repetition_penalty": 1.05})
    with pytest.raises(ConfigError, match=r"unknown field 'frobnicate' \(value 2\)"):
        parse_generation_config({"frobnicate": 2})
    with pytest.raises(ConfigError, match=r"num_beams=4"):
        parse_generation_config({"num_beams": 4})
    with pytest.raises(ConfigError, match=r"top_k=-1 must be an integer >= 0"):
        parse_generation_config({"top_k": -1})
    model = checkpoint(base, tmp_path, {"repetition_penalty": 1.1, "eos_token_id": 4})
    with pytest.raises(ConfigError, match=r"repetition_penalty=1\.1"):
        generate(model, PROMPTS, max_new_tokens=2)
    out = generate(model, PROMPTS, max_new_tokens=2, generation_config={"eos_token_id": 4})
    assert out.tokens.shape == (3, 8)
