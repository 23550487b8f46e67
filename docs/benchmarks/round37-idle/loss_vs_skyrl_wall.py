"""Only `jaxlean bench memory`'s wall-time part (loss+grad T=2048 H=512 V=32000), full size."""
import os, platform, time
from jaxlean.bench._registry import BenchContext, BenchResult
from jaxlean.bench import memory

ctx = BenchContext(quick=False, step=lambda m: print("step:", m, flush=True))
result = BenchResult("memory", "wall part only")
print("load before", os.getloadavg(), time.strftime("%H:%M:%S"))
print(memory._wall_part(ctx, result))
for c in result.comparisons:
    print(c)
for t in result.targets:
    print(t)
print("load after", os.getloadavg(), time.strftime("%H:%M:%S"))
