"""Path and tile choice from shape facts only (M, top_k, E, H, I, format, SM count).

Configs are frozen dataclasses.  Tuned tables (``fusedmoe/configs/<device>/*.json``, written
by ``fusedmoe tune``) override the built-in heuristics where one matches; the heuristics are
the fallback and always give a config every GPU can run.
"""

from __future__ import annotations

from dataclasses import dataclass

import triton

from .weights import FP8_FORMATS


@dataclass(frozen=True)
class Tile:
    """One GEMM launch: rows of N per program, K step, warps, pipeline depth, K splits."""

    block_n: int
    block_k: int
    num_warps: int = 4
    num_stages: int = 3
    split_k: int = 1


@dataclass(frozen=True)
class GroupedConfig:
    """Grouped path: routes per block, and the two GEMMs' tiles."""

    block_m: int
    gate_up: Tile
    down: Tile


@dataclass(frozen=True)
class RouteDirectConfig:
    """Route-direct path: gate_up.block_n rows of I per program (x2: gate and up), split_k
    splits of H; down.block_n rows of H per program, looping over the token's routes."""

    gate_up: Tile
    down: Tile


def grouped_block_m(num_routes: int, num_experts: int) -> int:
    """BLOCK_M from the expected routed rows per active expert (seed 003): the smallest legal
    tile (16..128) that holds them, so padding stays small and tiles stay full."""
    rows_per_expert = num_routes / max(1, min(num_experts, num_routes))
    for bm in (16, 32, 64):
        if rows_per_expert <= bm:
            return bm
    return 128


def grouped_config(m: int, top_k: int, num_experts: int, hidden: int, inter: int, fmt: str) -> GroupedConfig:
    """Heuristic tiles of the grouped path."""
    bm = grouped_block_m(m * top_k, num_experts)
    warps = 4 if bm <= 32 else 8
    if fmt in FP8_FORMATS:
        # BLOCK_N = 128 on gate/up: the tile holds one whole 128-group of the SwiGLU output, so
        # its FP8 requantisation is fused into the epilogue.  BLOCK_K = 128: one scale per step.
        return GroupedConfig(bm, Tile(128, 128, warps, 3), Tile(128, 128, warps, 3))
    return GroupedConfig(bm, Tile(64, 64, warps, 3), Tile(128, 64, warps, 3))


def route_direct_config(m: int, top_k: int, num_experts: int, hidden: int, inter: int, fmt: str,
                        num_sms: int) -> RouteDirectConfig:
    """Heuristic tiles of the route-direct path: enough programs to keep every SM streaming
    (>= 4 per SM), split K of the gate/up GEMV when the routes alone cannot give that."""
    routes = max(1, m * top_k)
    target = 4 * num_sms
    bn = 64
    while bn > 8 and routes * triton.cdiv(inter, bn) < target:
        bn //= 2
    split = 1
    while split < 8 and routes * triton.cdiv(inter, bn) * split < target and hidden // (split * 2) >= 512:
        split *= 2
    bk = 128 if fmt == "fp8_block" else 256
    dn = 64
    while dn > 8 and max(1, m) * triton.cdiv(hidden, dn) < target:
        dn //= 2
    return RouteDirectConfig(Tile(bn, bk, 4, 3, split), Tile(dn, min(bk, 128 if fmt == "fp8_block" else 256), 4, 3))


# Route-direct reads each route's expert rows once per route, the grouped path once per block:
# route-direct wins while routes rarely share an expert and the fixed costs of sorting dominate.
ROUTE_DIRECT_MAX_TOKENS = 8


def choose_path(m: int, top_k: int, num_experts: int, hidden: int, inter: int, fmt: str, num_sms: int) -> str:
    """The path the dispatcher runs for these shape facts."""
    if m <= ROUTE_DIRECT_MAX_TOKENS:
        return "route_direct"
    return "grouped"
