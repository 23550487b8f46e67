"""Medians of an ab_with_branch.sh log: wall and CPU seconds per side, the seed branch / fit
ratios (of medians, and per round)."""
import json
import statistics as st
import sys

rows = [line.split() for line in open(sys.argv[1]) if "{" in line]
sides: dict[str, dict[str, list[float]]] = {}
for row in rows:
    out = json.loads(" ".join(row[4:]))
    sides.setdefault(row[3], {"wall": [], "cpu": []})
    sides[row[3]]["wall"].append(out["first_epoch_s"])
    sides[row[3]]["cpu"].append(out["cpu_s"])
for name, v in sides.items():
    print(f"{name}: n {len(v['wall'])}, median wall {st.median(v['wall']):.2f} s, CPU "
          f"{st.median(v['cpu']):.2f} s; wall {[round(x, 2) for x in v['wall']]}")
branch = sides["branch"]
for name in ("main", "fitfirst"):
    rounds = [b / f for b, f in zip(branch["wall"], sides[name]["wall"])]
    print(f"seed branch / {name}: wall {st.median(branch['wall']) / st.median(sides[name]['wall']):.2f} "
          f"(of medians), per round {[round(x, 2) for x in rounds]}, median {st.median(rounds):.2f}; "
          f"CPU {st.median(branch['cpu']) / st.median(sides[name]['cpu']):.2f}")
print("load", min(float(r[2]) for r in rows), "-", max(float(r[2]) for r in rows))
