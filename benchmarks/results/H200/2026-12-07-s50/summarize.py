"""Fiftieth session: the dispatch rule on the layers of calls 1 and 3 (no rule read from them before
this session; both paths forced), as the
forty-ninth session shipped it (few-routes limit 2.0 up to 64 routes for both FP8 formats) and with
this session's per-format limits (policy.FP8_SMALL_EXPERT_FEW).  Writes oos_dispatch.md and
oos_dispatch.json beside this file.

    python benchmarks/results/H200/2026-12-07-s50/summarize.py
"""
import json
import math
from pathlib import Path

import fusedmoe.policy as policy
from fusedmoe.shapes import get_shape

HERE = Path(__file__).parent
RUNS = ["call1/k2_e20", "call1/k2_e12", "call1/k3_e24", "call1/k8_e48",  # the s50 limits were read from these
        "call3/k6_e40", "call3/k2_e16", "call3/k4_e28"]  # fp8_tensor only, run after: out of the s50 rule's sample
RULES = {"s49": {"fp8_tensor": (64, 2.0), "fp8_block": (64, 2.0)}, "s50": dict(policy.FP8_SMALL_EXPERT_FEW)}


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
    by_name = {json.load(open(f))["model_type"]: get_shape(str(f)) for f in (HERE / "shapes").glob("*.json")}
    rows = []
    for run in RUNS:
        times: dict = {}
        for r in json.load(open(HERE / run / "results.json"))["results"]:
            if r["impl"] in ("auto", "route_direct", "grouped") and r.get("us"):
                times.setdefault((r["shape"], r["format"], r["tokens"]), {})[r["impl"]] = r["us"]
        for (name, fmt, m), t in sorted(times.items()):
            s = by_name[name]
            best = min(t["route_direct"], t["grouped"])
            row = dict(run=run, shape=name, format=fmt, M=m, routes=m * s.top_k,
                       routes_per_active_expert=round(policy.routes_per_active_expert(m, s.top_k, s.num_experts), 3),
                       expert_mb=round(3 * s.hidden_size * s.intermediate_size / 1e6, 1),
                       route_direct_us=t["route_direct"], grouped_us=t["grouped"], auto_us=t.get("auto"),
                       rd_over_grouped=round(t["route_direct"] / t["grouped"], 3))
            for rule in RULES:
                p = pick(s, m, fmt, rule)
                row[f"{rule}_pick"], row[f"{rule}_over_best"] = p, round(t[p] / best, 3)
            rows.append(row)
    lines = ["# The dispatch rule on layers no rule was read from before (fiftieth session, calls 1 and 3; H100, H200 tables)", "",
             "Both paths forced (`fusedmoe bench --paths auto,route_direct,grouped`, CUDA-graph us).  s49: the",
             "forty-ninth session's rule (route-direct for FP8 experts of at most 12 MB up to M=32, to 2.0 routes",
             "per active expert with at most 64 routes, 1.8 beyond), which auto ran in call 1; s50: this session's",
             "per-format few-routes limits (fp8_tensor 2.2 up to 80 routes, fp8_block as s49), read from call 1",
             "and run by auto in call 3, whose layers are out of its sample.", "",
             "| shape | format | M | routes | routes / active expert | expert MB | route_direct | grouped "
             "| rd / grouped | auto | s49 pick (x best) | s50 pick (x best) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        auto = f"{r['auto_us']:.1f}" if r["auto_us"] else ""
        lines.append(f"| {r['shape']} | {r['format']} | {r['M']} | {r['routes']} | {r['routes_per_active_expert']:.2f} | "
                     f"{r['expert_mb']} | {r['route_direct_us']:.1f} | {r['grouped_us']:.1f} | {r['rd_over_grouped']:.3f} | "
                     f"{auto} | {r['s49_pick']} ({r['s49_over_best']:.3f}) | {r['s50_pick']} ({r['s50_over_best']:.3f}) |")
    lines.append("")
    for call in ("call1", "call3"):
        for rule in RULES:
            ratios = [r[f"{rule}_over_best"] for r in rows if r["run"].startswith(call)]
            geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
            lines.append(f"- {call}, {rule} rule: over {len(ratios)} cases the picks take {geo:.4f}x the faster path's "
                         f"time (geomean), worst {max(ratios):.3f}x, {sum(x > 1.05 for x in ratios)} past 5%, "
                         f"{sum(x > 1.02 for x in ratios)} past 2%.")
    (HERE / "oos_dispatch.md").write_text("\n".join(lines) + "\n")
    (HERE / "oos_dispatch.json").write_text(json.dumps(rows, indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
