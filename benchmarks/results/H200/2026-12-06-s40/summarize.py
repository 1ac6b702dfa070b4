"""The fortieth session's plan A/Bs side by side: summary.md and summary.json.

    python benchmarks/results/H200/2026-12-06-s40/summarize.py

call0: the thirty-ninth session's next_call.sh (half_registers.patch); call1: call1.sh
(one_histogram.patch).  Each ran base, patch, patch, base, by histogram at 8 warps and under auto.
"""

import json
from pathlib import Path

HERE = Path(__file__).parent
CALLS = {"call0": "bash benchmarks/results/H200/2026-12-06-s39/next_call.sh (cdf5f40 + half_registers.patch)",
         "call1": "LIMIT=125 bash benchmarks/results/H200/2026-12-06-s40/call1.sh (8af29eb + one_histogram.patch)"}
RUNS = ["hist_1_base", "hist_2_patch", "hist_3_patch", "hist_4_base",
        "auto_1_base", "auto_2_patch", "auto_3_patch", "auto_4_base"]

md, js = [], {}
for call, command in CALLS.items():
    if not (HERE / call / "env.txt").exists():
        continue
    times, paths = {}, {}
    for run in RUNS:
        for row in json.loads((HERE / call / run / "plan.json").read_text())["rows"]:
            assert row["equal"], (call, run, row)
            key = f"{row['routes']}x{row['experts']}"
            times.setdefault(key, {})[run] = row["us"]
            if run.startswith("auto"):
                paths.setdefault(key, set()).add(row["kernel"])
    env = (HERE / call / "env.txt").read_text().splitlines()
    meta = dict(device=env[1].split(",")[0], versions=env[2], date="2026-12-06", command=command,
                unit="us per plan, CUDA graph of 50 calls, median of 20 replays; every plan equal to the reference")
    rows = ["| routes x experts | " + " | ".join(RUNS) + " | auto's path |", "|---" * (len(RUNS) + 2) + "|"]
    rows += [f"| {k} | " + " | ".join(f"{v[r]:.2f}" for r in RUNS) + f" | {'/'.join(sorted(paths[k]))} |"
             for k, v in times.items()]
    md.append(f"## {call}\n\n{meta['device']}, {meta['versions']}, {meta['date']}; `{command}`; {meta['unit']}.\n\n"
              + "\n".join(rows) + "\n")
    js[call] = dict(meta=meta, us=times, auto_path={k: sorted(v) for k, v in paths.items()})
(HERE / "summary.md").write_text("\n".join(md))
(HERE / "summary.json").write_text(json.dumps(js, indent=1) + "\n")
print("\n".join(md))
