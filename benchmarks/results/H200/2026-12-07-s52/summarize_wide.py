"""Fifty-second session's `gate_up_wide` A/B: the decode bench (auto, fp8_tensor and fp8_block,
PEERS shapes) on the shipped route-direct table (start) and the tuned one (tuned) in turn start,
tuned, tuned, start.  Writes CALL/wide_ab.md and .json.

    python benchmarks/results/H200/2026-12-07-s52/summarize_wide.py call2
"""
import json
import math
import sys
from pathlib import Path

from fusedmoe.shapes import get_shape

RUNS = ["dec_1_start", "dec_2_tuned", "dec_3_tuned", "dec_4_start"]


def geomean(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


def main(call: str) -> None:
    d = Path(__file__).parent / call
    times: dict = {}
    for run in RUNS:
        for r in json.loads((d / run / "results.json").read_text())["results"]:
            if r["status"] == "ok":
                times.setdefault((r["shape"], r["format"], r["tokens"]), {})[run] = r["us"]
    start, tuned = ({(e["num_experts"], e["top_k"], e["hidden"], e["inter"], e["format"], e["tokens"]): e["config"]
                     for e in json.loads((d / f"route_direct_{v}.json").read_text())["entries"]}
                    for v in ("start", "tuned"))
    rows = []
    lines = ["| shape | format | M | " + " | ".join(RUNS) + " | tuned / start | tuned gate/up |",
             "|---|---|---|" + "---|" * (len(RUNS) + 2)]
    for (name, fmt, m), t in sorted(times.items()):
        s = get_shape(name)
        key = (s.num_local_experts, s.top_k, s.hidden_size, s.intermediate_size, fmt, m)
        moved = start.get(key) != tuned.get(key)
        gu = tuned[key]["gate_up"] if moved else None
        ratio = (t["dec_2_tuned"] + t["dec_3_tuned"]) / (t["dec_1_start"] + t["dec_4_start"])
        tile = (f"{gu['block_n']} x {gu['block_k']}, {gu['num_warps']} warps, split {gu['split_k']}, cap "
                f"{gu['max_registers']}" if gu else "")
        rows.append(dict(shape=name, format=fmt, M=m, **{k: round(v, 2) for k, v in t.items()},
                         tuned_over_start=round(ratio, 3), moved=moved, gate_up=gu))
        lines.append(f"| {name} | {fmt} | {m} | " + " | ".join(f"{t[k]:.2f}" for k in RUNS) + f" | {ratio:.3f} | {tile} |")
    moved = [r["tuned_over_start"] for r in rows if r["moved"]]
    lines += ["", f"tuned / start: {len(moved)} moved entries, geomean {geomean(moved):.4f} ({min(moved)}-{max(moved)}); "
                  f"all {len(rows)} cases {geomean([r['tuned_over_start'] for r in rows]):.4f}" if moved else "no entry moved"]
    (d / "wide_ab.md").write_text("\n".join(lines) + "\n")
    (d / "wide_ab.json").write_text(json.dumps(rows, indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1])
