"""Model ids (``"Qwen/Qwen3-0.6B"``) resolved to a directory the way ``transformers`` does.

:func:`resolve_model` asks ``huggingface_hub`` (the optional extra ``hub``) for the files
:func:`~jaxlean.models.lm.hf.load_pretrained` reads, file by file as ``transformers``'
``cached_file`` does: ``config.json``, then ``model.safetensors.index.json`` and the shards
it names (else ``model.safetensors``), then, where the repository has them,
``generation_config.json`` and the tokenizer and chat-template files. They land in
``huggingface_hub``'s own cache (``HF_HUB_CACHE``, else ``$HF_HOME/hub``, else
``~/.cache/huggingface/hub``), where ``transformers`` finds them too, and the snapshot
directory of the resolved commit is returned. Files already in the cache are not
downloaded again; with ``HF_HUB_OFFLINE=1`` (or ``local_files_only=True``) nothing is
asked of the network and only the cache is read. ``HF_HUB_CACHE``, ``HF_HOME``,
``HF_HUB_OFFLINE`` and ``HF_ENDPOINT`` are read when called, not when
``huggingface_hub`` was imported. A private or gated repository uses the token of
``hf auth login`` or ``HF_TOKEN``, as ``huggingface_hub`` does.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from jaxlean.errors import CheckpointError, ConfigError
from jaxlean.models.lm.hf_tokenizer import TOKENIZER_FILES

__all__ = ["INSTALL", "is_model_id", "model_source", "resolve_model"]

INSTALL = "pip install 'jaxlean[hub]'"
# A repository id as huggingface_hub validates it: "name" or "namespace/name".
_MODEL_ID = re.compile(r"(?:\w[\w.-]*/)?\w[\w.-]*")
_TRUE = {"1", "ON", "YES", "TRUE"}


def is_model_id(path: str | Path) -> bool:
    """Whether ``path`` is a string spelled as a Hub repository id (not whether it exists)."""
    return (isinstance(path, str) and _MODEL_ID.fullmatch(path) is not None
            and ".." not in path and "--" not in path and not path.endswith(".git"))


def model_source(path: str | Path, revision: str | None = None) -> Path:
    """The local path :func:`~jaxlean.models.lm.hf.load_pretrained` reads for ``path``.

    An existing file or directory is itself (and refuses ``revision``); a string that does
    not exist locally and is spelled as a Hub id is resolved by :func:`resolve_model` (a
    ``Path`` spelled so is refused, naming the id); anything else is returned for the caller
    to report as missing.
    """
    if Path(path).exists():
        if revision is not None:
            raise ConfigError(f"revision={revision!r} selects a version of a Hugging Face "
                              f"model id, and {str(path)!r} is a local path: pass revision only "
                              f"with a model id")
        return Path(path)
    if is_model_id(path):
        return resolve_model(str(path), revision=revision)
    if not isinstance(path, str) and is_model_id(Path(path).as_posix()):
        raise CheckpointError(f"no such directory {str(path)!r} (to load the Hugging Face model "
                              f"id {Path(path).as_posix()!r}, pass it as a string)")
    return Path(path)


def _env_cache() -> str | None:
    """The cache directory the environment names now (None: huggingface_hub's default)."""
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(name):
            return os.path.expanduser(os.path.expandvars(os.environ[name]))
    if os.environ.get("HF_HOME"):
        return os.path.join(os.path.expanduser(os.path.expandvars(os.environ["HF_HOME"])), "hub")
    return None


def _offline(constants: Any) -> bool:
    """``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) as set now or at import."""
    now = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return now.upper() in _TRUE or bool(getattr(constants, "HF_HUB_OFFLINE", False))


def resolve_model(model_id: str, *, revision: str | None = None,
                  cache_dir: str | Path | None = None,
                  local_files_only: bool = False) -> Path:
    """The snapshot directory holding ``model_id``'s checkpoint, downloaded where needed.

    Args:
        model_id: a Hub repository id, ``"namespace/name"`` or ``"name"``.
        revision: a branch, tag or commit hash (default: ``"main"``).
        cache_dir: the cache (default: ``HF_HUB_CACHE``, ``$HF_HOME/hub``, or
            ``huggingface_hub``'s default).
        local_files_only: read the cache only, as ``HF_HUB_OFFLINE=1`` does.

    Returns:
        The directory of the resolved commit: ``config.json``, the safetensors file(s)
        and those of ``generation_config.json`` and the tokenizer files the repository has.

    Raises:
        CheckpointError: naming ``model_id`` and the revision: ``huggingface_hub`` is not
            installed (with the install line), the repository, revision or a file it
            needs is not on the Hub, or not in the cache when offline or unreachable.
    """
    what = f"model id {model_id!r}" + (f" (revision {revision!r})" if revision else "")
    try:
        import huggingface_hub as hub
        from huggingface_hub import constants
        from huggingface_hub import utils as errors  # the errors, in every version
    except ImportError as error:
        raise CheckpointError(f"no such directory {model_id!r}, and loading the Hugging Face "
                              f"{what} needs huggingface_hub, which is not installed: "
                              f"{INSTALL}") from error

    cache = str(cache_dir) if cache_dir is not None else _env_cache()
    offline = local_files_only or _offline(constants)
    where = f"the Hugging Face cache {cache or constants.HF_HUB_CACHE!r}"

    def fetch(filename: str, at: str | None, required: bool = True) -> Path | None:
        try:
            return Path(hub.hf_hub_download(
                model_id, filename, revision=at, cache_dir=cache, local_files_only=offline,
                endpoint=os.environ.get("HF_ENDPOINT") or None))
        except errors.RevisionNotFoundError as error:
            raise CheckpointError(f"{what}: no such revision on the Hub") from error
        except errors.RepositoryNotFoundError as error:  # also gated and private ones
            raise CheckpointError(
                f"{what}: no such directory here, and no such model on the Hugging Face Hub "
                f"(or it is private or gated: log in with `hf auth login` or set HF_TOKEN): "
                f"{_first_line(error)}") from error
        except errors.EntryNotFoundError as error:
            local = isinstance(error, errors.LocalEntryNotFoundError)
            if not required:
                return None
            if not local:
                raise CheckpointError(f"{what} has no {filename} on the Hub (jaxlean reads "
                                      f"safetensors checkpoints with a config.json)") from error
            command = f"hf download {model_id}" + (f" --revision {revision}" if revision else "")
            why = (f"offline mode is on (HF_HUB_OFFLINE=1 or local_files_only=True): download "
                   f"it once with the network on, or `{command}`" if offline
                   else f"the Hub could not be reached: {_first_line(error)}")
            raise CheckpointError(f"{what} is not in {where} (no {filename}), and {why}") from error
        except (errors.HfHubHTTPError, errors.OfflineModeIsEnabled, OSError) as error:
            raise CheckpointError(f"{what}: {filename} could not be fetched: "
                                  f"{type(error).__name__}: {_first_line(error)}") from error

    config = fetch("config.json", revision)
    assert config is not None  # required files raise instead
    snapshot = config.parent
    commit = snapshot.name  # every other file from the same commit
    index = fetch("model.safetensors.index.json", commit, required=False)
    if index is not None:
        shards = sorted(set(json.loads(index.read_text()).get("weight_map", {}).values()))
        for shard in shards:
            fetch(shard, commit)
    elif fetch("model.safetensors", commit, required=False) is None:
        raise CheckpointError(f"{what} has neither model.safetensors nor "
                              f"model.safetensors.index.json" + (f" in {where} (offline)"
                                                                 if offline else " on the Hub")
                              + ": jaxlean reads safetensors checkpoints only")
    for name in ("generation_config.json", *TOKENIZER_FILES):
        fetch(name, commit, required=False)
    return snapshot


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
