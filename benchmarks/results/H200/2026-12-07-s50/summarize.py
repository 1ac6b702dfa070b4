"""Fiftieth session: the shipped dispatch rule on call 1's four out-of-sample layers (both paths forced).
Writes oos_dispatch.md and oos_dispatch.json beside this file.

    python benchmarks/results/H200/2026-12-07-s50/summarize.py
"""
import json
import math
from pathlib import Path

import fusedmoe.policy as policy
from fusedmoe.shapes import get_shape

HERE = Path(__file__).parent
RUNS = ["call1/k2_e20", "call1/k2_e12", "call1/k3_e24", "call1/k8_e48"]


def main() -> None:
    by_name = {json.load(open(f))["model_type"]: get_shape(str(f)) for f in (HERE / "shapes").glob("*.json")}
    rows = []
    for run in RUNS:
        times: dict = {}
        for r in json.load(open(HERE / run / "results.json"))["results"]:
            if r["impl"] in ("auto", "route_direct", "grouped") and r.get("us"):
                times.setdefault((r["shape"], r["format"], r["tokens"]), {})[r["impl"]] = r["us"]
        for (name, fmt, m), t in sorted(times.items()):
            s = by_name[name]
            pick = policy.choose_path(m, s.top_k, s.num_experts, s.hidden_size, s.intermediate_size, fmt, 132)
            best = min(t["route_direct"], t["grouped"])
            rows.append(dict(run=run, shape=name, format=fmt, M=m, routes=m * s.top_k,
                             routes_per_active_expert=round(policy.routes_per_active_expert(m, s.top_k, s.num_experts), 3),
                             expert_mb=round(3 * s.hidden_size * s.intermediate_size / 1e6, 1),
                             route_direct_us=t["route_direct"], grouped_us=t["grouped"], auto_us=t.get("auto"),
                             pick=pick, rd_over_grouped=round(t["route_direct"] / t["grouped"], 3),
                             pick_over_best=round(t[pick] / best, 3)))
    lines = ["# The shipped dispatch rule out of sample (fiftieth session, call 1)", "",
             "Both paths forced (`fusedmoe bench --paths auto,route_direct,grouped`, CUDA-graph us); `pick` is",
             "`policy.choose_path` (route-direct up to 2.0 routes per active expert with at most 64 routes, 1.8",
             "beyond, for FP8 experts of at most 12 MB up to M=32).", "",
             "| shape | format | M | routes | routes / active expert | expert MB | route_direct | grouped "
             "| rd / grouped | auto | pick | pick / best |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        auto = f"{r['auto_us']:.1f}" if r["auto_us"] else ""
        lines.append(f"| {r['shape']} | {r['format']} | {r['M']} | {r['routes']} | {r['routes_per_active_expert']:.2f} | "
                     f"{r['expert_mb']} | {r['route_direct_us']:.1f} | {r['grouped_us']:.1f} | {r['rd_over_grouped']:.3f} | "
                     f"{auto} | {r['pick']} | {r['pick_over_best']:.3f} |")
    ratios = [r["pick_over_best"] for r in rows]
    if ratios:
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        lines += ["", f"{len(rows)} cases: the picks take {geo:.4f}x the faster path's time (geomean), worst "
                  f"{max(ratios):.3f}x, {sum(x > 1.05 for x in ratios)} past 5%, {sum(x > 1.02 for x in ratios)} past 2%."]
    (HERE / "oos_dispatch.md").write_text("\n".join(lines) + "\n")
    (HERE / "oos_dispatch.json").write_text(json.dumps(rows, indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
