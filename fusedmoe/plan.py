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

Launches per call (``plan_launches``): blocked, R <= 512 and E_local <= 2048: ONE kernel
(one graph node; the -1 fill happens inside it).  Blocked beyond: three kernels (count per
chunk of 256+ routes, scan per expert tile, sort+scatter per chunk): from 768 routes on they
are faster than one program's sort (8.0 against 9.0 us at 1024 x 512, 8.7 against 26.4 at
2048 x 512).  The one-program kernel still builds plans to 2048 routes when forced
(``path="single"``).  No-permute: one kernel.  R == 0: no kernel, two zero-fills
(num_blocks, expert_counts).  Plain CPU tensors without ``TRITON_INTERPRET=1``: the torch
reference, no kernel.

Measured on one H200 (CUDA graph of 50 calls, median per call; random ids, block_m 16;
fourth session, 2026-11-30): one program at 8 / 64 / 512 routes x 512 experts 3.0 / 3.3 /
5.3 us (1.6-2.0 us over 8-64 experts); three launches, chunks of 256, at 2048 / 16k / 64k
routes x 512 experts 8.7 / 10.1 / 15.0 us (chunks of 2048: 30.6 / 33.3 us at 16k / 64k).
What costs: a 2048-key bitonic sort in one CTA takes ~14 us and ``tl.histogram`` with 2048
bins ~10 us (512 bins ~2 us).  Tried and dropped: a sort-free rank (comparisons per chunk, a
count table in memory; 6-47 us) and a compare kernel with no sort for <= 64 routes (2.5-6.0
us against one program's 2.0-3.3).  The numbers behind AUTO_SINGLE_MAX_ROUTES are below it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ._runtime import runs_triton
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
# "auto" takes the one-program kernel up to this many routes, the three-launch path (chunks
# of at least PAR_MIN_CHUNK routes, at most SCAN_MAX_CHUNKS chunks) beyond.  Measured on the
# H200 (2026-11-30, fourth session; python -m fusedmoe.bench.plan, E_local 64 / 512):
#   routes          512        768-1024     1536       2048       16384      65536
#   one program     4.0 / 5.3  5.3 / 9.0    22.4/26.2  22.7/26.4  -          -
#   parallel, 256   5.4 / 7.7  5.3 / 8.0    5.9 / 8.3  6.0 / 8.7  8.3 / 10.1 9.7 / 15.0
#   parallel, 2048  -          -            -          -          26.6/30.6  27.9/33.3
# Chunks of 512 and 1024 routes took 6.7-7.1 and 6.7-14.8 us at 512-2048 routes.  A compare
# kernel with no sort for <= 64 routes took 2.5-6.0 us against the one program's 2.0-3.3 and
# was removed.
AUTO_SINGLE_MAX_ROUTES = 512
PAR_MIN_CHUNK = 256
# The recount kernel (one launch, programs of RECOUNT_CHUNK routes that each count all R <= 2048
# routes): not yet measured on the GPU, so "auto" does not take it.
RECOUNT_CHUNK = 64
RECOUNT_WARPS = 8
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
    if no_permute or _auto_single(num_routes, num_local_experts):
        return 1
    return 3


def _single_program(num_routes: int, num_local_experts: int) -> bool:
    """Whether the one-program kernel can build this plan."""
    from ._plan_kernels import SINGLE_MAX_EXPERTS, SINGLE_MAX_ROUTES

    return num_routes <= SINGLE_MAX_ROUTES and num_local_experts <= SINGLE_MAX_EXPERTS


def _auto_single(num_routes: int, num_local_experts: int) -> bool:
    """Whether "auto" builds this plan in one program (else three launches)."""
    return num_routes <= AUTO_SINGLE_MAX_ROUTES and _single_program(num_routes, num_local_experts)


def _auto_chunk(num_routes: int) -> int:
    """Routes per program of the parallel path: PAR_MIN_CHUNK while that makes at most
    SCAN_MAX_CHUNKS chunks, wider beyond (to PAR_MAX_CHUNK, the widest sort measured)."""
    from ._plan_kernels import next_pow2

    return min(PAR_MAX_CHUNK, max(PAR_MIN_CHUNK, next_pow2(-(-num_routes // SCAN_MAX_CHUNKS))))


def _check_forced_path(path: str, num_routes: int, num_local_experts: int) -> None:
    """Raise ValueError naming ``path`` when it is unknown or its kernel cannot take the plan."""
    if path not in ("auto", "single", "recount", "parallel"):
        raise ValueError(f"path: expected 'auto', 'single', 'recount' or 'parallel', got {path!r}")
    if path in ("single", "recount") and not _single_program(num_routes, num_local_experts):
        raise ValueError(f"path: {path!r} needs R <= 2048 and E_local <= 2048, got {num_routes}, {num_local_experts}")


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
    path="auto", chunk=None, e_tile=PAR_E_TILE, recount_warps=None,
) -> RoutePlan:
    """build_plan with the blocked path forceable ("single" | "recount" | "parallel") and its
    tiles settable, for tests and benchmarks: ``chunk`` (a power of two) is the routes per
    program of "recount" (None: RECOUNT_CHUNK) and "parallel" (None: _auto_chunk), ``e_tile``
    the parallel path's expert tile, ``recount_warps`` the warps of a "recount" program
    (None: RECOUNT_WARPS)."""
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
    common = (topk_ids, topk_ids.stride(0), topk_ids.stride(1), topk_ids.shape[1], num_routes,
              expert_offset, num_local)

    if no_permute:
        K._plan_no_permute_kernel[(1,)](
            *common, sorted_routes, block_expert, num_blocks, counts,
            BLOCK_M=block_m, BLOCK_R=min(K.next_pow2(num_routes), 1024),
            E_TILE=max(min(K.next_pow2(num_local), 2048), 16), FILL=FILL, num_warps=4,
        )
    else:
        if path == "auto":
            path = "single" if _auto_single(num_routes, num_local) else "parallel"
        if path == "recount":
            _launch_recount(K, common, num_routes, num_local, block_m, padded, blocks, sorted_routes,
                            block_expert, num_blocks, counts, chunk or RECOUNT_CHUNK, recount_warps or RECOUNT_WARPS)
        elif path == "single":
            r_pad = max(K.next_pow2(num_routes), 16)
            off = _empty(num_local, device)
            K._plan_single_kernel[(1,)](
                *common, sorted_routes, padded, block_expert, blocks, num_blocks, counts, off,
                BLOCK_M=block_m, R_PAD=r_pad, LOG_R=r_pad.bit_length() - 1,
                E_BINS=max(K.next_pow2(num_local), 16), FILL=FILL, num_warps=8 if r_pad >= 1024 else 4,
            )
        else:  # "parallel"
            _launch_parallel(K, common, num_routes, num_local, block_m, padded, blocks, sorted_routes,
                             block_expert, num_blocks, counts, chunk or _auto_chunk(num_routes), e_tile)
    return RoutePlan(block_m, num_local, sorted_routes, block_expert, num_blocks, counts, no_permute)


def _launch_recount(K, common, num_routes, num_local, block_m, padded, blocks, sorted_routes,
                    block_expert, num_blocks, counts, chunk, num_warps):
    """One launch of cdiv(R, chunk) programs, each recounting every route (R <= 2048)."""
    chunk = min(chunk, max(K.next_pow2(num_routes), 16))
    K._plan_recount_kernel[(-(-num_routes // chunk),)](
        *common, sorted_routes, padded, block_expert, blocks, num_blocks, counts,
        BLOCK_M=block_m, R_PAD=max(K.next_pow2(num_routes), 16), CHUNK=chunk,
        E_BINS=max(K.next_pow2(num_local), 16), PAD_TILE=min(block_m, 64), FILL=FILL, num_warps=num_warps,
    )


def _launch_parallel(K, common, num_routes, num_local, block_m, padded, blocks,
                     sorted_routes, block_expert, num_blocks, counts, chunk, e_tile):
    """Three launches: count (per chunk), scan (per expert tile), scatter (per chunk)."""
    device = sorted_routes.device
    # No chunk wider than the routes need (R = 16 over 4096 experts sorts 16 keys, not 2048).
    chunk = min(chunk, max(K.next_pow2(num_routes), 16))
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
