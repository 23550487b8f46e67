"""The tokenizer and chat-template files of a Hugging Face model directory, copied unchanged.

jaxlean reads no tokenizer; :func:`~jaxlean.models.lm.hf.save_pretrained` copies
these files from the source directory (``tokenizer_from=``) so that
``AutoTokenizer`` and serving engines open the saved directory.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from jaxlean.errors import CheckpointError
from jaxlean.models.lm.hf_config import missing_path

__all__ = ["TOKENIZER_FILES", "copy_tokenizer"]

# What tokenizers and chat templates read, as transformers and serving engines save them.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "added_tokens.json", "vocab.json", "merges.txt", "vocab.txt",
                   "tokenizer.model", "spiece.model", "tekken.json", "chat_template.jinja",
                   "chat_template.json")
_TEMPLATES = "additional_chat_templates"


def copy_tokenizer(source: str | Path, directory: Path) -> Path | None:
    """Copy the tokenizer and chat-template files of ``source`` unchanged into ``directory``.

    Returns ``source``'s ``generation_config.json`` (or None), for the caller to write.
    """
    source = Path(source)
    if not source.is_dir():
        raise missing_path(source) if not source.exists() else CheckpointError(
            f"tokenizer_from={str(source)!r} is a file: pass the directory that holds it")
    names = [name for name in TOKENIZER_FILES if (source / name).is_file()]
    if not names:
        raise CheckpointError(f"tokenizer_from={str(source)!r} holds no tokenizer file "
                              f"(looked for {list(TOKENIZER_FILES)})")
    if source.resolve() != directory.resolve():
        for name in names:
            shutil.copyfile(source / name, directory / name)
        if (source / _TEMPLATES).is_dir():
            shutil.copytree(source / _TEMPLATES, directory / _TEMPLATES, dirs_exist_ok=True)
    settings = source / "generation_config.json"
    return settings if settings.is_file() else None
