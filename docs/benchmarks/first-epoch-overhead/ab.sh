#!/bin/bash
# A/B of fit's first epoch (the bench's own fresh child), main vs this worktree, alternating.
# usage: ab.sh ROUNDS [side] ; prints one line per process
N=${1:-3}; SIDE=${2:-jaxlean}
for r in $(seq 1 $N); do
  for tree in /work/main /work/wt/fitfirst; do
    cd $tree
    load=$(cut -d' ' -f1 /proc/loadavg)
    out=$(JAX_PLATFORMS=cpu JAX_ENABLE_COMPILATION_CACHE=false PYTHONPATH=$tree /work/main/.venv/bin/python -m jaxlean.bench._pypmm_fresh $SIDE 16 | grep '^{')
    echo "$(date -u +%H:%M:%S) load $load $(basename $tree) $out"
  done
done
