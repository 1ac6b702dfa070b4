"""Tables of the thirty-seventh session's plan runs (H100), from the call folders beside this file.

    python benchmarks/results/H200/2026-12-06-s37/summarize.py    # writes summary.md, summary.json
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
S33 = HERE.parent / "2026-12-06-s33" / "call1" / "plan_auto" / "plan.json"


def _rows(path: Path) -> list[dict]:
    return json.loads(path.read_text())["rows"]


def _over_target(prefix: str, rows: list[dict], key: str) -> str:
    """One line: how many of ``rows`` take more than 3 us (``key``), and which."""
    over = [x for x in rows if x[key] > 3.0]
    return f"{prefix}{len(rows)} points, {len(over)} over 3 us: " + ", ".join(
        f"{x['routes']} x {x['experts']} ({x[key]:.2f})" for x in over)


def stages() -> tuple[list[str], list[dict]]:
    """Call 2: the recount program cut after each stage (us)."""
    rows = [r for r in _rows(HERE / "call2" / "probe" / "plan_stages.json") if r["kind"] == "stage"]
    out, md = [], ["| routes x experts | count | launch alone | + load ids | + count | + rank, scatter | whole |",
                   "|---|---|---|---|---|---|---|"]
    for r, e in sorted({(x["routes"], x["experts"]) for x in rows}):
        for mem in (False, True):
            us = [x["us"] for x in sorted(rows, key=lambda x: x["stage"])
                  if (x["routes"], x["experts"], x["in_memory"]) == (r, e, mem)]
            out.append(dict(routes=r, experts=e, count="atomics" if mem else "histogram", stage_us=us))
            md.append(f"| {r} x {e} | {out[-1]['count']} | " + " | ".join(f"{u:.2f}" for u in us) + " |")
    return md, out


def dot() -> tuple[list[str], list[dict]]:
    """Call 3: the whole recount program counting by one-hot products, its best block and warps,
    against the library's histogram count (4 and 8 warps) and auto."""
    rows = _rows(HERE / "call3" / "probe" / "plan_dot.json")
    out, md = [], ["| routes x experts | one-hot products, best (block, warps) | all equal to the reference | "
                   "histogram 4 / 8 warps | auto |", "|---|---|---|---|---|"]
    for r, e in sorted({(x["routes"], x["experts"]) for x in rows}):
        here = [x for x in rows if (x["routes"], x["experts"]) == (r, e)]
        whole = [x for x in here if x["kind"] == "dot" and x["stage"] == 4]
        best = min(whole, key=lambda x: x["us"])
        hist = {x["warps"]: x["us"] for x in here if x["kind"] == "hist"}
        auto = next(x["us"] for x in here if x["kind"] == "auto")
        out.append(dict(routes=r, experts=e, dot_us=best["us"], dot_kc=best["kc"], dot_warps=best["warps"],
                        dot_equal=all(x["equal"] for x in whole), hist_us=hist, auto_us=auto))
        md.append(f"| {r} x {e} | {best['us']:.2f} ({best['kc']}, {best['warps']}) | {out[-1]['dot_equal']} | "
                  f"{hist[4]:.2f} / {hist[8]:.2f} | {auto:.2f} |")
    return md, out


def grid() -> tuple[list[str], list[dict]]:
    """Call 4: the recount launch forced (at <= 128 bins 'atomic' ran the histogram: the rule's
    default then) and auto before the new rule."""
    names = ("auto", "hist_w4", "hist_w8", "atomic_w4", "atomic_w8")
    table: dict = {}
    for n in names:
        for r in _rows(HERE / "call4" / n / "plan.json"):
            table.setdefault((r["routes"], r["experts"]), {})[n] = r["us"]
    md = ["| routes x experts | auto (before) | histogram, 4 warps | 8 warps | atomics*, 4 warps | 8 warps |",
          "|---|---|---|---|---|---|"]
    out = []
    for (r, e), t in sorted(table.items()):
        out.append(dict(routes=r, experts=e, **t))
        md.append(f"| {r} x {e} | " + " | ".join(f"{t[n]:.2f}" for n in names) + " |")
    md.append("")
    md.append("*at 64 and 128 experts the atomics runs counted by tl.histogram (the rule's default there).")
    return md, out


def auto() -> tuple[list[str], list[dict]]:
    """Call 5: auto after the rule, against the thirty-third session's auto (H100 too)."""
    before = {(r["routes"], r["experts"]): r for r in _rows(S33)}
    md = ["| routes x experts | kernel | s33 auto us | s37 auto us | <= 3 us | equal to the reference |",
          "|---|---|---|---|---|---|"]
    out = []
    for r in _rows(HERE / "call5" / "plan_auto" / "plan.json"):
        b = before.get((r["routes"], r["experts"]))
        out.append(dict(routes=r["routes"], experts=r["experts"], kernel=r["kernel"], us=r["us"],
                        s33_us=b["us"] if b else None, equal=r["equal"]))
        md.append(f"| {r['routes']} x {r['experts']} | {r['kernel']} | {b['us']:.2f} | {r['us']:.2f} | "
                  f"{'yes' if r['us'] <= 3.0 else 'no'} | {r['equal']} |")
    return md + ["", _over_target("", out, "us")], out


def wide() -> tuple[list[str], list[dict]]:
    """Call 6: the recount launch (atomics) at 4 and 8 warps at 1024 and 2048 experts."""
    table: dict = {}
    for w in (4, 8):
        for r in _rows(HERE / "call6" / f"atomic_w{w}" / "plan.json"):
            table.setdefault((r["routes"], r["experts"]), {})[w] = r["us"]
    md = ["| routes x experts | 4 warps | 8 warps |", "|---|---|---|"]
    out = [dict(routes=r, experts=e, us_w4=t[4], us_w8=t[8]) for (r, e), t in sorted(table.items(), key=lambda x: x[0][::-1])]
    md += [f"| {x['routes']} x {x['experts']} | {x['us_w4']:.2f} | {x['us_w8']:.2f} |" for x in out]
    return md, out


def chunk_first() -> tuple[list[str], list[dict]]:
    """Call 8: the chunk's ids loaded first (new) or after the count (old), in turn in one call, and
    call 9: auto as shipped (ids first only for atomics)."""
    runs = ("1_new", "2_old", "3_new", "4_old")
    table: dict = {}
    for n in runs:
        for r in _rows(HERE / "call8" / n / "plan.json"):
            table.setdefault((r["routes"], r["experts"]), {})[n] = r["us"]
    shipped = {(r["routes"], r["experts"]): r for r in _rows(HERE / "call9" / "plan_auto" / "plan.json")}
    md = ["| routes x experts | kernel | ids first, runs 1 / 3 | after the count, runs 2 / 4 | shipped (call 9) | "
          "<= 3 us | equal to the reference |", "|---|---|---|---|---|---|---|"]
    out = []
    for (r, e), t in sorted(table.items(), key=lambda x: x[0][::-1]):
        s = shipped[(r, e)]
        out.append(dict(routes=r, experts=e, kernel=s["kernel"], first_us=[t["1_new"], t["3_new"]],
                        after_us=[t["2_old"], t["4_old"]], shipped_us=s["us"], equal=s["equal"]))
        md.append(f"| {r} x {e} | {s['kernel']} | {t['1_new']:.2f} / {t['3_new']:.2f} | {t['2_old']:.2f} / "
                  f"{t['4_old']:.2f} | {s['us']:.2f} | {'yes' if s['us'] <= 3.0 else 'no'} | {s['equal']} |")
    return md + ["", _over_target("Shipped: ", out, "shipped_us")], out


def main() -> None:
    summary, md = {}, ["# Thirty-seventh session: plan tables (H100 80GB HBM3, torch 2.11.0+cu130, Triton 3.6.0)", ""]
    for name, title, fn in (("stages", "Call 2: the recount program cut stage by stage (us, graph-timed)", stages),
                            ("one_hot", "Call 3: counting by one-hot products on the tensor cores (us)", dot),
                            ("recount_grid", "Call 4: the recount launch, count x warps (us)", grid),
                            ("auto", "Call 5: auto after the rule", auto),
                            ("atomics_wide", "Call 6: the recount launch by atomics at 1024 / 2048 experts", wide),
                            ("chunk_ids_first", "Calls 8, 9: the chunk's ids loaded first, and auto as shipped",
                             chunk_first)):
        lines, rows = fn()
        summary[name] = rows
        md += [f"## {title}", "", *lines, ""]
    (HERE / "summary.md").write_text("\n".join(md))
    (HERE / "summary.json").write_text(json.dumps(dict(device="NVIDIA H100 80GB HBM3", torch="2.11.0+cu130",
                                                       triton="3.6.0", date="2026-12-06", **summary), indent=1))


if __name__ == "__main__":
    main()
