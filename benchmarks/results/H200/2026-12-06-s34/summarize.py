"""Summaries of the thirty-fourth session's calls (here, no GPU): summary.md and summary.json.

    python benchmarks/results/H200/2026-12-06-s34/summarize.py

Tuner logs (callN/tune.jsonl): each case's start is its first 'descent' row; 'confirm' rows time
the start and the descent's best in turn (three each).  A case's figure for a move is the best
time a candidate of that move had in the descent; 'kept' is what the confirmation decided.
"""

import collections
import json
import math
import statistics
from pathlib import Path

HERE = Path(__file__).parent


def gm(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def cases(call):
    """{(shape, format, tokens): [rows]} of a call's tuner log, in log order."""
    out = collections.OrderedDict()
    for line in (HERE / call / "tune.jsonl").read_text().splitlines():
        r = json.loads(line)
        out.setdefault((r["shape"], r["format"], r["tokens"]), []).append(r)
    return out


def confirm_medians(rows):
    """(start's median, best's median) of a case's confirmation runs, or None without one."""
    start = json.dumps(rows[0]["config"], sort_keys=True)
    a = [r["us"] for r in rows if r["phase"] == "confirm" and json.dumps(r["config"], sort_keys=True) == start]
    b = [r["us"] for r in rows if r["phase"] == "confirm" and json.dumps(r["config"], sort_keys=True) != start]
    return (statistics.median(a), statistics.median(b)) if a and b else None


def move_table(call, key):
    """Per case: start us (its confirmation median where there is one, else its descent time) and
    the best descent time per value of ``key(config)`` other than the start's."""
    rows_out = []
    for case, rows in cases(call).items():
        descent = [r for r in rows if r["phase"] == "descent" and r["us"]]
        start_key = key(rows[0]["config"])
        conf = confirm_medians(rows)
        start_us = conf[0] if conf else descent[0]["us"]
        best = {}
        for r in descent[1:]:
            k = key(r["config"])
            if k != start_key:
                best[k] = min(best.get(k, math.inf), r["us"])
        rows_out.append(dict(shape=case[0], format=case[1], M=case[2], start_us=round(start_us, 2),
                             start_descent_us=round(descent[0]["us"], 2),
                             best={str(k): round(v, 2) for k, v in best.items()},
                             confirmed=None if conf is None else [round(conf[0], 2), round(conf[1], 2)]))
    return rows_out


def first_timing_ratios(call):
    """A case's start as first timed in the descent over its confirmation median (confirmed cases)."""
    out = []
    for rows in cases(call).values():
        conf = confirm_medians(rows)
        if conf:
            out.append(rows[0]["us"] / conf[0])
    return out


def value_table(summary, name, call, key, values, title, start_name, ratio_name):
    """Markdown lines of a one-field move's table (each case's start and best time at each value),
    its rows and ratio range kept in summary[name]."""
    rows = move_table(call, key)
    md = [f"## {title}", "", f"| case | {start_name} us | " + " | ".join(map(str, values)) + " |",
          "|---|---|" + "---|" * len(values)]
    ratios = []
    for r in rows:
        b = r["best"]
        ratios += [b[k] / r["start_us"] for k in b]
        md.append(f"| {r['shape']} {r['format']} M={r['M']} | {r['start_us']:.2f} | " +
                  " | ".join(f"{b.get(str(v), float('nan')):.2f}" for v in values) + " |")
    md += ["", f"{ratio_name}: {min(ratios):.3f}-{max(ratios):.3f} (geomean {gm(ratios):.3f}) over {len(rows)} "
           f"cases; no entry kept a move.", ""]
    summary[name] = dict(rows=rows, ratio_geomean=gm(ratios), min=min(ratios), max=max(ratios))
    return md


def main():
    summary, md = {}, ["# Thirty-fourth session: summaries (`summarize.py`)", "",
                       "All on an H100 80GB HBM3 (the H200 tables copied under its name); us, CUDA-graph timed.", ""]

    def tile(c, which):
        t = c[which]
        return f"{t['block_n']}x{t['block_k']} {t['num_warps']}w S{t['num_stages']} split{t['split_k']}"

    # call 1: gate_up_pipelined / down_pipelined
    rows = move_table("call1", lambda c: (tile(c, "gate_up"), tile(c, "down")))
    md += ["## Call 1: pipelined GEMV tiles (moves gate_up_pipelined, down_pipelined), M 1, 2", "",
           "| case | start us | best pipelined candidate us | its tiles (gate/up, down) | kept |", "|---|---|---|---|---|"]
    ratios = []
    for r in rows:
        k, v = min(r["best"].items(), key=lambda kv: kv[1])
        base = r["start_us"]
        ratios.append(v / base)
        md.append(f"| {r['shape']} {r['format']} M={r['M']} | {base:.1f} | {v:.1f} | {k} | no |")
    md += ["", f"Best pipelined candidate / start: geomean {gm(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f} "
           f"over {len(ratios)} cases (the start's confirmation median where it has one); 0 entries kept.", ""]
    summary["pipelined"] = dict(rows=rows, best_over_start_geomean=gm(ratios), min=min(ratios), max=max(ratios))

    # tuner's first timing, before (call 1) and after (call 2) dropping it
    r1, r2 = first_timing_ratios("call1"), first_timing_ratios("call2")
    md += ["## A case's first graph timing in the tuner", "",
           "| run | confirmed cases | start's descent time / its confirmation median: median | max |", "|---|---|---|---|",
           f"| call 1 (timed once) | {len(r1)} | {statistics.median(r1):.3f} | {max(r1):.3f} |",
           f"| call 2 (first timing dropped) | {len(r2)} | {statistics.median(r2):.3f} | {max(r2):.3f} |", ""]
    summary["first_timing"] = dict(call1=r1, call2=r2)

    # call 2: down_preload
    md += value_table(summary, "down_preload", "call2", lambda c: c.get("down_preload", 1), (2, 3, 4),
                      "Call 2: down_preload 2..4 (M 1, 2)", "preload 1", "preload n / preload 1")

    # call 2: fixed cost
    fixed = json.loads((HERE / "call2" / "fixed" / "fixed.json").read_text())["rows"]
    md += ["## Call 2: what a call costs with no weight read (decode_timeline --fixed), M=1", "",
           "| case | graph us | every id -1 us | every route on expert 0 us | floor us | (-1) + floor |",
           "|---|---|---|---|---|---|"]
    for r in fixed:
        md.append(f"| {r['shape']} {r['format']} | {r['graph']:.2f} | {r['dropped']:.2f} | {r['one_expert']:.2f} | "
                  f"{r['floor']:.2f} | {r['dropped'] + r['floor']:.2f} |")
    md.append("")
    summary["fixed"] = fixed

    # call 3: down split
    md += value_table(summary, "down_split", "call3", lambda c: c["down"]["split_k"], (2, 4, 8),
                      "Call 3: the down split over K (move down_split), M 1..8", "split 1", "split / unsplit")

    # calls 1, 4, 5: timelines
    for call, title in (("call1", "pipelined gate/up and down tiles forced"),
                        ("call4", "as benched and with every id -1"),
                        ("call5", "every id -1, products in fp16 / fp32, 4 / 8 down warps"),
                        ("call6", "every id -1, the tensor-core down")):
        md += [f"## {call.capitalize()[:-1]} {call[-1]}: timelines, {title} (us from the call's first gate/up start)", "",
               (HERE / call / "timeline" / "timeline.md").read_text().strip(), ""]
        summary[f"timeline_{call}"] = json.loads((HERE / call / "timeline" / "timeline_summary.json").read_text())["rows"]
    (HERE / "summary.md").write_text("\n".join(md) + "\n")
    (HERE / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
