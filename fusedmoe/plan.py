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
  to 64 routes and 256 experts;
* the recount launch (``_plan_recount_kernel``, cdiv(R, 32) programs that each count all R
  routes, rank their own 32 by comparison and write disjoint slots, no program waiting for
  another; R, E_local <= 2048): the rest to 2048 routes and experts, counting by tl.histogram
  to 128 experts (and 256 from 1024 routes) and by atomics in scratch memory of their own
  beyond; 8 warps where the count is wide (``_recount_warps``), else 4;
* the tiled launches (``_plan_tile_count_kernel`` then ``_plan_tile_scatter_kernel`` over tiles of
  E_TILE experts; the second, launched with PDL, ranks its experts' routes while the first
  counts; R, E_local <= 2048): more than 1024 routes over 129..256 experts;
* three launches (count per chunk of 256+ routes, scan per expert tile, sort+scatter per
  chunk) for more than 2048 routes or experts.

Each blocked kernel can be forced (``_build(path=...)``).  No-permute: one kernel.  R == 0: no
kernel, two zero-fills (num_blocks, expert_counts).  Plain CPU tensors without
``TRITON_INTERPRET=1``: the torch reference, no kernel.  Contiguous ids are passed as [R, 1]
(strides and top_k 1, which the JIT specialises to constants), so no kernel divides route
indices by top_k.

Measured on one H200 (CUDA graph of 50 calls, median per call; uniform ids, block_m 16;
twenty-fifth session, 2026-12-03; the kernels' table is above ``SINGLE_AUTO_MAX_ROUTES``): auto
takes 1.4-3.0 us up to 2048 routes x 8 experts, 1.7-3.7 x 64, 1.8-3.4 x 128, 1.9-4.4 x 256,
1.9-5.6 x 512, 2.1-5.2 x 1024 and 2.5-5.2 x 2048 experts.  The issue's 3 us holds to 512 routes
x 1024 experts, 1024 x 128 and 2048 x 8, not beyond (5.6 us at 2048 x 512, 3.5-3.7 at 1024 x
256 and x 512).  On an H100 after the recount's warps rule and early chunk loads (thirty-seventh
session) it holds at 28 of the issue's 30 points (1.3-2.99 us; 2.95-2.99 at 2048 x 128, 1024 x 256
and x 512) and misses at 2048 x 256 (3.89, tiled) and 2048 x 512 (4.93); a launch of the recount's
grid that does nothing takes 0.9-1.2 us there, and loading the ids 0.35-0.45 more.  (Thirty-eighth
session: 27-28 points in five runs of one call, those three at 2.96-3.00; 25 in a first run.)  Tried and
dropped before: a sort-free rank through a count table in memory (6-47 us), a compare kernel with no sort for
<= 64 routes (2.5-6.0 us), and a "ticket" launch (thirty-third session, on an H100 against auto
there: each program of 128 routes ranks its chunk and writes its histogram, the last to take a
ticket from a zeroed counter lays out the plan) at 3.4-11.6 us against auto's 1.4-5.2 (3.4 against
1.4 at 8 routes, one program: what it adds there is the counter's fill, one more graph node, and
the atomic; 7.5-11.6 at 2048 routes, where one program builds the whole table and scatters
every route) (``benchmarks/results/H200/2026-12-06-s33/``), recount programs counting by one-hot
products on the tensor cores (thirty-seventh session: 2.9-11 us, 1.5-3.5x auto at every point),
(thirty-eighth session, ``2026-12-06-s38/``, H100) recount programs of 64-256 routes (0.6-6 us slower
everywhere), their atomic counters in several copies or strided over more cache lines (slower but at
2048 x 512 with 4 copies, 4.94 -> 4.55 us), a "table" plan of two launches (each chunk's counts
into a table, then the recount kernel summing it instead of counting: 3.0-16 us), and (thirty-ninth
session, ``2026-12-06-s39/``, H100) recount programs of 16 or 32 warps (0.1-1.0 and 0.7-5.9 us slower
by histogram, 0.1-0.5 and 0.7-1.1 by atomics) and a second histogram over the half of the routes on
the far side of the chunk, loaded again (0.12-0.32 us slower to 256 experts), and (fortieth session,
``2026-12-06-s40/``, H100) that half split from the one load in registers (0.07-0.28 us slower) and both
counts in one histogram of 2 * E_BINS bins (no change at 64 experts, 0.08-0.75 us slower at 128-256),
and (forty-eighth session, ``2026-12-07-s48/``, H100) a one-launch "look-back" over expert tiles (each
tile's block count passed to the later tiles in hashed words of scratch: 1.29-3.49x auto's time), a
two-launch "chunked" plan (counts and per-route chunk bases over expert tiles, then chunks of 32
routes ranking and scattering: 4.2 against 4.7-4.9 us at 2048 x 512, 1.0-1.8x auto elsewhere; the
two-launch forms take 3.2-3.3 us at 2048 routes however few the experts) and the tiled rank by a
product with a triangular matrix on the tensor cores (up to 8.8 us at 2048 x 256).  The tiled
scatter ranks one-expert tiles by bit masks since then (``_rank_along_routes``: 2048 x 256 3.88 ->
3.67 us on that H100, in turn with the committed kernel).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ._launch import launch
from ._pdl import pdl_launch
from ._runtime import interpreting, next_pow2, runs_triton
from ._validate import ID_DTYPES, INT32_MAX, INT64_MAX, check_int, check_tensor

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

# Parallel path tiles: expert tiles of the histogram / pstart loops; the scan kernel's
# [chunks, experts] tile.
PAR_E_TILE = 2048
SCAN_TILE = 4096
SCAN_MAX_CHUNKS = 256
FILL = 1024
# "auto" for blocked plans (``_auto_blocked``), from the twenty-fifth session's graph-timed runs on the
# H200 (python -m fusedmoe.bench.plan, uniform ids, block_m 16; us; recount in programs of 32 routes, 4
# warps, counting by tl.histogram ("hist") or by atomics in scratch memory ("atomic"); the tiled path
# at its default expert tile; benchmarks/results/H200/2026-12-03-s25/plan_kernels/):
#   E_local  routes:  8      64     256    512    1024   2048
#   8        single   1.43   1.67   2.25
#            hist     1.47   1.63   1.72   2.04   2.26   2.97
#            atomic   1.61   1.87   2.04   2.37   2.76   4.74
#   64       single   1.71   1.84   2.54
#            hist     1.69   2.07   2.17   2.32   2.53   3.65
#            atomic   1.92   2.15   2.46   2.69   3.36   6.15
#            tiled    2.22   2.69   3.02   3.38   3.42   3.84
#   128      single   1.79   1.90   2.64
#            hist     1.78   2.10   2.20   2.38   2.69   3.35
#            atomic   1.91   2.15   2.43   2.65   3.09   4.68
#   256      single   1.86   2.19   3.22
#            hist     2.26   2.48   2.80   3.08   3.85   5.87
#            atomic   1.95   2.23   2.51   2.69   3.52   5.47
#            tiled    2.47   2.85   3.29   3.66   3.79   4.37
#   512      single   2.58   2.64   3.79
#            hist     3.49   3.83   4.11   4.65   6.30   9.16
#            atomic   1.89   2.35   2.59   2.80   3.70   5.60
#            tiled    2.53   2.93   3.51   3.67   4.42   5.58
#   1024     atomic   2.08   2.41   2.76   3.01   3.72   5.16
#            tiled    2.85   3.30   3.63   4.18   5.69   8.02
#   2048     atomic   2.49   2.75   2.96   3.15   3.84   5.24
#            tiled    3.20   3.44   4.38   5.48   8.22  14.89
# (single at 1024 / 2048 experts: 4.4-8.7 us; programs of 16 or 64 routes were no faster over the grid:
# chunks of 64 cost 0.9 us more at few routes, 16 lost at 2048 routes; warps: below.)
# tl.histogram's code grows with routes x bins (its recount program at 2048 x 512 is 4560 SASS
# instructions, 1080 counting by atomics), so it wins to 128 bins; every atomic program counts all R
# routes, 64 x 2048 atomic adds at 2048 routes, which the tiled launches avoid at 256 experts.  Hence:
# one program of 2 warps up to SINGLE_AUTO_MAX_ROUTES routes and SINGLE_AUTO_MAX_EXPERTS experts; then
# the recount launch, counting by tl.histogram to RECOUNT_HISTOGRAM_MAX_BINS bins and by atomics
# beyond, but for more than TILED_AUTO_MIN_ROUTES routes over TILED_AUTO_BINS bins, where the tiled
# launches (tiles of E_bins / TILED_PROGRAMS experts) run; three launches for more than 2048 routes or
# experts.  Tiled programs of 2 and 8 warps ran no faster than 4 (twenty-first session).
# TILED_MAX_WORK keeps the scatter program from spilling (E_TILE 8 x 2048 routes did, 255 registers).
# Recount warps and the 256-bin histogram, from the thirty-seventh session (H100, the same bench over 128..2048
# routes x 64..512 experts; benchmarks/results/H200/2026-12-06-s37/call4/; us, hist / atomic at 4 -> 8 warps):
#   routes x E_local   2048 x 64    2048 x 128   1024 x 256            512 x 256   256 x 512   2048 x 512
#   hist               3.25 -> 2.80 3.11 -> 2.97 3.64 -> 2.94          2.91 -> 2.61
#   atomic                                       3.06 -> 3.09          2.59 -> 2.51 2.37 -> 2.24 4.88 -> 4.83
# and no change beyond 0.07 us elsewhere (hist at 1024 x 64 / 128: 2.23 / 2.44 -> 2.22 / 2.43); atomics at
# 1024 experts 0.03-0.25 us faster, at 2048 from 0.13 slower (8 routes) to 0.23 faster (2048 routes; call 6).
# A probe of the recount program cut stage by stage (plan_stage_probe.py there) put 1.1 us of 2048 x 64's 3.2
# in its two histograms and 3.2 us of 2048 x 512's 5.6 in its atomics; eight warps shorten the histogram's
# dependent chains (two warps per scheduler).  Counting by one-hot products on the tensor cores ([16, 128] x [128, 32]
# per block of routes) ran 2.9-11 us, slower everywhere.  Hence RECOUNT_WIDE_WARPS for atomics and for
# histograms of at least RECOUNT_WIDE_WORK routes x bins, and the histogram at 256 bins from 1024 routes.
# 16 and 32 warps ran slower at every point of 512..2048 routes x 64..512 experts, by either count
# (thirty-ninth session, H100, benchmarks/results/H200/2026-12-06-s39/): 8 is the widest.
SINGLE_AUTO_MAX_ROUTES = 64
SINGLE_AUTO_MAX_EXPERTS = 256
SINGLE_AUTO_WARPS = 2
RECOUNT_MAX_EXPERTS = 2048
RECOUNT_HISTOGRAM_MAX_BINS = 128
RECOUNT_HISTOGRAM_WIDE_BINS = 256
RECOUNT_HISTOGRAM_WIDE_MIN_ROUTES = 1024
RECOUNT_CHUNK = 32
RECOUNT_WARPS = 4
RECOUNT_WIDE_WARPS = 8
RECOUNT_WIDE_WORK = 1 << 17
TILED_AUTO_MIN_ROUTES = 1025
TILED_AUTO_BINS = 256
INTERPRETER_RECOUNT_CHUNK = 256
TILED_MAX_ROUTES = 2048
TILED_MAX_EXPERTS = 2048
TILED_PROGRAMS = 256
TILED_MAX_WORK = 8192
TILED_WARPS = 4
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
    """Kernel launches of ``build_plan`` on a Triton device (0, 1, 2 or 3)."""
    if num_routes == 0:
        return 0
    if no_permute:
        return 1
    return {"parallel": 3, "tiled": 2}.get(_auto_blocked(num_routes, num_local_experts)[0], 1)


def _single_program(num_routes: int, num_local_experts: int) -> bool:
    """Whether the one-program kernel can build this plan."""
    from ._plan_kernels import SINGLE_MAX_EXPERTS, SINGLE_MAX_ROUTES

    return num_routes <= SINGLE_MAX_ROUTES and num_local_experts <= SINGLE_MAX_EXPERTS


def _tiled(num_routes: int, num_local_experts: int) -> bool:
    """Whether the tiled path's kernels can build this plan."""
    return num_routes <= TILED_MAX_ROUTES and num_local_experts <= TILED_MAX_EXPERTS


def _tile_experts(num_routes: int, num_local_experts: int) -> int:
    """Experts per program of the tiled path (a power of two): E_bins / TILED_PROGRAMS, at least
    1, at most TILED_MAX_WORK // R_PAD (the [E_TILE, R_PAD] hit tests a program holds)."""
    return max(1, min(_width(num_local_experts) // TILED_PROGRAMS, TILED_MAX_WORK // _width(num_routes)))


def _width(n: int) -> int:
    """Tensor width of the one-program and recount kernels for n routes (R_PAD) or experts
    (E_BINS, the histogram bins): a power of two, at least 16."""
    return max(next_pow2(n), 16)


def _auto_blocked(num_routes: int, num_local_experts: int) -> tuple[str, int | None]:
    """The kernel path ("single" | "recount" | "tiled" | "parallel") and warps (None: the path's
    own rule) "auto" takes for a blocked plan (the measurements are above SINGLE_AUTO_MAX_ROUTES)."""
    if not _tiled(num_routes, num_local_experts):
        return "parallel", None
    if num_routes <= SINGLE_AUTO_MAX_ROUTES and num_local_experts <= SINGLE_AUTO_MAX_EXPERTS:
        return "single", SINGLE_AUTO_WARPS
    if num_routes >= TILED_AUTO_MIN_ROUTES and _width(num_local_experts) == TILED_AUTO_BINS:
        return "tiled", None
    return "recount", None


def _recount_in_memory(num_routes: int, num_local_experts: int) -> bool:
    """Whether the recount kernel counts by atomics in scratch memory rather than by
    tl.histogram: above RECOUNT_HISTOGRAM_MAX_BINS histogram bins, but for
    RECOUNT_HISTOGRAM_WIDE_BINS bins over at least RECOUNT_HISTOGRAM_WIDE_MIN_ROUTES routes."""
    bins = _width(num_local_experts)
    return bins > RECOUNT_HISTOGRAM_MAX_BINS and not (
        bins == RECOUNT_HISTOGRAM_WIDE_BINS and _width(num_routes) >= RECOUNT_HISTOGRAM_WIDE_MIN_ROUTES)


def _recount_warps(num_routes: int, num_local_experts: int, in_memory: bool) -> int:
    """Warps of a recount program: RECOUNT_WIDE_WARPS when it counts by atomics, or by
    tl.histogram over at least RECOUNT_WIDE_WORK routes x bins; else RECOUNT_WARPS."""
    wide = in_memory or _width(num_routes) * _width(num_local_experts) >= RECOUNT_WIDE_WORK
    return RECOUNT_WIDE_WARPS if wide else RECOUNT_WARPS


def _auto_chunk(num_routes: int) -> int:
    """Routes per program of the parallel path: PAR_MIN_CHUNK while that makes at most
    SCAN_MAX_CHUNKS chunks, wider beyond (to PAR_MAX_CHUNK, the widest sort measured)."""
    return min(PAR_MAX_CHUNK, max(PAR_MIN_CHUNK, next_pow2(-(-num_routes // SCAN_MAX_CHUNKS))))


def _check_forced_path(path: str, num_routes: int, num_local_experts: int) -> None:
    """Raise ValueError naming ``path`` when it is unknown or its kernel cannot take the plan."""
    from ._plan_kernels import SINGLE_MAX_ROUTES
    if path not in ("auto", "single", "recount", "tiled", "parallel"):
        raise ValueError(f"path: expected 'auto', 'single', 'recount', 'tiled' or 'parallel', got {path!r}")
    if path == "single" and not _single_program(num_routes, num_local_experts):
        raise ValueError(f"path: 'single' needs R <= 2048 and E_local <= 2048, got {num_routes}, {num_local_experts}")
    if path == "recount" and not (num_routes <= SINGLE_MAX_ROUTES and num_local_experts <= RECOUNT_MAX_EXPERTS):
        raise ValueError(f"path: 'recount' needs R <= {SINGLE_MAX_ROUTES} and E_local <= {RECOUNT_MAX_EXPERTS}, "
                         f"got {num_routes}, {num_local_experts}")
    if path == "tiled" and not _tiled(num_routes, num_local_experts):
        raise ValueError(f"path: 'tiled' needs R <= {TILED_MAX_ROUTES} and E_local <= {TILED_MAX_EXPERTS}, "
                         f"got {num_routes}, {num_local_experts}")


def is_block_m(block_m: int) -> bool:
    """Whether the plan takes ``block_m``: a power of two in [1, MAX_BLOCK_M]."""
    return 1 <= block_m <= MAX_BLOCK_M and block_m & (block_m - 1) == 0


def _check_block_m(block_m: object) -> int:
    check_int("block_m", block_m, lo=1, hi=MAX_BLOCK_M)
    if not is_block_m(block_m):
        raise ValueError(f"block_m: expected a power of two in [1, {MAX_BLOCK_M}], got {block_m}")
    return block_m  # type: ignore[return-value]


def _check_args(topk_ids, num_experts, block_m, expert_offset, num_local_experts, no_permute):
    """Validate the arguments of build_plan / reference_plan; return (R, E_local, P, NB)."""
    check_tensor("topk_ids", topk_ids, dtypes=ID_DTYPES, ndim=2)
    check_int("num_experts", num_experts, lo=1, hi=INT64_MAX)  # global ids (the window lies inside): the plan holds local ones
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
    if padded > INT32_MAX or chunks * num_local_experts > INT32_MAX:
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
    path="auto", chunk=None, e_tile=None, warps=None, count_in_memory=None,
) -> RoutePlan:
    """build_plan with the blocked path forceable ("single" | "recount" | "tiled" | "parallel") and its
    tiles settable, for tests and benchmarks: ``chunk`` (a power of two) is the routes per
    program of "recount" (None: _recount_chunk) and "parallel" (None: _auto_chunk), ``e_tile``
    the expert tile of "parallel" (None: PAR_E_TILE) and of "tiled" (None: _tile_experts), ``warps`` the
    warps of a "single", "recount" or "tiled" program (None: their rules), ``count_in_memory`` whether
    "recount" counts by atomics in scratch memory rather than tl.histogram (None: _recount_in_memory)."""
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
    pdl = pdl_launch(device)

    if no_permute:
        launch(K._plan_no_permute_kernel, (1,),
            *common, sorted_routes, block_expert, num_blocks, counts,
            BLOCK_M=block_m, BLOCK_R=min(next_pow2(num_routes), 1024),
            E_TILE=max(min(next_pow2(num_local), 2048), 16), FILL=FILL, num_warps=4, **pdl,
        )
    else:
        if path == "auto":
            path, auto_warps = _auto_blocked(num_routes, num_local)
            warps = warps or auto_warps
        if path == "tiled":
            if e_tile:  # forced: a power of two, no wider than the experts, at most TILED_MAX_WORK hit tests
                e_tile = max(1, min(next_pow2(e_tile), _width(num_local), TILED_MAX_WORK // _width(num_routes)))
            _launch_tiled(K, common, num_routes, block_m, padded, blocks, sorted_routes, block_expert,
                          num_blocks, counts, e_tile or _tile_experts(num_routes, num_local), warps or TILED_WARPS, pdl)
        elif path == "recount":
            in_memory = _recount_in_memory(num_routes, num_local) if count_in_memory is None else count_in_memory
            _launch_recount(K, common, num_routes, num_local, block_m, padded, blocks, sorted_routes,
                            block_expert, num_blocks, counts, chunk or _recount_chunk(),
                            warps or _recount_warps(num_routes, num_local, in_memory), in_memory, pdl)
        elif path == "single":
            r_pad = _width(num_routes)
            off = _empty(num_local, device)
            launch(K._plan_single_kernel, (1,),
                *common, sorted_routes, padded, block_expert, blocks, num_blocks, counts, off,
                BLOCK_M=block_m, R_PAD=r_pad, LOG_R=r_pad.bit_length() - 1,
                E_BINS=_width(num_local), FILL=FILL, num_warps=warps or (8 if r_pad >= 1024 else 4), **pdl,
            )
        else:  # "parallel"
            _launch_parallel(K, common, num_routes, num_local, block_m, padded, blocks, sorted_routes,
                             block_expert, num_blocks, counts, chunk or _auto_chunk(num_routes), e_tile or PAR_E_TILE,
                             pdl)
    return RoutePlan(block_m, num_local, sorted_routes, block_expert, num_blocks, counts, no_permute)


def _recount_chunk() -> int:
    """Routes per recount program: RECOUNT_CHUNK, or INTERPRETER_RECOUNT_CHUNK in Triton's
    interpreter, which runs the programs one after another (a 2048-route plan took 2.0 s in
    programs of 32 there, 0.27 s in programs of 256; the tests force narrow chunks)."""
    return INTERPRETER_RECOUNT_CHUNK if interpreting() else RECOUNT_CHUNK


def _launch_recount(K, common, num_routes, num_local, block_m, padded, blocks, sorted_routes,
                    block_expert, num_blocks, counts, chunk, num_warps, in_memory, pdl):
    """One launch of cdiv(R, chunk) programs, each recounting every route (R <= 2048); with
    ``in_memory`` through scratch rows of their own ([programs, 2, E_bins] int32); ``pdl``: the
    launch arguments of ``_pdl.pdl_launch``, for every launch here and below."""
    r_pad = _width(num_routes)
    chunk = min(chunk, r_pad)
    grid = -(-num_routes // chunk)
    e_bins = _width(num_local)
    # the histogram count reads no scratch: counts stands in for the pointer, no allocation
    scratch = _empty(grid * 2 * e_bins, sorted_routes.device) if in_memory else counts
    launch(K._plan_recount_kernel, (grid,),
        *common, sorted_routes, padded, block_expert, blocks, num_blocks, counts, scratch,
        BLOCK_M=block_m, R_PAD=r_pad, CHUNK=chunk,
        E_BINS=e_bins, PAD_TILE=min(block_m, 64), FILL=FILL, COUNT_IN_MEMORY=in_memory, num_warps=num_warps,
        **pdl)


def _launch_tiled(K, common, num_routes, block_m, padded, blocks, sorted_routes, block_expert,
                  num_blocks, counts, e_tile, num_warps, pdl):
    """Two launches over tiles of ``e_tile`` experts (a power of two): counts, then (PDL: it
    loads the ids and ranks its routes while the counts run) the tiles' segments."""
    num_local = counts.numel()
    grid = (-(-num_local // e_tile),)
    r_pad = _width(num_routes)
    launch(K._plan_tile_count_kernel, grid, *common, counts, E_TILE=e_tile, R_PAD=r_pad, num_warps=num_warps, **pdl)
    launch(K._plan_tile_scatter_kernel, grid,
        *common, counts, sorted_routes, padded, block_expert, blocks, num_blocks,
        BLOCK_M=block_m, E_TILE=e_tile, R_PAD=r_pad, E_PAD=_width(num_local), PAD_TILE=min(block_m, 64),
        B_TILE=64, FILL=FILL, num_warps=num_warps, **pdl)


def _launch_parallel(K, common, num_routes, num_local, block_m, padded, blocks,
                     sorted_routes, block_expert, num_blocks, counts, chunk, e_tile, pdl):
    """Three launches: count (per chunk), scan (per expert tile), scatter (per chunk)."""
    device = sorted_routes.device
    # No chunk wider than the routes need (R = 16 over 4096 experts sorts 16 keys, not 2048).
    chunk = min(chunk, _width(num_routes))
    num_chunks = -(-num_routes // chunk)
    if num_chunks * num_local > INT32_MAX:  # a forced chunk narrower than _auto_chunk's
        raise ValueError(f"chunk: {num_chunks} chunks of {chunk} routes x {num_local} experts overflow int32")
    e_tile = max(min(e_tile, next_pow2(num_local)), 16)
    chunk_counts = _empty(num_chunks * num_local, device)
    chunk_off = _empty(num_chunks * num_local, device)
    totals = _empty(num_local, device)
    pstart = _empty(num_local, device)
    launch(K._plan_count_kernel, (num_chunks,),
        *common, sorted_routes, padded, -(-padded // num_chunks),
        block_expert, blocks, -(-blocks // num_chunks), chunk_counts, chunk_off,
        CHUNK=chunk, E_TILE=e_tile, FILL=FILL, num_warps=8 if chunk >= 1024 else 4, **pdl,
    )
    scan_chunks = min(next_pow2(num_chunks), SCAN_MAX_CHUNKS)
    scan_experts = max(min(SCAN_TILE // scan_chunks, next_pow2(num_local)), 1)
    launch(K._plan_chunk_scan_kernel, (-(-num_local // scan_experts),),
        chunk_counts, chunk_off, totals, num_chunks, num_local,
        CHUNKS=scan_chunks, EXPERTS=scan_experts, num_warps=8, **pdl,
    )
    launch(K._plan_scatter_kernel, (num_chunks,),
        *common, totals, chunk_off, pstart, sorted_routes, block_expert, num_blocks, counts,
        BLOCK_M=block_m, CHUNK=chunk, LOG_CHUNK=chunk.bit_length() - 1, E_TILE=e_tile, num_warps=8 if chunk >= 1024 else 4,
        **pdl)


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
