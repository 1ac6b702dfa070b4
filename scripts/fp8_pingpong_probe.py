"""Probe: can an FP8 GEMM that promotes its MMA sums to fp32 every K step of 128 keep the
tensor cores busy?  Dense C[M, N] = A[M, K] . B[N, K]^T (both e4m3, fp32 out), one Gluon
kernel (explicit async wgmma, TMA loads through a ring of STAGES) in three modes, and a fourth
warp-specialised one:

- ``chain``: one accumulator, each step's wgmma added to it in the MMA (no promotion: the
  accumulation Triton's ``tl.dot`` runs by default and vLLM's FP8 kernel keeps; rel-L2 over our
  0.5% bound at large K, results README, seventh session).
- ``wait``: each step's wgmma into a fresh partial, waited for, then added in fp32: what
  ``tl.dot(..., max_num_imprecise_acc=128)`` compiles to (the grouped FP8 path today; its SASS
  waits ``WARPGROUP.DEPBAR.LE gsb0, 0x0`` after every step).
- ``pingpong``: two partials in turn: step k's wgmma is issued before step k-1's partial is
  waited for (``warpgroup_mma_wait(1)``) and added, so the fp32 add overlaps the tensor cores.
- ``ws`` (``fp8_gemm_ws_kernel``): ``wait`` warp-specialised on a 128-row tile: a producer
  warp issues the TMA loads (the one-partition kernels sync the CTA before each issue: 33-44%
  of their stall cycles, Nsight Compute, eleventh session), and two consumer warpgroups share
  the B tile and release each ring slot apart, so one's promotion runs under the other's wgmma.
  Compiled for sm_90 without spills at 128 x 128 and 128 x 256 (half the L2 bytes per output
  of 64 x 128; 197 KB of shared memory at 4 stages), the consumers at up to 232-248 registers by
  ``setmaxnreg``.  (Storing C through a layout conversion, as the other modes do, spilled 84
  instructions at 128 x 256.)  Twelfth session, Mixtral's gate/up and down: 1168 / 1241
  TFLOP/s at 128 x 128, 1248 / 1299 at 128 x 256, against ``wait``'s 1042 / 1060 at 64 x 128;
  the library's warp-specialised grouped kernels take this form.

The question for the grouped path (issue 3's five slow fp8_tensor cases, 1.15-1.27x vLLM's
time): does ``pingpong`` run at ``chain``'s rate?  If so, the grouped FP8 gate/up is worth
porting to Gluon.  Expected on the H200: ``wait`` near the bf16 rate (~700 TFLOP/s, as the
grouped path measures), ``chain`` and ``pingpong`` 1.2-1.5x faster.

    python scripts/fp8_pingpong_probe.py                 # GPU: rel-L2 and TFLOP/s per mode and shape
    python scripts/fp8_pingpong_probe.py --compile-only  # any machine: sm_90 SASS facts per mode
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository, for fusedmoe
from fusedmoe.paths._grouped_gluon_kernels import (  # noqa: E402
    WS_CONSUMER_REGS, WS_LOADER_REGS, WS_MAXNREG, ws_fill_ring, ws_partial, ws_ring)

MODES = {"chain": 0, "wait": 1, "pingpong": 2, "ws": 3}  # ws: fp8_gemm_ws_kernel
# (M, N, K): rows per expert x gate/up or down of a grouped layer at large M
SHAPES = {"mixtral_gate_up": (2048, 14336, 4096), "mixtral_down": (2048, 4096, 7168),
          "qwen3_gate_up": (1024, 1536, 2048), "square": (4096, 4096, 4096)}


@gluon.constexpr_function
def _instr_n(block_n):
    return min(block_n, 256)


@gluon.jit
def _load_step(a_desc, b_desc, a_smem, b_smem, bars, step, off_m, off_n, STAGES: gl.constexpr):
    """Issue the TMA loads of K step ``step`` into its ring slot."""
    s = step % STAGES
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    mbarrier.expect(bars.index(s), a_desc.block_type.nbytes + b_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(a_desc, [off_m, step * BLOCK_K], bars.index(s), a_smem.index(s))
    tma.async_copy_global_to_shared(b_desc, [off_n, step * BLOCK_K], bars.index(s), b_smem.index(s))


@gluon.jit
def _issue(a_desc, b_desc, a_smem, b_smem, bars, step, acc, zero, off_m, off_n, num_k,
           STAGES: gl.constexpr, USE_ACC: gl.constexpr):
    """Wait for step's tiles, issue its wgmma (async) into acc (USE_ACC) or a fresh partial."""
    s = step % STAGES
    mbarrier.wait(bars.index(s), phase=(step // STAGES) & 1)
    if USE_ACC:
        return warpgroup_mma(a_smem.index(s), b_smem.index(s).permute((1, 0)), acc, is_async=True)
    return warpgroup_mma(a_smem.index(s), b_smem.index(s).permute((1, 0)), zero, use_acc=False, is_async=True)


@gluon.jit
def _refill(a_desc, b_desc, a_smem, b_smem, bars, done_step, off_m, off_n, num_k, STAGES: gl.constexpr):
    """Step ``done_step``'s wgmma has completed: its slot takes step done_step + STAGES."""
    nxt = done_step + STAGES
    if (done_step >= 0) & (nxt < num_k):
        _load_step(a_desc, b_desc, a_smem, b_smem, bars, nxt, off_m, off_n, STAGES)


@gluon.jit
def fp8_gemm_kernel(a_desc, b_desc, c_ptr, M, N, K, stride_cm,
                    MODE: gl.constexpr, STAGES: gl.constexpr, num_warps: gl.constexpr):
    """C[off_m:, off_n:] tile = A . B^T over K in steps of BLOCK_K (K a multiple of 2 BLOCK_K)."""
    BLOCK_M: gl.constexpr = a_desc.block_type.shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_type.shape[0]
    off_m = gl.program_id(0) * BLOCK_M
    off_n = gl.program_id(1) * BLOCK_N
    num_k = K // BLOCK_K

    layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                     instr_shape=[16, _instr_n(BLOCK_N), 32])
    a_smem = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    b_smem = gl.allocate_shared_memory(b_desc.dtype, [STAGES, BLOCK_N, BLOCK_K], b_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(bars.index(s), count=1)
    for s in gl.static_range(STAGES):
        if s < num_k:
            _load_step(a_desc, b_desc, a_smem, b_smem, bars, s, off_m, off_n, STAGES)

    zero = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=layout)
    acc = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=layout)
    if MODE == 0:  # chain: keep one wgmma in flight; the previous step's slot refills
        for k in range(num_k):
            tok = _issue(a_desc, b_desc, a_smem, b_smem, bars, k, acc, zero, off_m, off_n, num_k, STAGES, True)
            acc = warpgroup_mma_wait(num_outstanding=1, deps=(tok,))
            _refill(a_desc, b_desc, a_smem, b_smem, bars, k - 1, off_m, off_n, num_k, STAGES)
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
    elif MODE == 1:  # wait: each partial waited for, then added
        for k in range(num_k):
            tok = _issue(a_desc, b_desc, a_smem, b_smem, bars, k, acc, zero, off_m, off_n, num_k, STAGES, False)
            part = warpgroup_mma_wait(num_outstanding=0, deps=(tok,))
            acc += part
            _refill(a_desc, b_desc, a_smem, b_smem, bars, k, off_m, off_n, num_k, STAGES)
    else:  # pingpong: two steps per iteration, partials p0 / p1 in turn
        for k in range(0, num_k, 2):
            t0 = _issue(a_desc, b_desc, a_smem, b_smem, bars, k, acc, zero, off_m, off_n, num_k, STAGES, False)
            t1 = _issue(a_desc, b_desc, a_smem, b_smem, bars, k + 1, acc, zero, off_m, off_n, num_k, STAGES, False)
            acc += warpgroup_mma_wait(num_outstanding=1, deps=(t0,))  # step k done, step k+1 in flight
            _refill(a_desc, b_desc, a_smem, b_smem, bars, k, off_m, off_n, num_k, STAGES)
            acc += warpgroup_mma_wait(num_outstanding=0, deps=(t1,))
            _refill(a_desc, b_desc, a_smem, b_smem, bars, k + 1, off_m, off_n, num_k, STAGES)
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(bars.index(s))

    out_layout: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [num_warps, 1], [1, 0])
    c = gl.convert_layout(acc, out_layout)
    rows = off_m + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, out_layout))
    cols = off_n + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, out_layout))
    gl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :], c, mask=(rows < M)[:, None] & (cols < N)[None, :])


@gluon.jit
def _ws_loader(a_desc, b_desc, a_smem, b_smem, ready, empty, c_ptr, off_m, off_n, M, N, num_k, stride_cm):
    """Producer warp of ``fp8_gemm_ws_kernel`` (its signature is the consumer worker's: worker
    partitions share one)."""
    ws_fill_ring(a_desc, b_desc, a_smem, b_smem, ready, empty, off_m, off_n, num_k)


@gluon.jit
def _ws_store(c_ptr, acc, row0, col0, M, N, stride_cm):
    """acc stored from its MMA layout (a layout conversion would hold a second copy)."""
    rows = row0 + gl.arange(0, acc.shape[0], layout=gl.SliceLayout(1, acc.type.layout))
    cols = col0 + gl.arange(0, acc.shape[1], layout=gl.SliceLayout(0, acc.type.layout))
    gl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :], acc, mask=(rows < M)[:, None] & (cols < N)[None, :])


@gluon.jit
def _ws_consume(a_smem, b_smem, ready, empty, c_ptr, off_m, off_n, M, N, num_k, stride_cm, WG: gl.constexpr):
    """Consumer warpgroup WG of ``fp8_gemm_ws_kernel``: rows WG*64.. of the tile, every K step's
    product in 1 or 2 sub-tiles of 128 columns, each into a fresh partial that is waited for
    and promoted; then the slot released (one arrive of the two the slot's barrier takes), so
    the two warpgroups run apart and one's promotion overlaps the other's wgmma.  Then C."""
    STAGES: gl.constexpr = a_smem.type.shape[0]
    BLOCK_N: gl.constexpr = b_smem.type.shape[1]
    SUB_N: gl.constexpr = min(BLOCK_N, 128)
    PARTS: gl.constexpr = BLOCK_N // SUB_N
    gl.static_assert((PARTS == 1) | (PARTS == 2))
    layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                     instr_shape=[16, SUB_N, 32])
    acc0 = gl.zeros((64, SUB_N), dtype=gl.float32, layout=layout)
    acc1 = acc0
    for k in range(num_k):
        s = k % STAGES
        mbarrier.wait(ready.index(s), (k // STAGES) & 1)
        a = a_smem.index(s).slice(WG * 64, 64)
        acc0 += ws_partial(a, b_smem.index(s), 0, SUB_N, layout)
        if PARTS > 1:
            acc1 += ws_partial(a, b_smem.index(s), 1, SUB_N, layout)
        mbarrier.arrive(empty.index(s), count=1)  # the warpgroup's wgmmas are done with the slot
    _ws_store(c_ptr, acc0, off_m + WG * 64, off_n, M, N, stride_cm)
    if PARTS > 1:
        _ws_store(c_ptr, acc1, off_m + WG * 64, off_n + SUB_N, M, N, stride_cm)


@gluon.jit
def _ws_consumer0(a_smem, b_smem, ready, empty, c_ptr, off_m, off_n, M, N, num_k, stride_cm):
    _ws_consume(a_smem, b_smem, ready, empty, c_ptr, off_m, off_n, M, N, num_k, stride_cm, 0)


@gluon.jit
def _ws_consumer1(a_desc, b_desc, a_smem, b_smem, ready, empty, c_ptr, off_m, off_n, M, N, num_k, stride_cm):
    _ws_consume(a_smem, b_smem, ready, empty, c_ptr, off_m, off_n, M, N, num_k, stride_cm, 1)


@gluon.jit
def fp8_gemm_ws_kernel(a_desc, b_desc, c_ptr, M, N, K, stride_cm, STAGES: gl.constexpr, num_warps: gl.constexpr):
    """The ``wait`` mode warp-specialised, on a [128, BLOCK_N] tile: one producer warp issues
    every TMA load (no CTA-wide barrier before each issue, as in the one-partition kernel), and
    two consumer warpgroups (the default partition and a worker, 64 rows each) share the B tile
    and release each slot apart, so one's promotion runs under the other's wgmma.  BLOCK_N 256
    halves the L2 bytes per output of a 64 x 128 tile; it runs as two sub-tiles of 128 so
    that one partial is alive at a time.  (Constexprs reach the partitions as the shapes of
    the shared buffers: values passed through warp_specialize arrive as run-time values.)"""
    gl.static_assert(num_warps == 4)  # the default partition is one consumer warpgroup
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    BLOCK_M: gl.constexpr = a_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = b_desc.block_type.shape[0]
    gl.static_assert(BLOCK_M == 128)
    off_m = gl.program_id(0) * BLOCK_M
    off_n = gl.program_id(1) * BLOCK_N
    num_k = K // BLOCK_K
    a_smem, b_smem, ready, empty = ws_ring(a_desc, b_desc, STAGES)
    worker_args = (a_desc, b_desc, a_smem, b_smem, ready, empty, c_ptr, off_m, off_n, M, N, num_k, stride_cm)
    gl.warp_specialize([
        (_ws_consumer0, (a_smem, b_smem, ready, empty, c_ptr, off_m, off_n, M, N, num_k, stride_cm)),
        (_ws_consumer1, worker_args),
        (_ws_loader, worker_args),
    ], [4, 1], [WS_CONSUMER_REGS, WS_LOADER_REGS])


def _layouts(block_m: int, block_n: int, block_k: int):
    return (gl.NVMMASharedLayout.get_default_for([block_m, block_k], gl.float8e4nv),
            gl.NVMMASharedLayout.get_default_for([block_n, block_k], gl.float8e4nv))


def _kernel(name: str, stages: int, warps: int):
    """(kernel, constexpr arguments, compile/launch options) of mode ``name``."""
    if name == "ws":
        return (fp8_gemm_ws_kernel, dict(STAGES=stages, num_warps=4),
                dict(num_warps=4, maxnreg=WS_MAXNREG))
    return fp8_gemm_kernel, dict(MODE=MODES[name], STAGES=stages, num_warps=warps), dict(num_warps=warps)


def compile_only(block_m: int, block_n: int, block_k: int, stages: int, warps: int, modes: list[str]) -> list[dict]:
    """Each mode compiled for sm_90 here (no GPU): wgmma count, waits by depth, registers, spills."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    a_l, b_l = _layouts(block_m, block_n, block_k)
    sig = {"a_desc": f"tensordesc<fp8e4nv[{block_m}, {block_k}],{a_l!r}>",
           "b_desc": f"tensordesc<fp8e4nv[{block_n}, {block_k}],{b_l!r}>",
           "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32", "stride_cm": "i32"}
    sys.path.insert(0, str(Path(__file__).parent))
    from compile_check import sass_facts

    rows = []
    for name in modes:
        fn, consts, options = _kernel(name, stages, warps)
        src = GluonASTSource(fn, {**sig, **{c: "constexpr" for c in consts}}, consts)
        kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)
        facts = sass_facts(kernel.asm["cubin"])
        rows.append(dict(mode=name, **{f: facts[f] for f in ("qgmma", "wgmma_waits", "registers", "spill_ops")},
                         shared_bytes=kernel.metadata.shared))
        print(rows[-1], flush=True)
    return rows


def run_gpu(block_m: int, block_n: int, block_k: int, stages: int, warps: int, shapes: list[str],
            modes: list[str]) -> list[dict]:
    """Each of ``modes`` on each shape: rel-L2 against the fp64 product and TFLOP/s (CUDA-graph
    timed).  Its first launch of a mode is the eager check (``ncu --launch-count 1`` takes it)."""
    import torch
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    a_l, b_l = _layouts(block_m, block_n, block_k)
    rows = []
    for shape in shapes:
        m, n, k = SHAPES[shape]
        gen = torch.Generator(device="cuda").manual_seed(0)
        a = torch.randn(m, k, device="cuda", generator=gen).to(torch.float8_e4m3fn)
        b = (torch.randn(n, k, device="cuda", generator=gen) * 0.05).to(torch.float8_e4m3fn)
        ref = a.double() @ b.double().T
        c = torch.empty(m, n, device="cuda", dtype=torch.float32)
        a_desc = TensorDescriptor(a, list(a.shape), list(a.stride()), [block_m, block_k], a_l)
        b_desc = TensorDescriptor(b, list(b.shape), list(b.stride()), [block_n, block_k], b_l)
        grid = (triton.cdiv(m, block_m), triton.cdiv(n, block_n))
        for name in modes:
            fn, consts, options = _kernel(name, stages, warps)

            def call():
                fn[grid](a_desc, b_desc, c, m, n, k, c.stride(0), **consts, **{
                    o: v for o, v in options.items() if o != "num_warps"})
            c.fill_(float("nan"))
            call()
            torch.cuda.synchronize()
            err = float((c.double() - ref).norm() / ref.norm())
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for _ in range(10):
                    call()
            graph.replay()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            times = []
            for _ in range(5):
                start.record()
                graph.replay()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) * 1e3 / 10)
            us = sorted(times)[len(times) // 2]
            rows.append(dict(shape=shape, m=m, n=n, k=k, mode=name, us=round(us, 1),
                             tflops=round(2 * m * n * k / us / 1e6, 1), rel_l2=err))
            print(rows[-1], flush=True)
    return rows


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--tile", default="128,128,128", help="BLOCK_M,BLOCK_N,BLOCK_K")
    ap.add_argument("--stages", type=int, default=4)
    ap.add_argument("--warps", type=int, default=8)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--modes", default="chain,wait,pingpong", help="some of " + ", ".join(MODES))
    ap.add_argument("--out", type=Path, help="write the rows as JSON here")
    args = ap.parse_args(argv)
    modes = list(dict.fromkeys(args.modes.split(",")))
    if not set(modes) <= set(MODES):
        ap.error(f"--modes: expected some of {', '.join(MODES)}, got {args.modes!r}")
    bm, bn, bk = map(int, args.tile.split(","))
    if "ws" in modes and (bm != 128 or bn not in (128, 256) or bk != 128):
        ap.error(f"--tile: mode ws takes BLOCK_M 128, BLOCK_N 128 or 256 and BLOCK_K 128, got {args.tile}")
    if args.compile_only:
        rows = compile_only(bm, bn, bk, args.stages, args.warps, modes)
    else:
        rows = run_gpu(bm, bn, bk, args.stages, args.warps, args.shapes.split(","), modes)
    if args.out:
        args.out.write_text(json.dumps(dict(tile=[bm, bn, bk], stages=args.stages, warps=args.warps, rows=rows),
                                       indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
