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

    python scripts/gluon_grouped_probe.py [--gemm down,gate_up] [--group-m N] [--ws]
                                      # GPU: rel-L2 against fp64, graph-timed against Triton
    python scripts/gluon_grouped_probe.py --compile-only     # any machine: sm_90 SASS facts

``--ws`` adds the warp-specialised kernels (``policy.gluon_grouped_config(block_m=128)``: a
producer warp and two consumer warpgroups on 128-row plan blocks).  Twelfth session, down:
Mixtral TP2 M=2048 / 8192 247 / 822 us against Triton's 322 / 1206 (267 / 965 with 128 columns,
``--ws-down-n 128``; slower than Triton at short K then: Qwen3-30B, DeepSeek-V3 TP8).  A gate/up
form with 128-column groups quantised in its epilogue (4 spilled scalars) lost to Triton except
at Mixtral M=8192 (2415 against 2571 us) and is gone; the library's takes 64 columns each of
gate and up and writes fp32, as the one-warpgroup kernel.

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
from fusedmoe.paths._grouped_gluon_kernels import K_STEP, tile_desc

# (E, top_k, H, I) of the grouped layers whose FP8 cases are slowest against vLLM, and one more.
# one_expert at M=2048: the dense probe's products (fp8_pingpong_probe.py's mixtral_gate_up
# and mixtral_down) as one expert's grouped GEMMs, to tell what the grouped form costs
SHAPES = {"mixtral_8x7b_tp2": (8, 2, 4096, 7168), "qwen3_30b_a3b": (128, 8, 2048, 768),
          "gpt_oss_120b_tp4": (128, 4, 2880, 720), "deepseek_v3_tp8": (256, 8, 7168, 256),
          "one_expert": (1, 1, 4096, 7168)}


def compile_only(gemm: str, group_m: int, block_m: int = 64) -> dict:
    """One kernel compiled for sm_90 here (no GPU; ``compile_check.compile_gluon``): its SASS
    facts (wgmma, waits by depth, copies, registers, spills), shared memory, ptxas
    serialisation."""
    sys.path.insert(0, str(Path(__file__).parent))
    from compile_check import compile_gluon, sass_facts

    kernel, ptxas = compile_gluon(gemm, group_m, block_m)
    row = dict(gemm=gemm, block_m=block_m, group_m=group_m, **sass_facts(kernel.asm["cubin"]),
               serialised="C7514" in ptxas, shared_bytes=kernel.metadata.shared)
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
            block_ms: tuple[int, ...] = (64,), ws_stages: int | None = None,
            ws_down_n: int | None = None) -> list[dict]:
    """Each case and GEMM: the Triton kernel with the config the policy serves, and the Gluon
    kernels at each of ``block_ms`` (``policy.gluon_grouped_config``'s tiles; 128: the
    warp-specialised kernels, rows "gluon_ws*") on the same inputs; rel-L2 against the fp64
    product; graph-timed us and TFLOP/s.  Each builds its own plan (its BLOCK_M).  The Gluon
    GROUP_M is ``group_m``, or by default the Triton config's scaled to walk the same rows per
    weight tile.  gate/up compares e4m3 outputs, each with the launches that make them
    (Triton's requantisation launch where its gate/up tile is narrower than 128, the Gluon
    kernel's always); its rows "gluon_gemm" / "gluon_ws_gemm" time the gather and the Gluon
    GEMM alone (fp32 out).  ``ws_stages``: ring slots of the warp-specialised kernels instead of
    the config's (32 KB each; up to 6 fit); ``ws_down_n``: their down tile's columns (128 or 256)."""
    import dataclasses

    import torch

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
            g_cfgs = {bm: policy.gluon_grouped_config(group_m, bm) if group_m else policy.gluon_config_like(cfg, bm)
                      for bm in block_ms}
            if 128 in g_cfgs and (ws_stages or ws_down_n):
                ws = g_cfgs[128]
                g_cfgs[128] = dataclasses.replace(
                    ws, gate_up=dataclasses.replace(ws.gate_up, num_stages=ws_stages or ws.gate_up.num_stages),
                    down=dataclasses.replace(ws.down, num_stages=ws_stages or ws.down.num_stages,
                                             block_n=ws_down_n or ws.down.block_n))
            plans = {bm: build_plan(ids, e_num, bm) for bm in {cfg.block_m, *block_ms}}
            for gemm in gemms:
                if gemm == "down":
                    w = (torch.randn(e_num, hidden, inter, device=dev, generator=gen) * 0.05).to(torch.float8_e4m3fn)
                    a = torch.randn(r, inter, device=dev, generator=gen).to(torch.float8_e4m3fn)
                    a_s = torch.rand(r, triton.cdiv(inter, K_STEP), device=dev, generator=gen) + 0.5
                    k_in, flops = inter, 2 * r * hidden * inter
                else:
                    w = (torch.randn(e_num, 2 * inter, hidden, device=dev, generator=gen) * 0.05).to(torch.float8_e4m3fn)
                    a, a_s = quantize_rows(torch.randn(m, hidden, device=dev, generator=gen).bfloat16(), whole_rows=True)
                    assert a_s.shape[1] == 1 and a_s.stride(0) == 1  # gather_plan_rows reads xs[token]
                    k_in, flops = hidden, 2 * r * 2 * inter * hidden
                ws = torch.rand(e_num, device=dev, generator=gen) + 0.5
                ref = _reference(gemm, a, a_s, w, ws, flat, top_k, inter)
                calls = {"triton": (cfg, _triton_call(gemm, cfg, plans[cfg.block_m], a, a_s, w, ws, r, top_k, hidden,
                                                      inter, grouped_down_kernel, grouped_gate_up_kernel,
                                                      ROW_SCALED.value))}
                for bm, g_cfg in g_cfgs.items():
                    label = "gluon" if bm == 64 else "gluon_ws"
                    tile = g_cfg.down if gemm == "down" else g_cfg.gate_up
                    call = _gluon_call(gemm, plans[bm], a, a_s, tile_desc(w.view(-1, k_in), tile.block_n), ws, r,
                                       top_k, hidden, inter, g_cfg)
                    if gemm == "gate_up":
                        calls[label], calls[label + "_gemm"] = (g_cfg, call[0]), (g_cfg, call[1])
                    else:
                        calls[label] = (g_cfg, call)
                for impl, (c, (call, out_of)) in calls.items():
                    us = _graph_us(call)
                    err = _rel_l2(out_of(), ref)
                    tile = c.down if gemm == "down" else c.gate_up
                    rows.append(dict(shape=name, m=m, gemm=gemm, impl=impl, block_m=c.block_m, group_m=c.group_m,
                                     block_n=tile.block_n, num_warps=tile.num_warps, num_stages=tile.num_stages,
                                     us=round(us, 1), tflops=round(flops / us / 1e6, 1), rel_l2=err))
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


def _gluon_call(gemm, plan, a, a_s, w_desc, ws, r, top_k, hidden, inter, g_cfg):
    """(launch, output in route order) of the Gluon kernel of ``g_cfg`` (``grouped.gluon_kernels``:
    at BLOCK_M 128 the warp-specialised one), launched as ``grouped._gluon_gemms`` does; for gate/up ((gather +
    GEMM + requantisation, output), (gather + GEMM, its fp32 output)).  down's input is put in
    plan order before (gate/up's output is, in the library)."""
    import torch

    from fusedmoe.paths.grouped import gather_plan_rows, gluon_kernels

    grid = plan.block_expert.numel()
    bm = g_cfg.block_m
    gate_up_kernel, down_kernel, launch = gluon_kernels(g_cfg)
    if gemm == "down":
        y = torch.empty(r, hidden, device=a.device, dtype=torch.bfloat16)
        as_plan = _plan_order(a_s, plan)
        a_desc = tile_desc(_plan_order(a, plan), bm)

        tiles = grid * triton.cdiv(hidden, g_cfg.down.block_n)

        def call():
            down_kernel[(tiles,)](
                a_desc, as_plan, w_desc, ws, plan.sorted_routes, plan.block_expert, plan.num_blocks, y, hidden, inter,
                as_plan.stride(0), y.stride(0), GROUP_M=g_cfg.group_m, STAGES=g_cfg.down.num_stages, **launch)
        return call, lambda: y
    act = torch.empty(plan.sorted_routes.numel(), inter, device=a.device, dtype=torch.float32)
    out = {}

    def gemm_only():
        x_plan, xs_plan = gather_plan_rows(a, a_s, plan, top_k)
        # the warp-specialised kernel also reads the plan's routes (empty upper halves) and takes
        # an acts pointer, unused at 64-column tiles (fp32 act), as grouped._gluon_gemms passes them
        ws_args = ((plan.sorted_routes, plan.block_expert, plan.num_blocks, act, act, hidden, inter, act.stride(0), 0)
                   if bm == 128 else (plan.block_expert, plan.num_blocks, act, hidden, inter, act.stride(0)))
        gate_up_kernel[(grid * triton.cdiv(inter, g_cfg.gate_up.block_n),)](
            tile_desc(x_plan, bm), xs_plan, w_desc, ws, *ws_args, GROUP_M=g_cfg.group_m,
            STAGES=g_cfg.gate_up.num_stages, **launch)

    def with_requant():
        gemm_only()
        out["q"] = _requantise(act)
    return ((with_requant, lambda: _route_order(_dequantise(*out["q"]), plan, r)),
            (gemm_only, lambda: _route_order(act, plan, r)))


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
    ap.add_argument("--ws", action="store_true",
                    help="also the warp-specialised kernels (BLOCK_M 128: gluon_grouped_*_ws_kernel)")
    ap.add_argument("--ws-stages", type=int, help="ring slots of the warp-specialised kernels (default: the config's)")
    ap.add_argument("--ws-down-n", type=int, choices=(128, 256), help="columns of the warp-specialised down tile")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    gemms = args.gemm.split(",")
    block_ms = (64, 128) if args.ws else (64,)
    if args.compile_only:
        rows = [compile_only(g, group, bm) for g in gemms for group in (1, 8) for bm in block_ms]
    else:
        rows = run_gpu(gemms, args.shapes.split(","), [int(t) for t in args.tokens.split(",")], args.group_m,
                       block_ms, args.ws_stages, args.ws_down_n)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
