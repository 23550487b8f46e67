"""Every script in examples/ runs to completion, at its smallest size.

``JAXLEAN_EXAMPLE_SIZE=small`` makes the examples with a long default run (the
requeued ``fit``, the conductance fit) do the same things on fewer samples and
steps; the others ignore it. ``ARGS`` gives an example smaller command-line arguments
where its defaults cost more than showing that it runs (``train_lm``). An example's own
process runs on the suite's compilation cache (``tests/xla_cache.py``); processes it
starts compile for themselves.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import xla_cache

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
# train_lm's default model (4 layers of 128, 30 steps of 16 x 64 tokens) takes about 30 CPU
# seconds at make test's XLA flags, this one about 9: the same code path, a smaller model.
ARGS = {"train_lm": ["--layers", "2", "--hidden", "32", "--vocab", "128", "--batch", "4",
                     "--length", "32", "--steps", "4"]}


@pytest.mark.slow
@pytest.mark.parametrize("script", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_example_runs(script, tmp_path):
    env = dict(os.environ, JAXLEAN_EXAMPLE_SIZE="small", PYTHONPATH=str(ROOT))  # this jaxlean
    counts = tmp_path / "xla_cache_counts.json"  # the example's own process: the suite's cache
    command, env = xla_cache.child_command([sys.executable, str(script),
                                           *ARGS.get(script.stem, [])], env, counts)
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    xla_cache.add_child_counts(counts)
    assert done.returncode == 0, done.stderr[-3000:]
    if script.stem == "fit_requeue":  # small or not, run 1 must be killed mid-run
        assert "killed with epochs" in done.stdout, done.stdout[-3000:]
    if script.stem == "grpo":  # the reward rises; rollouts and the train step compile once
        result = json.loads(done.stdout.split("result:")[-1])
        first, last = result["rewards"][:3], result["rewards"][-3:]
        assert sum(last) / 3 > sum(first) / 3 + 0.1, result["rewards"]
        assert result["compiles"]["jit(_rollout)"] == result["compiles"]["jit(step)"] == 1
    if script.stem in ("grpo", "sft"):  # every step's metrics in metrics.jsonl
        result = json.loads(done.stdout.split("result:")[-1])
        lines = (Path(result["metrics"]) / "metrics.jsonl").read_text().splitlines()
        steps = len(result["rewards"] if script.stem == "grpo" else result["losses"])
        assert [json.loads(line)["step"] for line in lines] == list(range(steps))
    if script.stem == "train_network":  # the loss falls across a save and a resume
        losses = json.loads(done.stdout.split("result:")[-1])["losses"]
        assert "resumed from step 8" in done.stdout, done.stdout[-3000:]
        assert sum(losses[-3:]) < 0.5 * sum(losses[:3]), losses
    if script.stem == "sft":  # the reply's loss falls (the prompt's labels are -100)
        losses = json.loads(done.stdout.split("result:")[-1])["losses"]
        assert sum(losses[-3:]) < 0.7 * sum(losses[:3]), losses
