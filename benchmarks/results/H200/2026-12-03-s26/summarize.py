"""A/B of PDL over the grouped launches (26th session): summary.md / summary.json from the two
calls' bench runs (call1: new then old; call2: old then new) and the plan runs of call 2.

    python benchmarks/results/H200/2026-12-03-s26/summarize.py
"""
import json
import math
from pathlib import Path

HERE = Path(__file__).parent


def bench(path):
    rows = json.loads(path.read_text())["results"]
    return {(r["shape"], r["format"], r["tokens"]): (r["us"], r["chosen_path"]) for r in rows if r["us"]}


def geomean(v):
    return math.exp(sum(map(math.log, v)) / len(v))


runs = {f"{c}_{t}": bench(HERE / c / t / "results.json") for c in ("call1", "call2") for t in ("old", "new")}
cases = []
for key, (_, path) in sorted(runs["call1_new"].items()):
    old = [runs[f"{c}_old"][key][0] for c in ("call1", "call2")]
    new = [runs[f"{c}_new"][key][0] for c in ("call1", "call2")]
    cases.append(dict(shape=key[0], format=key[1], tokens=key[2], path=path, old_us=old, new_us=new,
                      ratio=math.sqrt(new[0] * new[1] / (old[0] * old[1]))))
plan_old = {(r["routes"], r["experts"]): r for r in json.loads((HERE / "call2/plan_old/plan.json").read_text())["rows"]}
plan_new = {(r["routes"], r["experts"]): r for r in json.loads((HERE / "call2/plan_new/plan.json").read_text())["rows"]}
plan = [dict(routes=k[0], experts=k[1], kernel=plan_new[k]["kernel"], old_us=plan_old[k]["us"], new_us=plan_new[k]["us"])
        for k in sorted(plan_new, key=lambda k: (k[1], k[0]))]

lines = ["| shape | format | M | path | old us (call 1, 2) | new us (call 1, 2) | new / old |", "|---|---|---|---|---|---|---|"]
for c in cases:
    lines.append(f"| {c['shape']} | {c['format']} | {c['tokens']} | {c['path']} | {c['old_us'][0]:.1f}, {c['old_us'][1]:.1f} "
                 f"| {c['new_us'][0]:.1f}, {c['new_us'][1]:.1f} | {c['ratio']:.3f} |")
by_path = {p: [c["ratio"] for c in cases if c["path"] == p] for p in ("grouped", "route_direct")}
lines.append("")
for p, v in by_path.items():
    lines.append(f"- {p}: {len(v)} cases, geomean new/old {geomean(v):.4f}, {sum(r < 1 for r in v)} faster")
allr = [c["ratio"] for c in cases]
lines.append(f"- all: {len(allr)} cases, geomean {geomean(allr):.4f}, {sum(r < 1 for r in allr)} faster")
lines += ["", "| routes | experts | kernel | old us | new us | new / old |", "|---|---|---|---|---|---|"]
lines += [f"| {p['routes']} | {p['experts']} | {p['kernel']} | {p['old_us']:.2f} | {p['new_us']:.2f} | "
          f"{p['new_us'] / p['old_us']:.3f} |" for p in plan]
(HERE / "summary.md").write_text("\n".join(lines) + "\n")
(HERE / "summary.json").write_text(json.dumps(dict(cases=cases, plan=plan), indent=1) + "\n")
print("\n".join(lines[-30:]))
