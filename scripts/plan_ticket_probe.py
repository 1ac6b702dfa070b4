"""How much the ticket plan's zeroed counter costs: the ticket launch graph-timed as shipped (a
fill of the counter per call, one more graph node) and with one counter kept zero between calls
(the kernel's last program sets it back to 0; safe only while one stream at a time uses it).

    python scripts/plan_ticket_probe.py [--routes ...] [--experts ...] [--chunk N] [--warps N] [--out DIR]

Writes probe.json / probe.md under --out: us per plan, both ways, each plan checked against
``plan.reference_plan``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from fusedmoe import plan
from fusedmoe.bench import plan as plan_bench


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--routes", default="256,512,1024,2048")
    ap.add_argument("--experts", default="64,256,512")
    ap.add_argument("--chunk", type=int)
    ap.add_argument("--warps", type=int)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    routes = [int(v) for v in args.routes.split(",")]
    experts = [int(v) for v in args.experts.split(",")]
    shipped = plan_bench.run(routes, experts, 8, 16, "ticket", args.chunk, args.warps)
    kept = torch.zeros(1, dtype=torch.int32, device="cuda")
    plan._ticket_counter = lambda device: kept  # one counter for every call
    cached = plan_bench.run(routes, experts, 8, 16, "ticket", args.chunk, args.warps)
    rows = [dict(routes=a["routes"], experts=a["experts"], fill_us=a["us"], kept_us=b["us"],
                 equal=a["equal"] and b["equal"]) for a, b in zip(shipped, cached)]
    md = ["| routes | experts | counter filled per call, us | counter kept, us | equal |", "|---|---|---|---|---|"]
    md += [f"| {r['routes']} | {r['experts']} | {r['fill_us']:.2f} | {r['kept_us']:.2f} | {r['equal']} |" for r in rows]
    print("\n".join(md))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "probe.json").write_text(json.dumps(dict(device=torch.cuda.get_device_name(), rows=rows), indent=1))
        (args.out / "probe.md").write_text("\n".join(md) + "\n")
    return 0 if all(r["equal"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
