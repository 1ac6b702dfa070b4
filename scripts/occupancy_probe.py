"""Registers, spills, shared memory and CTAs per SM of the grouped FP8 GEMM tiles, compiled
for sm_90 on this machine (no GPU needed): how many programs share an SM, which the FP8
kernels need to overlap one program's wgmma waits with another's MMA.

    python scripts/occupancy_probe.py [--kernel gate_up,down] [--block-m 64,128] [--block-n 64,128]
                                      [--warps 4,8] [--stages 2,3,4] [--promote 128,0]

gate/up tiles narrower than 128 columns compile as they run (fp32 output, requantised by a
launch of its own); 128-wide ones with the fused requantisation.  CTAs per SM: the least of
65536 registers over the block's (allocated per warp in units of 256), 228 KB of shared
memory over the block's (+1 KB reserved per block), 64 warps over the block's, and 32.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compile_check as cc  # noqa: E402

from fusedmoe.paths._grouped_kernels import grouped_down_kernel, grouped_gate_up_kernel  # noqa: E402

SM90_REGISTERS, SM90_SHARED, SM90_WARPS, SM90_BLOCKS = 65536, 233472, 64, 32


def ctas_per_sm(registers: int, shared: int, warps: int) -> int:
    """Blocks of ``warps`` warps that fit one sm_90 SM (registers allocated per warp in 256s,
    shared memory in 128-byte units plus 1 KB reserved per block)."""
    per_warp = -(-registers * 32 // 256) * 256
    per_block_shared = -(-shared // 128) * 128 + 1024
    return min(SM90_REGISTERS // (per_warp * warps), SM90_SHARED // per_block_shared, SM90_WARPS // warps,
               SM90_BLOCKS)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ints = lambda s: [int(v) for v in s.split(",")]  # noqa: E731
    ap.add_argument("--kernel", default="gate_up,down")
    ap.add_argument("--block-m", type=ints, default=[64, 128])
    ap.add_argument("--block-n", type=ints, default=[64, 128])
    ap.add_argument("--warps", type=ints, default=[4, 8])
    ap.add_argument("--stages", type=ints, default=[3])
    ap.add_argument("--promote", type=ints, default=[128])
    args = ap.parse_args(argv)
    for kernel, bm, bn, warps, stages, promote in itertools.product(
            args.kernel.split(","), args.block_m, args.block_n, args.warps, args.stages, args.promote):
        if kernel == "down":
            fn, ptrs = grouped_down_kernel, cc.DOWN_FP8
            constexprs = cc.grouped(bm, bn, 128, bm < 64, True, 1, PROMOTE_K=promote)
        else:
            fused = bn == 128
            fn, ptrs = grouped_gate_up_kernel, dict(cc.GATE_UP_FP8, **({} if fused else {"act_ptr": "*fp32"}))
            constexprs = cc.grouped(bm, bn, 128, bm < 64, 2, 1, QUANT_OUT=fused, ACTIVATION=0, PROMOTE_K=promote)
        compiled = cc.compile_case(fn, ptrs, constexprs, warps, stages)
        facts = cc.sass_facts(compiled.asm["cubin"])
        if facts["registers"] is None:
            raise RuntimeError(f"{kernel}: cuobjdump reported no register count")
        shared = compiled.metadata.shared
        print(f"fp8_tensor {kernel:7s} BLOCK_M {bm:3d} BLOCK_N {bn:3d} warps {warps} stages {stages} "
              f"promote {promote:3d}: registers {facts['registers']:3d}, spill instructions {facts['spill_ops']:4d}, "
              f"shared {shared // 1024:3d} KB, CTAs/SM {ctas_per_sm(facts['registers'], shared, warps)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
