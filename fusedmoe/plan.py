"""Route preparation (stage 2): ``topk_ids`` -> a :class:`RoutePlan`.

A route is one (token, slot) pair: ``r = token * top_k + j`` in row-major order of
``topk_ids [M, top_k]``, ``R = M * top_k`` routes.  Global expert id ``e`` maps to local id
``e - expert_offset``; a route is *held* here iff ``0 <= local < num_local_experts``.
``-1`` ("no expert") is never held.  Ids are meant to lie in ``[-1, num_experts)``, but are
not checked on the device (that would need a host sync): an id outside the local window,
whatever its value, is simply treated as not held; it can never cause an illegal access.

Blocked plan (``no_permute=False``)::

    counts[e]  = #{r held : local(r) == e}                        expert_counts
    padded[e]  = ceil(counts[e] / block_m) * block_m
    pstart[e]  = sum_{e' < e} padded[e']
    sorted_routes[pstart[e] + q] = q-th route (ascending r) of expert e,  q < counts[e]
    block_expert[b] = e  for pstart[e] <= b * block_m < pstart[e] + padded[e]
    num_blocks = sum_e padded[e] / block_m
    every other slot: -1 (padding inside a segment, and everything past the live part)

No-permute plan (``no_permute=True``; seed 004, meant for ``R * 4 <= E``, chosen by the
caller; correct for any shape)::

    sorted_routes[b * block_m] = b,  other rows -1      (block b holds route b alone)
    block_expert[b] = local(b) if held else -1,  num_blocks = R,  expert_counts as above

Buffer sizes depend only on (R, E_local, block_m, no_permute), never on the ids:

    blocked:     sorted_routes [max_padded_routes(R, E_local, block_m)], block_expert [max_blocks(...)]
    no-permute:  sorted_routes [R * block_m], block_expert [R]
                 (equal to the blocked bounds when R <= E_local, the regime it is meant for)

``block_m`` may be any power of two in [1, 1024].  ``R == 0`` gives empty ``sorted_routes`` /
``block_expert`` and zeros elsewhere.

Launches per call (``plan_launches``), blocked plans, chosen by ``_auto_blocked`` from R and
E_local (one graph node each, the -1 fill inside, unless said otherwise):

* one program (``_plan_single_kernel``: histogram, a bitonic sort of the R keys, scatter):
  small R (to 64 routes, or 256 above 256 experts);
* the recount launch (``_plan_recount_kernel``, cdiv(R, 32) programs that each count all R
  routes, rank their own 32 by comparison and write disjoint slots, no program waiting for
  another; R <= 2048, E_local <= 512): while R x E_bins <= 2048 x 256;
* three launches beyond (count per chunk of 256+ routes, scan per expert tile, sort+scatter
  per chunk), and for more than 2048 routes or experts.

Above 512 experts auto keeps one program to 512 routes, three launches beyond.  Each blocked
kernel can be forced (``_build(path=...)``).  No-permute: one kernel.  R == 0: no kernel, two
zero-fills (num_blocks, expert_counts).  Plain CPU tensors without ``TRITON_INTERPRET=1``: the
torch reference, no kernel.  Contiguous ids are passed as [R, 1] (strides and top_k 1, which
the JIT specialises to constants), so no kernel divides route indices by top_k.

Measured on one H200 (CUDA graph of 50 calls, median per call; random ids, block_m 16;
fifteenth session, 2026-12-01; the kernels' table is above ``SINGLE_AUTO_MAX_ROUTES``): auto
takes 1.5-2.6 us up to 64 routes x 512 experts, 1.5-3.0 up to 2048 routes x 8 experts,
1.8-3.7 x 64, 1.8-3.4 x 128, 5.9 us at 2048 x 256 and 8.0 (three launches) at 2048 x 512,
where the fourth session's rule took 8.2 (3.0 / 3.3 / 5.3 at 8 / 64 / 512 routes x 512).
The issue's 3 us holds to 2048 routes x 8 experts, 1024 x 128, 256 x 256 and 64 x 512, not
beyond.  Tried and dropped before: a sort-free rank through a count table in memory (6-47 us)
and a compare kernel with no sort for <= 64 routes (2.5-6.0 us).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ._runtime import interpreting, runs_triton
from ._validate import ID_DTYPES, check_int, check_tensor

__all__ = [
    "RoutePlan",
    "build_plan",
    "max_blocks",
    "max_padded_routes",
    "plan_launches",
    "reference_plan",
]

MAX_BLOCK_M = 1024
MAX_EXPERTS = 1 << 16
_INT32_LIMIT = (1 << 31) - 1

# Parallel path tiles: expert tiles of the histogram / pstart loops; the scan kernel's
# [chunks, experts] tile.
PAR_E_TILE = 2048
SCAN_TILE = 4096
SCAN_MAX_CHUNKS = 256
FILL = 1024
# "auto" for blocked plans (``_auto_blocked``), from the fifteenth session's graph-timed runs on
# the H200 (python -m fusedmoe.bench.plan, contiguous ids, block_m 16; us; best warps of the one
# program in brackets; benchmarks/results/H200/2026-12-01-s15/plan*):
#   E_local  routes:   8          64         256        512        1024       2048
#   64       single    1.52 (4)   1.60 (1)   2.29 (4)   3.04 (4)
#            recount              1.85       1.95       2.08       2.51       3.53
#            parallel                                   4.95       4.98       5.71
#   256      single    1.87 (2)   2.08 (1)   3.16 (2)   3.83 (4)
#            recount              2.51       2.81       3.11       3.89       5.83
#            parallel                                   6.11       6.78       7.03
#   512      single    2.54 (2)   2.57 (2)   3.74 (2)   5.20 (4)
#            recount              3.83       4.13       4.66       6.27       9.11
#            parallel                                   7.59       7.64       7.96
# The one program's sort grows with R (26 us at 2048 routes, fourth session) and each recount
# program counts all R routes with tl.histogram, whose cost grows with R x bins (and with the
# warps: its cross-warp merge adds each warp's bins with bank-conflicted shared-memory atomics,
# so 8 and 16 warps ran slower than 4 at every shape).  Hence: one program of 2 warps up to
# SINGLE_AUTO_MAX_ROUTES routes (and to SINGLE_AUTO_MAX_ROUTES_MANY with more than
# RECOUNT_FEW_EXPERTS experts), the recount launch while R x E_bins <= RECOUNT_MAX_WORK, three
# launches beyond.  Above 512 experts the recount kernel is not offered (at 2048 experts it took
# 16-54 us for 8-2048 routes, call 1 of that session) and auto keeps the fourth session's rule
# (not re-timed): one program to AUTO_SINGLE_MAX_ROUTES routes, three launches beyond.
SINGLE_AUTO_MAX_ROUTES = 64
SINGLE_AUTO_MAX_ROUTES_MANY = 256
SINGLE_AUTO_WARPS = 2
RECOUNT_FEW_EXPERTS = 256
RECOUNT_MAX_EXPERTS = 512
RECOUNT_MAX_WORK = 2048 * 256
RECOUNT_CHUNK = 32
RECOUNT_WARPS = 4
INTERPRETER_RECOUNT_CHUNK = 256
AUTO_SINGLE_MAX_ROUTES = 512
PAR_MIN_CHUNK = 256
PAR_MAX_CHUNK = 2048


@dataclass(frozen=True)
class RoutePlan:
    """Routes grouped by local expert and padded to ``block_m`` (see the module docstring).

    Fields (all int32, on the device of ``topk_ids``):
      sorted_routes  [P]        route index r = token*top_k + j per row, -1 in padding slots
      block_expert   [P/block_m] local expert of block b, -1 past num_blocks (and, in
                                no-permute plans, for routes not held here)
      num_blocks     [1]        live blocks (a device tensor: read it on the device)
      expert_counts  [E_local]  routes per local expert
    """

    block_m: int
    num_local_experts: int
    sorted_routes: torch.Tensor
    block_expert: torch.Tensor
    num_blocks: torch.Tensor
    expert_counts: torch.Tensor
    no_permute: bool


def max_padded_routes(num_routes: int, num_local_experts: int, block_m: int) -> int:
    """Upper bound on the padded routes of a blocked plan (the length of ``sorted_routes``).

    ``R + min(R, E_local) * (block_m - 1)`` rounded up to a multiple of ``block_m``: each of
    the at most ``min(R, E_local)`` non-empty segments adds at most ``block_m - 1`` padding
    rows.  0 when ``R == 0``.
    """
    check_int("num_routes", num_routes, lo=0)
    check_int("num_local_experts", num_local_experts, lo=1)
    _check_block_m(block_m)
    bound = num_routes + min(num_routes, num_local_experts) * (block_m - 1)
    return -(-bound // block_m) * block_m


def max_blocks(num_routes: int, num_local_experts: int, block_m: int) -> int:
    """Upper bound on the live blocks of a blocked plan: ``max_padded_routes(...) // block_m``."""
    return max_padded_routes(num_routes, num_local_experts, block_m) // block_m


def plan_launches(num_routes: int, num_local_experts: int, *, no_permute: bool = False) -> int:
    """Kernel launches of ``build_plan`` on a Triton device (0, 1 or 3)."""
    if num_routes == 0:
        return 0
    if no_permute or _auto_blocked(num_routes, num_local_experts)[0] != "parallel":
        return 1
    return 3


def _single_program(num_routes: int, num_local_experts: int) -> bool:
    """Whether the one-program kernel can build this plan."""
    from ._plan_kernels import SINGLE_MAX_EXPERTS, SINGLE_MAX_ROUTES

    return num_routes <= SINGLE_MAX_ROUTES and num_local_experts <= SINGLE_MAX_EXPERTS


def _width(n: int) -> int:
    """Tensor width of the one-program and recount kernels for n routes (R_PAD) or experts
    (E_BINS, the histogram bins): a power of two, at least 16."""
    from ._plan_kernels import next_pow2

    return max(next_pow2(n), 16)


def _auto_blocked(num_routes: int, num_local_experts: int) -> tuple[str, int | None]:
    """The kernel path ("single" | "recount" | "parallel") and warps (None: the path's own rule)
    "auto" takes for a blocked plan (the measurements are above SINGLE_AUTO_MAX_ROUTES)."""
    if not _single_program(num_routes, num_local_experts):
        return "parallel", None
    if num_local_experts > RECOUNT_MAX_EXPERTS:
        return ("single" if num_routes <= AUTO_SINGLE_MAX_ROUTES else "parallel"), None
    many = num_local_experts > RECOUNT_FEW_EXPERTS
    if num_routes <= (SINGLE_AUTO_MAX_ROUTES_MANY if many else SINGLE_AUTO_MAX_ROUTES):
        return "single", SINGLE_AUTO_WARPS
    if num_routes * _width(num_local_experts) <= RECOUNT_MAX_WORK:
        return "recount", None
    return "parallel", None


def _auto_chunk(num_routes: int) -> int:
    """Routes per program of the parallel path: PAR_MIN_CHUNK while that makes at most
    SCAN_MAX_CHUNKS chunks, wider beyond (to PAR_MAX_CHUNK, the widest sort measured)."""
    from ._plan_kernels import next_pow2

    return min(PAR_MAX_CHUNK, max(PAR_MIN_CHUNK, next_pow2(-(-num_routes // SCAN_MAX_CHUNKS))))


def _check_forced_path(path: str, num_routes: int, num_local_experts: int) -> None:
    """Raise ValueError naming ``path`` when it is unknown or its kernel cannot take the plan."""
    from ._plan_kernels import SINGLE_MAX_ROUTES
    if path not in ("auto", "single", "recount", "parallel"):
        raise ValueError(f"path: expected 'auto', 'single', 'recount' or 'parallel', got {path!r}")
    if path == "single" and not _single_program(num_routes, num_local_experts):
        raise ValueError(f"path: 'single' needs R <= 2048 and E_local <= 2048, got {num_routes}, {num_local_experts}")
    if path == "recount" and not (num_routes <= SINGLE_MAX_ROUTES and num_local_experts <= RECOUNT_MAX_EXPERTS):
        raise ValueError(f"path: 'recount' needs R <= {SINGLE_MAX_ROUTES} and E_local <= {RECOUNT_MAX_EXPERTS}, "
                         f"got {num_routes}, {num_local_experts}")


def _check_block_m(block_m: object) -> int:
    check_int("block_m", block_m, lo=1, hi=MAX_BLOCK_M)
    if block_m & (block_m - 1):
        raise ValueError(f"block_m: expected a power of two in [1, {MAX_BLOCK_M}], got {block_m}")
    return block_m  # type: ignore[return-value]


def _check_args(topk_ids, num_experts, block_m, expert_offset, num_local_experts, no_permute):
    """Validate the arguments of build_plan / reference_plan; return (R, E_local, P, NB)."""
    check_tensor("topk_ids", topk_ids, dtypes=ID_DTYPES, ndim=2)
    check_int("num_experts", num_experts, lo=1)  # global ids: the plan holds local ones
    _check_block_m(block_m)
    check_int("expert_offset", expert_offset, lo=0, hi=num_experts - 1)
    if num_local_experts is None:
        num_local_experts = num_experts - expert_offset
    check_int("num_local_experts", num_local_experts, lo=1, hi=min(MAX_EXPERTS, num_experts - expert_offset))
    if not isinstance(no_permute, bool):
        raise TypeError(f"no_permute: expected a bool, got {type(no_permute).__name__}")
    num_routes = topk_ids.numel()
    if no_permute:
        padded, blocks = num_routes * block_m, num_routes
    else:
        padded = max_padded_routes(num_routes, num_local_experts, block_m)
        blocks = padded // block_m
    chunks = -(-num_routes // _auto_chunk(num_routes))
    if padded > _INT32_LIMIT or chunks * num_local_experts > _INT32_LIMIT:
        raise ValueError(
            f"topk_ids: {num_routes} routes over {num_local_experts} local experts with block_m={block_m} "
            "overflow the int32 indices of the plan"
        )
    return num_routes, num_local_experts, padded, blocks


def _empty(n: int, device: torch.device) -> torch.Tensor:
    """Uninitialised int32 buffer (every kernel writes all of it, or it is scratch)."""
    return torch.empty(n, dtype=torch.int32, device=device)


def build_plan(
    topk_ids: torch.Tensor,
    num_experts: int,
    block_m: int,
    *,
    expert_offset: int = 0,
    num_local_experts: int | None = None,
    no_permute: bool = False,
) -> RoutePlan:
    """Build the route plan of ``topk_ids`` ([M, top_k] int32/int64 global expert ids).

    Runs the Triton kernels on CUDA tensors (or CPU tensors under ``TRITON_INTERPRET=1``),
    the torch reference otherwise.  No host sync: capturable in a CUDA graph.  Result is
    exactly :func:`reference_plan`'s.  See the module docstring for the semantics.
    """
    return _build(
        topk_ids, num_experts, block_m, expert_offset=expert_offset,
        num_local_experts=num_local_experts, no_permute=no_permute,
    )


def _build(
    topk_ids, num_experts, block_m, *, expert_offset=0, num_local_experts=None, no_permute=False,
    path="auto", chunk=None, e_tile=PAR_E_TILE, warps=None,
) -> RoutePlan:
    """build_plan with the blocked path forceable ("single" | "recount" | "parallel") and its
    tiles settable, for tests and benchmarks: ``chunk`` (a power of two) is the routes per
    program of "recount" (None: _recount_chunk) and "parallel" (None: _auto_chunk), ``e_tile``
    the parallel path's expert tile, ``warps`` the warps of a "single" or "recount" program
    (None: their rules)."""
    num_routes, num_local, padded, blocks = _check_args(
        topk_ids, num_experts, block_m, expert_offset, num_local_experts, no_permute
    )
    _check_forced_path(path, num_routes, num_local)
    if not runs_triton(topk_ids):
        return reference_plan(
            topk_ids, num_experts, block_m, expert_offset=expert_offset,
            num_local_experts=num_local, no_permute=no_permute,
        )
    from . import _plan_kernels as K

    device = topk_ids.device
    sorted_routes = _empty(padded, device)
    block_expert = _empty(blocks, device)
    if num_routes == 0:
        return RoutePlan(
            block_m, num_local, sorted_routes, block_expert,
            torch.zeros(1, dtype=torch.int32, device=device),
            torch.zeros(num_local, dtype=torch.int32, device=device), no_permute,
        )
    num_blocks = _empty(1, device)
    counts = _empty(num_local, device)
    # Contiguous ids are read as [R, 1]: strides and top_k 1 are specialised to constants by
    # the JIT, which folds the kernels' per-route (r // top_k, r % top_k) arithmetic away.
    ids = topk_ids.view(-1, 1) if topk_ids.is_contiguous() else topk_ids
    common = (ids, ids.stride(0), ids.stride(1), ids.shape[1], num_routes, expert_offset, num_local)

    if no_permute:
        K._plan_no_permute_kernel[(1,)](
            *common, sorted_routes, block_expert, num_blocks, counts,
            BLOCK_M=block_m, BLOCK_R=min(K.next_pow2(num_routes), 1024),
            E_TILE=max(min(K.next_pow2(num_local), 2048), 16), FILL=FILL, num_warps=4,
        )
    else:
        if path == "auto":
            path, auto_warps = _auto_blocked(num_routes, num_local)
            warps = warps or auto_warps
        if path == "recount":
            _launch_recount(K, common, num_routes, num_local, block_m, padded, blocks, sorted_routes,
                            block_expert, num_blocks, counts, chunk or _recount_chunk(), warps or RECOUNT_WARPS)
        elif path == "single":
            r_pad = _width(num_routes)
            off = _empty(num_local, device)
            K._plan_single_kernel[(1,)](
                *common, sorted_routes, padded, block_expert, blocks, num_blocks, counts, off,
                BLOCK_M=block_m, R_PAD=r_pad, LOG_R=r_pad.bit_length() - 1,
                E_BINS=_width(num_local), FILL=FILL, num_warps=warps or (8 if r_pad >= 1024 else 4),
            )
        else:  # "parallel"
            _launch_parallel(K, common, num_routes, num_local, block_m, padded, blocks, sorted_routes,
                             block_expert, num_blocks, counts, chunk or _auto_chunk(num_routes), e_tile)
    return RoutePlan(block_m, num_local, sorted_routes, block_expert, num_blocks, counts, no_permute)


def _recount_chunk() -> int:
    """Routes per recount program: RECOUNT_CHUNK, or INTERPRETER_RECOUNT_CHUNK in Triton's
    interpreter, which runs the programs one after another (a 2048-route plan took 2.0 s in
    programs of 32 there, 0.27 s in programs of 256; the tests force narrow chunks)."""
    return INTERPRETER_RECOUNT_CHUNK if interpreting() else RECOUNT_CHUNK


def _launch_recount(K, common, num_routes, num_local, block_m, padded, blocks, sorted_routes,
                    block_expert, num_blocks, counts, chunk, num_warps):
    """One launch of cdiv(R, chunk) programs, each recounting every route (R <= 2048)."""
    r_pad = _width(num_routes)
    chunk = min(chunk, r_pad)
    K._plan_recount_kernel[(-(-num_routes // chunk),)](
        *common, sorted_routes, padded, block_expert, blocks, num_blocks, counts,
        BLOCK_M=block_m, R_PAD=r_pad, CHUNK=chunk,
        E_BINS=_width(num_local), PAD_TILE=min(block_m, 64), FILL=FILL, num_warps=num_warps,
    )


def _launch_parallel(K, common, num_routes, num_local, block_m, padded, blocks,
                     sorted_routes, block_expert, num_blocks, counts, chunk, e_tile):
    """Three launches: count (per chunk), scan (per expert tile), scatter (per chunk)."""
    device = sorted_routes.device
    # No chunk wider than the routes need (R = 16 over 4096 experts sorts 16 keys, not 2048).
    chunk = min(chunk, _width(num_routes))
    num_chunks = -(-num_routes // chunk)
    if num_chunks * num_local > _INT32_LIMIT:  # a forced chunk narrower than _auto_chunk's
        raise ValueError(f"chunk: {num_chunks} chunks of {chunk} routes x {num_local} experts overflow int32")
    e_tile = max(min(e_tile, K.next_pow2(num_local)), 16)
    chunk_counts = _empty(num_chunks * num_local, device)
    chunk_off = _empty(num_chunks * num_local, device)
    totals = _empty(num_local, device)
    pstart = _empty(num_local, device)
    K._plan_count_kernel[(num_chunks,)](
        *common, sorted_routes, padded, -(-padded // num_chunks),
        block_expert, blocks, -(-blocks // num_chunks), chunk_counts, chunk_off,
        CHUNK=chunk, E_TILE=e_tile, FILL=FILL, num_warps=8 if chunk >= 1024 else 4,
    )
    scan_chunks = min(K.next_pow2(num_chunks), SCAN_MAX_CHUNKS)
    scan_experts = max(min(SCAN_TILE // scan_chunks, K.next_pow2(num_local)), 1)
    K._plan_chunk_scan_kernel[(-(-num_local // scan_experts),)](
        chunk_counts, chunk_off, totals, num_chunks, num_local,
        CHUNKS=scan_chunks, EXPERTS=scan_experts, num_warps=8,
    )
    K._plan_scatter_kernel[(num_chunks,)](
        *common, totals, chunk_off, pstart, sorted_routes, block_expert, num_blocks, counts,
        BLOCK_M=block_m, CHUNK=chunk, LOG_CHUNK=chunk.bit_length() - 1, E_TILE=e_tile, num_warps=8 if chunk >= 1024 else 4,
    )


def reference_plan(
    topk_ids: torch.Tensor,
    num_experts: int,
    block_m: int,
    *,
    expert_offset: int = 0,
    num_local_experts: int | None = None,
    no_permute: bool = False,
) -> RoutePlan:
    """The plan computed with plain torch ops, one expert at a time (obviously correct, slow).

    Same arguments, validation and result as :func:`build_plan`; syncs with the host.
    """
    num_routes, num_local, padded, blocks = _check_args(
        topk_ids, num_experts, block_m, expert_offset, num_local_experts, no_permute
    )
    device = topk_ids.device
    ids = topk_ids.reshape(-1).to(torch.int64)
    held = (ids >= expert_offset) & (ids < expert_offset + num_local)
    local = torch.where(held, ids - expert_offset, -1)
    counts = torch.stack([(local == e).sum() for e in range(num_local)]).to(torch.int32)
    sorted_routes = torch.full((padded,), -1, dtype=torch.int32, device=device)
    block_expert = torch.full((blocks,), -1, dtype=torch.int32, device=device)
    if no_permute:
        sorted_routes[::block_m] = torch.arange(num_routes, dtype=torch.int32, device=device)
        block_expert[:] = local.to(torch.int32)
        live = num_routes
    else:
        start = 0
        for e in range(num_local):
            routes = torch.nonzero(local == e).flatten()  # ascending route index: stable
            n = routes.numel()
            if n == 0:
                continue
            sorted_routes[start : start + n] = routes.to(torch.int32)
            seg = -(-n // block_m) * block_m
            block_expert[start // block_m : (start + seg) // block_m] = e
            start += seg
        live = start // block_m
    num_blocks = torch.tensor([live], dtype=torch.int32, device=device)
    return RoutePlan(block_m, num_local, sorted_routes, block_expert, num_blocks, counts, no_permute)
