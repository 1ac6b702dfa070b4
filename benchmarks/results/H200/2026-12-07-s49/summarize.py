"""Forty-ninth session: the dispatch tables of calls 1-3 (both paths forced) under the rule before
and after a44a510 (FP8 small-expert limit).  Writes dispatch.md and dispatch.json beside this file.

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
        "call3/peers", "call3/others"]


def shapes() -> dict:
    """Shape by the name the bench wrote (presets, held-out and top-1 configs)."""
    out = dict(PRESETS)
    for f in glob.glob(str(ROOT / "benchmarks/heldout/*.json")) + glob.glob(str(ROOT / "benchmarks/top1/*.json")):
        s = get_shape(f)
        out[s.name] = s
        out[json.load(open(f)).get("model_type")] = s
    return out


def pick(shape, m: int, fmt: str, small_expert_rule: bool) -> str:
    """The path choose_path takes, with the FP8 small-expert limit on or off."""
    saved = policy.FP8_SMALL_EXPERT_BYTES
    policy.FP8_SMALL_EXPERT_BYTES = saved if small_expert_rule else 0
    policy.choose_path.cache_clear()
    try:
        return policy.choose_path(m, shape.top_k, shape.num_experts, shape.hidden_size, shape.intermediate_size,
                                  fmt, 132)
    finally:
        policy.FP8_SMALL_EXPERT_BYTES = saved
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
            old, new = pick(s, m, fmt, False), pick(s, m, fmt, True)
            rows.append(dict(run=run, shape=name, format=fmt, M=m,
                             routes_per_active_expert=round(policy.routes_per_active_expert(m, s.top_k, s.num_experts), 3),
                             expert_mb=round(3 * s.hidden_size * s.intermediate_size / 1e6, 1),
                             route_direct_us=t["route_direct"], grouped_us=t["grouped"],
                             old_pick=old, old_over_best=round(t[old] / best, 3),
                             new_pick=new, new_over_best=round(t[new] / best, 3)))
    lines = ["# Dispatch before and after the FP8 small-expert limit (forty-ninth session, H100, H200 tables)", "",
             "Both paths forced (`fusedmoe bench --paths auto,route_direct,grouped`, CUDA-graph us); old: the",
             "limits before a44a510, new: with `FP8_SMALL_EXPERT_*`.  Rows where either rule's pick is",
             "more than 2% off the faster path, then the totals per run.", "",
             "| run | shape | format | M | routes / active expert | expert MB | route_direct | grouped | old pick (x best) | new pick (x best) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if max(r["old_over_best"], r["new_over_best"]) > 1.02:
            lines.append(f"| {r['run']} | {r['shape']} | {r['format']} | {r['M']} | {r['routes_per_active_expert']:.2f} | "
                         f"{r['expert_mb']} | {r['route_direct_us']:.1f} | {r['grouped_us']:.1f} | "
                         f"{r['old_pick']} ({r['old_over_best']:.3f}) | {r['new_pick']} ({r['new_over_best']:.3f}) |")
    lines += ["", "| run | cases | old: geomean x best | old: max | old: > 5% | new: geomean x best | new: max | new: > 5% |",
              "|---|---|---|---|---|---|---|---|"]
    for run in RUNS + ["all"]:
        sel = [r for r in rows if run in ("all", r["run"])]
        if not sel:
            continue
        cells = []
        for k in ("old_over_best", "new_over_best"):
            v = [r[k] for r in sel]
            cells += [f"{math.exp(sum(map(math.log, v)) / len(v)):.4f}", f"{max(v):.3f}", str(sum(x > 1.05 for x in v))]
        lines.append(f"| {run} | {len(sel)} | " + " | ".join(cells) + " |")
    (HERE / "dispatch.md").write_text("\n".join(lines) + "\n")
    (HERE / "dispatch.json").write_text(json.dumps(rows, indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
