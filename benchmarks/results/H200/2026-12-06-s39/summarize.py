"""Call 1's plan times side by side: summary.md and summary.json (thirty-ninth session).

    python benchmarks/results/H200/2026-12-06-s39/summarize.py
"""

import json
from pathlib import Path

HERE = Path(__file__).parent
RUNS = ["auto_a", "hist_8", "hist_16", "hist_32", "atomics_8", "atomics_16", "atomics_32",
        "half_8", "half_16", "half_32", "half_auto", "auto_b"]

times = {}
for run in RUNS:
    for row in json.loads((HERE / "call1" / run / "plan.json").read_text())["rows"]:
        assert row["equal"], (run, row)
        times.setdefault(f"{row['routes']}x{row['experts']}", {})[run] = row["us"]
lines = ["| routes x experts | " + " | ".join(RUNS) + " |", "|---" * (len(RUNS) + 1) + "|"]
lines += [f"| {k} | " + " | ".join(f"{v[r]:.2f}" for r in RUNS) + " |" for k, v in times.items()]
env = (HERE / "call1" / "env.txt").read_text().splitlines()
meta = dict(device=env[1].split(",")[0], versions=env[2], date="2026-12-06",
            command="bash benchmarks/results/H200/2026-12-06-s39/call1.sh (at 3d1a7de + half_side.patch)",
            unit="us per plan, CUDA graph of 50 calls, median of 20 replays; every plan equal to the reference")
(HERE / "summary.md").write_text(f"{meta['device']}, {meta['versions']}, {meta['date']}; `{meta['command']}`; "
                                 f"{meta['unit']}.\n\n" + "\n".join(lines) + "\n")
(HERE / "summary.json").write_text(json.dumps(dict(meta=meta, us=times), indent=1) + "\n")
print("\n".join(lines))
