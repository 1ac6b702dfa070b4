"""Route-direct path (seeds 000, 004): for decode, where routes are few and rarely share an
expert.  Two launches, no plan: gate/up GEMV per route (+ K split), then down + combine per
token.  Activations are not quantised in any format ("w8a16" for FP8, "w4a16" for w4a8: weights
upcast in registers), which the reference replays with ``quantize_activations=False``.
"""

from __future__ import annotations

import torch

from ..epilogue import ACTIVATIONS
from ..policy import RouteDirectConfig
from .._launch import launch
from .._pdl import pdl_launch
from .._runtime import cdiv, is_sm90
from .._trace import TRACE_FIELDS
from ..weights import ExpertWeights
from ._common import optional_ptr, scale_args
from ._route_direct_gluon_kernels import route_down_gluon_kernel
from ._route_direct_kernels import (route_down_kernel, route_down_mma_kernel, route_gate_up_kernel,
                                    route_gate_up_mma_kernel)

KERNEL_LAUNCHES = 2  # gate/up, down + combine
QUANTIZES_ACTIVATIONS = {"bf16": False, "fp16": False, "fp8_tensor": False, "fp8_block": False, "w4a8": False}


def route_direct_moe(x: torch.Tensor, weights: ExpertWeights, topk_weights: torch.Tensor, topk_ids: torch.Tensor,
                     out: torch.Tensor, shared_output: torch.Tensor | None, expert_offset: int,
                     config: RouteDirectConfig, activation: str = "silu",
                     trace: torch.Tensor | None = None) -> torch.Tensor:
    """Run the route-direct path into ``out`` [M, H] (inputs and config validated: ``policy.legal``).
    The GEMV kernels compile with num_stages 1 and pipeline their K loop alone, to the tile's
    num_stages (``policy.Tile``).
    ``config.pdl`` takes effect on sm_90+ CUDA devices only (elsewhere the same two launches
    run in plain stream order: ``_pdl.pdl_launch``).  ``trace`` (diagnosis): int64 [at least
    ``launch_programs(...)`` summed, 4], the gate/up programs' timelines then the down programs'
    (``fusedmoe._trace``)."""
    m, k = topk_ids.shape
    r = m * k
    e_local, hidden, inter = weights.num_experts, weights.hidden_size, weights.intermediate_size
    gu, dn = config.gate_up, config.down
    split = gu.split_k
    pdl = pdl_launch(x.device) if config.pdl else {}
    act = torch.empty((r * inter) if split == 1 else (split * r * 2 * inter), dtype=torch.float32, device=x.device)
    ws, se, sn, mode = scale_args(weights, weights.w13_scale, x)
    scale_rows = config.block_scale_rows or mode != 2  # only block scales read it: one compile for the rest
    gu_programs, dn_programs = launch_programs(m, k, inter, hidden, config)
    gu_trace = dn_trace = {}
    run = launch
    if trace is not None:  # traced launches go the plain way (no cached launcher keeps the buffer)
        if trace.dtype != torch.int64 or trace.dim() != 2 or trace.shape[0] < gu_programs + dn_programs \
                or trace.shape[1] != TRACE_FIELDS or not trace.is_contiguous():
            raise ValueError(f"trace: expected a contiguous int64 tensor [>= {gu_programs + dn_programs}, "
                             f"{TRACE_FIELDS}], got {tuple(trace.shape)} {trace.dtype}")
        gu_trace = dict(trace_ptr=trace, TRACE=True)
        dn_trace = dict(trace_ptr=trace[gu_programs:], TRACE=True)
        run = _plain_launch
    gate_up = route_gate_up_mma_kernel if gu.swap_ab else route_gate_up_kernel
    gemv_gate_up = {} if gu.swap_ab else dict(FP16_PRODUCTS=config.fp16_products, STAGES=gu.num_stages,
                                              SCALE_ROWS=scale_rows)
    run(gate_up, (gu_programs,),
        x, weights.w13, ws, optional_ptr(weights.w13_bias, x), topk_ids, act, hidden, inter, r, expert_offset,
        e_local, k, x.stride(0), weights.w13.stride(0), weights.w13.stride(1), se, sn,
        W_SCALE=mode, SPLIT_K=split, ACTIVATION=ACTIVATIONS[activation], HAS_BIAS=weights.w13_bias is not None,
        BLOCK_N=gu.block_n, BLOCK_K=gu.block_k,
        num_warps=gu.num_warps, num_stages=gu.num_stages if gu.swap_ab else 1, **gemv_gate_up, **gu.register_cap(),
        **gu_trace, **pdl)
    ws, se, sn, mode = scale_args(weights, weights.w2_scale, x)
    if uses_gluon_down(weights, config, x.device):
        down, extra = route_down_gluon_kernel, {}
    else:
        down = route_down_mma_kernel if dn.swap_ab else route_down_kernel
        # down_gluon's products are fp32 wherever it runs (off sm_90 the Triton down stands in)
        gemv_down = {} if dn.swap_ab else dict(TILES=config.down_tiles,
                                               FP16_PRODUCTS=config.fp16_products and not config.down_gluon,
                                               STAGES=dn.num_stages, SCALE_ROWS=scale_rows)
        extra = dict(SPLIT_K=split, ACTIVATION=ACTIVATIONS[activation], num_stages=dn.num_stages if dn.swap_ab else 1,
                     **gemv_down, **dn.register_cap())
    run(down, (dn_programs,),
        act, weights.w2, ws, optional_ptr(weights.w2_bias, x), topk_ids, topk_weights,
        optional_ptr(shared_output, out), out,
        hidden, inter, r, expert_offset, e_local, weights.w2.stride(0), weights.w2.stride(1), se, sn,
        shared_output.stride(0) if shared_output is not None else 0, out.stride(0),
        TOPK=k, W_SCALE=mode, HAS_SHARED=shared_output is not None, HAS_BIAS=weights.w2_bias is not None,
        BLOCK_N=dn.block_n, BLOCK_K=dn.block_k, num_warps=dn.num_warps, **extra, **dn_trace, **pdl)
    return out


def uses_gluon_down(weights: ExpertWeights, config: RouteDirectConfig, device: torch.device) -> bool:
    """Whether ``config.down_gluon`` runs the Gluon down here: on sm_90, for I a multiple of 16
    bytes of weights (its loads and masks take whole 16-byte groups), not while torch.compile
    traces the call.  Elsewhere the Triton GEMV down runs the same tile."""
    vec = 16 // weights.w2.element_size()
    return (config.down_gluon and is_sm90(device) and not torch.compiler.is_compiling()
            and weights.intermediate_size % vec == 0 and weights.w2.stride(2) == 1)


def _plain_launch(kernel, grid: tuple, *args, **kwargs) -> None:
    kernel[grid](*args, **kwargs)


def launch_programs(tokens: int, top_k: int, inter: int, hidden: int, config: RouteDirectConfig) -> tuple[int, int]:
    """(gate/up programs, down programs) of one call."""
    gu, dn = config.gate_up, config.down
    return (tokens * top_k * cdiv(inter, gu.block_n) * gu.split_k,
            tokens * cdiv(cdiv(hidden, dn.block_n), config.down_tiles))
