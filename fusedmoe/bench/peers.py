"""Peer implementations timed beside ours, in plain torch (the figures of PEERS-H200.md).

- ``torch_naive``: the transformers eager loop: one-hot mask, a Python loop over the experts
  that got routes (host sync), gather, two matmuls, ``index_add_``.  bf16/fp16 weights; not
  graph-capturable.
- ``torch_grouped_mm``: routes sorted by expert, ``torch._grouped_mm`` (bf16/fp16) or
  ``torch._scaled_grouped_mm`` (fp8_tensor: activations quantised per row, weights' per-expert
  scale broadcast per row) with the group offsets as a device tensor: no host sync, capturable.

Both compute the layer with the activations the peer really uses (fp8 per row), and are
compared against the reference without activation quantisation.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

from ..reference import held_routes

PEERS = ("torch_grouped_mm", "torch_naive")
_SUPPORTED = {"torch_grouped_mm": ("bf16", "fp16", "fp8_tensor"), "torch_naive": ("bf16", "fp16")}
_FP8_MAX = 448.0


def unsupported_reason(peer: str, fmt: str, device: torch.device) -> str | None:
    """Why ``peer`` cannot run weights of format ``fmt`` on ``device``, or None when it can."""
    if peer not in _SUPPORTED:
        raise ValueError(f"peer: expected one of {list(PEERS)}, got {peer!r}")
    if fmt not in _SUPPORTED[peer]:
        return f"{peer} runs only {', '.join(_SUPPORTED[peer])}"
    if fmt == "fp8_tensor" and device.type != "cuda":
        return "torch._scaled_grouped_mm runs only on CUDA"
    return None


def torch_naive(x: torch.Tensor, weights, topk_weights: torch.Tensor, topk_ids: torch.Tensor,
                expert_offset: int = 0, num_experts: int | None = None) -> torch.Tensor:
    """The transformers-style loop over experts; x [M, H] -> [M, H] in x's dtype
    (``num_experts`` unused: the loop visits held experts only)."""
    e_local, inter = weights.num_experts, weights.intermediate_size
    local = held_routes(topk_ids, expert_offset, e_local)
    mask = F.one_hot(local + 1, e_local + 1)[..., 1:].permute(2, 1, 0)  # [E, k, M]; unheld routes dropped
    out = torch.zeros_like(x)
    rw = topk_weights.to(x.dtype)
    for e in (mask.sum(dim=(1, 2)) > 0).nonzero().flatten().tolist():
        slot, tok = torch.where(mask[e])
        gate_up = x[tok] @ weights.w13[e].T
        h = F.silu(gate_up[:, :inter]) * gate_up[:, inter:]
        y = (h @ weights.w2[e].T) * rw[tok, slot, None]
        out.index_add_(0, tok, y)
    return out


def _quantize_rows(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-row dynamic e4m3 quantisation: (q [T, K], scale [T] fp32), a = q * scale.
    Written here (not fusedmoe.quant's grouped helper) so the peer pays no padding copy; the
    16-bit rows are scaled into fp32 in one pass (no separate upcast copy)."""
    scale = a.abs().amax(dim=1).float().clamp(min=1e-12) / _FP8_MAX
    q = torch.mul(a, (1.0 / scale)[:, None]).clamp_(-_FP8_MAX, _FP8_MAX).to(torch.float8_e4m3fn)
    return q, scale


def torch_grouped_mm(x: torch.Tensor, weights, topk_weights: torch.Tensor, topk_ids: torch.Tensor,
                     expert_offset: int = 0, num_experts: int | None = None) -> torch.Tensor:
    """Sort routes by expert, two grouped GEMMs, the weighted rows summed per token;
    x [M, H] -> [M, H].  ``num_experts``: the range of the ids; when the weights hold all of
    them (no expert-parallel window) the combine needs no mask."""
    m, k = topk_ids.shape
    if m == 0:
        return torch.zeros_like(x)
    e_local, inter = weights.num_experts, weights.intermediate_size
    key = held_routes(topk_ids, expert_offset, e_local).flatten()
    held = key >= 0
    key = torch.where(held, key, e_local)  # routes not held sort after every group
    order = torch.argsort(key, stable=True)
    counts = torch.zeros(e_local + 1, dtype=torch.int32, device=x.device)
    counts.scatter_add_(0, key, torch.ones_like(key, dtype=torch.int32))
    windowed = expert_offset != 0 or num_experts is None or num_experts > e_local
    if not windowed:  # the unheld (dropped) routes join the last group (below); a device-side
        counts[e_local - 1:e_local] += counts[e_local:]  # add: no host value, so graph capture holds
    offs = torch.cumsum(counts[:e_local], 0, dtype=torch.int32)
    if windowed:
        # Most routes may be unheld (--ep N): they skip the GEMMs, and the combine masks them.
        tok = order // k
    else:
        # Only dropped (-1) routes are unheld: they read a zero row appended to x and run in
        # the last group with routing weight 0, so they come out as exact zeros whatever x
        # holds, and the combine needs no mask.  At DeepSeek-V3 M=8192 a pass over the
        # [M*k, H] rows moves ~1.9 GB (~0.45 ms at 4.25 TB/s; an estimate, not yet measured);
        # the appended row copies x once, 1/k of that.
        tok = torch.where(held, torch.arange(m * k, device=x.device) // k, m)[order]
        x = torch.cat([x, x.new_zeros(1, x.shape[1])])
    route_weight = torch.where(held, topk_weights.flatten(), 0.0)[order].to(x.dtype)[:, None]
    if weights.format == "fp8_tensor":
        n13, h = weights.w13.shape[1], weights.w13.shape[2]
        s13 = weights.w13_scale[:, None].expand(e_local, n13).contiguous()
        s2 = weights.w2_scale[:, None].expand(e_local, h).contiguous()
        # Fast accumulation: PEERS-H200.md has this peer's fp8 at 1.10x its bf16 time (Qwen3
        # M=8192), where our fp8 GEMMs without it took 2.0x the bf16 ones (2202 vs 1104 us):
        # the published figures imply FP8 GEMMs about as fast as bf16, and the faster peer is
        # the fairer bar.
        q, s = _quantize_rows(x)  # per token, then gathered: M rows quantised, not M * k
        gate_up = torch._scaled_grouped_mm(q[tok], weights.w13.transpose(1, 2), s[tok], s13, offs=offs,
                                           out_dtype=x.dtype, use_fast_accum=True)
        q, s = _quantize_rows(F.silu(gate_up[:, :inter]) * gate_up[:, inter:] * route_weight)
        y = torch._scaled_grouped_mm(q, weights.w2.transpose(1, 2), s, s2, offs=offs, out_dtype=x.dtype,
                                     use_fast_accum=True)
    else:
        gate_up = torch._grouped_mm(x[tok], weights.w13.transpose(1, 2), offs=offs)
        act = F.silu(gate_up[:, :inter]) * gate_up[:, inter:] * route_weight
        y = torch._grouped_mm(act, weights.w2.transpose(1, 2), offs=offs)
    # Combine without atomics: the weighted rows gathered back to route order, then summed
    # over each token's k routes (fp32 sum inside torch's reduction).  Measured on the H200
    # (2026-11-30): index_add_ of bf16 rows (atomics) made this peer up to 2.2x slower than
    # PEERS-H200.md; a scatter ``by_route[order] = y`` took 610 us at Qwen3 M=8192 where a
    # gather of the same rows takes ~120; with the routing weight applied and unheld routes
    # masked over [M*k, H] after the gather, the peer stayed 1.3-1.5x slower than PEERS at
    # M >= 2048 with E >= 192 (fifth session).  The weight folded into the [M*k, I]
    # activations, and no mask without a window, are not yet measured.
    position = torch.empty_like(order)
    position[order] = torch.arange(order.numel(), device=order.device)
    rows = y.index_select(0, position)
    if windowed:  # rows of unheld routes were never written
        rows = torch.where(held[:, None], rows, 0.0)
    return rows.view(m, k, -1).sum(dim=1)


def get_peer(name: str) -> Callable[..., torch.Tensor]:
    """The peer function ``f(x, weights, topk_weights, topk_ids, expert_offset, num_experts)``
    named ``name``."""
    if name == "torch_naive":
        return torch_naive
    if name == "torch_grouped_mm":
        return torch_grouped_mm
    raise ValueError(f"peer: expected one of {list(PEERS)}, got {name!r}")
