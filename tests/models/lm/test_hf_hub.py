"""``load_pretrained("org/name")``: model ids through huggingface_hub's cache, online and offline.

The cache is laid out by ``huggingface_hub`` itself: its ``hf_hub_download`` fetches the
fixture checkpoints from a small local stand-in for the Hub's file endpoint
(``/{id}/resolve/{revision}/{file}``, answered with the headers the Hub sends), so no test
writes the cache layout by hand or reaches the network.
"""

from __future__ import annotations

import hashlib
import http.server
import re
import shutil
import sys
import threading
import urllib.parse
from pathlib import Path

import equinox as eqx
import jax
import numpy as np
import pytest

from jaxlean.errors import CheckpointError, ConfigError
from jaxlean.models.lm.hf import load_pretrained, save_pretrained
from jaxlean.models.lm.hf_config import GenerationSettings
from jaxlean.models.lm.hf_hub import is_model_id, resolve_model

FIXTURES = Path(__file__).parent / "fixtures"
V1 = "1" * 40
MAIN = "2" * 40


class Hub:
    """Repositories served as the Hub serves files: ``{id: (refs, {commit: {file: bytes}})}``."""

    def __init__(self, repos: dict):
        self.repos = repos
        self.requests: list[tuple[str, str]] = []
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_HEAD(self):
                hub.answer(self, body=False)

            def do_GET(self):
                hub.answer(self, body=True)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, request, body: bool) -> None:
        path = urllib.parse.unquote(urllib.parse.urlsplit(request.path).path)
        self.requests.append((request.command, path))
        found = re.fullmatch(r"/(.+)/resolve/([^/]+)/(.+)", path)
        headers, status, data = {}, 404, b""
        if found is None or found[1] not in self.repos:
            headers["X-Error-Code"] = "RepoNotFound"
        else:
            refs, commits = self.repos[found[1]]
            commit = refs.get(found[2], found[2] if found[2] in commits else None)
            if commit is None:
                headers["X-Error-Code"] = "RevisionNotFound"
            elif found[3] not in commits[commit]:
                headers.update({"X-Error-Code": "EntryNotFound", "X-Repo-Commit": commit})
            else:
                status, data = 200, commits[commit][found[3]]
                headers.update({"X-Repo-Commit": commit,
                                "ETag": f'"{hashlib.sha256(data).hexdigest()}"'})
        request.send_response(status)
        for key, value in {**headers, "Content-Length": str(len(data))}.items():
            request.send_header(key, value)
        request.end_headers()
        if body:
            request.wfile.write(data)

    def gets(self) -> list[str]:
        return [path for method, path in self.requests if method == "GET"]


def files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """``main``: a sharded Qwen3 checkpoint with tokenizer files; ``v1``: a Llama one."""
    main = tmp_path_factory.mktemp("main")
    model, _, _ = load_pretrained(FIXTURES / "qwen3_tied")
    save_pretrained(model, main, max_shard_bytes=20_000,
                    generation=GenerationSettings(eos_ids=(3, 4), pad_id=0, bos_id=None))
    (main / "tokenizer_config.json").write_text('{"chat_template": "{{ messages }}"}')
    (main / "chat_template.jinja").write_text("{{ messages }}")
    v1 = tmp_path_factory.mktemp("v1")
    for name in ("config.json", "model.safetensors"):
        shutil.copyfile(FIXTURES / "llama" / name, v1 / name)
    return {"main": main, "v1": v1}


@pytest.fixture
def hub(sources, tmp_path, monkeypatch):
    pytest.importorskip("huggingface_hub")
    from huggingface_hub import constants
    served = Hub({"org/tiny": ({"main": MAIN, "v1": V1},
                               {MAIN: files(sources["main"]), V1: files(sources["v1"])}),
                  "org/bin-only": ({"main": MAIN},
                                   {MAIN: {"config.json": (sources["v1"] / "config.json")
                                           .read_bytes(), "pytorch_model.bin": b"torch"}})})
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_ENDPOINT", served.url)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    yield served
    served.server.shutdown()
    served.server.server_close()


def same_arrays(a, b) -> bool:
    left, right = (jax.tree.leaves(eqx.filter(m, eqx.is_array)) for m in (a, b))
    return all(np.array_equal(x, y) for x, y in zip(left, right, strict=True))


def test_model_id_downloads_into_the_hub_cache_then_loads_offline(hub, sources, tmp_path,
                                                                  monkeypatch):
    from huggingface_hub import scan_cache_dir

    expected, expected_config, expected_generation = load_pretrained(sources["main"])
    model, config, generation = load_pretrained("org/tiny")
    assert config == expected_config and generation == expected_generation
    assert generation.eos_ids == (3, 4)
    assert same_arrays(model, expected)
    snapshot = tmp_path / "hub" / "models--org--tiny" / "snapshots" / MAIN
    shards = sorted(n for n in files(sources["main"]) if n.startswith("model-"))
    assert len(shards) > 1
    assert {p.name for p in snapshot.iterdir()} == {
        "config.json", "generation_config.json", "model.safetensors.index.json", *shards,
        "tokenizer_config.json", "chat_template.jinja"}
    (repo,) = scan_cache_dir(tmp_path / "hub").repos  # huggingface_hub reads its own layout
    assert repo.repo_id == "org/tiny"
    assert [(r.commit_hash, set(r.refs)) for r in repo.revisions] == [(MAIN, {"main"})]
    downloads = hub.gets()
    assert sorted(Path(p).name for p in downloads) == sorted(files(sources["main"]))

    load_pretrained("org/tiny")  # online again: nothing downloaded twice
    assert hub.gets() == downloads

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # set after huggingface_hub was imported
    seen = len(hub.requests)
    offline, offline_config, _ = load_pretrained("org/tiny")
    assert offline_config == expected_config and same_arrays(offline, expected)
    assert len(hub.requests) == seen  # the network was not asked
    assert resolve_model("org/tiny") == snapshot


def test_revisions_resolve_to_their_own_snapshot(hub, sources, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(CheckpointError, match=r"model id 'org/tiny' \(revision 'v1'\) is not in "
                                              r"the Hugging Face cache .*offline mode is on"):
        load_pretrained("org/tiny", revision="v1")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    expected, expected_config, _ = load_pretrained(sources["v1"])
    model, config, _ = load_pretrained("org/tiny", revision="v1")
    assert config == expected_config and same_arrays(model, expected)
    assert resolve_model("org/tiny", revision=V1).name == V1
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    seen = len(hub.requests)
    assert load_pretrained("org/tiny", revision="v1")[1] == expected_config
    assert load_pretrained("org/tiny", revision=V1)[1] == expected_config
    assert len(hub.requests) == seen


def test_ids_that_cannot_be_resolved_are_named(hub, monkeypatch):
    with pytest.raises(CheckpointError, match=r"model id 'org/missing': no such directory here, "
                                              r"and no such model on the Hugging Face Hub"):
        load_pretrained("org/missing")
    with pytest.raises(CheckpointError, match=r"model id 'org/tiny' \(revision 'v9'\): no such "
                                              r"revision on the Hub"):
        load_pretrained("org/tiny", revision="v9")
    with pytest.raises(CheckpointError, match=r"model id 'org/bin-only' has neither "
                                              r"model.safetensors nor model.safetensors.index"
                                              r".json on the Hub"):
        load_pretrained("org/bin-only")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(CheckpointError, match=r"model id 'org/missing' is not in the Hugging "
                                              r"Face cache '.*hub' \(no config.json\), and "
                                              r"offline mode is on"):
        load_pretrained("org/missing")


def test_the_cache_follows_hf_home_when_no_cache_is_named(hub, tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    load_pretrained("org/tiny", revision="v1")
    assert (tmp_path / "home" / "hub" / "models--org--tiny" / "snapshots" / V1).is_dir()


def test_without_huggingface_hub_a_model_id_is_refused_with_the_install_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import fails
    with pytest.raises(CheckpointError, match=r"no such directory 'Qwen/Qwen3-0\.6B', and "
                                              r"loading the Hugging Face model id 'Qwen/Qwen3-0"
                                              r"\.6B' needs huggingface_hub, which is not "
                                              r"installed: pip install 'jaxlean\[hub\]'"):
        load_pretrained("Qwen/Qwen3-0.6B")
    assert load_pretrained(str(FIXTURES / "llama"))[1].num_layers == 2  # local paths need none


def test_local_paths_are_not_model_ids(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert is_model_id("Qwen/Qwen3-0.6B") and is_model_id("gpt2")
    for path in ("./model", "/abs/model", "a/b/c", "org/../x", "", Path("org/name")):
        assert not is_model_id(path), path
    with pytest.raises(CheckpointError, match=rf"no such directory '{re.escape(str(tmp_path))}"):
        load_pretrained(str(tmp_path / "not-there" / "model"))
    with pytest.raises(CheckpointError, match=r"no such directory 'org/name' \(to load the "
                                              r"Hugging Face model id 'org/name', pass it as a "
                                              r"string\)"):
        load_pretrained(Path("org/name"))
    with pytest.raises(ConfigError, match=r"revision='v1' selects a version of a Hugging Face "
                                          r"model id, and '.*llama' is a local path"):
        load_pretrained(FIXTURES / "llama", revision="v1")
