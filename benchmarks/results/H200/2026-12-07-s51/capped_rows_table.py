"""Fifty-first session: a copy of the H200 route-direct table whose fp8_block entries take the
scale-row GEMVs (block_scale_rows) under register caps at the per-row form's counts, where both
kernels then compile for sm_90 without spills (the others unchanged).  The scale-row form lost on
the tuned entries where its extra registers cost a program per SM; capped, it keeps their occupancy.

    python benchmarks/results/H200/2026-12-07-s51/capped_rows_table.py OUT.json
"""
import copy
import json
import sys
from pathlib import Path

sys.path.insert(0, "scripts")
from compile_check import ROUTE_DOWN_FP8, ROUTE_GATE_UP_FP8, compile_case, route_down, route_gate_up, sass_facts  # noqa: E402

from fusedmoe.paths._route_direct_kernels import route_down_kernel, route_gate_up_kernel  # noqa: E402

TABLE = Path("fusedmoe/configs/NVIDIA_H200/route_direct.json")


def facts(entry: dict, kernel: str, rows: bool, cap: int) -> dict:
    """Registers and spills of the entry's GEMV ``kernel`` ('gate_up' or 'down') in either form under cap."""
    c = entry["config"]
    t = c[kernel]
    opts = {"maxnreg": cap} if cap else {}
    extra = dict(PDL=c["pdl"], FP16_PRODUCTS=c.get("fp16_products", False), STAGES=t["num_stages"], SCALE_ROWS=rows)
    if kernel == "gate_up":
        k = compile_case(route_gate_up_kernel, ROUTE_GATE_UP_FP8,
                         route_gate_up(2, t["split_k"], 0, False, t["block_n"], t["block_k"], **extra),
                         t["num_warps"], 1, **opts)
    else:
        extra["FP16_PRODUCTS"] = extra["FP16_PRODUCTS"] and not c.get("down_gluon", False)
        k = compile_case(route_down_kernel, ROUTE_DOWN_FP8,
                         route_down(entry["top_k"], 2, c["gate_up"]["split_k"], False, 0, False, t["block_n"], t["block_k"],
                                    TILES=c["down_tiles"], **extra), t["num_warps"], 1, **opts)
    return sass_facts(k.asm["cubin"])


def main() -> None:
    doc = json.loads(TABLE.read_text())
    out = copy.deepcopy(doc)
    for entry, new in zip(doc["entries"], out["entries"]):
        c = entry["config"]
        if entry["format"] != "fp8_block" or c["gate_up"]["swap_ab"]:
            continue
        kernels = ["gate_up"] + ([] if c["down"]["swap_ab"] or c.get("down_gluon") else ["down"])
        caps, ok = {}, True
        for kernel in kernels:
            old = facts(entry, kernel, False, c[kernel].get("max_registers", 0))
            cap = -(-old["registers"] // 8) * 8
            f = facts(entry, kernel, True, cap)
            caps[kernel] = cap
            ok = ok and f["spill_ops"] == 0
            print(entry["num_experts"], entry["top_k"], entry["hidden"], entry["tokens"], kernel,
                  old["registers"], "->", f["registers"], "cap", cap, "spills", f["spill_ops"], flush=True)
        if ok:
            new["config"]["block_scale_rows"] = True
            for kernel, cap in caps.items():
                new["config"][kernel]["max_registers"] = cap
    Path(sys.argv[1]).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
