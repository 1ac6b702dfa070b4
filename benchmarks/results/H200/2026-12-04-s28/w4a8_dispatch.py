"""w4a8 dispatch: both paths forced (call1/{peers,top1,heldout}/results.json) against the path
each rule picks, and auto with the new rule (call2/auto/results.json) against the old rule's
path as timed in call 1.  Writes w4a8_dispatch.md / .json beside this file.

    python benchmarks/results/H200/2026-12-04-s28/w4a8_dispatch.py
"""
import json
import math
from pathlib import Path

from fusedmoe import policy

HERE = Path(__file__).parent


def old_rule(m, k, e, h, i):
    """choose_path for w4a8 before this session: FP8's limits."""
    if m > policy.ROUTE_DIRECT_MAX_TOKENS:
        return "grouped"
    if m > 8 and policy.active_experts(m, k, e) * 3 * h * i * 0.5 > policy.ROUTE_DIRECT_MAX_BYTES:
        return "grouped"
    small, large = policy.ROUTE_DIRECT_MAX_SHARING["fp8"]
    limit = small if m <= 8 or m * k <= policy.SMALL_LIMIT_MAX_ROUTES else large
    return "route_direct" if policy.routes_per_active_expert(m, k, e) <= limit else "grouped"


auto = {(r["shape"], r["tokens"]): r["us"] for r in json.loads((HERE / "call2" / "auto" / "results.json").read_text())["results"]}
rows = []
for part in ("peers", "top1", "heldout"):
    res = json.loads((HERE / "call1" / part / "results.json").read_text())
    facts = {}
    for s in res["shapes"]:
        name = s.split(":")[0]
        facts[name] = tuple(int(s.split(f"{key}=")[1].split()[0]) for key in ("E", "k", "H", "I"))
    us = {(r["shape"], r["tokens"], r["impl"]): r["us"] for r in res["results"]}
    for (name, m, impl), t in sorted(us.items()):
        if impl != "route_direct":
            continue
        e, k, h, i = facts[name]
        times = {"route_direct": t, "grouped": us[(name, m, "grouped")]}
        best = min(times.values())
        new, old = policy.choose_path(m, k, e, h, i, "w4a8", 132), old_rule(m, k, e, h, i)
        rows.append(dict(set="held-out" if part == "heldout" else "in sample", shape=name, M=m,
                         routes_per_active_expert=round(policy.routes_per_active_expert(m, k, e), 2),
                         route_direct_us=round(t, 1), grouped_us=round(times["grouped"], 1),
                         old_pick=old, new_pick=new, old_over_best=round(times[old] / best, 3),
                         new_over_best=round(times[new] / best, 3), old_rule_us=round(times[old], 1),
                         auto_us=round(auto[(name, m)], 1)))


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


lines = ["| set | cases | old rule: geomean / worst x best | new rule: geomean / worst x best |", "|---|---|---|---|"]
summary = {}
for s in ("in sample", "held-out"):
    sel = [r for r in rows if r["set"] == s]
    o, n = [r["old_over_best"] for r in sel], [r["new_over_best"] for r in sel]
    summary[s] = dict(cases=len(sel), old_geomean=geomean(o), old_worst=max(o), new_geomean=geomean(n), new_worst=max(n))
    lines.append(f"| {s} | {len(sel)} | {geomean(o):.3f} / {max(o):.2f} | {geomean(n):.3f} / {max(n):.2f} |")
changed = [r for r in rows if r["old_pick"] != r["new_pick"]]
ratio = [r["auto_us"] / r["old_rule_us"] for r in changed]
summary["auto_over_old_where_the_pick_changed"] = dict(cases=len(changed), geomean=geomean(ratio), worst=max(ratio),
                                                     best=min(ratio))
lines += ["", f"auto (call 2) over the old rule's path (call 1) in the {len(changed)} cases whose pick changed: geomean "
          f"{geomean(ratio):.3f}, {min(ratio):.2f} to {max(ratio):.2f}", "",
          "| set | shape | M | routes / active expert | route_direct us | grouped us | old pick | new pick | auto us (call 2) |",
          "|---|---|---|---|---|---|---|---|---|"]
lines += [f"| {r['set']} | {r['shape']} | {r['M']} | {r['routes_per_active_expert']} | {r['route_direct_us']} | "
          f"{r['grouped_us']} | {r['old_pick']} | {r['new_pick']} | {r['auto_us']} |" for r in rows]
(HERE / "w4a8_dispatch.md").write_text("\n".join(lines) + "\n")
(HERE / "w4a8_dispatch.json").write_text(json.dumps(dict(summary=summary, rows=rows), indent=1))
print("\n".join(lines[:6]))
