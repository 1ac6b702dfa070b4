"""Summaries of the thirty-fifth session's calls (here, no GPU): summary.md and summary.json.

    python benchmarks/results/H200/2026-12-06-s35/summarize.py

Tuner logs (callN/tune.jsonl) over the one move 'down_gluon': per case, the entry's time (its
confirmation median where the tuner confirmed, else its descent time) and the Gluon down's (the
same, or its best descent time); '-' where the entry's config cannot take the Gluon down
(policy.legal: a gate/up K split, down tiles > 1, a register cap, the tensor-core down).
"""

import collections
import json
import math
import statistics
from pathlib import Path

HERE = Path(__file__).parent


def gm(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def gluon_table(call):
    """Rows (shape, format, M, entry us, Gluon down us or None) of a call's tuner log."""
    cases = collections.OrderedDict()
    for line in (HERE / call / "tune.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["us"]:
            cases.setdefault((r["shape"], r["format"], r["tokens"]), []).append(r)
    rows = []
    for (shape, fmt, m), rs in cases.items():
        times = {}
        for want in (False, True):
            conf = [r["us"] for r in rs if r["phase"] == "confirm" and r["config"]["down_gluon"] == want]
            desc = [r["us"] for r in rs if r["phase"] == "descent" and r["config"]["down_gluon"] == want]
            times[want] = statistics.median(conf) if conf else (min(desc) if desc else None)
        rows.append(dict(shape=shape, format=fmt, M=m, entry_us=round(times[False], 2),
                         gluon_us=None if times[True] is None else round(times[True], 2)))
    return rows


def main():
    summary, md = {}, ["# Thirty-fifth session: summaries (`summarize.py`)", "",
                       "All on an H100 80GB HBM3 (the H200 tables copied under its name); us, CUDA-graph timed.", ""]
    for call in sorted(p.name for p in HERE.glob("call*") if (p / "tune.jsonl").is_file()):
        rows = gluon_table(call)
        summary[call] = rows
        md += [f"## {call}: the tuner over down_gluon", "", "| case | entry us | Gluon down us | ratio |", "|---|---|---|---|"]
        ratios = []
        for r in rows:
            ratio = r["gluon_us"] / r["entry_us"] if r["gluon_us"] else None
            ratios += [ratio] if ratio else []
            md.append(f"| {r['shape']} {r['format']} M={r['M']} | {r['entry_us']} | {r['gluon_us'] or '-'} | "
                      f"{f'{ratio:.3f}' if ratio else '-'} |")
        if ratios:
            md += ["", f"Gluon down / entry: geomean {gm(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f} "
                       f"over {len(ratios)} cases ({sum(x < 1 for x in ratios)} faster).", ""]
    (HERE / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (HERE / "summary.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
