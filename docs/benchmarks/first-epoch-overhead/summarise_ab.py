import sys, json, statistics as st
rows = [l.split() for l in open(sys.argv[1]) if "{" in l]
d = {}
for r in rows:
    tree = r[3]; j = json.loads(" ".join(r[4:]))
    d.setdefault(tree, {"wall": [], "cpu": []})
    d[tree]["wall"].append(j.get("first_epoch_s", j.get("compile_s"))); d[tree]["cpu"].append(j["cpu_s"])
loads = [float(r[2]) for r in rows]
for t, v in d.items():
    print(t, "n", len(v["cpu"]), "median wall %.2f cpu %.2f" % (st.median(v["wall"]), st.median(v["cpu"])), "cpu", [round(x, 2) for x in v["cpu"]])
ks = list(d)
if len(ks) == 2:
    pr = [b / a for a, b in zip(d[ks[0]]["cpu"], d[ks[1]]["cpu"])]
    print("per-round cpu ratio %s/%s:" % (ks[1], ks[0]), [round(x, 3) for x in pr], "median", round(st.median(pr), 3))
print("load range", min(loads), max(loads))
