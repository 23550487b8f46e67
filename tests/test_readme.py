"""Every ```python block of README.md runs as written, each in a fresh interpreter.

The README keeps the commands, a pitch, one quick-start block and links into the
documentation site; the sections it used to carry are pages under ``docs/`` (their code
runs in ``tests/test_docs.py``, and its link check covers the README's links).

No block is left out silently. A block that needs an optional extra says so in an
HTML comment on the line before it, which GitHub does not render:

    <!-- readme-test: needs flax -->            skipped, naming the module, when it is missing
    <!-- readme-test: skip <reason> -->        never run here, with the reason shown
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_blocks import Block
from markdown_blocks import blocks as _blocks

README = Path(__file__).resolve().parents[1] / "README.md"


BLOCKS = _blocks(README.read_text())


def test_every_python_fence_is_a_block():
    """Each ```python fence is collected (none dropped by the pattern), markers have reasons."""
    fences = len(re.findall(r"^```python", README.read_text(), re.M))
    assert fences == len(BLOCKS) >= 1
    for block in BLOCKS:
        assert block.skip is None or len(block.skip) > 10, block.line
        assert block.skip is not None or block.needs or block.code.strip()


def test_markers_are_read():
    text = ("x\n<!-- readme-test: needs flax, torch -->\n```python\nimport flax\n```\n"
            "<!-- readme-test: skip downloads 7 GB of weights -->\n```python\nprint(1)\n```\n"
            "```python\nprint(2)\n```\n")
    needs, skipped, plain = _blocks(text)
    assert needs.needs == ("flax", "torch") and needs.skip is None
    assert skipped.skip == "downloads 7 GB of weights"
    assert plain == Block(10, "print(2)\n")


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[f"line{block.line}" for block in BLOCKS])
def test_readme_example_runs(block):
    if block.skip is not None:
        pytest.skip(f"README line {block.line}: {block.skip}")
    for name in block.needs:
        if importlib.util.find_spec(name) is None:
            pytest.skip(f"README line {block.line} needs {name}, which is not installed")
    done = subprocess.run([sys.executable, "-c", block.code], capture_output=True, text=True,
                          timeout=300, cwd=README.parent)
    assert done.returncode == 0, f"README line {block.line}:\n{done.stderr[-3000:]}"
