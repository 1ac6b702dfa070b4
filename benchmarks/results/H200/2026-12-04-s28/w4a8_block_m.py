"""w4a8 grouped BLOCK_M: the tuner's candidates of call 3 (BLOCK_M against the heuristic's) and
call 4's old/new/new/old bench of the new rule, grouped forced.  Writes w4a8_block_m.md / .json.

    python benchmarks/results/H200/2026-12-04-s28/w4a8_block_m.py
"""
import json
import math
from pathlib import Path

HERE = Path(__file__).parent

def tiles(cfg: dict) -> dict:
    """A config's fields but BLOCK_M and what follows from it (the tail, the swap)."""
    return {k: ({f: x for f, x in v.items() if f != "swap_ab"} if isinstance(v, dict) else v)
            for k, v in cfg.items() if k not in ("block_m", "tail_m")}


# call 3: per case, the start (heuristic) and each BLOCK_M candidate of the descent
tuned = {}
for line in (HERE / "call3" / "tune_candidates.jsonl").read_text().splitlines():
    r = json.loads(line)
    case = tuned.setdefault((r["shape"], r["tokens"]), {})
    if r["phase"] == "descent" and r["us"]:
        case.setdefault("start", (r["config"]["block_m"], r["us"]))  # a case's first candidate
        start_cfg = case.setdefault("start_cfg", r["config"])
        same_tiles = tiles(r["config"]) == tiles(start_cfg)
        if same_tiles:
            case.setdefault("block_m", {})[r["config"]["block_m"]] = r["us"]

lines = ["## Call 3: the tuner's BLOCK_M moves from the w4a8 heuristic (us, descent)", "",
         "| shape | M | heuristic BLOCK_M | 16 | 32 | 64 | 128 |", "|---|---|---|---|---|---|---|"]
for (shape, m), c in sorted(tuned.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    bm = c["block_m"]
    lines.append(f"| {shape} | {m} | {c['start'][0]} | " + " | ".join(f"{bm[b]:.1f}" if b in bm else "" for b in (16, 32, 64, 128)) + " |")

# call 4: old/new/new/old, grouped forced
times = {}
for run in ("old1", "new1", "new2", "old2"):
    for r in json.loads((HERE / "call4" / run / "results.json").read_text())["results"]:
        times.setdefault((r["shape"], r["tokens"]), {}).setdefault(run[:3], []).append(r["us"])
rows = []
for (shape, m), t in sorted(times.items()):
    old, new = sum(t["old"]) / len(t["old"]), sum(t["new"]) / len(t["new"])
    rows.append(dict(shape=shape, M=m, old_us=t["old"], new_us=t["new"], new_over_old=round(new / old, 4)))
ratios = [r["new_over_old"] for r in rows]
moved = [r for r in rows if abs(r["new_over_old"] - 1) > 0.02]
summary = dict(cases=len(rows), geomean=math.exp(sum(map(math.log, ratios)) / len(ratios)),
               moved_over_2pct=len(moved), faster=sum(r["new_over_old"] < 0.98 for r in rows),
               slower=sum(r["new_over_old"] > 1.02 for r in rows))
lines += ["", "## Call 4: grouped forced, old rule (mean rows) against new (mean + one standard deviation)", "",
          f"{summary['cases']} cases, geomean new/old {summary['geomean']:.3f}; {summary['faster']} faster and "
          f"{summary['slower']} slower by more than 2%, the rest within 2% (their BLOCK_M is the same)", "",
          "| shape | M | old us (runs 1, 2) | new us (runs 1, 2) | new / old |", "|---|---|---|---|---|"]
lines += [f"| {r['shape']} | {r['M']} | {r['old_us'][0]:.1f}, {r['old_us'][1]:.1f} | {r['new_us'][0]:.1f}, "
          f"{r['new_us'][1]:.1f} | {r['new_over_old']:.3f} |" for r in moved]
(HERE / "w4a8_block_m.md").write_text("\n".join(lines) + "\n")
(HERE / "w4a8_block_m.json").write_text(json.dumps(dict(summary=summary, call4=rows,
    call3={f"{s} M={m}": dict(heuristic_block_m=c["start"][0], us_by_block_m=c["block_m"]) for (s, m), c in tuned.items()}), indent=1))
print("\n".join(lines))
