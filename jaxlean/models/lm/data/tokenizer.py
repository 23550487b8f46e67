"""A model directory's own tokenizer and chat template, applied as ``transformers`` applies them.

:func:`load_tokenizer` reads ``tokenizer.json`` / ``tokenizer_config.json`` (and a
``chat_template.jinja`` if present) with ``transformers.AutoTokenizer``, offline, so the
chat template runs through the very code TRL's ``SFTTrainer`` runs it through:
``add_generation_prompt``, ``tools``, and the ``{% generation %}`` markers that give the
assistant-token mask (``return_assistant_tokens_mask``). Rollouts are decoded back to text
for rewards. ``transformers`` (no torch needed) is the optional ``text`` extra, imported on
first use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxlean.errors import CheckpointError, ConfigError, DataError
from jaxlean.models.lm.data._extras import require

__all__ = ["Tokenizer", "load_tokenizer"]

Message = Mapping[str, Any]


class Tokenizer:
    """Encode, decode and chat-format text with a checkpoint's tokenizer.

    ``hf`` is the ``transformers`` tokenizer itself, for anything not wrapped here.
    ``pad_token_id`` falls back to ``eos_token_id`` when the tokenizer has no pad token,
    as TRL's trainers do.
    """

    def __init__(self, hf: Any, path: Path | None = None):
        self.hf = hf
        self.path = path

    def __repr__(self) -> str:
        return f"Tokenizer({str(self.path)!r}, vocab={len(self)})"

    def __len__(self) -> int:
        """Number of ids, added tokens included (``len(tokenizer)`` in ``transformers``)."""
        return len(self.hf)

    @property
    def eos_token(self) -> str | None:
        return self.hf.eos_token

    @property
    def eos_token_id(self) -> int | None:
        return self.hf.eos_token_id

    @property
    def pad_token_id(self) -> int:
        pad = self.hf.pad_token_id
        if pad is None:
            pad = self.hf.eos_token_id
        if pad is None:
            raise ConfigError(f"the tokenizer of {self._where()} has neither a pad nor an eos "
                              f"token: set pad_token in tokenizer_config.json")
        return int(pad)

    @property
    def chat_template(self) -> str | None:
        return self.hf.chat_template

    def encode(self, text: str, *, add_special_tokens: bool = True) -> list[int]:
        """Token ids of ``text``: ``tokenizer(text)["input_ids"]`` (BOS added if the tokenizer
        adds one)."""
        if not isinstance(text, str):
            raise DataError(f"encode: text must be a str, got {type(text).__name__}")
        return list(self.hf(text=text, add_special_tokens=add_special_tokens)["input_ids"])

    def decode(self, ids: Sequence[int] | np.ndarray, *, skip_special_tokens: bool = True) -> str:
        """The text of ``ids`` (special tokens such as end-of-turn left out by default)."""
        return self.hf.decode([int(i) for i in np.asarray(ids).reshape(-1)],
                              skip_special_tokens=skip_special_tokens)

    def decode_batch(self, tokens: Any, lengths: Any = None, *,
                     skip_special_tokens: bool = True) -> list[str]:
        """One string per row of ``tokens`` ``[B, N]``, each cut at its length.

        ``tokens`` may be a :class:`~jaxlean.models.lm.generate.Rollout` (its ``tokens`` and
        ``lengths`` are used), so rewards can be computed on the decoded completions.
        """
        if lengths is None and hasattr(tokens, "tokens") and hasattr(tokens, "lengths"):
            tokens, lengths = tokens.tokens, tokens.lengths
        tokens = np.asarray(tokens)
        if tokens.ndim != 2:
            raise DataError(f"decode_batch: tokens must be [batch, length], got shape "
                            f"{list(tokens.shape)}")
        lengths = (np.full(len(tokens), tokens.shape[1]) if lengths is None
                   else np.asarray(lengths).reshape(-1))
        if len(lengths) != len(tokens):
            raise DataError(f"decode_batch: {len(lengths)} lengths for {len(tokens)} rows")
        return [self.decode(row[:n], skip_special_tokens=skip_special_tokens)
                for row, n in zip(tokens, lengths.tolist(), strict=True)]

    def apply_chat_template(self, messages: Sequence[Message], *,
                            add_generation_prompt: bool = False,
                            assistant_mask: bool = False,
                            tools: Sequence[Any] | None = None,
                            tokenize: bool = True,
                            **template_kwargs: Any) -> dict[str, list[int]] | str:
        """``messages`` rendered by the chat template, exactly as ``transformers`` renders them.

        Args:
            messages: ``[{"role": ..., "content": ...}, ...]``.
            add_generation_prompt: end with the assistant header, ready for a reply.
            assistant_mask: also return ``assistant_masks``, 1 on the tokens the template
                wraps in ``{% generation %}`` (the assistant's replies).
            tools: tool schemas, passed to the template.
            tokenize: False returns the rendered string.
            template_kwargs: extra template variables (TRL's ``chat_template_kwargs``).

        Returns:
            ``{"input_ids": [...]}`` (with ``"assistant_masks"``, 0/1 per token, if asked) or
            the rendered str.
        """
        if not self.chat_template and "chat_template" not in template_kwargs:
            raise ConfigError(f"the tokenizer of {self._where()} has no chat template (looked "
                              f"for chat_template in tokenizer_config.json and for "
                              f"chat_template.jinja)")
        if not tokenize:
            return self.hf.apply_chat_template(list(messages), tokenize=False,
                                               add_generation_prompt=add_generation_prompt,
                                               tools=tools, **template_kwargs)
        out = self.hf.apply_chat_template(list(messages), tokenize=True, return_dict=True,
                                          add_generation_prompt=add_generation_prompt,
                                          return_assistant_tokens_mask=assistant_mask,
                                          tools=tools, **template_kwargs)
        encoding = dict(input_ids=[int(i) for i in out["input_ids"]])
        if assistant_mask:
            encoding["assistant_masks"] = [int(m) for m in out["assistant_masks"]]
        return encoding

    def _where(self) -> str:
        return repr(str(self.path)) if self.path is not None else "this tokenizer"


def load_tokenizer(path: str | Path) -> Tokenizer:
    """The tokenizer of the model directory ``path`` (read offline; nothing is downloaded).

    Raises:
        CheckpointError: ``path`` does not exist or holds no tokenizer files.
        ModuleNotFoundError: ``transformers`` is not installed (names the ``text`` extra).
    """
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"load_tokenizer: no such directory {str(path)!r}")
    if not path.is_dir():
        raise CheckpointError(f"load_tokenizer: {str(path)!r} is a file: pass the model "
                              f"directory that holds tokenizer.json")
    if not any((path / name).is_file() for name in ("tokenizer.json", "tokenizer_config.json")):
        raise CheckpointError(f"load_tokenizer: {str(path)!r} holds neither tokenizer.json nor "
                              f"tokenizer_config.json")
    transformers = require("transformers", "load_tokenizer")
    try:
        hf = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError) as error:
        raise CheckpointError(f"load_tokenizer: the tokenizer in {str(path)!r} cannot be "
                              f"loaded by transformers: {error}") from None
    return Tokenizer(hf, path)
