"""A ``fit`` job killed mid-run and started again ends exactly where an uninterrupted one does.

``fit(..., checkpoint=directory)`` saves the training loop's state every
``checkpoint_every`` epochs; started again with the same arguments (a SLURM
requeue, a preempted VM), it finds the latest checkpoint and continues from it.

Run without arguments, this script plays it: it starts the training in a
child process, kills it (SIGKILL) once a checkpoint past epoch 8 is on disk,
starts the same command again, and checks the requeued run's losses and
params against an uninterrupted run, bit for bit.

``JAXLEAN_EXAMPLE_SIZE=small`` (what the test suite sets) trains on fewer
samples, a narrower MLP and fewer epochs, killed once epoch 4 is saved: the same
kill, requeue and bit-for-bit check at the smallest size.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SMALL = os.environ.get("JAXLEAN_EXAMPLE_SIZE") == "small"
# (samples, MLP width, epochs, epoch after whose checkpoint run 1 is killed)
SAMPLES, WIDTH, EPOCHS, KILL_AFTER = (256, 16, 12, 4) if SMALL else (2048, 64, 24, 8)


def train(checkpoint: Path | None):
    """The training job: an MLP fit on a sine, resumable from ``checkpoint``."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import optax

    from jaxlean import fit

    x = jax.random.normal(jax.random.key(0), (SAMPLES, 8))
    data = (x, jnp.sin(x).sum(1, keepdims=True))
    model = eqx.nn.MLP(8, 1, WIDTH, 2, key=jax.random.key(1))
    mse = lambda m, batch: jnp.mean((jax.vmap(m)(batch[0]) - batch[1]) ** 2)
    return fit(mse, model, data, optax.adam(1e-3), epochs=EPOCHS, batch_size=64,
               key=jax.random.key(2), progress=False, checkpoint=checkpoint,
               checkpoint_every=2)


def _leaves(model) -> list[np.ndarray]:
    import equinox as eqx
    import jax

    return [np.asarray(leaf) for leaf in jax.tree.leaves(eqx.filter(model, eqx.is_array))]


def _epochs_saved(directory: Path) -> list[int]:
    """Finished checkpoints (a step being written has a temporary name)."""
    return [int(path.name) for path in directory.glob("*") if path.name.isdigit()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, help="run the job once with this directory")
    args = parser.parse_args()
    if args.checkpoint is not None:
        start = time.time()
        model, history = train(args.checkpoint)
        print(f"resumed at epoch {history.resumed_epoch}; {len(history.train_loss)} epochs, "
              f"final loss {history.train_loss[-1]:.5f}, {time.time() - start:.1f} s")
        np.savez(args.checkpoint.parent / "result.npz", history.train_loss, *_leaves(model))
        return

    with tempfile.TemporaryDirectory(prefix="jaxlean-fit-requeue-") as scratch:
        directory = Path(scratch) / "checkpoints"
        command = [sys.executable, __file__, "--checkpoint", str(directory)]
        print(f"== run 1 (killed once epoch {KILL_AFTER} is saved)", flush=True)
        child = subprocess.Popen(command)
        while child.poll() is None and max(_epochs_saved(directory), default=0) < KILL_AFTER:
            time.sleep(0.01)
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
            child.wait()
            print(f"killed with epochs {sorted(_epochs_saved(directory))} on disk")
        else:
            print("run 1 finished before it could be killed")
        print("== run 2 (requeued: the same command)", flush=True)
        subprocess.run(command, check=True)
        with np.load(Path(scratch) / "result.npz") as saved:
            resumed = [saved[f"arr_{i}"] for i in range(len(saved.files))]

    print("== uninterrupted run, without checkpoints, for comparison", flush=True)
    model, history = train(None)
    for got, want in zip(resumed, [history.train_loss, *_leaves(model)], strict=True):
        np.testing.assert_array_equal(got, want)
    print(f"the requeued run's {EPOCHS} losses and its params equal the uninterrupted "
          "run's, bit for bit")


if __name__ == "__main__":
    main()
