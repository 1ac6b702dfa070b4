"""Table of the plan passes of a call folder: per (routes, experts), each variant's runs (us), the kernel
auto ran and the best variant's mean over auto's (auto: "auto", or "bauto" where auto ran on a base tree
only).  python summarize.py CALL_DIR > CALL_DIR/summary.md"""
import json
import sys
from collections import defaultdict
from pathlib import Path

runs = defaultdict(lambda: defaultdict(list))
kernel = {}
equal = True
for f in sorted(Path(sys.argv[1]).glob("p*_*/plan.json")):
    variant = f.parent.name.split("_", 1)[1]
    for r in json.loads(f.read_text())["rows"]:
        key = (r["routes"], r["experts"])
        runs[key][variant].append(r["us"])
        equal &= r["equal"]
        if variant in ("auto", "bauto"):
            kernel[key] = r["kernel"]
variants = sorted({v for d in runs.values() for v in d}, key=lambda v: (v != "auto", v))
print("| routes | experts | auto's kernel | " + " | ".join(f"{v} us" for v in variants) + " | best/auto |")
print("|---|---|---|" + "---|" * len(variants) + "---|")
for key in sorted(runs):
    mean = {v: sum(t) / len(t) for v, t in runs[key].items()}
    print(f"| {key[0]} | {key[1]} | {kernel.get(key, '')} | " + " | ".join(
        " / ".join(f"{t:.2f}" for t in runs[key][v]) for v in variants)
        + f" | {min(mean.values()) / mean.get('auto', mean.get('bauto')):.2f} |")
print(f"\nevery plan equal to the reference: {equal}")
