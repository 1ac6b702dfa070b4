"""Summary of the 29th session's host-path runs (here, on the CPU): summary.md / summary.json.

For each call and case, the host and eager figures of ``scripts/host_path_probe.py`` for the old
tree (launches through Triton's run()) and the new one (fusedmoe._launch), two runs of each in the
order old, new, old, new, and the geometric mean of new / old over the runs; then the bench's eager
column (call 1, one run of each tree).

    python benchmarks/results/H200/2026-12-05-s29/summarize.py
"""

import json
import math
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIELDS = (("host_us", "host"), ("eager_us", "eager"), ("eager_checked_us", "eager, check_ids"))


def rows(path):
    return {(r["shape"], r["format"], r["tokens"], r["path"]): r for r in json.loads(path.read_text())["rows"]}


def main():
    lines, out = ["# Host path of eager calls, old (Triton's run()) against new (fusedmoe._launch)", ""], {}
    for call, card in (("call1", "H200"), ("call2", "H100")):
        old = [rows(HERE / call / f"host_old{i}.json") for i in (1, 2)]
        new = [rows(HERE / call / f"host_new{i}.json") for i in (1, 2)]
        lines += [f"## {call} ({card}; us per call, runs 1 and 2; new / old: geomean over the 2 x 2 pairs)", "",
                  "| shape | format | M | path | graph | " + " | ".join(
                      f"{name} old | {name} new | new / old" for _, name in FIELDS) + " |",
                  "|---" * (5 + 3 * len(FIELDS)) + "|"]
        out[call] = []
        for case in old[0]:
            cells, rec = [], dict(zip(("shape", "format", "tokens", "path"), case), card=card)
            for field, name in FIELDS:
                o = [r[case][field] for r in old]
                n = [r[case][field] for r in new]
                ratio = math.exp(statistics.mean(math.log(b / a) for a in o for b in n))
                cells += [", ".join(f"{v:.0f}" for v in o), ", ".join(f"{v:.0f}" for v in n), f"{ratio:.2f}"]
                rec[field] = dict(old=o, new=n, new_over_old=ratio)
            lines.append(f"| {' | '.join(map(str, case))} | {old[0][case]['graph_us']:.1f} | " + " | ".join(cells) + " |")
            out[call].append(rec)
        lines.append("")
    bench = {}
    for tree in ("old", "new"):
        for r in json.loads((HERE / "call1" / f"bench_{tree}" / "results.json").read_text())["results"]:
            bench.setdefault((r["shape"], r["format"], r["tokens"]), {})[tree] = (r["us"], r["eager_us"])
    lines += ["## call1 (H200): the bench's eager column, us per call (`fusedmoe bench`, one run of each tree)", "",
              "| shape | format | M | graph | eager old | eager new | new / old |", "|---|---|---|---|---|---|---|"]
    out["bench"] = []
    for (shape, fmt, m), v in sorted(bench.items(), key=lambda kv: (kv[0][2], kv[0][0], kv[0][1])):
        ratio = v["new"][1] / v["old"][1]
        lines.append(f"| {shape} | {fmt} | {m} | {v['new'][0]:.1f} | {v['old'][1]:.1f} | {v['new'][1]:.1f} | {ratio:.2f} |")
        out["bench"].append(dict(shape=shape, format=fmt, tokens=m, graph_us=v["new"][0], eager_old_us=v["old"][1],
                                 eager_new_us=v["new"][1]))
    for m in sorted({k[2] for k in bench}):
        rs = [v["new"][1] / v["old"][1] for k, v in bench.items() if k[2] == m]
        lines.append(f"\nM={m}: eager new / old geomean {math.exp(statistics.mean(map(math.log, rs))):.2f} over {len(rs)} cases")
    (HERE / "summary.md").write_text("\n".join(lines) + "\n")
    (HERE / "summary.json").write_text(json.dumps(out, indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
