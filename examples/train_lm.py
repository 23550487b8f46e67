"""Train a small Llama-style model on 1 device, N devices, or N processes: the same code.

Single device (the default)::

    python examples/train_lm.py

One host, 8 devices, parameters split 4 ways (FSDP) and data 2 ways (on CPU,
``--devices 8`` makes 8 host devices)::

    python examples/train_lm.py --devices 8 --data 2 --fsdp 4

Tensor (Megatron) parallelism splits each layer's heads and MLP features too; the
heads and kv-heads must be divisible by it::

    python examples/train_lm.py --devices 8 --data 2 --fsdp 1 --tensor 4

Context (sequence) parallelism splits each sequence over a ``seq`` axis; flash
attention then attends the whole sequence by exchanging heads for tokens (all-to-all)::

    python examples/train_lm.py --devices 8 --fsdp 2 --seq 4 --length 256 --attention flash

Several processes (hosts): start one copy per process with the coordinator's
address, the process count and each one's index (flags or ``JAXLEAN_COORDINATOR``,
``JAXLEAN_NUM_PROCESSES``, ``JAXLEAN_PROCESS_ID``; under SLURM ``srun`` they are
detected). The mesh then spans every process's devices::

    python examples/train_lm.py --devices 4 --fsdp 8 --coordinator 10.0.0.1:1234 \
        --num-processes 2 --process-id 0      # and --process-id 1 on the other host

Every process prints ``result: {json}`` at the end (losses and compilation-cache
counts) so runs in different layouts can be compared.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from functools import partial


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    layout = parser.add_argument_group("devices and processes")
    layout.add_argument("--devices", type=int, help="CPU only: number of host devices to create")
    layout.add_argument("--data", type=int, default=1, help="data-parallel axis size (-1: rest)")
    layout.add_argument("--fsdp", type=int, default=-1, help="FSDP axis size (-1: rest)")
    layout.add_argument("--tensor", type=int, default=1,
                        help="tensor-parallel axis size (heads and MLP features split)")
    layout.add_argument("--seq", type=int, default=1,
                        help="context-parallel axis size (each sequence split; with flash "
                             "attention, attention exchanges heads for tokens by all-to-all)")
    layout.add_argument("--coordinator", help="host:port of process 0 (multi-process runs)")
    layout.add_argument("--num-processes", type=int)
    layout.add_argument("--process-id", type=int)
    layout.add_argument("--cache", help="persistent compilation cache directory")
    model = parser.add_argument_group("model and training")
    model.add_argument("--layers", type=int, default=4)
    model.add_argument("--hidden", type=int, default=128)
    model.add_argument("--heads", type=int, default=4)
    model.add_argument("--kv-heads", type=int, default=2)
    model.add_argument("--vocab", type=int, default=512)
    model.add_argument("--batch", type=int, default=16, help="global batch (examples per step)")
    model.add_argument("--length", type=int, default=64)
    model.add_argument("--steps", type=int, default=30)
    model.add_argument("--lr", type=float, default=1e-2)
    model.add_argument("--remat", default="full", help="per-layer remat: none, full, dots, ...")
    model.add_argument("--attention", default="auto", help="auto, dense, flash or cudnn")
    model.add_argument("--vocab-parallel", action="store_true",
                       help="loss with the head split over the fsdp axis's vocabulary")
    model.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def start(args: argparse.Namespace):
    """Make the CPU devices and join the processes as ``args`` say; once per process, before
    :func:`train`. Returns :class:`jaxlean.parallel.distributed.ProcessInfo`."""
    if args.devices:  # must happen before JAX starts its CPU backend
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   f" --xla_force_host_platform_device_count={args.devices}")
        from jaxlean.compile.cpu_collectives import keep_collectives_in_order

        keep_collectives_in_order()  # a step loaded from --cache runs its collectives in order

    from jaxlean import enable_compilation_cache
    from jaxlean.parallel.distributed import initialize

    info = initialize(args.coordinator, args.num_processes, args.process_id)
    if args.cache:
        enable_compilation_cache(args.cache, min_compile_secs=0)
    return info


def train(args: argparse.Namespace, info) -> dict:
    """Train as ``args`` say over the mesh they give (after :func:`start`); print the
    ``result:`` line and return it. A process may train several layouts, one after another
    (its cache counts add up)."""
    import jax
    import optax
    from jax.sharding import PartitionSpec as P

    from jaxlean import cache_stats, packed
    from jaxlean.loss.chunked import VocabParallel
    from jaxlean.models.lm.data import synthetic_batch
    from jaxlean.models.lm.rules import transformer_rules
    from jaxlean.models.lm.transformer import Transformer, TransformerConfig
    from jaxlean.models.lm.transformer import loss as lm_loss
    from jaxlean.parallel.mesh import (
        DATA,
        FSDP,
        init_sharded,
        make_mesh,
        shard_batch,
    )
    from jaxlean.train.step import make_train_step

    leader = info.process_id == 0
    mesh = make_mesh(data=args.data, fsdp=args.fsdp, tensor=args.tensor, seq=args.seq)
    if leader:
        print(info, "| mesh", dict(mesh.shape), flush=True)

    config = TransformerConfig(vocab_size=args.vocab, hidden_size=args.hidden,
                               intermediate_size=2 * args.hidden, num_layers=args.layers,
                               num_heads=args.heads, num_kv_heads=args.kv_heads,
                               remat=None if args.remat == "none" else args.remat,
                               attention=args.attention)
    rules = (*transformer_rules(), (r".*", P()))
    model = init_sharded(lambda: Transformer(config, key=jax.random.key(args.seed)), mesh, rules)
    tx = packed(optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(args.lr)))
    opt_state = tx.init(model)
    vocab_parallel = VocabParallel(mesh, FSDP, DATA) if args.vocab_parallel else None
    step = make_train_step(partial(lm_loss, vocab_parallel=vocab_parallel), tx)

    losses = []
    began = time.perf_counter()
    # traced under the mesh, the layers keep the tensor-parallel layout and flash attention
    # splits the sequence (context parallel); no-ops at tensor 1 and seq 1
    with jax.set_mesh(mesh) if args.tensor > 1 or args.seq > 1 else contextlib.nullcontext():
        for i in range(args.steps):
            batch = synthetic_batch(i, args.batch, args.length, args.vocab, args.seed)
            tokens, targets = shard_batch(batch, mesh)
            model, opt_state, loss = step(model, opt_state, tokens, targets=targets)
            losses.append(float(loss))
            if leader and (i % 5 == 0 or i == args.steps - 1):
                print(f"step {i:4d}  loss {losses[-1]:.4f}  "
                      f"({time.perf_counter() - began:.1f} s)", flush=True)
    stats = cache_stats()
    result = {"process": info.process_id, "processes": info.num_processes,
              "devices": info.global_devices, "mesh": dict(mesh.shape), "losses": losses,
              "cache": {"hits": stats.hits, "misses": stats.misses, "writes": stats.writes,
                        "missed": sorted(name for name, f in stats.functions.items() if f.misses),
                        "step_hits": getattr(stats.functions.get("jit(step)"), "hits", 0)}}
    print("result:", json.dumps(result), flush=True)
    return result


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    return train(args, start(args))


if __name__ == "__main__":
    main(sys.argv[1:])
