"""The bandwidth floor of one MoE layer call, and its arithmetic work.

    bytes  = distinct active local experts * expert_nbytes      (weights + scales)
           + x bytes + out bytes (+ shared_output bytes)
    floor  = bytes / copy bandwidth                              (the time no kernel can beat)
    flops  = 2 * R_held * 3 * H * I                              (gate, up and down GEMMs)

R_held counts the routes to experts held on this rank (ids in [expert_offset,
expert_offset + num_local_experts)); dropped routes (-1) and other ranks' routes count nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class RouteCounts:
    """What one routing asks of this rank: distinct experts touched, routes to them."""

    active_experts: int
    held_routes: int


def count_routes(topk_ids: torch.Tensor, expert_offset: int = 0, num_local_experts: int | None = None) -> RouteCounts:
    """Distinct local experts and held routes of ``topk_ids`` [M, k] (global ids, -1 = dropped).

    ``num_local_experts=None`` holds every id >= expert_offset.  Reads the ids back to the host.
    """
    from ..reference import held_routes

    if not isinstance(topk_ids, torch.Tensor) or topk_ids.dim() != 2:
        raise ValueError(f"topk_ids: expected a 2-D tensor [M, k], got {getattr(topk_ids, 'shape', topk_ids)!r}")
    n_local = num_local_experts if num_local_experts is not None else 2**62
    local = held_routes(topk_ids, expert_offset, n_local)
    held = local[local >= 0]
    return RouteCounts(int(torch.unique(held).numel()), int(held.numel()))


def moved_bytes(active_experts: float, expert_nbytes: int, tokens: int, hidden: int, *, act_itemsize: int = 2,
                out_itemsize: int = 2, shared: bool = False) -> float:
    """Bytes one call must move: active experts' weights, x [M, H] read, out [M, H] written,
    and shared_output [M, H] read when given.  ``active_experts`` may be a mean over routings."""
    for name, v in (("active_experts", active_experts), ("expert_nbytes", expert_nbytes), ("tokens", tokens),
                    ("hidden", hidden)):
        if v < 0:
            raise ValueError(f"{name}: expected >= 0, got {v}")
    act = tokens * hidden
    return active_experts * expert_nbytes + act * (act_itemsize + out_itemsize * (2 if shared else 1))


def layer_flops(held_routes: float, hidden: int, intermediate: int) -> float:
    """2 * R_held * 3 * H * I: multiply-adds of the gate, up and down projections, times 2
    (``held_routes`` may be a mean over routings)."""
    return 2 * held_routes * 3 * hidden * intermediate


def floor_us(nbytes: float, bandwidth: float) -> float:
    """Time to move ``nbytes`` at ``bandwidth`` bytes/s, in microseconds."""
    if not bandwidth > 0:
        raise ValueError(f"bandwidth: expected bytes/s > 0, got {bandwidth}")
    return nbytes / bandwidth * 1e6


def percent_of_floor(measured_us: float, floor: float) -> float:
    """100 * floor / measured: 100 means the call ran at the floor."""
    if not measured_us > 0:
        raise ValueError(f"measured_us: expected > 0, got {measured_us}")
    return 100.0 * floor / measured_us


def tflops(flops: float, us: float) -> float:
    """Throughput in TFLOP/s of ``flops`` done in ``us`` microseconds."""
    return flops / (us * 1e-6) / 1e12 if us > 0 else float("nan")


def gbps(nbytes: float, us: float) -> float:
    """Effective bandwidth in GB/s of ``nbytes`` moved in ``us`` microseconds."""
    return nbytes / (us * 1e-6) / 1e9 if us > 0 else float("nan")
