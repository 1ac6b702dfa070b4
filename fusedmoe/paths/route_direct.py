"""Route-direct path (seeds 000, 004): for decode, where routes are few and rarely share an
expert.  Two launches, no plan: gate/up GEMV per route (+ K split), then down + combine per
token; or, with ``config.fused``, both in one launch of a persistent grid.  Activations are
not quantised in any format ("w8a16" for FP8: weights upcast in registers), which the
reference replays with ``quantize_activations=False``.
"""

from __future__ import annotations

import torch

from ..epilogue import ACTIVATIONS
from ..policy import RouteDirectConfig
from .._runtime import cdiv, num_sms
from ..weights import ExpertWeights
from ._common import optional_ptr, scale_args
from ._route_direct_kernels import (SYNC_INTS, route_down_kernel, route_down_mma_kernel, route_fused_kernel,
                                    route_gate_up_kernel, route_gate_up_mma_kernel)

KERNEL_LAUNCHES = 2  # gate/up, down + combine (1 with config.fused)

# Counters of the one-launch form (``route_fused_kernel``): a buffer is zero between launches
# (the kernel's last program zeroes it), so it is zero-filled once, when it is made.
# - Eager calls: one buffer per (device, stream); calls on one stream never overlap.
# - Calls captured in a CUDA graph: a buffer of their own from a pool made at the device's
#   first eager call, so that no two graphs share one (they may be replayed on different
#   streams at once).  A capture before any eager call gets a fresh buffer, zero-filled by
#   a node of the graph itself (correct; one more node).
_EAGER_SYNC: dict[tuple, torch.Tensor] = {}
_GRAPH_SYNC_POOL: dict[tuple, list] = {}  # device -> [pool [SETS, SYNC_INTS] int32, next set]
GRAPH_SYNC_SETS = 4096  # captured one-launch calls per device before sets are reused (1.5 MB)


def _sync_buffer(device: torch.device) -> torch.Tensor:
    """A zeroed counter buffer [SYNC_INTS] int32 for one route_fused_kernel launch (see above)."""
    ints = SYNC_INTS.value
    dev = (device.type, device.index)
    if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        pool = _GRAPH_SYNC_POOL.get(dev)
        if pool is None:
            return torch.zeros(ints, dtype=torch.int32, device=device)
        buf = pool[0][pool[1] % GRAPH_SYNC_SETS]
        pool[1] += 1
        return buf
    if dev not in _GRAPH_SYNC_POOL:
        _GRAPH_SYNC_POOL[dev] = [torch.zeros(GRAPH_SYNC_SETS, ints, dtype=torch.int32, device=device), 0]
    key = dev + ((torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0),)
    if key not in _EAGER_SYNC:
        _EAGER_SYNC[key] = torch.zeros(ints, dtype=torch.int32, device=device)
    return _EAGER_SYNC[key]


def kernel_launches(config: RouteDirectConfig) -> int:
    """Launches of one route-direct call with ``config``."""
    return 1 if config.fused else KERNEL_LAUNCHES


QUANTIZES_ACTIVATIONS = {"bf16": False, "fp16": False, "fp8_tensor": False, "fp8_block": False}


def route_direct_moe(x: torch.Tensor, weights: ExpertWeights, topk_weights: torch.Tensor, topk_ids: torch.Tensor,
                     out: torch.Tensor, shared_output: torch.Tensor | None, expert_offset: int,
                     config: RouteDirectConfig, activation: str = "silu") -> torch.Tensor:
    """Run the route-direct path into ``out`` [M, H] (inputs and config validated: ``policy.legal``)."""
    m, k = topk_ids.shape
    r = m * k
    e_local, hidden, inter = weights.num_experts, weights.hidden_size, weights.intermediate_size
    gu, dn = config.gate_up, config.down
    split = gu.split_k
    act = torch.empty((r * inter) if split == 1 else (split * r * 2 * inter), dtype=torch.float32, device=x.device)
    if config.fused:
        _fused(x, weights, topk_weights, topk_ids, act, out, shared_output, expert_offset, config, activation)
        return out
    ws, se, sn, mode = scale_args(weights, weights.w13_scale, x)
    gate_up, gu_extra = ((route_gate_up_mma_kernel, {}) if gu.swap_ab
                         else (route_gate_up_kernel, dict(PREFETCH=gu.prefetch)))
    gate_up[(r * cdiv(inter, gu.block_n) * split,)](
        x, weights.w13, ws, optional_ptr(weights.w13_bias, x), topk_ids, act, hidden, inter, r, expert_offset,
        e_local, k, x.stride(0), weights.w13.stride(0), weights.w13.stride(1), se, sn,
        W_SCALE=mode, SPLIT_K=split, ACTIVATION=ACTIVATIONS[activation], HAS_BIAS=weights.w13_bias is not None,
        BLOCK_N=gu.block_n, BLOCK_K=gu.block_k, **gu_extra,
        num_warps=gu.num_warps, num_stages=gu.num_stages)
    ws, se, sn, mode = scale_args(weights, weights.w2_scale, x)
    down, dn_extra = (route_down_mma_kernel, {}) if dn.swap_ab else (route_down_kernel, dict(PREFETCH=dn.prefetch))
    down[(m * cdiv(hidden, dn.block_n),)](
        act, weights.w2, ws, optional_ptr(weights.w2_bias, x), topk_ids, topk_weights,
        optional_ptr(shared_output, out), out,
        hidden, inter, r, expert_offset, e_local, weights.w2.stride(0), weights.w2.stride(1), se, sn,
        shared_output.stride(0) if shared_output is not None else 0, out.stride(0),
        TOPK=k, W_SCALE=mode, SPLIT_K=split, HAS_SHARED=shared_output is not None,
        ACTIVATION=ACTIVATIONS[activation], HAS_BIAS=weights.w2_bias is not None,
        BLOCK_N=dn.block_n, BLOCK_K=dn.block_k, **dn_extra, num_warps=dn.num_warps, num_stages=dn.num_stages)
    return out


def _fused(x, weights, topk_weights, topk_ids, act, out, shared_output, expert_offset, config, activation):
    """Both GEMV steps in one launch of ``config.fused`` programs per SM (``route_fused_kernel``)."""
    m, k = topk_ids.shape
    r = m * k
    hidden, inter = weights.hidden_size, weights.intermediate_size
    gu, dn = config.gate_up, config.down
    num_gate_up = r * cdiv(inter, gu.block_n) * gu.split_k
    num_items = num_gate_up + m * cdiv(hidden, dn.block_n)
    w13s, se13, sn13, mode = scale_args(weights, weights.w13_scale, x)
    w2s, se2, sn2, _ = scale_args(weights, weights.w2_scale, x)
    grid = (min(num_items, config.fused * num_sms(x.device)),)
    route_fused_kernel[grid](
        x, weights.w13, w13s, optional_ptr(weights.w13_bias, x), topk_ids, act, weights.w2, w2s,
        optional_ptr(weights.w2_bias, x), topk_weights, optional_ptr(shared_output, out), out, _sync_buffer(x.device),
        hidden, inter, r, expert_offset, weights.num_experts, num_gate_up, num_items,
        x.stride(0), weights.w13.stride(0), weights.w13.stride(1), se13, sn13,
        weights.w2.stride(0), weights.w2.stride(1), se2, sn2,
        shared_output.stride(0) if shared_output is not None else 0, out.stride(0),
        TOPK=k, W_SCALE=mode, SPLIT_K=gu.split_k, ACTIVATION=ACTIVATIONS[activation],
        HAS_BIAS=weights.w13_bias is not None, HAS_SHARED=shared_output is not None,
        GU_BLOCK_N=gu.block_n, GU_BLOCK_K=gu.block_k, GU_PREFETCH=gu.prefetch,
        DN_BLOCK_N=dn.block_n, DN_BLOCK_K=dn.block_k, DN_PREFETCH=dn.prefetch,
        num_warps=max(gu.num_warps, dn.num_warps), num_stages=1)
