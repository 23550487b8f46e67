"""A training job that is killed mid-run and requeued: it resumes where it stopped.

The requeue recipe (SLURM ``--requeue``, a preemptible VM, a crash): run the same
command again. The job finds its latest checkpoint and continues from it. The
restarted process reads the checkpoint in the background while it compiles its
step from the state's shapes (``jax.eval_shape``: nothing is computed), and the
persistent compilation cache turns that compile into a lookup.

Checkpoints are written in the background: "saving checkpoint" is printed when a
save starts, and "checkpoint of step N saved" once it is committed on disk
(``Checkpointer.newly_saved``), so a job killed after that line resumes at step N
(or at a later step saved meanwhile), never earlier.

Run without arguments, this script plays both runs: it starts itself once with
``--die-at 12`` (the process kills itself after step 12, as a preemption would,
whatever checkpoint write is in flight), then again without it, and prints
where the second run resumed and how long it took to its first step.
``--die-after-save`` kills the process right after its first "saved" line instead.
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

START = time.time()


def _die(reason: str) -> None:
    print(reason, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


def train(workdir: Path, steps: int, die_at: int | None, die_after_save: bool = False) -> None:
    """Train an MLP for ``steps`` steps, checkpointing every 5, resuming if possible."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import optax

    from jaxlean import cache_stats, enable_compilation_cache, packed
    from jaxlean.train.checkpoint import Checkpointer
    from jaxlean.train.step import make_train_step

    enable_compilation_cache(workdir / "xla", min_compile_secs=0)
    tx = packed(optax.adam(3e-3))

    def loss(model, x, y):
        return jnp.mean((jax.vmap(model)(x) - y) ** 2)

    def initial_state() -> dict:
        model = eqx.nn.MLP(8, 1, 64, 3, key=jax.random.key(0))
        return {"model": model, "opt_state": tx.init(eqx.filter(model, eqx.is_array)),
                "data_key": jax.random.key(1)}

    step = make_train_step(loss, tx)
    with Checkpointer(workdir / "checkpoints", keep=2) as checkpoints:
        if checkpoints.latest_step() is None:
            state = {**initial_state(), "step": 0}
        else:
            shapes = {**eqx.filter_eval_shape(initial_state), "step": 0}
            pending = checkpoints.restore_in_background(shapes)
            step.compile(shapes["model"], shapes["opt_state"],  # while the checkpoint is read
                         jax.ShapeDtypeStruct((32, 8), jnp.float32),
                         jax.ShapeDtypeStruct((32, 1), jnp.float32))
            state = pending.result()
            print(f"resumed at step {state['step']} "
                  f"(restored {time.time() - START:.2f} s after process start)")
        model, opt_state, key = state["model"], state["opt_state"], state["data_key"]
        for i in range(state["step"] + 1, steps + 1):
            key, sub = jax.random.split(key)
            x = jax.random.normal(sub, (32, 8))
            model, opt_state, value = step(model, opt_state, x, jnp.sin(x).sum(1, keepdims=True))
            if i == state["step"] + 1:
                print(f"first step done {time.time() - START:.2f} s after process start "
                      f"({cache_stats().summary()})")
            for saved in checkpoints.newly_saved():  # committed since the last step
                print(f"checkpoint of step {saved} saved", flush=True)
                if die_after_save:
                    _die(f"step {i}: killed")
            if i % 5 == 0:
                checkpoints.save(i, {"model": model, "opt_state": opt_state, "data_key": key,
                                     "step": i})
                print(f"step {i}: loss {float(value):.4f}, saving checkpoint")
            if i == die_at:
                for saved in checkpoints.newly_saved():
                    print(f"checkpoint of step {saved} saved")
                _die(f"step {i}: killed")
        checkpoints.wait()
        for saved in checkpoints.newly_saved():
            print(f"checkpoint of step {saved} saved")
    print(f"finished {steps} steps, final loss {float(value):.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, help="checkpoints and caches (default: play "
                                                     "both runs in a temporary directory)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--die-at", type=int, help="kill this process after that step")
    parser.add_argument("--die-after-save", action="store_true",
                        help="kill this process right after it reports a checkpoint saved")
    args = parser.parse_args()
    if args.workdir is not None:
        train(args.workdir, args.steps, args.die_at, args.die_after_save)
        return
    with tempfile.TemporaryDirectory(prefix="jaxlean-restart-") as scratch:
        command = [sys.executable, __file__, "--workdir", scratch, "--steps", str(args.steps)]
        print("== run 1 (preempted)", flush=True)
        first = subprocess.run([*command, "--die-at", "12"], check=False)
        print(f"run 1 ended with {signal.Signals(-first.returncode).name}"
              if first.returncode < 0 else f"run 1 exited with {first.returncode}")
        print("== run 2 (requeued: the same command)", flush=True)
        subprocess.run(command, check=True)


if __name__ == "__main__":
    main()
