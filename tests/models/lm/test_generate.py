"""KV-cache decoding and bucketed rollouts against full forward passes, with padding and LoRA."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.compile.stats import snapshot
from jaxlean.errors import ConfigError, DataError
from jaxlean.models.lm.generate import FINISH_REASONS, decode_step, generate, prefill
from jaxlean.models.lm.heads import token_stats
from jaxlean.models.lm.lora import add_lora
from jaxlean.models.lm.sampling import Sampling, choose, filter_logits
from jaxlean.models.lm.transformer import Transformer, TransformerConfig

CONFIG = TransformerConfig(vocab_size=47, hidden_size=32, intermediate_size=40, num_layers=2,
                           num_heads=4, num_kv_heads=2, qk_norm=True)
PROMPT = 4
BUCKETS = dict(prompt_buckets=(8, 16), length_buckets=(8,))
SAMPLED = dict(temperature=0.7, top_k=20, top_p=0.9, min_p=0.02)
SAMPLED_ADAPTERS = np.array([0, 0, 0, 1])


@pytest.fixture(scope="module")
def model():
    base = Transformer(CONFIG, key=jax.random.key(0))
    adapted = add_lora(base, rank=2, num_adapters=2, key=jax.random.key(1),
                       targets=("q_proj", "v_proj", "down_proj", "lm_head"))
    rng = np.random.default_rng(0)  # non-zero b so the adapters matter
    return jax.tree.map(lambda x: jnp.asarray(x + 0.2 * rng.normal(size=x.shape), x.dtype)
                        if x.ndim >= 3 and x.shape[-2] == 2 else x, adapted)


@pytest.fixture(scope="module")
def batch():
    tokens = jax.random.randint(jax.random.key(2), (3, 7), 0, CONFIG.vocab_size)
    # Row 1 has two pad tokens on the left, row 2 has one.
    mask = jnp.ones(tokens.shape, bool).at[1, :2].set(False).at[2, 0].set(False)
    return tokens, mask, jnp.array([0, 1, 1])


@pytest.fixture(scope="module")
def logits(model, batch):
    """Full-forward and step-by-step logits, computed in one compiled function."""
    tokens, mask, ids = batch

    @eqx.filter_jit
    def run(model):
        full = model(tokens, attention_mask=mask, adapter_ids=ids)
        alone = model(tokens[1:2, 2:], adapter_ids=ids[1:2])  # row 1 without its pads
        step, cache = prefill(model, tokens[:, :PROMPT], mask[:, :PROMPT],
                              max_length=tokens.shape[1], adapter_ids=ids)
        steps = [step]
        for t in range(PROMPT, tokens.shape[1] - 1):
            step, cache = decode_step(model, cache, tokens[:, t], ids)
            steps.append(step)
        return full, alone, jnp.stack(steps, axis=1)

    return run(model)


def test_step_by_step_logits_equal_full_forward(logits):
    full, _, stepped = logits
    np.testing.assert_allclose(stepped, full[:, PROMPT - 1:-1], rtol=1e-4, atol=1e-4)


def test_left_padding_does_not_change_a_row(logits):
    full, alone, _ = logits
    np.testing.assert_allclose(full[1, 2:], alone[0], rtol=1e-4, atol=1e-4)


def _as_input(prompts: list[np.ndarray], form: str):
    """The same prompts as a ragged list, or padded on the left or right with a mask."""
    if form == "list":
        return [p.tolist() for p in prompts], None
    width = max(map(len, prompts)) + 3  # wider than needed: the bucket follows the real lengths
    ids = np.full((len(prompts), width), 46, np.int32)
    mask = np.zeros(ids.shape, bool)
    for i, p in enumerate(prompts):
        where = slice(0, len(p)) if form == "right" else slice(width - len(p), width)
        ids[i, where], mask[i, where] = p, True
    return ids, mask


@pytest.fixture(scope="module")
def stream(model):
    """20 prompts of 1 to 16 tokens, 2 per call, greedy; the compiles they cost."""
    rng = np.random.default_rng(3)
    prompts = [rng.integers(0, 46, size=n) for n in rng.integers(1, 17, size=20)]
    limits = rng.integers(1, 9, size=20)
    snapshot(reset=True)
    calls = []
    for i in range(0, 20, 2):
        ids, mask = _as_input(prompts[i:i + 2], ("list", "left", "right")[i // 2 % 3])
        calls.append(generate(model, ids, mask, max_new_tokens=limits[i:i + 2].tolist(),
                              adapter_ids=np.array([0, 1]), **BUCKETS))
    compiles = snapshot().compiles
    buckets = {8 if max(len(p) for p in prompts[i:i + 2]) <= 8 else 16 for i in range(0, 20, 2)}
    return prompts, limits, calls, compiles, len(buckets)


def test_compiles_once_per_bucket(stream):
    _, limits, calls, compiles, buckets = stream
    assert buckets == 2  # the stream covers both prompt buckets
    assert compiles == buckets
    got = np.concatenate([np.asarray(r.lengths) for r in calls])
    np.testing.assert_array_equal(got, limits)  # the limits are data, reached exactly
    assert {r.tokens.shape[1] for r in calls} == {8}
    assert all(set(r.finish_reasons()) == {"length"} for r in calls)


def test_padded_rollouts_equal_unpadded_greedy_decoding(model, stream):
    """Each row against argmax / log-softmax of one full forward of its own unpadded tokens."""
    prompts, limits, calls, _, _ = stream
    # the outputs read in NumPy: an eager slice or sum of a jax array compiles a program
    arrays = [{name: np.asarray(getattr(call, name))
               for name in ("prompt", "prompt_mask", "tokens", "logprobs")} for call in calls]
    for k, call in enumerate(arrays):  # lists and left/right padding all end up left-aligned
        for j in range(2):
            prompt = prompts[2 * k + j]
            np.testing.assert_array_equal(call["prompt"][j, -len(prompt):], prompt)
            assert int(call["prompt_mask"][j].sum()) == len(prompt)
            assert bool(call["prompt_mask"][j, -len(prompt)])
    # One row of each prompt bucket, against its own unpadded forward pass.
    wide = next(k for k, call in enumerate(arrays) if call["prompt"].shape[1] == 16)
    rows = [(2 * k + j, arrays[k], j) for k, j in [(0, 0), (wide, 1)]]
    seqs = [np.concatenate([prompts[i], call["tokens"][j, :limits[i]]]) for i, call, j in rows]
    adapter = jnp.asarray([j for _, _, j in rows])

    @eqx.filter_jit
    def reference(model, seqs):
        out = []
        for k, seq in enumerate(seqs):
            logp = jax.nn.log_softmax(model(seq[None], adapter_ids=adapter[k:k + 1])[0])
            out.append((jnp.argmax(logp, -1), logp))
        return out

    for (i, call, j), seq, (argmax, logp) in zip(rows, seqs, reference(model, seqs),
                                                 strict=True):
        n, start = int(limits[i]), len(prompts[i]) - 1
        np.testing.assert_array_equal(call["tokens"][j, :n], np.asarray(argmax)[start:start + n])
        want = np.take_along_axis(np.asarray(logp)[start:start + n],
                                  seq[start + 1:, None], 1)[:, 0]
        np.testing.assert_allclose(call["logprobs"][j, :n], want, rtol=1e-4, atol=1e-4)
        assert (call["tokens"][j, n:] == 0).all()  # pad_id after the end
        assert (call["logprobs"][j, n:] == 0).all()


@pytest.fixture(scope="module")
def sampled(model):
    """Four rows sampled with every filter on; rows 0 and 1 share a prompt and a key."""
    keys = jax.random.split(jax.random.key(5), 4)
    keys = keys.at[1].set(keys[0])
    prompts = [[3, 1, 4, 1, 5], [3, 1, 4, 1, 5], [3, 1, 4, 1, 5], [2, 7]]
    return generate(model, prompts, max_new_tokens=8, key=keys, adapter_ids=SAMPLED_ADAPTERS,
                    **BUCKETS, **SAMPLED)


def test_sampled_logprobs_equal_token_stats(model, sampled):
    ids, mask = sampled.sequences()
    stats = eqx.filter_jit(lambda m: token_stats(
        m, ids[:, :-1], targets=ids[:, 1:], attention_mask=mask[:,
                                                                :-1], adapter_ids=SAMPLED_ADAPTERS,
        temperature=SAMPLED["temperature"]))(model)
    width = sampled.prompt.shape[1]
    keep = np.asarray(sampled.completion_mask)
    want = np.asarray(stats.logprobs[:, width - 1:])
    np.testing.assert_allclose(np.asarray(sampled.logprobs)[keep], want[keep], rtol=1e-4,
                               atol=1e-4)


def test_per_row_keys(sampled):
    tokens = np.asarray(sampled.tokens)
    np.testing.assert_array_equal(tokens[0], tokens[1])  # same prompt, same key
    assert (tokens[0] != tokens[2]).any()  # same prompt, another key


def _hf_filters(logits: np.ndarray, temperature, top_k, top_p, min_p) -> np.ndarray:
    """NumPy transcription of transformers' Temperature/TopK/TopP/MinP logits warpers."""
    x = (logits / temperature).astype(np.float32)
    if top_k is not None:
        kth = np.sort(x, axis=-1)[:, -top_k][:, None]
        x = np.where(x < kth, -np.inf, x)
    if top_p is not None:
        order = np.argsort(x, axis=-1, kind="stable")
        ascending = np.take_along_axis(x, order, -1)
        e = np.exp(ascending - ascending.max(-1, keepdims=True))
        cumulative = np.cumsum(e / e.sum(-1, keepdims=True), axis=-1)
        removed_sorted = cumulative <= 1 - top_p
        removed_sorted[:, -1] = False
        removed = np.zeros_like(removed_sorted)
        np.put_along_axis(removed, order, removed_sorted, -1)
        x = np.where(removed, -np.inf, x)
    if min_p is not None:
        e = np.exp(x - x.max(-1, keepdims=True))
        probs = e / e.sum(-1, keepdims=True)
        x = np.where(probs < min_p * probs.max(-1, keepdims=True), -np.inf, x)
    return x


@pytest.mark.parametrize("setting", [dict(temperature=0.5, top_k=5), dict(top_p=0.8),
                                     dict(temperature=1.3, min_p=0.1),
                                     dict(temperature=0.7, top_k=20, top_p=0.6, min_p=0.05)])
def test_filters_equal_hugging_face_semantics(setting):
    logits = np.random.default_rng(6).normal(scale=2.0, size=(5, 40)).astype(np.float32)
    sampling = Sampling(**{"temperature": 1.0, **setting}).check(40)
    got = np.asarray(jax.jit(filter_logits)(logits, sampling.values()))
    want = _hf_filters(logits, *(getattr(sampling, f) for f in Sampling._fields))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    np.testing.assert_allclose(got[~np.isinf(got)], want[~np.isinf(want)], rtol=1e-6)
    assert (~np.isinf(got)).any(axis=-1).all()


def test_sampling_frequencies_follow_the_filtered_distribution():
    logits = np.random.default_rng(7).normal(size=(2, 12)).astype(np.float32)
    sampling = Sampling(temperature=0.8, top_k=6, top_p=0.9)
    keys = jax.random.split(jax.random.key(8), 2)
    draws = jax.jit(jax.vmap(lambda step: choose(jnp.asarray(logits), sampling.values(), False,
                                                 keys, step)[0]))(jnp.arange(2000))
    want = _hf_filters(logits, 0.8, 6, 0.9, None)
    want = np.exp(want - want.max(-1, keepdims=True))
    want /= want.sum(-1, keepdims=True)
    for row in range(2):
        freq = np.bincount(np.asarray(draws[:, row]), minlength=12) / 2000
        assert set(np.flatnonzero(freq)) <= set(np.flatnonzero(want[row]))
        np.testing.assert_allclose(freq, want[row], atol=0.04)


def test_stop_ids_and_stop_sequences(model, stream):
    prompts, _, _, _, _ = stream
    pair = [p.tolist() for p in prompts[:2]]
    if max(map(len, pair)) > 8:
        pair = [p[:8] for p in pair]
    ids = jnp.array([0, 1])
    free = generate(model, pair, max_new_tokens=8, adapter_ids=ids, **BUCKETS)
    tokens = np.asarray(free.tokens)
    eos = int(tokens[0, 3])
    stop = tokens[1, 2:4].tolist()
    done = generate(model, pair, max_new_tokens=8, adapter_ids=ids, eos_id=[eos],
                    stop_sequences=[stop], pad_id=5, **BUCKETS)
    first_eos = [int(np.argmax(row == eos)) if (row == eos).any() else 99 for row in tokens]
    ends = [next((k + 2 for k in range(7) if row[k:k + 2].tolist() == stop), 99)
            for row in tokens]
    for row in range(2):
        length = min(first_eos[row] + 1, ends[row], 8)
        reason = ("stop" if first_eos[row] + 1 == length else
                  "stop_sequence" if ends[row] == length else "length")
        assert int(done.lengths[row]) == length
        assert done.finish_reasons()[row] == reason
        np.testing.assert_array_equal(done.tokens[row, :length], tokens[row, :length])
        assert (np.asarray(done.tokens[row, length:]) == 5).all()
    assert done.finish_reasons()[0] == "stop" and done.finish_reasons()[1] != "length"
    assert FINISH_REASONS[0] == "length"


def test_bad_generation_inputs(model, batch):
    tokens = batch[0]
    with pytest.raises(DataError, match="token id 47"):
        generate(model, tokens.at[0, 0].set(47), max_new_tokens=2)
    with pytest.raises(DataError, match="prompt 1 is empty"):
        generate(model, [[1, 2], []], max_new_tokens=2)
    with pytest.raises(DataError, match="prompt 0 must be a sequence of ids"):
        generate(model, [[[1, 2]]], max_new_tokens=2)
    with pytest.raises(ConfigError, match="needs a PRNG key"):
        generate(model, tokens, max_new_tokens=2, temperature=1.0)
    for bad in [dict(top_k=-1), dict(top_p=0.0), dict(min_p=1.5)]:
        with pytest.raises(ConfigError, match=next(iter(bad))):
            generate(model, tokens, max_new_tokens=2, temperature=1.0, key=jax.random.key(0),
                     **bad)
    with pytest.raises(ConfigError, match="one per returned row"):
        generate(model, tokens, max_new_tokens=2, temperature=1.0,
                 key=jax.random.split(jax.random.key(0), 2))
    with pytest.raises(ConfigError, match="exceeds the largest prompt length bucket 4"):
        generate(model, tokens, max_new_tokens=2, prompt_buckets=(2, 4))
    with pytest.raises(ConfigError, match="stop_sequences\\[0\\]: token id 99"):
        generate(model, tokens, max_new_tokens=2, stop_sequences=[[99]])
    for bad in [0, [2, 2], 1.5]:
        with pytest.raises(ConfigError, match="max_new_tokens"):
            generate(model, tokens, max_new_tokens=bad)


def test_attention_mask_names_the_prompt_padding(model):
    """Hugging Face's attention_mask is the prompt mask; a right-padded array without one is
    refused (it would generate after the pads); a mask of another shape is named."""
    prompts = [[5, 6, 7, 8, 9], [5, 6, 7]]
    ids, mask = _as_input([np.asarray(p) for p in prompts], "right")
    options = dict(max_new_tokens=3, pad_id=46, adapter_ids=np.array([0, 1]), **BUCKETS)
    want = generate(model, prompts, **options)
    for got in (generate(model, ids, attention_mask=mask, **options),
                generate(model, ids, attention_mask=mask.astype(np.int32), **options),
                generate(model, ids, mask, **options)):
        np.testing.assert_array_equal(got.tokens, want.tokens)
    with pytest.raises(DataError, match=r"row 0 ends with pad_id 46: .* Pass attention_mask"):
        generate(model, ids, **options)
    with pytest.raises(DataError, match=r"row 0 ends with pad_id 7"):  # the eos id pads
        generate(model, ids[:, :3], max_new_tokens=2, eos_id=7)
    with pytest.raises(ConfigError, match="give attention_mask or prompt_mask"):
        generate(model, ids, mask, attention_mask=mask, **options)
    with pytest.raises(DataError, match=r"attention_mask \(prompt_mask\) must have the "
                                        r"prompt's shape \(2, 8\)"):
        generate(model, ids, attention_mask=mask[:, :-1], **options)
    # Without a known pad id (no pad_id, no eos_id) nothing is guessed.
    generate(model, ids, max_new_tokens=2)
    with pytest.raises(DataError, match=r"adapter_ids\[0\] = 2 is outside \[0, 2\)"):
        generate(model, prompts, max_new_tokens=2, adapter_ids=np.array([2, 0]))
