#!/bin/bash
# The benchmark's own fresh children at depth 16, in turn each round: pyPMM's seed branch
# train(), fit() on main (3d6153a), fit() on branch fitfirst. usage: ab_with_branch.sh ROUNDS
N=${1:-3}
child() {  # tree, side, extra python path
  cd $1
  load=$(cut -d' ' -f1 /proc/loadavg)
  out=$(JAX_PLATFORMS=cpu JAX_ENABLE_COMPILATION_CACHE=false PYTHONPATH=$3$1 /work/main/.venv/bin/python -m jaxlean.bench._pypmm_fresh $2 16 | grep '^{')
  echo "$(date -u +%H:%M:%S) load $load $4 $out"
}
for r in $(seq 1 $N); do
  child /work/wt/fitfirst pypmm /work/pypmm/branch: branch
  child /work/main jaxlean "" main
  child /work/wt/fitfirst jaxlean "" fitfirst
done
