"""Fifty-first session, call 3's table A/B: route_direct forced, fp8_block, PEERS M 1..8, the shipped
route-direct table (start) and route_direct_capped_rows.json (capped) in turn start, capped, capped,
start.  Writes call3/capped_ab.md and .json.

    python benchmarks/results/H200/2026-12-07-s51/summarize_capped.py
"""
import json
import math
from pathlib import Path

from fusedmoe.shapes import get_shape

D = Path(__file__).parent / "call3"
RUNS = ["dec_1_start", "dec_2_capped", "dec_3_capped", "dec_4_start"]


def main() -> None:
    times: dict = {}
    for run in RUNS:
        for r in json.loads((D / run / "results.json").read_text())["results"]:
            if r["status"] == "ok":
                times.setdefault((r["shape"], r["tokens"]), {})[run] = r["us"]
    start, capped = (json.loads((D / f"route_direct_{v}.json").read_text())["entries"] for v in ("start", "capped"))
    changed = {(a["num_experts"], a["top_k"], a["hidden"], a["inter"], a["tokens"])
               for a, b in zip(start, capped) if a != b and a["format"] == "fp8_block"}
    rows, lines = [], ["| shape | M | " + " | ".join(RUNS) + " | capped / start | entry changed |",
                       "|---|---|" + "---|" * (len(RUNS) + 2)]
    for (name, m), t in times.items():
        s = get_shape(name)
        key = (s.num_local_experts, s.top_k, s.hidden_size, s.intermediate_size, m)
        ratio = (t["dec_2_capped"] + t["dec_3_capped"]) / (t["dec_1_start"] + t["dec_4_start"])
        rows.append(dict(shape=name, M=m, **{k: round(v, 2) for k, v in t.items()},
                         capped_over_start=round(ratio, 3), entry_changed=key in changed))
        lines.append(f"| {name} | {m} | " + " | ".join(f"{t[k]:.2f}" for k in RUNS) + f" | {ratio:.3f} | {key in changed} |")
    geomean = lambda v: math.exp(sum(map(math.log, v)) / len(v))  # noqa: E731
    moved = [r["capped_over_start"] for r in rows if r["entry_changed"]]
    lines += ["", f"capped / start over the {len(moved)} changed entries: geomean {geomean(moved):.4f}, "
                  f"{min(moved)}-{max(moved)}; all {len(rows)} cases {geomean([r['capped_over_start'] for r in rows]):.4f}"]
    (D / "capped_ab.md").write_text("\n".join(lines) + "\n")
    (D / "capped_ab.json").write_text(json.dumps(rows, indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
