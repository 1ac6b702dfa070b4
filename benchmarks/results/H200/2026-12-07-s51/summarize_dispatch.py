"""Fifty-first session, call 3: fp8_block's picks on the fiftieth session's seven layers (both paths
forced, route-direct with the scale-row GEMVs) under the shipped few-routes limit (fp8_block 2.0 up
to 64 routes) and under fp8_tensor's (2.2 up to 80).  Writes dispatch.md and dispatch.json beside
this file.

    python benchmarks/results/H200/2026-12-07-s51/summarize_dispatch.py
"""
import json
import math
from pathlib import Path

import fusedmoe.policy as policy
from fusedmoe.shapes import get_shape

HERE = Path(__file__).parent
SHAPES = HERE.parent / "2026-12-07-s50" / "shapes"
RUNS = ["k2_e20", "k2_e12", "k3_e24", "k8_e48", "k6_e40", "k2_e16", "k4_e28"]
RULES = {"shipped": dict(policy.FP8_SMALL_EXPERT_FEW),
         "tensor_limit": dict(policy.FP8_SMALL_EXPERT_FEW, fp8_block=policy.FP8_SMALL_EXPERT_FEW["fp8_tensor"])}


def pick(s, m: int, fmt: str, rule: str) -> str:
    """The path choose_path takes with the few-routes limits of ``rule``."""
    saved = policy.FP8_SMALL_EXPERT_FEW
    policy.FP8_SMALL_EXPERT_FEW = RULES[rule]
    policy.choose_path.cache_clear()
    try:
        return policy.choose_path(m, s.top_k, s.num_experts, s.hidden_size, s.intermediate_size, fmt, 132)
    finally:
        policy.FP8_SMALL_EXPERT_FEW = saved
        policy.choose_path.cache_clear()


def main() -> None:
    by_name = {json.load(open(f))["model_type"]: get_shape(str(f)) for f in SHAPES.glob("*.json")}
    rows = []
    for run in RUNS:
        times: dict = {}
        for r in json.load(open(HERE / "call3" / run / "results.json"))["results"]:
            if r["impl"] in ("auto", "route_direct", "grouped") and r.get("us"):
                times.setdefault((r["shape"], r["format"], r["tokens"]), {})[r["impl"]] = r["us"]
        for (name, fmt, m), t in sorted(times.items()):
            s = by_name[name]
            best = min(t["route_direct"], t["grouped"])
            row = dict(shape=name, format=fmt, M=m, routes=m * s.top_k,
                       routes_per_active_expert=round(policy.routes_per_active_expert(m, s.top_k, s.num_experts), 3),
                       route_direct_us=round(t["route_direct"], 2), grouped_us=round(t["grouped"], 2),
                       auto_us=round(t["auto"], 2) if t.get("auto") else None,
                       rd_over_grouped=round(t["route_direct"] / t["grouped"], 3))
            for rule in RULES:
                p = pick(s, m, fmt, rule)
                row[f"{rule}_pick"], row[f"{rule}_over_best"] = p, round(t[p] / best, 3)
            rows.append(row)
    lines = ["# fp8_block's few-routes limit with the scale-row GEMVs (fifty-first session, call 3; H100, H200 tables)", "",
             "Both paths forced (`fusedmoe bench --paths auto,route_direct,grouped`, CUDA-graph us).  shipped:",
             "fp8_block route-direct to 2.0 routes per active expert with at most 64 routes; tensor_limit:",
             "fp8_tensor's 2.2 with at most 80.", "",
             "| shape | M | routes | routes / active expert | route_direct | grouped | rd / grouped "
             "| shipped pick | / best | tensor_limit pick | / best |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['shape']} | {r['M']} | {r['routes']} | {r['routes_per_active_expert']} | "
                     f"{r['route_direct_us']} | {r['grouped_us']} | {r['rd_over_grouped']} | {r['shipped_pick']} | "
                     f"{r['shipped_over_best']} | {r['tensor_limit_pick']} | {r['tensor_limit_over_best']} |")
    lines.append("")
    for rule in RULES:
        v = [r[f"{rule}_over_best"] for r in rows]
        lines.append(f"- {rule}: geomean {math.exp(sum(map(math.log, v)) / len(v)):.4f}x the faster path, "
                     f"worst {max(v)}, {sum(x > 1.05 for x in v)} of {len(v)} past 5%")
    (HERE / "dispatch.md").write_text("\n".join(lines) + "\n")
    (HERE / "dispatch.json").write_text(json.dumps(rows, indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
