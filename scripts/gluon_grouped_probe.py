"""Probe: the grouped path's two FP8 GEMMs (fp8_tensor) in Gluon, against the Triton kernels
the library runs, on the same plan, activations and weights.

``scripts/fp8_pingpong_probe.py`` measured a dense promoted FP8 GEMM in Gluon at 1032-1047
TFLOP/s on Mixtral's per-expert gate/up (TMA loads, 64-row tiles, two CTAs per SM), against
770-825 for the grouped Triton kernels (results README, ninth session).  These kernels are that
GEMM with the grouped path's contract:
- The plan's blocks (``sorted_routes``, ``block_expert``, ``num_blocks``) are the M tiles.
- The activations are in plan order and come by TMA, as the weight tiles do (W13 viewed as
  [E*2I, H] and W2 as [E*H, I]).  gate/up's time includes gathering x's rows into plan order
  (``gather_plan_rows_kernel``); down's input is in plan order already (gate/up writes it so).
- The MMA sums are promoted every K step of 128.
- down: each step's sum is scaled by the step's per-row activation scale, and y[r] is written
  in route order as bf16.
- gate/up: gate and up are two 64-column tiles, and up's wgmma overlaps gate's add.  x's row
  scale and the expert scale apply at the end, then SwiGLU.  The output is fp32, requantised
  per 128 columns by ``quantize_rows``.

    python scripts/gluon_grouped_probe.py [--gemm down,gate_up] [--group-m N] [--scale-ahead 1,2] [--ws]
                                      # GPU: rel-L2 against fp64, graph-timed against Triton
    python scripts/gluon_grouped_probe.py --compile-only     # any machine: sm_90 SASS facts

``--ws`` adds ``gluon_grouped_down_ws_kernel`` and ``gluon_grouped_gate_up_ws_kernel``
(warp-specialised: a producer warp, two consumer warpgroups on 128-row plan blocks; gate/up
quantises its 128-column group in the epilogue).  Compiled for sm_90: down without spills,
gate/up with 4 spill instructions (scalars); not yet run.

Measured at Mixtral TP2 M=8192 (tenth session, ``2026-11-30-s10/gluon.md``): Triton gate/up
2582 us and down 1201; the Gluon kernels with cp.async row gathers 3027 / 1305, with plan-order
TMA operands 2761 / 1260 (GEMM and gather alone 2516: 765 TFLOP/s against the dense probe's
1032).  At the dense probe's rate, about 1900 and 930 us.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, warpgroup_mma, warpgroup_mma_wait

from fp8_pingpong_probe import ws_fill_ring, ws_promoted_step, ws_ring  # scripts/ is on the path when this script runs
from fusedmoe._epilogue_kernels import SILU, glu, scale_of, to_e4m3
from fusedmoe.paths._grouped_gluon_kernels import (BLOCK_K, K_STEP, _program_block, gluon_grouped_down_kernel,
                                                  gluon_grouped_gate_up_kernel, tile_desc)

# (E, top_k, H, I) of the grouped layers whose FP8 cases are slowest against vLLM, and one more.
# one_expert at M=2048: the dense probe's products (fp8_pingpong_probe.py's mixtral_gate_up
# and mixtral_down) as one expert's grouped GEMMs, to tell what the grouped form costs
SHAPES = {"mixtral_8x7b_tp2": (8, 2, 4096, 7168), "qwen3_30b_a3b": (128, 8, 2048, 768),
          "gpt_oss_120b_tp4": (128, 4, 2880, 720), "deepseek_v3_tp8": (256, 8, 7168, 256),
          "one_expert": (1, 1, 4096, 7168)}


# ---- down, warp-specialised (--ws): fp8_pingpong_probe.py's mode ws with the grouped contract ----
# The library kernel's contract (plan blocks, plan-order activations with a scale per row and
# K step, W2 viewed as [E*H, I], y in route order) on 128-row plan blocks: a producer warp issues
# the TMA loads, two consumer warpgroups (64 rows each) share each weight tile and release each
# ring slot with their own arrive.  Values reach the partitions as run-time scalars (constexprs
# come from the shared buffers' shapes); a block past num_blocks runs no K step and stores
# nothing (warp_specialize sits at the kernel's top level, after no early return).
WS_CONSUMER_REGS = gl.constexpr(232)
WS_LOADER_REGS = gl.constexpr(24)
WS_MAXNREG = 168  # 3 warpgroups x 128 threads x 168 <= 65536: one CTA per SM


@gluon.jit
def _ws_down_loader(a_desc, w_desc, a_smem, w_smem, ready, empty, as_ptr, stride_as, routes_ptr, y_ptr, stride_y,
                    ws_scale, a_row0, w_row0, col0, H, num_k):
    """Producer warp: step k's A and W2 tiles into its ring slot once both consumers released it."""
    ws_fill_ring(a_desc, w_desc, a_smem, w_smem, ready, empty, a_row0, w_row0, num_k)


@gluon.jit
def _ws_down_consume(a_smem, w_smem, ready, empty, as_ptr, stride_as, routes_ptr, y_ptr, stride_y, ws_scale,
                     a_row0, col0, H, num_k, WG: gl.constexpr):
    """Consumer warpgroup WG: plan rows a_row0 + WG*64 .. +64, each K step's partial promoted
    with the rows' activation scale for the step (loaded two steps ahead), then y in route order."""
    STAGES: gl.constexpr = a_smem.type.shape[0]
    BLOCK_N: gl.constexpr = w_smem.type.shape[1]
    mma: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 32])
    p = a_row0 + WG * 64 + gl.arange(0, 64, layout=gl.SliceLayout(1, mma))
    scale_row = as_ptr + p.to(gl.int64) * stride_as
    acc = gl.zeros((64, BLOCK_N), dtype=gl.float32, layout=mma)
    step_scale = gl.load(scale_row)
    following_scale = gl.load(scale_row + 1, mask=1 < num_k, other=0.0)
    for k in range(num_k):
        s = k % STAGES
        mbarrier.wait(ready.index(s), (k // STAGES) & 1)
        tok = warpgroup_mma(a_smem.index(s).slice(WG * 64, 64), w_smem.index(s).permute((1, 0)),
                            gl.zeros((64, BLOCK_N), dtype=gl.float32, layout=mma), use_acc=False, is_async=True)
        ahead_scale = gl.load(scale_row + k + 2, mask=k + 2 < num_k, other=0.0)
        part = warpgroup_mma_wait(num_outstanding=0, deps=(tok,))
        mbarrier.arrive(empty.index(s), count=1)  # this warpgroup's wgmma is done with the slot
        acc += part * step_scale[:, None]
        step_scale = following_scale
        following_scale = ahead_scale
    route = gl.load(routes_ptr + p)
    n = col0 + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, mma))
    gl.store(y_ptr + route.to(gl.int64)[:, None] * stride_y + n[None, :],
             (acc * ws_scale).to(y_ptr.dtype.element_ty), mask=(route >= 0)[:, None] & (n < H)[None, :])


@gluon.jit
def _ws_down_consumer0(a_desc, w_desc, a_smem, w_smem, ready, empty, as_ptr, stride_as, routes_ptr, y_ptr, stride_y,
                       ws_scale, a_row0, w_row0, col0, H, num_k):
    if num_k > 0:  # a block past num_blocks: nothing
        _ws_down_consume(a_smem, w_smem, ready, empty, as_ptr, stride_as, routes_ptr, y_ptr, stride_y, ws_scale,
                         a_row0, col0, H, num_k, 0)


@gluon.jit
def _ws_down_consumer1(a_desc, w_desc, a_smem, w_smem, ready, empty, as_ptr, stride_as, routes_ptr, y_ptr, stride_y,
                       ws_scale, a_row0, w_row0, col0, H, num_k):
    if num_k > 0:
        _ws_down_consume(a_smem, w_smem, ready, empty, as_ptr, stride_as, routes_ptr, y_ptr, stride_y, ws_scale,
                         a_row0, col0, H, num_k, 1)


@gluon.jit
def gluon_grouped_down_ws_kernel(a_desc, as_ptr, w_desc, ws_ptr, routes_ptr, block_expert_ptr, num_blocks_ptr, y_ptr,
                                 H, I, stride_as, stride_y,
                                 GROUP_M: gl.constexpr, STAGES: gl.constexpr, num_warps: gl.constexpr):
    """``gluon_grouped_down_kernel``'s y on 128-row plan blocks, warp-specialised (above)."""
    BLOCK_M: gl.constexpr = a_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = w_desc.block_type.shape[0]
    gl.static_assert((BLOCK_M == 128) & (num_warps == 4))
    gl.static_assert((w_desc.block_type.shape[1] == BLOCK_K) & (a_desc.block_type.shape[1] == BLOCK_K))
    b, nt, e = _program_block(gl.cdiv(H, BLOCK_N), block_expert_ptr, num_blocks_ptr, GROUP_M)
    num_k = gl.where(e >= 0, gl.cdiv(I, BLOCK_K), 0)
    ws_scale = gl.load(ws_ptr + gl.maximum(e, 0))
    a_smem, w_smem, ready, empty = ws_ring(a_desc, w_desc, STAGES)
    args = (a_desc, w_desc, a_smem, w_smem, ready, empty, as_ptr, stride_as, routes_ptr, y_ptr, stride_y, ws_scale,
            b * BLOCK_M, e * H + nt * BLOCK_N, nt * BLOCK_N, H, num_k)
    gl.warp_specialize([(_ws_down_consumer0, args), (_ws_down_consumer1, args), (_ws_down_loader, args)],
                       [4, 1], [WS_CONSUMER_REGS, WS_LOADER_REGS])


def compile_only(gemm: str, group_m: int) -> dict:
    """One kernel compiled for sm_90 here (no GPU; ``compile_check.compile_gluon``): its SASS
    facts (wgmma, waits by depth, copies, registers, spills), shared memory, ptxas
    serialisation."""
    sys.path.insert(0, str(Path(__file__).parent))
    from compile_check import compile_gluon, sass_facts

    kernel, ptxas = compile_gluon(gemm, group_m)
    row = dict(gemm=gemm, group_m=group_m, **sass_facts(kernel.asm["cubin"]),
               serialised="C7514" in ptxas, shared_bytes=kernel.metadata.shared)
    print(row, flush=True)
    return row


@gluon.jit
def _ws_gate_up_loader(x_desc, w_desc, a_smem, w_smem, ready, empty, xs_ptr, ws_scale, q_ptr, qs_ptr, stride_q,
                       stride_qs, a_row0, g_row0, nt, I, num_k):
    """Producer warp: step k's x tile and its gate and up weight tiles (rows g_row0.. and
    g_row0 + I..) into the ring once both consumers released the slot."""
    ws_fill_ring(x_desc, w_desc, a_smem, w_smem, ready, empty, a_row0, g_row0, num_k, I, 2)


@gluon.jit
def _ws_gate_up_consume(a_smem, w_smem, ready, empty, xs_ptr, ws_scale, q_ptr, qs_ptr, stride_q, stride_qs, a_row0,
                        nt, I, num_k, WG: gl.constexpr):
    """Consumer warpgroup WG: plan rows a_row0 + WG*64 .. +64 of one 128-column group of I:
    gate's and up's K-step partials one after the other (one alive at a time), each promoted;
    then SiLU(g) * u quantised per row as ``quantize_rows`` does (the group is the tile)."""
    STAGES: gl.constexpr = a_smem.type.shape[0]
    BLOCK_N: gl.constexpr = w_smem.type.shape[1]
    mma: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 32])
    gate = gl.zeros((64, BLOCK_N), dtype=gl.float32, layout=mma)
    up = gl.zeros((64, BLOCK_N), dtype=gl.float32, layout=mma)
    for k in range(num_k):
        s = k % STAGES
        mbarrier.wait(ready.index(s), (k // STAGES) & 1)
        a = a_smem.index(s).slice(WG * 64, 64)
        gate = ws_promoted_step(a, w_smem.index(2 * s), gate, 0, BLOCK_N, mma)
        up = ws_promoted_step(a, w_smem.index(2 * s + 1), up, 0, BLOCK_N, mma)
        mbarrier.arrive(empty.index(s), count=1)  # this warpgroup's wgmmas are done with the slot
    p = a_row0 + WG * 64 + gl.arange(0, 64, layout=gl.SliceLayout(1, mma))
    n = nt * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, mma))
    rs = gl.load(xs_ptr + p) * ws_scale
    gate = gate * rs[:, None]
    up = gl.where((n < I)[None, :], up * rs[:, None], 0.0)  # 0 past I: SiLU(g) * 0
    h = glu(gate, up, SILU)
    scale = scale_of(gl.max(gl.abs(h), axis=1))
    gl.store(q_ptr + p.to(gl.int64)[:, None] * stride_q + n[None, :], to_e4m3(h, scale), mask=(n < I)[None, :])
    gl.store(qs_ptr + p.to(gl.int64) * stride_qs + nt, scale)


@gluon.jit
def _ws_gate_up_consumer0(x_desc, w_desc, a_smem, w_smem, ready, empty, xs_ptr, ws_scale, q_ptr, qs_ptr, stride_q,
                          stride_qs, a_row0, g_row0, nt, I, num_k):
    if num_k > 0:
        _ws_gate_up_consume(a_smem, w_smem, ready, empty, xs_ptr, ws_scale, q_ptr, qs_ptr, stride_q, stride_qs, a_row0,
                            nt, I, num_k, 0)


@gluon.jit
def _ws_gate_up_consumer1(x_desc, w_desc, a_smem, w_smem, ready, empty, xs_ptr, ws_scale, q_ptr, qs_ptr, stride_q,
                          stride_qs, a_row0, g_row0, nt, I, num_k):
    if num_k > 0:
        _ws_gate_up_consume(a_smem, w_smem, ready, empty, xs_ptr, ws_scale, q_ptr, qs_ptr, stride_q, stride_qs, a_row0,
                            nt, I, num_k, 1)


@gluon.jit
def gluon_grouped_gate_up_ws_kernel(x_desc, xs_ptr, w_desc, ws_ptr, block_expert_ptr, num_blocks_ptr, q_ptr, qs_ptr,
                                    H, I, stride_q, stride_qs,
                                    GROUP_M: gl.constexpr, STAGES: gl.constexpr, num_warps: gl.constexpr):
    """``gluon_grouped_gate_up_kernel``'s SwiGLU output on 128-row plan blocks and 128-column
    groups, warp-specialised as the down above, quantised in the epilogue: q [P, I] e4m3 and
    qs [P, cdiv(I, 128)] (``quantize_rows``'s layout), rows past num_blocks left unwritten."""
    BLOCK_M: gl.constexpr = x_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = w_desc.block_type.shape[0]
    gl.static_assert((BLOCK_M == 128) & (BLOCK_N == BLOCK_K) & (num_warps == 4))
    b, nt, e = _program_block(gl.cdiv(I, BLOCK_N), block_expert_ptr, num_blocks_ptr, GROUP_M)
    num_k = gl.where(e >= 0, gl.cdiv(H, BLOCK_K), 0)
    ws_scale = gl.load(ws_ptr + gl.maximum(e, 0))
    a_smem, w_smem, ready, empty = ws_ring(x_desc, w_desc, STAGES, 2)
    args = (x_desc, w_desc, a_smem, w_smem, ready, empty, xs_ptr, ws_scale, q_ptr, qs_ptr, stride_q, stride_qs,
            b * BLOCK_M, e * 2 * I + nt * BLOCK_N, nt, I, num_k)
    gl.warp_specialize([(_ws_gate_up_consumer0, args), (_ws_gate_up_consumer1, args), (_ws_gate_up_loader, args)],
                       [4, 1], [WS_CONSUMER_REGS, WS_LOADER_REGS])


def compile_ws(gemm: str, group_m: int = 8, stages: int = 4) -> dict:
    """The warp-specialised ``gemm`` ('down' or 'gate_up') compiled for sm_90 here: its SASS
    facts, shared memory, and the consumers' arrives in the PTX (one per consumer warpgroup,
    as its barrier counts)."""
    import re

    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    sys.path.insert(0, str(Path(__file__).parent))
    from compile_check import sass_facts
    from fusedmoe.paths._grouped_gluon_kernels import tile_layout

    desc = f"tensordesc<fp8e4nv[128, {K_STEP}],{tile_layout(128)!r}>"
    if gemm == "down":
        kernel = gluon_grouped_down_ws_kernel
        sig = {"a_desc": desc, "as_ptr": "*fp32", "w_desc": desc, "ws_ptr": "*fp32", "routes_ptr": "*i32",
               "block_expert_ptr": "*i32", "num_blocks_ptr": "*i32", "y_ptr": "*bf16", "H": "i32", "I": "i32",
               "stride_as": "i32", "stride_y": "i32"}
    else:
        kernel = gluon_grouped_gate_up_ws_kernel
        sig = {"x_desc": desc, "xs_ptr": "*fp32", "w_desc": desc, "ws_ptr": "*fp32", "block_expert_ptr": "*i32",
               "num_blocks_ptr": "*i32", "q_ptr": "*fp8e4nv", "qs_ptr": "*fp32", "H": "i32", "I": "i32",
               "stride_q": "i32", "stride_qs": "i32"}
    sig.update(GROUP_M="constexpr", STAGES="constexpr", num_warps="constexpr")
    names = list(sig)  # as the JIT specialises real shapes (compile_check.compile_gluon's attributes)
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in names
             if n.endswith("_ptr") or n in ("H", "I", "stride_y", "stride_q")}
    src = GluonASTSource(kernel, sig, dict(GROUP_M=group_m, STAGES=stages, num_warps=4), attrs)
    compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=4, maxnreg=WS_MAXNREG))
    row = dict(gemm=gemm + "_ws", group_m=group_m, stages=stages, **sass_facts(compiled.asm["cubin"]),
               shared_bytes=compiled.metadata.shared,
               consumer_arrives=len(re.findall(r"mbarrier\.arrive\.shared", compiled.asm["ptx"])))
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


def run_gpu(gemms: list[str], names: list[str], tokens: list[int], group_m: int | None,
            scale_aheads: tuple[int, ...] = (1,), with_ws: bool = False) -> list[dict]:
    """Each case and GEMM: the Triton kernel with the config the policy serves, and the Gluon
    kernel on the same inputs; rel-L2 against the fp64 product; graph-timed us and TFLOP/s.
    Each builds its own plan (its BLOCK_M).  The Gluon tiles are ``policy.gluon_grouped_config``'s;
    its GROUP_M is ``group_m``, or by default the Triton config's scaled to walk the same rows
    per weight tile.  gate/up compares e4m3
    outputs, each with the launches that make them (Triton's requantisation launch where its
    gate/up tile is narrower than 128, the Gluon kernel's always); its row "gluon_gemm" times
    the gather and the Gluon GEMM alone (fp32 out)."""
    import torch

    from fusedmoe import policy
    from fusedmoe._runtime import device_name, num_sms
    from fusedmoe.epilogue import quantize_rows
    from fusedmoe.paths._grouped_kernels import ROW_SCALED, grouped_down_kernel, grouped_gate_up_kernel
    from fusedmoe.plan import build_plan

    dev = torch.device("cuda")
    block_m = policy.GLUON_BLOCK_M
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
            g_cfg = policy.gluon_grouped_config(g_group)
            ws_group = max(1, g_group * block_m // 128)  # the same rows per weight tile as the Gluon kernel
            plans = {bm: build_plan(ids, e_num, bm) for bm in {cfg.block_m, block_m} | ({128} if with_ws else set())}
            for gemm in gemms:
                g_tile = g_cfg.down if gemm == "down" else g_cfg.gate_up
                bn = g_tile.block_n
                if gemm == "down":
                    w = (torch.randn(e_num, hidden, inter, device=dev, generator=gen) * 0.05).to(torch.float8_e4m3fn)
                    a = torch.randn(r, inter, device=dev, generator=gen).to(torch.float8_e4m3fn)
                    a_s = torch.rand(r, triton.cdiv(inter, K_STEP), device=dev, generator=gen) + 0.5
                    n_out, k_in, flops = hidden, inter, 2 * r * hidden * inter
                else:
                    w = (torch.randn(e_num, 2 * inter, hidden, device=dev, generator=gen) * 0.05).to(torch.float8_e4m3fn)
                    a, a_s = quantize_rows(torch.randn(m, hidden, device=dev, generator=gen).bfloat16(), whole_rows=True)
                    assert a_s.shape[1] == 1 and a_s.stride(0) == 1  # gather_plan_rows reads xs[token]
                    n_out, k_in, flops = inter, hidden, 2 * r * 2 * inter * hidden
                ws = torch.rand(e_num, device=dev, generator=gen) + 0.5
                ref = _reference(gemm, a, a_s, w, ws, flat, top_k, inter)
                w_desc = tile_desc(w.view(-1, k_in), bn)
                calls = {"triton": _triton_call(gemm, cfg, plans[cfg.block_m], a, a_s, w, ws, r, top_k, hidden, inter,
                                                grouped_down_kernel, grouped_gate_up_kernel, ROW_SCALED.value)}
                for ahead in scale_aheads if gemm == "down" else (1,):
                    calls["gluon" if ahead == 1 else f"gluon_scale_ahead{ahead}"] = _gluon_call(
                        gemm, plans[block_m], a, a_s, w_desc, ws, r, top_k, hidden, inter, bn, block_m, g_group,
                        g_tile.num_stages, g_tile.num_warps, ahead)
                if gemm == "gate_up":
                    calls["gluon_gemm"] = calls["gluon"][1]
                    calls["gluon"] = calls["gluon"][0]
                if with_ws:
                    calls["gluon_ws"] = (_gluon_ws_down_call if gemm == "down" else _gluon_ws_gate_up_call)(
                        plans[128], a, a_s, w, ws, r, top_k, hidden, inter, ws_group, g_tile.num_stages)
                for impl, (call, out_of) in calls.items():
                    us = _graph_us(call)
                    err = _rel_l2(out_of(), ref)
                    tiles = (dict(block_m=cfg.block_m, group_m=cfg.group_m, **{
                        f: getattr(cfg.down if gemm == "down" else cfg.gate_up, f)
                        for f in ("block_n", "num_warps", "num_stages")}) if impl == "triton" else
                             dict(block_m=128, group_m=ws_group, block_n=128,
                                  num_warps=12, num_stages=g_tile.num_stages) if impl == "gluon_ws" else
                             dict(block_m=block_m, group_m=g_group, block_n=bn, num_warps=g_tile.num_warps,
                                  num_stages=g_tile.num_stages))
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


def _plan_order(t, plan):
    """Route-ordered rows t [R, C] in the plan's order: [P, C], zeros on padding rows (what
    gate/up writes for down, in the library)."""
    import torch

    held = (plan.sorted_routes >= 0).nonzero().view(-1)
    out = torch.zeros(plan.sorted_routes.numel(), t.shape[1], device=t.device, dtype=t.dtype)
    out[held] = t[plan.sorted_routes[held].long()]
    return out


def _route_order(plan_rows, plan, r: int):
    """Plan-ordered rows [P, C] back in route order: [r, C]."""
    import torch

    held = (plan.sorted_routes >= 0).nonzero().view(-1)
    out = torch.empty(r, plan_rows.shape[1], device=plan_rows.device, dtype=plan_rows.dtype)
    out[plan.sorted_routes[held].long()] = plan_rows[held]
    return out


def _gluon_call(gemm, plan, a, a_s, w_desc, ws, r, top_k, hidden, inter, bn, block_m, group_m, stages, warps,
                scale_ahead=1):
    """(launch, output in route order) of the Gluon kernel; for gate/up ((gather + GEMM +
    requantisation, output), (gather + GEMM, its fp32 output)).  down's input is put in plan
    order before (gate/up's output is, in the library)."""
    import torch

    from fusedmoe.paths.grouped import gather_plan_rows

    grid = plan.block_expert.numel()
    if gemm == "down":
        y = torch.empty(r, hidden, device=a.device, dtype=torch.bfloat16)
        as_plan = _plan_order(a_s, plan)
        a_desc = tile_desc(_plan_order(a, plan), block_m)

        def call():
            gluon_grouped_down_kernel[(grid * triton.cdiv(hidden, bn),)](
                a_desc, as_plan, w_desc, ws, plan.sorted_routes, plan.block_expert, plan.num_blocks, y, hidden, inter,
                as_plan.stride(0), y.stride(0), GROUP_M=group_m, STAGES=stages, num_warps=warps,
                SCALE_AHEAD=scale_ahead)
        return call, lambda: y
    act = torch.empty(plan.sorted_routes.numel(), inter, device=a.device, dtype=torch.float32)
    out = {}

    def gemm_only():
        x_plan, xs_plan = gather_plan_rows(a, a_s, plan, top_k)
        gluon_grouped_gate_up_kernel[(grid * triton.cdiv(inter, bn),)](
            tile_desc(x_plan, block_m), xs_plan, w_desc, ws, plan.block_expert, plan.num_blocks, act, hidden, inter,
            act.stride(0), GROUP_M=group_m, STAGES=stages, num_warps=warps)

    def with_requant():
        gemm_only()
        out["q"] = _requantise(act)
    return ((with_requant, lambda: _route_order(_dequantise(*out["q"]), plan, r)),
            (gemm_only, lambda: _route_order(act, plan, r)))


def _gluon_ws_gate_up_call(plan, a, a_s, w, ws, r, top_k, hidden, inter, group_m, stages):
    """(launch, SwiGLU output in route order, dequantised) of x's gather into plan order and
    ``gluon_grouped_gate_up_ws_kernel`` (128-row plan blocks, 128-column groups of I)."""
    import torch

    from fusedmoe.paths.grouped import gather_plan_rows

    rows = plan.sorted_routes.numel()
    q = torch.empty(rows, inter, device=a.device, dtype=torch.float8_e4m3fn)
    qs = torch.empty(rows, triton.cdiv(inter, K_STEP), device=a.device, dtype=torch.float32)
    w_desc = tile_desc(w.view(-1, hidden), 128)
    grid = (plan.block_expert.numel() * triton.cdiv(inter, 128),)

    def call():
        x_plan, xs_plan = gather_plan_rows(a, a_s, plan, top_k)
        gluon_grouped_gate_up_ws_kernel[grid](
            tile_desc(x_plan, 128), xs_plan, w_desc, ws, plan.block_expert, plan.num_blocks, q, qs, hidden, inter,
            q.stride(0), qs.stride(0), GROUP_M=group_m, STAGES=stages, num_warps=4, maxnreg=WS_MAXNREG)
    return call, lambda: _route_order(_dequantise(q, qs), plan, r)


def _gluon_ws_down_call(plan, a, a_s, w, ws, r, top_k, hidden, inter, group_m, stages):
    """(launch, y in route order) of ``gluon_grouped_down_ws_kernel`` (128-row plan blocks, 128
    columns of H per program), its input put in plan order before, as ``_gluon_call``'s down."""
    import torch

    y = torch.empty(r, hidden, device=a.device, dtype=torch.bfloat16)
    as_plan = _plan_order(a_s, plan)
    a_desc, w_desc = tile_desc(_plan_order(a, plan), 128), tile_desc(w.view(-1, inter), 128)
    grid = (plan.block_expert.numel() * triton.cdiv(hidden, 128),)

    def call():
        gluon_grouped_down_ws_kernel[grid](
            a_desc, as_plan, w_desc, ws, plan.sorted_routes, plan.block_expert, plan.num_blocks, y, hidden, inter,
            as_plan.stride(0), y.stride(0), GROUP_M=group_m, STAGES=stages, num_warps=4, maxnreg=WS_MAXNREG)
    return call, lambda: y


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
    ap.add_argument("--group-m", type=int, help="GROUP_M of the Gluon kernels (default: the Triton config's, "
                    "scaled to the same rows per weight tile)")
    ap.add_argument("--scale-ahead", default="1",
                    help="down: the Gluon kernel once per SCALE_AHEAD value (1, 2; e.g. 1,2)")
    ap.add_argument("--ws", action="store_true",
                    help="also the warp-specialised kernels (gluon_grouped_*_ws_kernel, 128-row plan blocks)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    aheads = tuple(int(v) for v in args.scale_ahead.split(","))
    if not set(aheads) <= {1, 2}:
        ap.error(f"--scale-ahead: expected 1 and/or 2, got {args.scale_ahead!r}")
    gemms = args.gemm.split(",")
    if args.compile_only:
        rows = [compile_only(g, group) for g in gemms for group in (1, 8)]
        if args.ws:
            rows += [compile_ws(g) for g in gemms]
    else:
        rows = run_gpu(gemms, args.shapes.split(","), [int(t) for t in args.tokens.split(",")], args.group_m, aheads,
                       args.ws)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
