"""Summaries of the thirty-third session's calls (here, no GPU): summary.md and summary.json.

    python benchmarks/results/H200/2026-12-06-s33/summarize.py
"""

import json
import math
from pathlib import Path

HERE = Path(__file__).parent


def gm(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def times(folder):
    """{(shape, format, tokens): us} of one bench run's results.json, the cases that ran."""
    path = HERE / folder / "results.json"
    if not path.exists():
        return {}
    doc = json.loads(path.read_text())
    return {(r["shape"], r["format"], r["tokens"]): r["us"] for r in doc["results"] if r["status"] == "ok"}


def ab(base_runs, new_runs):
    """Per case present in every run: (base us, new us, new / base), each side the geomean of its runs."""
    base, new = [times(f) for f in base_runs], [times(f) for f in new_runs]
    keys = set.intersection(*(set(t) for t in base + new))
    return {k: (gm([t[k] for t in base]), gm([t[k] for t in new]), gm([t[k] for t in new]) / gm([t[k] for t in base]))
            for k in sorted(keys)}


def plan_rows(folder):
    path = HERE / folder / "plan.json"
    return {(r["routes"], r["experts"]): r for r in json.loads(path.read_text())["rows"]} if path.exists() else {}


def main():
    summary, md = {}, ["# Thirty-third session: summaries (`summarize.py`)", ""]
    res = ab(("call1/dec_2_base", "call1/dec_3_base"), ("call1/dec_1_new", "call1/dec_4_new"))
    if res:
        ratios = [r for _, _, r in res.values()]
        by_m = {m: gm([r for k, (_, _, r) in res.items() if k[2] == m]) for m in sorted({k[2] for k in res})}
        by_fmt = {f: gm([r for k, (_, _, r) in res.items() if k[1] == f]) for f in sorted({k[1] for k in res})}
        summary["early_combine"] = dict(cases=len(ratios), geomean=gm(ratios), min=min(ratios), max=max(ratios),
                                        by_tokens=by_m, by_format=by_fmt,
                                        cases_us={f"{k[0]} {k[1]} M={k[2]}": [round(b, 2), round(n, 2), round(r, 3)]
                                                  for k, (b, n, r) in res.items()})
        md += [f"## Call 1: early combine loads, decode M 1..8, new / base over {len(ratios)} cases: geomean "
               f"{gm(ratios):.4f} (min {min(ratios):.3f}, max {max(ratios):.3f})", "",
               "By M: " + ", ".join(f"M={m} {v:.4f}" for m, v in by_m.items()) + "; by format: "
               + ", ".join(f"{f} {v:.4f}" for f, v in by_fmt.items()), "",
               "| case | base us | new us | new / base |", "|---|---|---|---|"]
        md += [f"| {c} | {v[0]} | {v[1]} | {v[2]} |" for c, v in summary["early_combine"]["cases_us"].items()]
    auto, ticket = plan_rows("call1/plan_auto"), plan_rows("call1/plan_ticket")
    if auto and ticket:
        keys = sorted(set(auto) & set(ticket))
        summary["plan"] = [dict(routes=r, experts=e, auto_kernel=auto[(r, e)]["kernel"], auto_us=auto[(r, e)]["us"],
                                ticket_us=ticket[(r, e)]["us"], equal=auto[(r, e)]["equal"] and ticket[(r, e)]["equal"])
                           for r, e in keys]
        md += ["", "## Call 1: the ticket plan against auto (us, graph-timed)", "",
               "| routes | experts | auto | auto us | ticket us | equal |", "|---|---|---|---|---|---|"]
        md += [f"| {p['routes']} | {p['experts']} | {p['auto_kernel']} | {p['auto_us']:.2f} | {p['ticket_us']:.2f} | "
               f"{p['equal']} |" for p in summary["plan"]]
    (HERE / "summary.json").write_text(json.dumps(summary, indent=1))
    (HERE / "summary.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
