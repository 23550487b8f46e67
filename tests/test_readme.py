"""Every complete example in README.md runs (a block that starts with an import)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = [block for block in re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
          if block.startswith(("import", "from"))]


def test_readme_has_examples():
    assert len(BLOCKS) >= 6


@pytest.mark.slow
@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example_runs(code):
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
