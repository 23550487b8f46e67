"""Benchmark ``fit_progress``: what fit's default progress costs per step.

``fit`` shows progress by calling its one compiled loop in chunks of about
:data:`jaxlean.train._progress.REPORT_SECONDS`, the host reporting between
calls (the program has no host callback, so JAX's persistent cache stores it);
``progress=False`` runs it in one call. Both sides run the same executable, so
the cost is the calls' own: a dispatch, the carry unpacked and packed again
when a call stops inside an epoch, and a few scalars read back.

Time per epoch is measured as the slope of ``fit``'s wall time between ``E``
and ``2E`` epochs, so what does not grow with the run (tracing, loading the
loop from the cache, planning the packing) cancels out. Everything runs in one
child process with a persistent cache in a temporary directory, warmed first,
so no timed call compiles; the sides and both lengths alternate each round.
"""

from __future__ import annotations

import sys
import tempfile
import time

from jaxlean.bench._child import finish, progress, run_child
from jaxlean.bench._measure import Timing
from jaxlean.bench._registry import BenchContext, BenchResult, register

__all__ = ["measure_in_this_process", "run"]

SIZES = {False: {"examples": 4096, "width": 64, "batch": 32, "epochs": 300, "rounds": 5},
         True: {"examples": 1024, "width": 32, "batch": 32, "epochs": 10, "rounds": 2}}
"""Per ``--quick``: an MLP regression, its data and batch, ``E`` and the rounds (at quick
sizes the steps take milliseconds, too few to measure a 2 % difference: no target)."""


def _problem(examples: int, width: int) -> tuple:
    import jax
    import jax.numpy as jnp

    keys = jax.random.split(jax.random.key(0), 4)
    x = jax.random.normal(keys[0], (examples, 8))
    params = {"w1": jax.random.normal(keys[1], (8, width)) / 3, "b1": jnp.zeros(width),
              "w2": jax.random.normal(keys[2], (width, width)) / width ** 0.5,
              "w3": jax.random.normal(keys[3], (width,)) / width ** 0.5}

    def loss(p, batch):
        h = jnp.tanh(batch[0] @ p["w1"] + p["b1"])
        return jnp.mean((jnp.tanh(h @ p["w2"]) @ p["w3"] - batch[1]) ** 2)

    return loss, params, (x, jnp.sin(x).sum(1))


def measure_in_this_process(quick: bool) -> dict:
    """Seconds of fit per side, run length and round (called in the child process)."""
    import jax
    import numpy as np
    import optax

    from jaxlean.compile.cache import enable_compilation_cache
    from jaxlean.train.fit import fit

    size = SIZES[quick]
    loss, params, data = _problem(size["examples"], size["width"])
    lengths = (size["epochs"], 2 * size["epochs"])
    sides = {"progress=False": False, "progress=True": True}
    seconds: dict[str, dict[int, list[float]]] = {s: {e: [] for e in lengths} for s in sides}
    cpu: dict[str, dict[int, list[float]]] = {s: {e: [] for e in lengths} for s in sides}
    results = {}
    with tempfile.TemporaryDirectory() as cache:
        enable_compilation_cache(cache, min_compile_secs=0)
        for round_ in range(size["rounds"] + 1):  # round 0 fills the cache: not timed
            for epochs in lengths:
                for side, shown in sides.items():
                    progress(f"{side}, {epochs} epochs ({round_}/{size['rounds']})")
                    start, start_cpu = time.perf_counter(), time.process_time()
                    trained, history = fit(loss, params, data, optax.adam(1e-3),
                                           epochs=epochs, batch_size=size["batch"],
                                           key=jax.random.key(1), progress=shown)
                    jax.block_until_ready(trained)
                    if round_:
                        seconds[side][epochs].append(time.perf_counter() - start)
                        cpu[side][epochs].append(time.process_time() - start_cpu)
                    results[side, epochs] = (trained, history.train_loss)
    for epochs in lengths:  # the same program: the same result, bit for bit
        (a, la), (b, lb) = (results[side, epochs] for side in sides)
        if not (all(np.array_equal(a[k], b[k]) for k in a) and np.array_equal(la, lb)):
            raise RuntimeError(f"fit with and without progress differ at {epochs} epochs")
    steps = size["examples"] // size["batch"]
    by_length = lambda times: {side: {str(e): v for e, v in by.items()}
                               for side, by in times.items()}
    return {"seconds": by_length(seconds), "cpu_seconds": by_length(cpu),
            **size, "lengths": lengths, "steps_per_epoch": steps}


@register("fit_progress", "fit's default progress (the loop called in chunks, the host "
          "reporting between calls) vs progress=False: time per step")
def run(ctx: BenchContext) -> BenchResult:
    """Run the fit-progress benchmark: time per step with and without the progress bar."""
    measured = run_child("jaxlean.bench.fit_progress", 1, ctx)
    short, long = (str(e) for e in measured["lengths"])
    steps = measured["steps_per_epoch"] * (int(long) - int(short))

    def per_step(times: dict) -> dict[str, Timing]:
        return {side: Timing(tuple((b - a) / steps for a, b in
                                   zip(by[short], by[long], strict=True)))
                for side, by in times.items()}

    wall, cpu = per_step(measured["seconds"]), per_step(measured["cpu_seconds"])
    result = BenchResult("fit_progress", "fit progress overhead: time per step with the default "
                         "progress vs progress=False")
    case = (f"MLP width {measured['width']}, {measured['examples']} examples, batch "
            f"{measured['batch']} ({measured['steps_per_epoch']} steps per epoch)")
    names = {"variant": "fit(progress=True)", "baseline_name": "fit(progress=False)"}
    result.compare(case, "time per step", "s", wall["progress=False"], wall["progress=True"],
                   **names)
    result.compare(case, "CPU time per step (all threads)", "s", cpu["progress=False"],
                   cpu["progress=True"], **names)
    for measure, times in (("time", wall), ("CPU time", cpu)):
        result.target(f"fit progress overhead: {measure} per step with progress / without",
                      times["progress=True"] / times["progress=False"], 1.02, quick=False)
    result.notes.append(
        f"Time per step is the slope of fit's wall (and process CPU) time between {short} and "
        f"{long} epochs (median of {measured['rounds']} rounds, the sides and lengths in turn, "
        "in one child process whose persistent compilation cache was filled first: no timed "
        "call compiles). Both sides run the same executable and give the same params bit for "
        "bit. Wall time is the goal's measure; on a loaded machine (other processes on its "
        "cores) its samples scatter and the CPU time is the steadier of the two.")
    return result


if __name__ == "__main__":
    finish(measure_in_this_process("--quick" in sys.argv[1:]))
