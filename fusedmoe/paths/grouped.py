"""Grouped path: routes sorted by expert into blocks of BLOCK_M (the plan), one GEMM program per
live block and N tile, SwiGLU fused into the gate/up epilogue (with the FP8 requantisation,
unless the gate/up tile is narrower than a 128-column group), a deterministic top-k combine.

Launches: [FP8: quantise x] + plan + [Gluon GEMMs: gather x into plan order] + gate/up +
[FP8 with 64-wide gate/up tiles: requantise] + down + combine.
On sm_90 every launch is programmatic dependent (``_pdl``): it waits for the previous grid,
then lets the next one launch, so each launch overlaps its predecessor's tail, in stream order.
Activations: FP8 formats and w4a8 (``weights.A8_FORMATS``) quantise x to e4m3, fp8_tensor per
row, fp8_block and w4a8 per row per 128 columns (``quant.x_group``), and the SwiGLU output per
row per 128 columns
(``quantize_activations=True`` in the reference); bf16/fp16 keep them in the input dtype.
"""

from __future__ import annotations

import torch

from .. import quant
from ..epilogue import ACTIVATIONS, combine_launch, quantize_rows
from ..plan import build_plan, plan_launches
from ..policy import GroupedConfig, gluon_fallback
from .._launch import launch
from .._pdl import pdl_launch
from .._runtime import cdiv, is_sm90, num_sms
from ..weights import ExpertWeights
from ._common import optional_ptr, scale_args
from ._grouped_gluon_kernels import (WS_MAXNREG, gluon_grouped_down_kernel, gluon_grouped_down_ws_kernel,
                                     gluon_grouped_gate_up_kernel, gluon_grouped_gate_up_ws_kernel, tile_desc)
from ._grouped_kernels import ROW_SCALED, gather_plan_rows_kernel, grouped_down_kernel, grouped_gate_up_kernel

QUANTIZES_ACTIVATIONS = {"bf16": False, "fp16": False, "fp8_tensor": True, "fp8_block": True, "w4a8": True}
# bytes per step of gather_plan_rows_kernel: 64 rows x 512 e4m3 columns, or 128 x 256 (128 x 512
# spills with 4 warps: 255 registers, 36 LDL/STL, scripts/compile_check.py)
_GATHER_BYTES = 64 * 512
# programs per SM that the gather's column splits aim at where the plan has few blocks: with one
# program per block, Mixtral TP2 M=512 (about 13 live 128-row blocks of 4096 columns) took 13.0 us
# of a 391 us call on an H100 (forty-first session), for 4 MB read and 6 MB written
_GATHER_PROGRAMS_PER_SM = 4



def uses_no_permute(num_routes: int, num_local_experts: int) -> bool:
    """The no-permute plan (seed 004) when routes are far fewer than experts."""
    return num_routes * 4 <= num_local_experts


def splits_quantisation(weights: ExpertWeights, config: GroupedConfig | None) -> bool:
    """Whether the SwiGLU output is requantised by a launch of its own: FP8 gate/up tiles
    narrower than one 128-column group (BLOCK_N 64: half the registers, two CTAs per SM on
    sm_90) write it in fp32, and ``quantize_rows`` makes the e4m3 rows and scales that the
    fused epilogue would have (bitwise: the same fp32 values, the same rounding)."""
    return weights.is_a8 and config is not None and config.gate_up.block_n < quant.GROUP


def gluon_runs_on(fmt: str, hidden: int, inter: int, device: torch.device, activation: str = "silu") -> bool:
    """Whether the Gluon kernels run layers of these facts here: on sm_90, fp8_tensor, SiLU, H and
    I multiples of 16 (TMA rows, 16-byte copies), not while torch.compile traces the call."""
    return (fmt == "fp8_tensor" and is_sm90(device) and not torch.compiler.is_compiling() and activation == "silu"
            and hidden % 16 == 0 and inter % 16 == 0)


def gluon_runs(weights: ExpertWeights, device: torch.device, activation: str) -> bool:
    """Whether the Gluon kernels run this layer here (``gluon_runs_on``; no biases, contiguous
    16-byte-aligned weights)."""
    w13, w2 = weights.w13, weights.w2
    return (gluon_runs_on(weights.format, weights.hidden_size, weights.intermediate_size, device, activation)
            and weights.w13_bias is None and weights.w2_bias is None
            and w13.is_contiguous() and w2.is_contiguous() and w13.data_ptr() % 16 == 0 and w2.data_ptr() % 16 == 0)


def uses_gluon(weights: ExpertWeights, config: GroupedConfig | None, device: torch.device, activation: str) -> bool:
    """Whether ``config.gluon`` runs the Gluon kernels here (``gluon_runs``).  Elsewhere the
    Triton kernels run the same tiles (``policy.gluon_fallback``)."""
    return config is not None and config.gluon and gluon_runs(weights, device, activation)


def kernel_launches(m: int, top_k: int, weights: ExpertWeights, config: GroupedConfig | None = None,
                    gluon: bool = False) -> int:
    """Launches of one call: [quantise x] + the plan's + [gather x into plan order: ``gluon``,
    as ``uses_gluon`` says] + gate/up + [requantise] + down + combine."""
    routes, e_local = m * top_k, weights.num_experts
    if config is not None and not gluon:
        config = gluon_fallback(config)  # what the Triton kernels run of a Gluon config
    return (int(weights.is_a8) + plan_launches(routes, e_local, no_permute=uses_no_permute(routes, e_local)) + 3
            + int(splits_quantisation(weights, config)) + int(gluon))


def grouped_moe(x: torch.Tensor, weights: ExpertWeights, topk_weights: torch.Tensor, topk_ids: torch.Tensor,
                out: torch.Tensor, shared_output: torch.Tensor | None, expert_offset: int, num_experts: int,
                config: GroupedConfig, activation: str = "silu") -> torch.Tensor:
    """Run the grouped path into ``out`` [M, H] (inputs and config validated: ``policy.legal``)."""
    m, k = topk_ids.shape
    e_local, hidden, inter = weights.num_experts, weights.hidden_size, weights.intermediate_size
    dev = x.device
    fp8 = weights.is_a8  # e4m3 activations
    bm = config.block_m

    plan = build_plan(topk_ids, num_experts, bm, expert_offset=expert_offset, num_local_experts=e_local,
                      no_permute=uses_no_permute(m * k, e_local))
    max_blocks = plan.block_expert.numel()

    row_scaled = quant.x_row_scaled(weights.format)
    a1, a1_s = quantize_rows(x, whole_rows=row_scaled) if fp8 else (x, x)
    # each route's down output, before the routing weight: fp32 under fp16 activations (one route's
    # output may exceed 65504 where the weighted sum does not), else the activations' dtype
    y = torch.empty(m * k, hidden, dtype=torch.float32 if x.dtype == torch.float16 else x.dtype, device=dev)
    if uses_gluon(weights, config, dev, activation):  # fp8_tensor: x row-scaled
        _gluon_gemms(a1, a1_s, weights, plan, y, config, k)
        combine_launch(y, topk_weights, topk_ids, out, shared_output, expert_offset, e_local)
        return out
    config = gluon_fallback(config)  # the Triton kernels run it (its tiles, at BLOCK_M 128 narrower ones)
    split = splits_quantisation(weights, config)
    gu, dn = config.gate_up, config.down
    if fp8:
        act = torch.empty(m * k, inter, dtype=torch.float32 if split else quant.FP8_DTYPE, device=dev)
        act_s = act if split else torch.empty(m * k, cdiv(inter, quant.GROUP), dtype=torch.float32, device=dev)
    else:
        act = torch.empty(m * k, inter, dtype=x.dtype, device=dev)
        act_s = act

    ws13, se13, sn13, mode = scale_args(weights, weights.w13_scale, x)
    launch(grouped_gate_up_kernel, (max_blocks * cdiv(inter, gu.block_n),),
        a1, a1_s, weights.w13, ws13, optional_ptr(weights.w13_bias, x),
        plan.sorted_routes, plan.block_expert, plan.num_blocks, act, act_s,
        hidden, inter, k, a1.stride(0), a1_s.stride(0), weights.w13.stride(0), weights.w13.stride(1), se13, sn13,
        act.stride(0), act_s.stride(0),
        A_SCALED=ROW_SCALED.value if row_scaled else int(fp8), W_SCALE=mode, QUANT_OUT=fp8 and not split,
        SWAP_AB=gu.swap_ab,
        ACTIVATION=ACTIVATIONS[activation],
        HAS_BIAS=weights.w13_bias is not None, BLOCK_M=bm, BLOCK_N=gu.block_n, BLOCK_K=gu.block_k,
        GROUP_M=config.group_m, PROMOTE_K=config.fp8_promote_k, TAIL_M=config.tail_m,
        num_warps=gu.num_warps, num_stages=gu.num_stages, **gu.register_cap(), **pdl_launch(dev))
    if split:  # rows of routes not held hold garbage here, as in the fused form; down never reads them
        act, act_s = quantize_rows(act)
    ws2, se2, sn2, mode = scale_args(weights, weights.w2_scale, x)
    launch(grouped_down_kernel, (max_blocks * cdiv(hidden, dn.block_n),),
        act, act_s, weights.w2, ws2, optional_ptr(weights.w2_bias, x),
        plan.sorted_routes, plan.block_expert, plan.num_blocks, y,
        hidden, inter, act.stride(0), act_s.stride(0), weights.w2.stride(0), weights.w2.stride(1), se2, sn2,
        y.stride(0),
        A_SCALED=fp8, W_SCALE=mode, SWAP_AB=dn.swap_ab, HAS_BIAS=weights.w2_bias is not None,
        BLOCK_M=bm, BLOCK_N=dn.block_n, BLOCK_K=dn.block_k, GROUP_M=config.group_m,
        PROMOTE_K=config.fp8_promote_k, TAIL_M=config.tail_m, num_warps=dn.num_warps,
        num_stages=dn.num_stages, **dn.register_cap(), **pdl_launch(dev))
    combine_launch(y, topk_weights, topk_ids, out, shared_output, expert_offset, e_local)
    return out


def gather_plan_rows(x_q: torch.Tensor, x_s: torch.Tensor, plan, top_k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """x's rows in plan order for the Gluon GEMMs: ([P, H] e4m3, [P] fp32) with row p holding
    x_q[sorted_routes[p] // top_k] and its scale, zeros on padding rows, rows of blocks past
    num_blocks unwritten (x_q [M, H] e4m3, one scale per row x_s [M, 1]; P = len(sorted_routes))."""
    rows, cols, blocks = plan.sorted_routes.numel(), x_q.shape[1], plan.block_expert.numel()
    x_plan = torch.empty(rows, cols, dtype=x_q.dtype, device=x_q.device)
    x_plan_s = torch.empty(rows, dtype=torch.float32, device=x_q.device)
    if rows:
        block_c = _GATHER_BYTES // plan.block_m
        launch(gather_plan_rows_kernel, (blocks, gather_splits(blocks, cols, block_c, num_sms(x_q.device))),
            x_q, x_s, plan.sorted_routes, plan.num_blocks, x_plan, x_plan_s, cols, top_k, x_q.stride(0),
            x_plan.stride(0), BLOCK_M=plan.block_m, BLOCK_C=block_c, **pdl_launch(x_q.device))
    return x_plan, x_plan_s


def gather_splits(blocks: int, cols: int, block_c: int, sms: int) -> int:
    """Column splits of the gather's grid for a plan of ``blocks`` blocks (an upper bound): about
    _GATHER_PROGRAMS_PER_SM programs per SM in all, at most one per chunk of block_c columns."""
    return max(1, min(cdiv(cols, block_c), cdiv(_GATHER_PROGRAMS_PER_SM * sms, max(blocks, 1))))


def gluon_kernels(config: GroupedConfig) -> tuple:
    """(gate/up kernel, down kernel, launch options) of a Gluon config: the one-warpgroup kernels
    at BLOCK_M 64 (4 warps), the warp-specialised ones at 128 (the launch's 4 warps are one
    consumer warpgroup; the producer warp and the other warpgroup are the kernel's partitions,
    registers shared out by ``setmaxnreg`` under WS_MAXNREG)."""
    if config.block_m == 128:
        return gluon_grouped_gate_up_ws_kernel, gluon_grouped_down_ws_kernel, dict(num_warps=4, maxnreg=WS_MAXNREG)
    return gluon_grouped_gate_up_kernel, gluon_grouped_down_kernel, dict(num_warps=config.gate_up.num_warps)


def _gluon_gemms(x_q: torch.Tensor, x_s: torch.Tensor, weights: ExpertWeights, plan, y: torch.Tensor,
                 config: GroupedConfig, top_k: int) -> None:
    """x's rows gathered into plan order, gate/up -> act (e4m3 [P, I] in plan order, one scale per
    row per 128 columns), down -> y [R, H] (route order), by the Gluon kernels (``uses_gluon``):
    the one-warpgroup ones at BLOCK_M 64, the warp-specialised ones at 128 (``policy.GLUON_SETS``).
    Gate/up tiles of 64 columns write act in fp32, requantised by a launch of its own; of 128
    (warp-specialised) they quantise it in their epilogue.  x_q [M, H] e4m3 with one scale per
    row x_s [M, 1]; P = len(sorted_routes)."""
    hidden, inter = weights.hidden_size, weights.intermediate_size
    bm, gu, dn = config.block_m, config.gate_up, config.down
    grid = plan.block_expert.numel()
    rows = plan.sorted_routes.numel()
    if rows == 0:
        return
    gate_up, down, options = gluon_kernels(config)
    x_plan, x_plan_s = gather_plan_rows(x_q, x_s, plan, top_k)
    gate_up_grid = (grid * cdiv(inter, gu.block_n),)
    x_desc, w13_desc = tile_desc(x_plan, bm), tile_desc(weights.w13.view(-1, hidden), gu.block_n)
    fused = not splits_quantisation(weights, config)  # 128-column gate/up: quantised in its epilogue
    act = torch.empty(rows, inter, dtype=quant.FP8_DTYPE if fused else torch.float32, device=x_q.device)
    act_s = torch.empty(rows, cdiv(inter, quant.GROUP), dtype=torch.float32, device=x_q.device) if fused else act
    if bm == 128:  # warp-specialised: reads the plan's routes to skip a block's empty upper half
        gate_up[gate_up_grid](  # TMA descriptors: launched through Triton (_launch)
            x_desc, x_plan_s, w13_desc, weights.w13_scale, plan.sorted_routes, plan.block_expert, plan.num_blocks,
            act, act_s, hidden, inter, act.stride(0), act_s.stride(0),
            GROUP_M=config.group_m, STAGES=gu.num_stages, **options, **pdl_launch(x_q.device))
    else:
        gate_up[gate_up_grid](
            x_desc, x_plan_s, w13_desc, weights.w13_scale, plan.block_expert, plan.num_blocks, act, hidden, inter,
            act.stride(0), GROUP_M=config.group_m, STAGES=gu.num_stages, **options, **pdl_launch(x_q.device))
    # rows of blocks past num_blocks, of no-permute blocks of routes not held here and of empty
    # upper halves (BLOCK_M 128) hold garbage here (and are requantised for nothing): down never
    # reads them
    act_q, act_s = (act, act_s) if fused else quantize_rows(act)
    down[(grid * cdiv(hidden, dn.block_n),)](
        tile_desc(act_q, bm), act_s, tile_desc(weights.w2.view(-1, inter), dn.block_n), weights.w2_scale,
        plan.sorted_routes, plan.block_expert, plan.num_blocks, y, hidden, inter, act_s.stride(0), y.stride(0),
        GROUP_M=config.group_m, STAGES=dn.num_stages, **options, **pdl_launch(x_q.device))
