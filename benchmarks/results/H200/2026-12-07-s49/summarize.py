"""Forty-ninth session: the dispatch tables of calls 1-3 and 6 (both paths forced) under three rules:
before a44a510, with the FP8 small-expert limit of 1.8 alone (a44a510), and with its few-routes limit
too (as shipped).  Writes dispatch.md and dispatch.json beside this file.

    python benchmarks/results/H200/2026-12-07-s49/summarize.py
"""
import glob
import json
import math
from pathlib import Path

import fusedmoe.policy as policy
from fusedmoe.shapes import PRESETS, get_shape

HERE = Path(__file__).parent
ROOT = HERE.parents[3]
RUNS = ["call1/decode", "call1/m16_512", "call2/heldout", "call2/top1", "call2/qwen235_tp4", "call2/peers_m24",
        "call3/peers", "call3/others", "call6/k2k4", "call6/k8"]
RULES = {"old": dict(FP8_SMALL_EXPERT_BYTES=0), "limit_1_8": dict(FP8_SMALL_EXPERT_FEW_ROUTES=0), "shipped": {}}


def shapes() -> dict:
    """Shape by the name the bench wrote (presets, held-out and top-1 configs)."""
    out = dict(PRESETS)
    for f in (glob.glob(str(ROOT / "benchmarks/heldout/*.json")) + glob.glob(str(ROOT / "benchmarks/top1/*.json"))
              + glob.glob(str(HERE / "shapes/*.json"))):
        s = get_shape(f)
        out[s.name] = s
        out[json.load(open(f)).get("model_type")] = s
    return out


def pick(shape, m: int, fmt: str, rule: str) -> str:
    """The path choose_path takes under ``rule`` (RULES: policy constants set for the call)."""
    saved = {k: getattr(policy, k) for k in RULES[rule]}
    for k, v in RULES[rule].items():
        setattr(policy, k, v)
    policy.choose_path.cache_clear()
    try:
        return policy.choose_path(m, shape.top_k, shape.num_experts, shape.hidden_size, shape.intermediate_size,
                                  fmt, 132)
    finally:
        for k, v in saved.items():
            setattr(policy, k, v)
        policy.choose_path.cache_clear()


def main() -> None:
    by_name = shapes()
    rows = []
    for run in RUNS:
        times: dict = {}
        for r in json.load(open(HERE / run / "results.json"))["results"]:
            if r["impl"] in ("route_direct", "grouped") and r.get("us"):
                times.setdefault((r["shape"], r["format"], r["tokens"]), {})[r["impl"]] = r["us"]
        for (name, fmt, m), t in sorted(times.items()):
            if len(t) < 2:
                continue
            s = by_name[name]
            best = min(t.values())
            row = dict(run=run, shape=name, format=fmt, M=m, routes=m * s.top_k,
                       routes_per_active_expert=round(policy.routes_per_active_expert(m, s.top_k, s.num_experts), 3),
                       expert_mb=round(3 * s.hidden_size * s.intermediate_size / 1e6, 1),
                       route_direct_us=t["route_direct"], grouped_us=t["grouped"])
            for rule in RULES:
                p = pick(s, m, fmt, rule)
                row[f"{rule}_pick"], row[f"{rule}_over_best"] = p, round(t[p] / best, 3)
            rows.append(row)
    lines = ["# Dispatch under three rules (forty-ninth session, H100, H200 tables)", "",
             "Both paths forced (`fusedmoe bench --paths auto,route_direct,grouped`, CUDA-graph us).  Rules: old,",
             "the limits before a44a510; 1.8, the FP8 small-expert limit alone (a44a510); shipped, with its",
             "few-routes limit (2.0 up to 64 routes).  Rows where a rule's pick is more than 2% off the",
             "faster path, then the totals per run (a case timed in two runs counts in each).", "",
             "| run | shape | format | M | routes | routes / active expert | expert MB | route_direct | grouped "
             "| old (x best) | 1.8 (x best) | shipped (x best) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if max(r[f"{rule}_over_best"] for rule in RULES) > 1.02:
            lines.append(f"| {r['run']} | {r['shape']} | {r['format']} | {r['M']} | {r['routes']} | "
                         f"{r['routes_per_active_expert']:.2f} | {r['expert_mb']} | {r['route_direct_us']:.1f} | "
                         f"{r['grouped_us']:.1f} | " + " | ".join(
                             f"{r[f'{rule}_pick']} ({r[f'{rule}_over_best']:.3f})" for rule in RULES) + " |")
    lines += ["", "| run | cases | " + " | ".join(f"{rule}: geomean x best | {rule}: max | {rule}: > 5%" for rule in RULES)
              + " |", "|---|---|" + "---|" * (3 * len(RULES))]
    for run in RUNS + ["all"]:
        sel = [r for r in rows if run in ("all", r["run"])]
        cells = []
        for rule in RULES:
            v = [r[f"{rule}_over_best"] for r in sel]
            cells += [f"{math.exp(sum(map(math.log, v)) / len(v)):.4f}", f"{max(v):.3f}", str(sum(x > 1.05 for x in v))]
        lines.append(f"| {run} | {len(sel)} | " + " | ".join(cells) + " |")
    (HERE / "dispatch.md").write_text("\n".join(lines) + "\n")
    (HERE / "dispatch.json").write_text(json.dumps(rows, indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
