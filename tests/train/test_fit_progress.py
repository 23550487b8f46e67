"""fit's progress in a log: lines arrive while the run goes on, not all at the end."""

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import jax, jax.numpy as jnp, optax
from jaxlean import fit
x = jax.random.normal(jax.random.key(0), (4096, 3))
loss = lambda p, b: jnp.mean((jnp.tanh(b[0] @ p["w"]) @ p["v"] - b[1]) ** 2)
params = {"w": jnp.full((3, 32), 0.1), "v": jnp.full(32, 0.1)}
fit(loss, params, (x, jnp.sin(x).sum(1)), optax.adam(1e-2), epochs=%d, batch_size=8,
    key=jax.random.key(1))
"""


def test_fit_prints_lines_while_it_runs_when_piped():
    env = dict(os.environ, JAXLEAN_PROGRESS_INTERVAL="0.2",
               PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT % 3], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    arrived = []  # (seconds since start, line, whether the process was still running)
    start = time.perf_counter()
    for line in proc.stdout:
        arrived.append((time.perf_counter() - start, line.strip(), proc.poll() is None))
    assert proc.wait(timeout=60) == 0, arrived
    lines = [line for _, line, _ in arrived if line.startswith("fit: ")]
    assert lines[0] == "fit: compiling..."
    assert lines[-1].startswith("fit: done, epoch 3, 1536/1536 steps, loss ")
    periodic = [(t, running) for t, line, running in arrived
                if line.startswith("fit: epoch") or line.startswith("fit: compiling (")]
    assert periodic, lines
    first, running = periodic[0]
    assert running  # read while fit was still running, not flushed at exit
    assert arrived[-1][0] - first > 0.1, arrived  # and well before the last line
