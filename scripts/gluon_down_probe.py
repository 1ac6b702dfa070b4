"""Probe: the grouped path's FP8 down GEMM (fp8_tensor) in Gluon, against the Triton kernel
the library runs (``grouped_down_kernel``), on the same plan, activations and weights.

``scripts/fp8_pingpong_probe.py`` measured a dense promoted FP8 GEMM in Gluon at 1030-1070
TFLOP/s (TMA loads, 64-row tiles, two CTAs per SM), against 770-825 for the grouped Triton
kernels (results README, ninth session).  This kernel is that GEMM with the grouped path's
contract:
- The plan's blocks (``sorted_routes``, ``block_expert``, ``num_blocks``) are the M tiles.
- The activation rows are gathered by route with cp.async.
- The weight tiles come by TMA from W2 viewed as [E*H, I].
- The MMA sums are promoted every K step of 128 with the step's per-row activation scale.
- y[r] is written in route order, as bf16.

    python scripts/gluon_down_probe.py                 # GPU: rel-L2 against the Triton kernel and
                                                       # the fp64 product, and both graph-timed
    python scripts/gluon_down_probe.py --compile-only  # any machine: sm_90 SASS facts

Expected at Mixtral TP2 M=8192 (0.96 TFLOP): the Triton down took 1166 us (825 TFLOP/s,
eighth session, ``kernels.md``); at the dense probe's rate, about 930 us.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)

# (E, top_k, H, I) of the grouped layers whose FP8 cases are slowest against vLLM, and two more
SHAPES = {"mixtral_8x7b_tp2": (8, 2, 4096, 7168), "qwen3_30b_a3b": (128, 8, 2048, 768),
          "gpt_oss_120b_tp4": (128, 4, 2880, 720), "deepseek_v3_tp8": (256, 8, 7168, 256)}


@gluon.jit
def _block_of(pid, num_pids, num_n, GROUP_M: gl.constexpr):
    """(block, N tile) of this program; GROUP_M blocks walk each weight tile together, as in
    the Triton kernels' ``_program_block``."""
    if GROUP_M == 1:
        return pid // num_n, pid % num_n
    per_group = GROUP_M * num_n
    first = (pid // per_group) * GROUP_M
    size = gl.minimum(num_pids // num_n - first, GROUP_M)
    return first + (pid % per_group) % size, (pid % per_group) // size


@gluon.jit
def _load_step(act_ptr, a_rows, a_ok, cols, I, a_smem, w_desc, w_smem, bars, step, w_row0, num_k,
               STAGES: gl.constexpr, BLOCK_K: gl.constexpr):
    """Issue step ``step``'s loads into its ring slot (A: cp.async, one commit group per step,
    empty past the last step; W: TMA on the slot's barrier)."""
    s = step % STAGES
    if step < num_k:
        k0 = step * BLOCK_K
        ptrs = act_ptr + a_rows[:, None] * I + (k0 + cols)[None, :]
        async_copy.async_copy_global_to_shared(a_smem.index(s), ptrs, mask=a_ok[:, None] & ((k0 + cols) < I)[None, :])
        mbarrier.expect(bars.index(s), w_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(w_desc, [w_row0, k0], bars.index(s), w_smem.index(s))
    async_copy.commit_group()


@gluon.jit
def gluon_grouped_down_kernel(act_ptr, acts_ptr, w_desc, ws_ptr, routes_ptr, block_expert_ptr, num_blocks_ptr, y_ptr,
                              H, I, stride_acts, stride_y,
                              BLOCK_M: gl.constexpr, GROUP_M: gl.constexpr, STAGES: gl.constexpr,
                              num_warps: gl.constexpr):
    """y[r, n] = ws[e] * sum_k acts[r, k // 128] * sum_{k' in step} act[r, k'] W2[e, n, k'] for
    the routes r of one plan block and n in one BLOCK_N tile of H (act [R, I] e4m3 in route
    order, acts [R, cdiv(I, 128)] fp32, W2 [E, H, I] e4m3 as the descriptor's [E*H, I])."""
    BLOCK_N: gl.constexpr = w_desc.block_type.shape[0]
    BLOCK_K: gl.constexpr = w_desc.block_type.shape[1]
    gl.static_assert(BLOCK_K == 128)                 # one activation scale per K step
    gl.static_assert(BLOCK_M == 16 * num_warps)      # one 16-row MMA slice per warp, none duplicated
    num_n = gl.cdiv(H, BLOCK_N)
    b, nt = _block_of(gl.program_id(0), gl.num_programs(0), num_n, GROUP_M)
    if b >= gl.load(num_blocks_ptr):
        return
    e = gl.load(block_expert_ptr + b)
    if e < 0:
        return
    num_k = gl.cdiv(I, BLOCK_K)

    # the gather: 16 bytes per thread, 8 threads per 128-column row
    gather: gl.constexpr = gl.BlockedLayout([1, 16], [4, 8], [num_warps, 1], [1, 0])
    r_g = gl.load(routes_ptr + b * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, gather)))
    a_ok = r_g >= 0
    a_rows = gl.where(a_ok, r_g, 0).to(gl.int64)
    cols = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(0, gather))

    mma: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                  instr_shape=[16, BLOCK_N, 32])
    r_m = gl.load(routes_ptr + b * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, mma)))
    m_ok = r_m >= 0
    m_rows = gl.where(m_ok, r_m, 0).to(gl.int64)

    a_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_M, BLOCK_K], gl.float8e4nv)
    a_smem = gl.allocate_shared_memory(gl.float8e4nv, [STAGES, BLOCK_M, BLOCK_K], a_layout)
    w_smem = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BLOCK_N, BLOCK_K], w_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(bars.index(i), count=1)
    w_row0 = e * H + nt * BLOCK_N
    for i in gl.static_range(STAGES - 1):
        _load_step(act_ptr, a_rows, a_ok, cols, I, a_smem, w_desc, w_smem, bars, i, w_row0, num_k, STAGES, BLOCK_K)

    zero = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=mma)
    acc = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=mma)
    for k in range(num_k):
        # the slot of step k-1 is free (its wgmma was waited for): it takes step k + STAGES - 1
        _load_step(act_ptr, a_rows, a_ok, cols, I, a_smem, w_desc, w_smem, bars, k + STAGES - 1, w_row0, num_k,
                   STAGES, BLOCK_K)
        slot = k % STAGES
        async_copy.wait_group(STAGES - 1)  # step k's activation rows have landed (this thread's)
        fence_async_shared()
        gl.thread_barrier()                # ... and every thread's, visible to the wgmma
        mbarrier.wait(bars.index(slot), phase=(k // STAGES) & 1)
        tok = warpgroup_mma(a_smem.index(slot), w_smem.index(slot).permute((1, 0)), zero, use_acc=False,
                            is_async=True)
        part = warpgroup_mma_wait(num_outstanding=0, deps=(tok,))
        sa = gl.load(acts_ptr + m_rows * stride_acts + k, mask=m_ok, other=0.0)
        acc += part * sa[:, None]
        gl.thread_barrier()                # every warp is past step k's smem before it is refilled
    async_copy.wait_group(0)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(bars.index(i))

    acc = acc * gl.load(ws_ptr + e)
    n = nt * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, mma))
    ptrs = y_ptr + m_rows[:, None] * stride_y + n[None, :]
    gl.store(ptrs, acc.to(gl.bfloat16), mask=m_ok[:, None] & (n < H)[None, :])


def _w_layout(block_n: int, block_k: int):
    return gl.NVMMASharedLayout.get_default_for([block_n, block_k], gl.float8e4nv)


def compile_only(block_m: int, block_n: int, stages: int, warps: int, group_m: int) -> dict:
    """The kernel compiled for sm_90 here (no GPU): wgmma count, waits by depth, registers,
    spills, and ptxas's serialisation warning (C7514) if any."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    sig = {"act_ptr": "*fp8e4nv", "acts_ptr": "*fp32", "w_desc": f"tensordesc<fp8e4nv[{block_n}, 128],"
           f"{_w_layout(block_n, 128)!r}>", "ws_ptr": "*fp32", "routes_ptr": "*i32", "block_expert_ptr": "*i32",
           "num_blocks_ptr": "*i32", "y_ptr": "*bf16", "H": "i32", "I": "i32", "stride_acts": "i32", "stride_y": "i32",
           "BLOCK_M": "constexpr", "GROUP_M": "constexpr", "STAGES": "constexpr", "num_warps": "constexpr"}
    # as the JIT specialises them at real shapes: pointers 16-byte aligned, sizes multiples of 16
    names = list(sig)
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in names
             if n.endswith("_ptr") or n in ("H", "I", "stride_acts", "stride_y")}
    src = GluonASTSource(gluon_grouped_down_kernel, sig,
                         dict(BLOCK_M=block_m, GROUP_M=group_m, STAGES=stages, num_warps=warps), attrs)
    kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=warps))
    bin_dir = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "k.cubin").write_bytes(kernel.asm["cubin"])
        (Path(d) / "k.ptx").write_text(kernel.asm["ptx"])
        sass = subprocess.run([str(bin_dir / "cuobjdump"), "-sass", f"{d}/k.cubin"], capture_output=True,
                              text=True).stdout
        res = subprocess.run([str(bin_dir / "cuobjdump"), "-res-usage", f"{d}/k.cubin"], capture_output=True,
                             text=True).stdout
        ptxas = subprocess.run([str(bin_dir / "ptxas"), "-arch=sm_90a", f"{d}/k.ptx", "-o", f"{d}/o.cubin"],
                               capture_output=True, text=True)
    waits = re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x[0-9a-f]+)", sass)
    row = dict(block_m=block_m, block_n=block_n, stages=stages, warps=warps, qgmma=sass.count("QGMMA"),
               cp_async=sass.count("LDGSTS"), tma=sass.count("UTMALDG"),
               waits={w: waits.count(w) for w in sorted(set(waits))},
               registers=int(re.search(r"REG:(\d+)", res).group(1)),
               spill_ops=len(re.findall(r"\b(?:LDL|STL)\b", sass)), serialised="C7514" in ptxas.stdout + ptxas.stderr,
               shared_bytes=kernel.metadata.shared)
    print(row, flush=True)
    return row


def run_gpu(names: list[str], tokens: list[int], block_m: int, block_n: int, stages: int, warps: int,
            group_m: int | None) -> list[dict]:
    """Each case: the Triton down with the config the policy serves, and the Gluon kernel on
    the same inputs; rel-L2 of each against the fp64 product; graph-timed us and TFLOP/s.
    Each builds its own plan (its BLOCK_M).  The Gluon kernel's GROUP_M is ``group_m``, or by
    default the Triton config's scaled to walk the same rows per weight tile."""
    import torch
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    from fusedmoe import policy
    from fusedmoe._runtime import device_name, num_sms
    from fusedmoe.paths._grouped_kernels import grouped_down_kernel
    from fusedmoe.plan import build_plan

    dev = torch.device("cuda")
    rows = []
    for name in names:
        e_num, top_k, hidden, inter = SHAPES[name]
        gen = torch.Generator(device=dev).manual_seed(0)
        w2 = (torch.randn(e_num, hidden, inter, device=dev, generator=gen) * 0.05).to(torch.float8_e4m3fn)
        ws = torch.rand(e_num, device=dev, generator=gen) + 0.5
        w2_desc = TensorDescriptor(w2.view(e_num * hidden, inter), [e_num * hidden, inter], [inter, 1],
                                   [block_n, 128], _w_layout(block_n, 128))
        for m in tokens:
            r = m * top_k
            ids = torch.rand(m, e_num, device=dev, generator=gen).argsort(dim=1)[:, :top_k].int().contiguous()
            act = torch.randn(r, inter, device=dev, generator=gen).to(torch.float8_e4m3fn)
            assert act.is_contiguous()  # the Gluon gather's row stride is I
            acts = torch.rand(r, triton.cdiv(inter, 128), device=dev, generator=gen) + 0.5
            a64 = act.double() * acts.double().repeat_interleave(128, 1)[:, :inter]
            ref = torch.empty(r, hidden, device=dev, dtype=torch.float64)
            flat = ids.view(-1).long()
            for ex in range(e_num):  # per expert: an [R, H, I] gather would not fit
                sel = (flat == ex).nonzero().view(-1)
                ref[sel] = (a64[sel] @ w2[ex].double().T) * float(ws[ex])
            del a64
            cfg = policy.select_config("grouped", m, top_k, e_num, hidden, inter, "fp8_tensor", device_name(dev),
                                       num_sms(dev))
            g_group = group_m or max(1, cfg.group_m * cfg.block_m // block_m)
            results = {}
            for impl, bm in (("triton", cfg.block_m), ("gluon", block_m)):
                plan = build_plan(ids, e_num, bm)
                grid = plan.block_expert.numel()
                y = torch.full((r, hidden), float("nan"), device=dev, dtype=torch.bfloat16)
                if impl == "triton":
                    dn = cfg.down

                    def call(plan=plan, y=y, dn=dn, grid=grid):
                        grouped_down_kernel[(grid * triton.cdiv(hidden, dn.block_n),)](
                            act, acts, w2, ws, y, plan.sorted_routes, plan.block_expert, plan.num_blocks, y,
                            hidden, inter, act.stride(0), acts.stride(0), w2.stride(0), w2.stride(1), 1, 0, y.stride(0),
                            A_SCALED=True, W_SCALE=1, SWAP_AB=dn.swap_ab, HAS_BIAS=False, BLOCK_M=cfg.block_m,
                            BLOCK_N=dn.block_n, BLOCK_K=dn.block_k, GROUP_M=cfg.group_m, PROMOTE_K=cfg.fp8_promote_k,
                            num_warps=dn.num_warps, num_stages=dn.num_stages)
                else:
                    def call(plan=plan, y=y, grid=grid):
                        gluon_grouped_down_kernel[(grid * triton.cdiv(hidden, block_n),)](
                            act, acts, w2_desc, ws, plan.sorted_routes, plan.block_expert, plan.num_blocks, y,
                            hidden, inter, acts.stride(0), y.stride(0),
                            BLOCK_M=block_m, GROUP_M=g_group, STAGES=stages, num_warps=warps)
                call()
                torch.cuda.synchronize()
                err = float((y.double() - ref).norm() / ref.norm())
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    for _ in range(10):
                        call()
                graph.replay()
                times = []
                for _ in range(5):
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    graph.replay()
                    end.record()
                    end.synchronize()
                    times.append(start.elapsed_time(end) * 1e3 / 10)
                us = sorted(times)[2]
                results[impl] = (us, err, y)
                tiles = (dict(block_n=cfg.down.block_n, warps=cfg.down.num_warps, stages=cfg.down.num_stages,
                              group_m=cfg.group_m) if impl == "triton" else
                         dict(block_n=block_n, warps=warps, stages=stages, group_m=g_group))
                rows.append(dict(shape=name, m=m, impl=impl, block_m=bm, **tiles, us=round(us, 1),
                                 tflops=round(2 * r * hidden * inter / us / 1e6, 1), rel_l2=err))
                print(rows[-1], flush=True)
            diff = (results["gluon"][2].double() - results["triton"][2].double()).norm() / ref.norm()
            rows[-1]["rel_l2_vs_triton"] = float(diff)
            print(f"  gluon / triton time {results['gluon'][0] / results['triton'][0]:.3f}, "
                  f"rel-L2 between them {float(diff):.2e}", flush=True)
            del act, acts, ref
        del w2
        torch.cuda.empty_cache()
    return rows


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--shapes", default="mixtral_8x7b_tp2,qwen3_30b_a3b,gpt_oss_120b_tp4")
    ap.add_argument("--tokens", default="2048,8192")
    ap.add_argument("--tile", default="64,128",
                    help="BLOCK_M,BLOCK_N (BLOCK_K is 128; BLOCK_M = 16 x warps; 64,256 spills with 4 warps)")
    ap.add_argument("--group-m", type=int, help="GROUP_M of the Gluon kernel (default: the Triton config's, "
                    "scaled to the same rows per weight tile)")
    ap.add_argument("--stages", type=int, default=4)
    ap.add_argument("--warps", type=int, default=4)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    bm, bn = map(int, args.tile.split(","))
    if args.compile_only:
        rows = [compile_only(bm, bn, args.stages, args.warps, g) for g in (1, 8)]
    else:
        rows = run_gpu(args.shapes.split(","), [int(t) for t in args.tokens.split(",")], bm, bn, args.stages,
                       args.warps, args.group_m)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
