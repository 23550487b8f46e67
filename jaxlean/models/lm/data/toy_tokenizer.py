"""A small real tokenizer with a ChatML chat template, trained in seconds: for examples and tests.

:func:`write_toy_tokenizer` writes what a model directory holds for its tokenizer
(``tokenizer.json``, ``tokenizer_config.json`` with the chat template, end-of-turn and pad
tokens), a byte-level BPE trained on a corpus with the ``tokenizers`` library, so the
examples run the text path of a downloaded checkpoint without downloading one.
:func:`load_tokenizer <jaxlean.models.lm.data.tokenizer.load_tokenizer>` reads it back
through ``transformers`` as it reads any checkpoint's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from jaxlean.models.lm.data._extras import require

__all__ = ["CHATML_SPECIALS", "CHATML_TEMPLATE", "write_toy_tokenizer"]

CHATML_SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
# ChatML, as Qwen writes it; {% generation %} marks what the assistant says (the assistant
# mask of transformers' apply_chat_template, TRL's assistant_only_loss).
CHATML_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['role'] == 'assistant' %}"
    "{% generation %}{{ message['content'] + '<|im_end|>' }}{% endgeneration %}{{ '\\n' }}"
    "{% else %}{{ message['content'] + '<|im_end|>\\n' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


def write_toy_tokenizer(directory: str | Path, corpus: Iterable[str], *, vocab_size: int = 320,
                        all_bytes: bool = True) -> Path:
    """Train a byte-level BPE on ``corpus`` and save it with the ChatML template in ``directory``.

    Digits are split one by one (as Qwen's and Llama 3's pre-tokenizers do), so numbers
    are sequences of digit tokens. The end of a turn, ``<|im_end|>``, is the eos token;
    ``<|endoftext|>`` pads.

    Args:
        directory: the model directory (created if needed).
        corpus: texts to learn the merges from (include the role names, ``"user"``, ...).
        vocab_size: at most this many ids, special tokens included.
        all_bytes: start from all 256 bytes, so any text can be encoded; False keeps only
            the characters of ``corpus``, a far smaller vocabulary (text with other
            characters then loses them).

    Returns:
        ``directory`` as a ``Path``.
    """
    tokenizers = require("tokenizers", "write_toy_tokenizer")
    pre = tokenizers.pre_tokenizers
    tokenizer = tokenizers.Tokenizer(tokenizers.models.BPE())
    tokenizer.pre_tokenizer = pre.Sequence([pre.Digits(individual_digits=True),
                                            pre.ByteLevel(add_prefix_space=False)])
    tokenizer.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=list(CHATML_SPECIALS), show_progress=False,
        initial_alphabet=pre.ByteLevel.alphabet() if all_bytes else [])
    tokenizer.train_from_iterator(list(corpus), trainer)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(directory / "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "chat_template": CHATML_TEMPLATE,
              "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "model_max_length": 512}
    (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=1))
    return directory
