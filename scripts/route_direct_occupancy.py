"""Where route-direct's two grids fit on an sm_90 GPU, from the kernels compiled here (no GPU).

For each entry of a device's tuned route-direct table (``fusedmoe/configs/<device>/``), it
compiles the gate/up and down kernels with the entry's tiles for sm_90, reads their registers
and shared memory, and works out, with the occupancy rules of sm_90 (2048 threads, 64 warps,
32 CTAs, 65536 registers allocated per warp in units of 256, 228 KB of shared memory, 1 KB of
it per CTA reserved):

- ``gu/SM``: gate/up CTAs an SM holds; ``gu_waves``: its programs over that many on every SM;
- ``gu_first``: gate/up CTAs per SM in the first wave (programs spread over the SMs);
- ``dn/SM``: down CTAs an SM holds alone; ``dn_beside``: down CTAs that fit on an SM beside
  its first-wave gate/up CTAs; ``dn_waves``: down programs over dn/SM on every SM.

Under PDL the down grid launches once every gate/up program has started: where ``gu_waves`` > 1
that is after the first wave has finished, and where ``dn_beside`` is 0 no down program starts
on an SM before its gate/up programs retire, so its weight loads cannot overlap them.

    python scripts/route_direct_occupancy.py [--device NVIDIA_H200] [--max-tokens 8] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from compile_check import compile_case, sass_facts  # noqa: E402
from fusedmoe import policy  # noqa: E402
from fusedmoe.epilogue import ACTIVATIONS  # noqa: E402
from fusedmoe.paths._route_direct_kernels import (route_down_kernel, route_down_mma_kernel,  # noqa: E402
                                                  route_gate_up_kernel, route_gate_up_mma_kernel)
from fusedmoe.paths.route_direct import launch_programs  # noqa: E402

SMS = 132
SM_THREADS, SM_WARPS, SM_CTAS, SM_REGS, SM_SHARED, CTA_RESERVED = 2048, 64, 32, 65536, 228 * 1024, 1024
W_SCALE = {"bf16": 0, "fp16": 0, "fp8_tensor": 1, "fp8_block": 2, "w4a8": 3}
DTYPES = {"bf16": ("*bf16", "*bf16"), "fp16": ("*fp16", "*fp16"), "fp8_tensor": ("*bf16", "*fp8e4nv"),
          "fp8_block": ("*bf16", "*fp8e4nv"), "w4a8": ("*bf16", "*u8")}


def _compile(kernel, ptrs: dict, constexprs: dict, tile: policy.Tile):
    """(registers per thread, shared bytes) of ``kernel`` compiled for sm_90 with a tile's options."""
    compiled = compile_case(kernel, ptrs, constexprs, tile.num_warps, tile.num_stages if tile.swap_ab else 1,
                            **tile.register_cap())
    return sass_facts(compiled.asm["cubin"])["registers"], compiled.metadata.shared


def ctas_per_sm(warps: int, regs: int, shared: int, free_regs: int = SM_REGS, free_warps: int = SM_WARPS,
                free_ctas: int = SM_CTAS, free_shared: int = SM_SHARED) -> int:
    """CTAs of ``warps`` warps, ``regs`` registers a thread and ``shared`` bytes that fit in an
    SM's free resources."""
    per_warp = -(-regs * 32 // 256) * 256
    return max(0, min(free_ctas, free_warps // warps, free_regs // (warps * per_warp),
                      free_shared // (shared + CTA_RESERVED)))


def entry_row(e: dict) -> dict:
    cfg = policy.config_from_dict("route_direct", e["config"])
    fmt = e["format"]
    x_t, w_t = DTYPES[fmt]
    gu, dn = cfg.gate_up, cfg.down
    common = dict(W_SCALE=W_SCALE[fmt], SPLIT_K=gu.split_k, ACTIVATION=ACTIVATIONS["silu"], HAS_BIAS=False,
                  PDL=cfg.pdl)
    if gu.swap_ab:
        gu_regs, gu_smem = _compile(route_gate_up_mma_kernel, dict(x_ptr=x_t, w_ptr=w_t, ids_ptr="*i32"),
                                    dict(common, BLOCK_N=gu.block_n, BLOCK_K=gu.block_k), gu)
    else:
        gu_regs, gu_smem = _compile(route_gate_up_kernel, dict(x_ptr=x_t, w_ptr=w_t, ids_ptr="*i32"),
                                    dict(common, BLOCK_N=gu.block_n, BLOCK_K=gu.block_k,
                                         FP16_PRODUCTS=cfg.fp16_products, STAGES=gu.num_stages), gu)
    down_common = dict(common, TOPK=e["top_k"], HAS_SHARED=False, BLOCK_N=dn.block_n, BLOCK_K=dn.block_k)
    down_ptrs = dict(w_ptr=w_t, ids_ptr="*i32", shared_ptr=x_t, out_ptr=x_t)
    if dn.swap_ab:
        dn_regs, dn_smem = _compile(route_down_mma_kernel, down_ptrs, down_common, dn)
    else:
        dn_regs, dn_smem = _compile(route_down_kernel, down_ptrs, dict(down_common, TILES=cfg.down_tiles,
                                    FP16_PRODUCTS=cfg.fp16_products, STAGES=dn.num_stages), dn)
    n_gu, n_dn = launch_programs(e["tokens"], e["top_k"], e["inter"], e["hidden"], cfg)
    gu_sm = ctas_per_sm(gu.num_warps, gu_regs, gu_smem)
    dn_sm = ctas_per_sm(dn.num_warps, dn_regs, dn_smem)
    first = min(gu_sm, -(-n_gu // SMS))
    per_warp = -(-gu_regs * 32 // 256) * 256
    beside = ctas_per_sm(dn.num_warps, dn_regs, dn_smem, free_regs=SM_REGS - first * gu.num_warps * per_warp,
                         free_warps=SM_WARPS - first * gu.num_warps, free_ctas=SM_CTAS - first,
                         free_shared=SM_SHARED - first * (gu_smem + CTA_RESERVED))
    return dict(case=f"E{e['num_experts']} k{e['top_k']} H{e['hidden']} I{e['inter']} {fmt} M={e['tokens']}",
                us=e.get("us"), pdl=cfg.pdl, gu_programs=n_gu, gu_warps=gu.num_warps, gu_regs=gu_regs,
                gu_shared=gu_smem, gu_per_sm=gu_sm, gu_waves=round(n_gu / (SMS * gu_sm), 2), gu_first=first,
                dn_programs=n_dn, dn_warps=dn.num_warps, dn_regs=dn_regs, dn_shared=dn_smem, dn_per_sm=dn_sm,
                dn_beside=beside, dn_waves=round(n_dn / (SMS * dn_sm), 2))


COLUMNS = ("us", "pdl", "gu_programs", "gu_warps", "gu_regs", "gu_per_sm", "gu_waves", "gu_first", "dn_programs",
           "dn_warps", "dn_regs", "dn_per_sm", "dn_beside", "dn_waves")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="NVIDIA_H200")
    ap.add_argument("--max-tokens", type=int, default=8)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    table = json.loads((Path(policy.__file__).parent / "configs" / a.device / "route_direct.json").read_text())
    entries = sorted((e for e in table["entries"] if e["tokens"] <= a.max_tokens),
                     key=lambda e: (e["tokens"], e["format"], e["num_experts"], e["hidden"], e["inter"]))
    rows = []
    print("| case | " + " | ".join(COLUMNS) + " |\n|---|" + "---|" * len(COLUMNS))
    for e in entries:
        r = entry_row(e)
        rows.append(r)
        print(f"| {r['case']} | " + " | ".join(str(r[c]) for c in COLUMNS) + " |", flush=True)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
