"""Call 1's A/B table: route_direct time per (shape, format, M) in each run of the three trees
(base, gu, rows), and each patched tree over base (mean of its two runs over base's two).

    python benchmarks/results/H200/2026-12-07-s51/summarize.py CALL_DIR  # writes CALL_DIR/ab.md, ab.json
"""
import glob
import json
import os
import re
import sys

d = sys.argv[1]
runs = sorted({m.group(1) for p in os.listdir(d) if (m := re.match(r"(\d+_(?:base|gu|rows))_(?:peers|oos)$", p))})
rows = {}
for run in runs:
    for f in glob.glob(f"{d}/{run}_*/results.json"):
        for r in json.load(open(f))["results"]:
            if r["status"] == "ok":
                rows.setdefault((r["shape"], r["format"], r["tokens"]), {})[run] = round(r["us"], 2)
table = []
for (shape, fmt, m), t in rows.items():
    mean = {tag: sum(v for k, v in t.items() if k.endswith(tag)) / max(1, sum(k.endswith(tag) for k in t))
            for tag in ("base", "gu", "rows")}
    table.append(dict(shape=shape, format=fmt, M=m, **t,
                      gu_over_base=round(mean["gu"] / mean["base"], 3), rows_over_base=round(mean["rows"] / mean["base"], 3)))
json.dump(table, open(f"{d}/ab.json", "w"), indent=1)
with open(f"{d}/ab.md", "w") as out:
    out.write("| shape | format | M | " + " | ".join(runs) + " | gu / base | rows / base |\n")
    out.write("|---|---|---|" + "---|" * (len(runs) + 2) + "\n")
    for r in table:
        out.write(f"| {r['shape']} | {r['format']} | {r['M']} | " + " | ".join(str(r.get(k, "")) for k in runs)
                  + f" | {r['gu_over_base']} | {r['rows_over_base']} |\n")
    for k in ("gu_over_base", "rows_over_base"):
        for fmt in sorted({r["format"] for r in table}):
            v = [r[k] for r in table if r["format"] == fmt]
            g = 1.0
            for x in v:
                g *= x
            out.write(f"\n{k} {fmt}: geomean {g ** (1 / len(v)):.3f}, min {min(v)}, max {max(v)} over {len(v)} cases")
    out.write("\n")
print(open(f"{d}/ab.md").read())
