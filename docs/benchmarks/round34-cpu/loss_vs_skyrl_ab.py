"""Round 34 (issue 53): jaxlean's cross_entropy loss+grad against SkyRL tx's chunked
log-probs (lax.map over 1024-token chunks), alternating in one process, wall and CPU seconds.

The two sides are the `memory` benchmark's own functions (`jaxlean.bench.memory`), at its
full wall-time size (T=2048, H=512, V=32000, f32). BLOCK_MIB lists values of
`jaxlean.loss.onepass.ONEPASS_BLOCK_BYTES` (MiB) to time beside the default (64); ROUNDS
the alternating rounds. Run from a checkout:

    BLOCK_MIB=64,16 ROUNDS=7 PYTHONPATH=. python docs/benchmarks/round34-cpu/loss_vs_skyrl_ab.py
"""
import os
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxlean.loss.onepass as onepass
from jaxlean.bench import memory
from jaxlean.bench._measure import aot_compile

T, H, V = (int(x) for x in os.environ.get("SIZE", "2048,512,32000").split(","))
variants = [int(v) for v in os.environ.get("BLOCK_MIB", "64").split(",")]
rounds = int(os.environ.get("ROUNDS", "9"))
k = jax.random.split(jax.random.key(0), 3)
h = jax.random.normal(k[0], (T, H))
w = jax.random.normal(k[1], (H, V)) / np.sqrt(H)
t = jax.random.randint(k[2], (T,), 0, V)
grad = lambda f: jax.value_and_grad(f, argnums=(0, 1))
calls = {"skyrl": aot_compile(grad(memory.skyrl_default_loss), h, w, t).executable}
for mib in variants:
    onepass.ONEPASS_BLOCK_BYTES = mib * 2**20
    calls[f"jaxlean{mib}"] = aot_compile(grad(memory.jaxlean_loss), h, w, t).executable
ref = calls["skyrl"](h, w, t)
for name, call in calls.items():  # the sides compute the same gradients
    out = call(h, w, t)
    err = max(float(jnp.max(jnp.abs(a - b)) / jnp.max(jnp.abs(a))) for a, b in zip(ref[1], out[1]))
    assert err < 1e-4, (name, err)
print("load start", os.getloadavg(), flush=True)
walls = {n: [] for n in calls}
cpus = {n: [] for n in calls}
for _ in range(rounds):
    for name, call in calls.items():
        jax.block_until_ready(call(h, w, t))
        t0, c0 = time.perf_counter(), time.process_time()
        jax.block_until_ready(call(h, w, t))
        walls[name].append(time.perf_counter() - t0)
        cpus[name].append(time.process_time() - c0)
print("load end", os.getloadavg())
for label, samples in (("wall", walls), ("CPU", cpus)):
    for name, s in samples.items():
        ratios = [a / b for a, b in zip(s, samples["skyrl"])]
        print(f"{label} {name:12s} median {statistics.median(s):8.3f} s  ratio/skyrl median "
              f"{statistics.median(ratios):.3f} (per round {min(ratios):.3f}-{max(ratios):.3f})")
