"""Probe: the grouped path's two FP8 GEMMs (fp8_tensor) in Gluon, against the Triton kernels
the library runs, on the same plan, activations and weights.

``scripts/fp8_pingpong_probe.py`` measured a dense promoted FP8 GEMM in Gluon at 1032-1047
TFLOP/s on Mixtral's per-expert gate/up (TMA loads, 64-row tiles, two CTAs per SM), against
770-825 for the grouped Triton kernels (results README, ninth session).  These kernels are that
GEMM with the grouped path's contract:
- The plan's blocks (``sorted_routes``, ``block_expert``, ``num_blocks``) are the M tiles.
- The activation rows are gathered with cp.async: x rows by token for gate/up, the
  intermediate's rows by route for down.
- The weight tiles come by TMA, from W13 viewed as [E*2I, H] and W2 as [E*H, I].
- The MMA sums are promoted every K step of 128.
- down: each step's sum is scaled by the step's per-row activation scale, and y[r] is written
  in route order as bf16.
- gate/up: gate and up are two 64-column tiles, and up's wgmma overlaps gate's add.  x's row
  scale and the expert scale apply at the end, then SwiGLU.  The output is fp32, requantised
  per 128 columns by ``quantize_rows``, as the library's 64-column Triton tile does.

    python scripts/gluon_grouped_probe.py [--gemm down,gate_up]   # GPU: rel-L2 against fp64 and
                                                                  # graph-timed against Triton
    python scripts/gluon_grouped_probe.py --compile-only          # any machine: sm_90 SASS facts

Expected at Mixtral TP2 M=8192: the Triton gate/up took 2500 us (770 TFLOP/s) and down 1166 us
(825; eighth session, ``kernels.md``); at the dense probe's rate, about 1900 and 930 us.
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

# (E, top_k, H, I) of the grouped layers whose FP8 cases are slowest against vLLM, and one more
SHAPES = {"mixtral_8x7b_tp2": (8, 2, 4096, 7168), "qwen3_30b_a3b": (128, 8, 2048, 768),
          "gpt_oss_120b_tp4": (128, 4, 2880, 720), "deepseek_v3_tp8": (256, 8, 7168, 256)}
K_STEP = 128                     # one activation scale (down) per K step
BLOCK_K = gl.constexpr(K_STEP)   # the same, for the kernels


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
def _load_step(a_ptr, a_rows, a_ok, cols, K, a_smem, w_desc, w_smem, u_smem, bars, step, w_row0, u_row0, num_k,
               STAGES: gl.constexpr, TWO_W: gl.constexpr):
    """Issue step ``step``'s loads into its ring slot: A rows a_rows (row stride K) by
    cp.async, one commit group per step (empty past the last step); the weight tile at row
    w_row0 (and with TWO_W the one at u_row0) by TMA on the slot's barrier."""
    s = step % STAGES
    if step < num_k:
        k0 = step * BLOCK_K
        ptrs = a_ptr + a_rows[:, None] * K + (k0 + cols)[None, :]
        async_copy.async_copy_global_to_shared(a_smem.index(s), ptrs, mask=a_ok[:, None] & ((k0 + cols) < K)[None, :])
        if TWO_W:
            mbarrier.expect(bars.index(s), 2 * w_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(w_desc, [w_row0, k0], bars.index(s), w_smem.index(s))
            tma.async_copy_global_to_shared(w_desc, [u_row0, k0], bars.index(s), u_smem.index(s))
        else:
            mbarrier.expect(bars.index(s), w_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(w_desc, [w_row0, k0], bars.index(s), w_smem.index(s))
    async_copy.commit_group()


@gluon.jit
def _step_ready(bars, k, STAGES: gl.constexpr):
    """Wait until step k's A rows (every thread's cp.async, made visible to wgmma) and weight
    tiles (TMA) are in its slot."""
    async_copy.wait_group(STAGES - 1)
    fence_async_shared()
    gl.thread_barrier()
    mbarrier.wait(bars.index(k % STAGES), phase=(k // STAGES) & 1)


@gluon.jit
def _gather_rows(routes_ptr, b, TOPK, BLOCK_M: gl.constexpr, layout: gl.constexpr):
    """Block b's routes in ``layout``: (row index into A: the route, or its token when TOPK > 1
    is given for gate/up; valid)."""
    r = gl.load(routes_ptr + b * BLOCK_M + gl.arange(0, BLOCK_M, layout=layout))
    ok = r >= 0
    return gl.where(ok, r // TOPK, 0).to(gl.int64), ok


@gluon.jit
def gluon_grouped_down_kernel(act_ptr, acts_ptr, w_desc, ws_ptr, routes_ptr, block_expert_ptr, num_blocks_ptr, y_ptr,
                              H, I, stride_acts, stride_y,
                              BLOCK_M: gl.constexpr, GROUP_M: gl.constexpr, STAGES: gl.constexpr,
                              num_warps: gl.constexpr):
    """y[r, n] = ws[e] * sum_k acts[r, k // 128] * sum_{k' in step} act[r, k'] W2[e, n, k'] for
    the routes r of one plan block and n in one BLOCK_N tile of H (act [R, I] e4m3 in route
    order, acts [R, cdiv(I, 128)] fp32, W2 [E, H, I] e4m3 as the descriptor's [E*H, I])."""
    BLOCK_N: gl.constexpr = w_desc.block_type.shape[0]
    gl.static_assert(w_desc.block_type.shape[1] == BLOCK_K)
    gl.static_assert(BLOCK_M == 16 * num_warps)  # one 16-row MMA slice per warp, none duplicated
    b, nt = _block_of(gl.program_id(0), gl.num_programs(0), gl.cdiv(H, BLOCK_N), GROUP_M)
    if b >= gl.load(num_blocks_ptr):
        return
    e = gl.load(block_expert_ptr + b)
    if e < 0:
        return
    num_k = gl.cdiv(I, BLOCK_K)
    gather: gl.constexpr = gl.BlockedLayout([1, 16], [4, 8], [num_warps, 1], [1, 0])  # 16 bytes per thread
    a_rows, a_ok = _gather_rows(routes_ptr, b, 1, BLOCK_M, gl.SliceLayout(1, gather))
    cols = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(0, gather))
    mma: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                  instr_shape=[16, BLOCK_N, 32])
    m_rows, m_ok = _gather_rows(routes_ptr, b, 1, BLOCK_M, gl.SliceLayout(1, mma))

    a_smem = gl.allocate_shared_memory(gl.float8e4nv, [STAGES, BLOCK_M, BLOCK_K],
                                       gl.NVMMASharedLayout.get_default_for([BLOCK_M, BLOCK_K], gl.float8e4nv))
    w_smem = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BLOCK_N, BLOCK_K], w_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(bars.index(i), count=1)
    w_row0 = e * H + nt * BLOCK_N
    for i in gl.static_range(STAGES - 1):
        _load_step(act_ptr, a_rows, a_ok, cols, I, a_smem, w_desc, w_smem, w_smem, bars, i, w_row0, w_row0, num_k,
                   STAGES, False)

    zero = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=mma)
    acc = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=mma)
    for k in range(num_k):
        # the slot of step k-1 is free (its wgmma was waited for): it takes step k + STAGES - 1
        _load_step(act_ptr, a_rows, a_ok, cols, I, a_smem, w_desc, w_smem, w_smem, bars, k + STAGES - 1, w_row0,
                   w_row0, num_k, STAGES, False)
        _step_ready(bars, k, STAGES)
        slot = k % STAGES
        tok = warpgroup_mma(a_smem.index(slot), w_smem.index(slot).permute((1, 0)), zero, use_acc=False,
                            is_async=True)
        part = warpgroup_mma_wait(num_outstanding=0, deps=(tok,))
        acc += part * gl.load(acts_ptr + m_rows * stride_acts + k, mask=m_ok, other=0.0)[:, None]
        gl.thread_barrier()  # every warp is past step k's smem before it is refilled
    async_copy.wait_group(0)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(bars.index(i))

    acc = acc * gl.load(ws_ptr + e)
    n = nt * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, mma))
    gl.store(y_ptr + m_rows[:, None] * stride_y + n[None, :], acc.to(gl.bfloat16), mask=m_ok[:, None] & (n < H)[None, :])


@gluon.jit
def gluon_grouped_gate_up_kernel(x_ptr, xs_ptr, w_desc, ws_ptr, routes_ptr, block_expert_ptr, num_blocks_ptr, act_ptr,
                                 H, I, TOPK, stride_act,
                                 BLOCK_M: gl.constexpr, GROUP_M: gl.constexpr, STAGES: gl.constexpr,
                                 num_warps: gl.constexpr):
    """act[r, n] = SiLU(g) * u, g = s x[t] . W13[e, n], u = s x[t] . W13[e, I + n], s = xs[t] ws[e],
    t = r // TOPK, for the routes r of one plan block and n in one BLOCK_N tile of I (x [M, H]
    e4m3 with one scale per row xs [M]; W13 [E, 2I, H] e4m3 as the descriptor's [E*2I, H];
    act [R, I] fp32 in route order)."""
    BLOCK_N: gl.constexpr = w_desc.block_type.shape[0]
    gl.static_assert(w_desc.block_type.shape[1] == BLOCK_K)
    gl.static_assert(BLOCK_M == 16 * num_warps)
    b, nt = _block_of(gl.program_id(0), gl.num_programs(0), gl.cdiv(I, BLOCK_N), GROUP_M)
    if b >= gl.load(num_blocks_ptr):
        return
    e = gl.load(block_expert_ptr + b)
    if e < 0:
        return
    num_k = gl.cdiv(H, BLOCK_K)
    gather: gl.constexpr = gl.BlockedLayout([1, 16], [4, 8], [num_warps, 1], [1, 0])
    a_rows, a_ok = _gather_rows(routes_ptr, b, TOPK, BLOCK_M, gl.SliceLayout(1, gather))
    cols = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(0, gather))
    mma: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                  instr_shape=[16, BLOCK_N, 32])
    m_tok, m_ok = _gather_rows(routes_ptr, b, TOPK, BLOCK_M, gl.SliceLayout(1, mma))
    m_route, _ = _gather_rows(routes_ptr, b, 1, BLOCK_M, gl.SliceLayout(1, mma))

    a_smem = gl.allocate_shared_memory(gl.float8e4nv, [STAGES, BLOCK_M, BLOCK_K],
                                       gl.NVMMASharedLayout.get_default_for([BLOCK_M, BLOCK_K], gl.float8e4nv))
    g_smem = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BLOCK_N, BLOCK_K], w_desc.layout)
    u_smem = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BLOCK_N, BLOCK_K], w_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(bars.index(i), count=1)
    g_row0 = e * 2 * I + nt * BLOCK_N
    u_row0 = g_row0 + I
    for i in gl.static_range(STAGES - 1):
        _load_step(x_ptr, a_rows, a_ok, cols, H, a_smem, w_desc, g_smem, u_smem, bars, i, g_row0, u_row0, num_k,
                   STAGES, True)

    zero = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=mma)
    gate = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=mma)
    up = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=mma)
    for k in range(num_k):
        _load_step(x_ptr, a_rows, a_ok, cols, H, a_smem, w_desc, g_smem, u_smem, bars, k + STAGES - 1, g_row0,
                   u_row0, num_k, STAGES, True)
        _step_ready(bars, k, STAGES)
        slot = k % STAGES
        t_g = warpgroup_mma(a_smem.index(slot), g_smem.index(slot).permute((1, 0)), zero, use_acc=False,
                            is_async=True)
        t_u = warpgroup_mma(a_smem.index(slot), u_smem.index(slot).permute((1, 0)), zero, use_acc=False,
                            is_async=True)
        gate += warpgroup_mma_wait(num_outstanding=1, deps=(t_g,))  # up's wgmma runs under this add
        up += warpgroup_mma_wait(num_outstanding=0, deps=(t_u,))
        gl.thread_barrier()
    async_copy.wait_group(0)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(bars.index(i))

    s = gl.load(xs_ptr + m_tok, mask=m_ok, other=0.0) * gl.load(ws_ptr + e)
    gate = gate * s[:, None]
    up = up * s[:, None]
    h = gl.div_rn(gate, 1.0 + gl.exp(-gate)) * up
    n = nt * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, mma))
    gl.store(act_ptr + m_route[:, None] * stride_act + n[None, :], h, mask=m_ok[:, None] & (n < I)[None, :])


KERNELS = {"down": gluon_grouped_down_kernel, "gate_up": gluon_grouped_gate_up_kernel}


def _w_layout(block_n: int):
    return gl.NVMMASharedLayout.get_default_for([block_n, K_STEP], gl.float8e4nv)


def compile_only(gemm: str, block_m: int, block_n: int, stages: int, warps: int, group_m: int) -> dict:
    """One kernel compiled for sm_90 here (no GPU): wgmma count, waits by depth, registers,
    spills, shared memory, and whether ptxas serialised the wgmma (its warning C7514)."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    desc = f"tensordesc<fp8e4nv[{block_n}, {K_STEP}],{_w_layout(block_n)!r}>"
    if gemm == "down":
        sig = {"act_ptr": "*fp8e4nv", "acts_ptr": "*fp32", "w_desc": desc, "ws_ptr": "*fp32", "routes_ptr": "*i32",
               "block_expert_ptr": "*i32", "num_blocks_ptr": "*i32", "y_ptr": "*bf16", "H": "i32", "I": "i32",
               "stride_acts": "i32", "stride_y": "i32"}
        sixteen = ("H", "I", "stride_acts", "stride_y")
    else:
        sig = {"x_ptr": "*fp8e4nv", "xs_ptr": "*fp32", "w_desc": desc, "ws_ptr": "*fp32", "routes_ptr": "*i32",
               "block_expert_ptr": "*i32", "num_blocks_ptr": "*i32", "act_ptr": "*fp32", "H": "i32", "I": "i32",
               "TOPK": "i32", "stride_act": "i32"}
        sixteen = ("H", "I", "stride_act")
    sig.update(BLOCK_M="constexpr", GROUP_M="constexpr", STAGES="constexpr", num_warps="constexpr")
    # as the JIT specialises them at real shapes: pointers 16-byte aligned, sizes multiples of 16
    names = list(sig)
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in names if n.endswith("_ptr") or n in sixteen}
    src = GluonASTSource(KERNELS[gemm], sig, dict(BLOCK_M=block_m, GROUP_M=group_m, STAGES=stages, num_warps=warps),
                         attrs)
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
    row = dict(gemm=gemm, block_m=block_m, block_n=block_n, stages=stages, warps=warps, group_m=group_m,
               qgmma=sass.count("QGMMA"), cp_async=sass.count("LDGSTS"), tma=sass.count("UTMALDG"),
               waits={w: waits.count(w) for w in sorted(set(waits))},
               registers=int(re.search(r"REG:(\d+)", res).group(1)),
               spill_ops=len(re.findall(r"\b(?:LDL|STL)\b", sass)), serialised="C7514" in ptxas.stdout + ptxas.stderr,
               shared_bytes=kernel.metadata.shared)
    print(row, flush=True)
    return row


def _graph_us(call) -> float:
    """Median per call of 5 replays of a CUDA graph of 10 calls (the call compiled first)."""
    import torch

    call()
    torch.cuda.synchronize()
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
    return sorted(times)[2]


def _rel_l2(got, ref) -> float:
    return float((got.double() - ref).norm() / ref.norm())


def run_gpu(gemms: list[str], names: list[str], tokens: list[int], block_m: int, block_n: dict, stages: int,
            warps: int, group_m: int | None) -> list[dict]:
    """Each case and GEMM: the Triton kernel with the config the policy serves, and the Gluon
    kernel on the same inputs; rel-L2 against the fp64 product; graph-timed us and TFLOP/s.
    Each builds its own plan (its BLOCK_M).  The Gluon GROUP_M is ``group_m``, or by default
    the Triton config's scaled to walk the same rows per weight tile.  gate/up compares e4m3
    outputs, each with the launches that make them (Triton's requantisation launch where its
    gate/up tile is narrower than 128, the Gluon kernel's always); its row "gluon_gemm" times
    the Gluon GEMM alone."""
    import torch
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    from fusedmoe import policy
    from fusedmoe._runtime import device_name, num_sms
    from fusedmoe.epilogue import quantize_rows
    from fusedmoe.paths._grouped_kernels import ROW_SCALED, grouped_down_kernel, grouped_gate_up_kernel
    from fusedmoe.plan import build_plan

    dev = torch.device("cuda")
    rows = []
    for name in names:
        e_num, top_k, hidden, inter = SHAPES[name]
        gen = torch.Generator(device=dev).manual_seed(0)
        for m in tokens:
            r = m * top_k
            ids = torch.rand(m, e_num, device=dev, generator=gen).argsort(dim=1)[:, :top_k].int().contiguous()
            flat = ids.view(-1).long()
            cfg = policy.select_config("grouped", m, top_k, e_num, hidden, inter, "fp8_tensor", device_name(dev),
                                       num_sms(dev))
            g_group = group_m or max(1, cfg.group_m * cfg.block_m // block_m)
            plans = {bm: build_plan(ids, e_num, bm) for bm in {cfg.block_m, block_m}}
            for gemm in gemms:
                bn = block_n[gemm]
                if gemm == "down":
                    w = (torch.randn(e_num, hidden, inter, device=dev, generator=gen) * 0.05).to(torch.float8_e4m3fn)
                    a = torch.randn(r, inter, device=dev, generator=gen).to(torch.float8_e4m3fn)
                    a_s = torch.rand(r, triton.cdiv(inter, K_STEP), device=dev, generator=gen) + 0.5
                    n_out, k_in, flops = hidden, inter, 2 * r * hidden * inter
                else:
                    w = (torch.randn(e_num, 2 * inter, hidden, device=dev, generator=gen) * 0.05).to(torch.float8_e4m3fn)
                    a, a_s = quantize_rows(torch.randn(m, hidden, device=dev, generator=gen).bfloat16(), whole_rows=True)
                    assert a_s.shape[1] == 1 and a_s.stride(0) == 1  # the Gluon kernel reads xs[token]
                    n_out, k_in, flops = inter, hidden, 2 * r * 2 * inter * hidden
                assert a.is_contiguous()  # the Gluon gather's row stride is K
                ws = torch.rand(e_num, device=dev, generator=gen) + 0.5
                ref = _reference(gemm, a, a_s, w, ws, flat, top_k, inter)
                w_desc = TensorDescriptor(w.view(-1, k_in), [w.numel() // k_in, k_in], [k_in, 1], [bn, K_STEP],
                                          _w_layout(bn))
                calls = {"triton": _triton_call(gemm, cfg, plans[cfg.block_m], a, a_s, w, ws, r, top_k, hidden, inter,
                                                grouped_down_kernel, grouped_gate_up_kernel, ROW_SCALED.value),
                         "gluon": _gluon_call(gemm, plans[block_m], a, a_s, w_desc, ws, r, top_k, hidden, inter, bn,
                                              block_m, g_group, stages, warps)}
                if gemm == "gate_up":
                    calls["gluon_gemm"] = calls["gluon"][1]
                    calls["gluon"] = calls["gluon"][0]
                for impl, (call, out_of) in calls.items():
                    us = _graph_us(call)
                    err = _rel_l2(out_of(), ref)
                    tiles = (dict(block_m=cfg.block_m, group_m=cfg.group_m, **{
                        f: getattr(cfg.down if gemm == "down" else cfg.gate_up, f)
                        for f in ("block_n", "num_warps", "num_stages")}) if impl == "triton" else
                             dict(block_m=block_m, group_m=g_group, block_n=bn, num_warps=warps, num_stages=stages))
                    rows.append(dict(shape=name, m=m, gemm=gemm, impl=impl, **tiles, us=round(us, 1),
                                     tflops=round(flops / us / 1e6, 1), rel_l2=err))
                    print(rows[-1], flush=True)
                del w, a, a_s, ref
                torch.cuda.empty_cache()
    return rows


def _reference(gemm, a, a_s, w, ws, flat, top_k, inter):
    """The fp64 product the GEMM computes (gate/up: the SwiGLU output), per expert."""
    import torch

    rows = flat.numel()
    width = w.shape[1] if gemm == "down" else inter
    ref = torch.empty(rows, width, device=a.device, dtype=torch.float64)
    if gemm == "down":
        a64 = a.double() * a_s.double().repeat_interleave(K_STEP, 1)[:, :a.shape[1]]
    else:
        a64 = a.double() * a_s.double()
    for ex in range(w.shape[0]):  # per expert: an [R, N, K] gather would not fit
        sel = (flat == ex).nonzero().view(-1)
        src = a64[sel] if gemm == "down" else a64[sel // top_k]
        prod = (src @ w[ex].double().T) * float(ws[ex])
        ref[sel] = prod if gemm == "down" else torch.nn.functional.silu(prod[:, :inter]) * prod[:, inter:]
    return ref


def _triton_call(gemm, cfg, plan, a, a_s, w, ws, r, top_k, hidden, inter, down_kernel, gate_up_kernel, row_scaled):
    """(launch, output as fp64-comparable) of the library's Triton kernel with config cfg."""
    import torch

    grid = plan.block_expert.numel()
    if gemm == "down":
        y = torch.empty(r, hidden, device=a.device, dtype=torch.bfloat16)
        dn = cfg.down

        def call():
            down_kernel[(grid * triton.cdiv(hidden, dn.block_n),)](
                a, a_s, w, ws, y, plan.sorted_routes, plan.block_expert, plan.num_blocks, y,
                hidden, inter, a.stride(0), a_s.stride(0), w.stride(0), w.stride(1), 1, 0, y.stride(0),
                A_SCALED=True, W_SCALE=1, SWAP_AB=dn.swap_ab, HAS_BIAS=False, BLOCK_M=cfg.block_m,
                BLOCK_N=dn.block_n, BLOCK_K=dn.block_k, GROUP_M=cfg.group_m, PROMOTE_K=cfg.fp8_promote_k,
                num_warps=dn.num_warps, num_stages=dn.num_stages)
        return call, lambda: y
    gu = cfg.gate_up
    split = gu.block_n < K_STEP
    act = torch.empty(r, inter, device=a.device, dtype=torch.float32 if split else torch.float8_e4m3fn)
    act_s = act if split else torch.empty(r, triton.cdiv(inter, K_STEP), device=a.device, dtype=torch.float32)
    out = {}

    def call():
        gate_up_kernel[(grid * triton.cdiv(inter, gu.block_n),)](
            a, a_s, w, ws, ws, plan.sorted_routes, plan.block_expert, plan.num_blocks, act, act_s,
            hidden, inter, top_k, a.stride(0), a_s.stride(0), w.stride(0), w.stride(1), 1, 0,
            act.stride(0), act_s.stride(0), A_SCALED=row_scaled, W_SCALE=1, QUANT_OUT=not split, SWAP_AB=gu.swap_ab,
            ACTIVATION=0, HAS_BIAS=False, BLOCK_M=cfg.block_m, BLOCK_N=gu.block_n, BLOCK_K=gu.block_k,
            GROUP_M=cfg.group_m, PROMOTE_K=cfg.fp8_promote_k, num_warps=gu.num_warps, num_stages=gu.num_stages)
        out["q"] = _requantise(act) if split else (act, act_s)
    return call, lambda: _dequantise(*out["q"])


def _gluon_call(gemm, plan, a, a_s, w_desc, ws, r, top_k, hidden, inter, bn, block_m, group_m, stages, warps):
    """(launch, output) of the Gluon kernel; for gate/up ((launch + requantisation, output),
    (GEMM alone, its fp32 output))."""
    import torch

    grid = plan.block_expert.numel()
    if gemm == "down":
        y = torch.empty(r, hidden, device=a.device, dtype=torch.bfloat16)

        def call():
            gluon_grouped_down_kernel[(grid * triton.cdiv(hidden, bn),)](
                a, a_s, w_desc, ws, plan.sorted_routes, plan.block_expert, plan.num_blocks, y, hidden, inter,
                a_s.stride(0), y.stride(0), BLOCK_M=block_m, GROUP_M=group_m, STAGES=stages, num_warps=warps)
        return call, lambda: y
    act = torch.empty(r, inter, device=a.device, dtype=torch.float32)
    out = {}

    def gemm_only():
        gluon_grouped_gate_up_kernel[(grid * triton.cdiv(inter, bn),)](
            a, a_s, w_desc, ws, plan.sorted_routes, plan.block_expert, plan.num_blocks, act, hidden, inter, top_k,
            act.stride(0), BLOCK_M=block_m, GROUP_M=group_m, STAGES=stages, num_warps=warps)

    def with_requant():
        gemm_only()
        out["q"] = _requantise(act)
    return (with_requant, lambda: _dequantise(*out["q"])), (gemm_only, lambda: act)


def _requantise(act):
    from fusedmoe.epilogue import quantize_rows

    return quantize_rows(act)


def _dequantise(q, s):
    return q.double() * s.double().repeat_interleave(K_STEP, 1)[:, :q.shape[1]]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--gemm", default="down,gate_up")
    ap.add_argument("--shapes", default="mixtral_8x7b_tp2,qwen3_30b_a3b,gpt_oss_120b_tp4")
    ap.add_argument("--tokens", default="2048,8192")
    ap.add_argument("--block-m", type=int, default=64, help="BLOCK_M = 16 x warps")
    ap.add_argument("--down-n", type=int, default=128, help="down's BLOCK_N (256 spills with 4 warps)")
    ap.add_argument("--gate-up-n", type=int, default=64, help="gate/up's BLOCK_N, each of gate and up")
    ap.add_argument("--stages", type=int, default=4)
    ap.add_argument("--warps", type=int, default=4)
    ap.add_argument("--group-m", type=int, help="GROUP_M of the Gluon kernels (default: the Triton config's, "
                    "scaled to the same rows per weight tile)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    gemms = args.gemm.split(",")
    block_n = {"down": args.down_n, "gate_up": args.gate_up_n}
    if args.compile_only:
        rows = [compile_only(g, args.block_m, block_n[g], args.stages, args.warps, group)
                for g in gemms for group in (1, 8)]
    else:
        rows = run_gpu(gemms, args.shapes.split(","), [int(t) for t in args.tokens.split(",")], args.block_m, block_n,
                       args.stages, args.warps, args.group_m)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
