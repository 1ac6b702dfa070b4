"""Summaries of the thirtieth session's calls (here, no GPU): summary.md and summary.json.

    python benchmarks/results/H200/2026-12-05-s30/summarize.py
"""

import glob
import json
import math
import os
from pathlib import Path

HERE = Path(__file__).parent


def gm(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def times(folder):
    doc = json.loads((HERE / folder / "results.json").read_text())
    return {(r["shape"], r["format"], r["tokens"]): r for r in doc["results"] if r["status"] == "ok"}


def ab(base_runs, new_runs):
    """Per case (geomean of each side's runs where present): new / base, and the times."""
    base = [times(f) for f in base_runs]
    new = [times(f) for f in new_runs]
    keys = sorted(set.intersection(*(set(t) for t in new)) & set.union(*(set(t) for t in base)))
    out = {}
    for k in keys:
        b = gm([t[k]["us"] for t in base if k in t])
        n = gm([t[k]["us"] for t in new])
        out[k] = (b, n, n / b)
    return out


def entries_with_caps(path):
    doc = json.loads((HERE / path).read_text())
    out = {}
    for e in doc["entries"]:
        caps = (e["config"]["gate_up"].get("max_registers", 0), e["config"]["down"].get("max_registers", 0))
        out[(e["num_experts"], e["top_k"], e["hidden"], e["inter"], e["format"], e["tokens"])] = (caps, e["us"],
                                                                                                e["start_us"])
    return out


def main():
    summary, md = {}, ["# Thirtieth session: summaries (`summarize.py`)", ""]
    # call 1: cache hints (H100)
    hints = {}
    for name, runs in (("cg", ("call1/dec_2_cg", "call1/dec_7_cg")), ("ef", ("call1/dec_3_ef", "call1/dec_6_ef"))):
        res = ab(("call1/dec_1_base", "call1/dec_8_base"), runs)
        ratios = [r for _, _, r in res.values()]
        hints[name] = dict(cases=len(ratios), geomean=gm(ratios), min=min(ratios), max=max(ratios))
    summary["cache_hints_h100"] = hints
    md += ["## Call 1 (H100): cache hints on the route-direct weight loads, decode M 1..8, 60 cases", "",
           "| hint | new / base geomean | min | max |", "|---|---|---|---|"]
    md += [f"| {k} | {v['geomean']:.4f} | {v['min']:.3f} | {v['max']:.3f} |" for k, v in hints.items()]
    md += ["", "`cg_ef` (both) failed to compile (ptxas: Internal Triton PTX codegen error).", ""]
    # entries that took caps
    start, final = entries_with_caps("call2/route_direct_start.json"), entries_with_caps("call3/route_direct_final.json")
    moved = {k: v for k, v in final.items() if v[0] != (0, 0) and (k not in start or start[k][0] != v[0])}
    summary["capped_entries"] = [dict(key=list(k), caps=list(v[0]), tuner_us=v[1], tuner_start_us=v[2])
                                 for k, v in sorted(moved.items(), key=str)]
    md += ["## Entries that took register caps (tuner's confirmation medians, H200)", "",
           "| E, k, H, I | format | M | caps (gate/up, down) | start us | capped us |", "|---|---|---|---|---|---|"]
    md += [f"| {k[0]}, {k[1]}, {k[2]}, {k[3]} | {k[4]} | {k[5]} | {v[0]} | {v[2]} | {v[1]} |"
           for k, v in sorted(moved.items(), key=str)]
    # call 2 bench A/B at M 1, 2 and call 3 at M 1..8
    for label, base_runs, new_runs in (
            ("m1_2_call2", ("call2/dec_1_start", "call2/dec_4_start"), ("call2/dec_2_tuned", "call2/dec_3_tuned")),
            ("decode_call3", ("call3/dec_1_start", "call3/dec_4_start"), ("call3/dec_2_final", "call3/dec_3_final"))):
        res = ab(base_runs, new_runs)
        ratios = [r for _, _, r in res.values()]
        summary[label] = dict(cases=len(ratios), geomean=gm(ratios),
                              moved={f"{k[0]} {k[1]} M={k[2]}": [round(b, 2), round(n, 2), round(r, 3)]
                                     for k, (b, n, r) in res.items() if abs(r - 1) > 0.015})
        md += ["", f"## Bench A/B {label} (H200): new / start geomean {gm(ratios):.4f} over {len(ratios)} cases", "",
               "| case | start us | new us | ratio |", "|---|---|---|---|"]
        md += [f"| {c} | {v[0]} | {v[1]} | {v[2]} |" for c, v in summary[label]["moved"].items()]
    checked = times("call3/dec_checked_final")
    summary["decode_checked"] = dict(cases=len(checked), max_rel_l2=max(r["rel_l2"] for r in checked.values()),
                                     min_cosine=min(r["cosine"] for r in checked.values()))
    md += ["", f"Decode bench with the accuracy check on the final table: {len(checked)} cases, rel-L2 <= "
               f"{summary['decode_checked']['max_rel_l2']:.2e}, cosine >= {summary['decode_checked']['min_cosine']:.6f}."]
    (HERE / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (HERE / "summary.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
