"""Triton kernels of route preparation (stage 2).  The public op is ``fusedmoe.plan``.

Every kernel takes the ids through two strides, so a non-contiguous ``topk_ids`` is read
in place: route ``r`` lives at ``(r // top_k) * stride_t + (r % top_k) * stride_j``.
A route is held here iff ``expert_lo <= id`` and ``id - expert_lo < num_local``; ids are
compared as loaded (int32 or int64) before the subtraction, so an out-of-range id can never
wrap into the window, and the window's end is never summed, so it may pass 2^31 - 1.  Every
load, store and histogram is masked: no id value can cause an out-of-bounds access.

Launches (all grids fixed by the shapes, no host sync):

* ``_plan_single_kernel``       grid (1,)                          blocked, R <= 2048, E_local <= 2048
* ``_plan_recount_kernel``      grid (cdiv(R, CHUNK),)             blocked, R <= 2048, E_local <= 2048
* ``_plan_tile_count_kernel``   grid (cdiv(E_local, E_TILE),)      blocked, tiled path, launch 1
* ``_plan_tile_scatter_kernel`` grid (cdiv(E_local, E_TILE),)      blocked, tiled path, launch 2
* ``_plan_count_kernel``        grid (num_chunks,)                 blocked, parallel path, step 1
* ``_plan_chunk_scan_kernel``   grid (cdiv(E_local, EXPERTS),)     blocked, parallel path, step 2
* ``_plan_scatter_kernel``      grid (num_chunks,)                 blocked, parallel path, step 3
* ``_plan_no_permute_kernel``   grid (1,)                          no-permute plans

Each takes a PDL constexpr (``_pdl.pdl_enter``): launched with programmatic dependent launch it
waits for the previous grid before it reads the ids, then lets the next grid (the GEMM that
reads the plan) launch; the tiled scatter launch reads the ids before its wait.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ._pdl import pdl_enter

SINGLE_MAX_ROUTES = 2048
SINGLE_MAX_EXPERTS = 2048
# Sort keys of the one-program path are ``(bin << 12) + r``: r < 2048 fits in 12 bits and
# bin <= 2048, so keys stay below 2**24.  (A global read by a kernel must be a constexpr;
# the interpreter does not check this, the compiler does.)
_SINGLE_KEY_BITS = tl.constexpr(12)
_SINGLE_KEY_MASK = tl.constexpr(4095)


@triton.jit
def _load_ids(ids_ptr, r, live, top_k, stride_t, stride_j, expert_lo, num_local):
    """Load routes ``r`` (masked by ``live``); return (held, local id as int32, 0 where not held)."""
    ids = tl.load(ids_ptr + (r // top_k) * stride_t + (r % top_k) * stride_j, mask=live, other=-1)
    # ids - expert_lo, not expert_lo + num_local: the window's end may pass 2^31 - 1 (an int32
    # sum would wrap), and where ids >= expert_lo the difference cannot.
    held = live & (ids >= expert_lo) & (ids - expert_lo < num_local)
    local = tl.where(held, ids - expert_lo, 0).to(tl.int32)
    return held, local


@triton.jit
def _fill_minus_one(ptr, lo, hi, FILL: tl.constexpr):
    """ptr[lo:hi] = -1."""
    offs = tl.arange(0, FILL)
    for s in range(lo, hi, FILL):
        tl.store(ptr + s + offs, -1, mask=s + offs < hi)


@triton.jit
def _bit_indicator(LOG_N: tl.constexpr, BIT: tl.constexpr):
    """0/1 = bit BIT of the index, laid along its axis of the [2] * LOG_N hypercube."""
    return tl.reshape(tl.arange(0, 2), [1] * (LOG_N - 1 - BIT) + [2] + [1] * BIT)


@triton.jit
def _sort_ascending(x, LOG_N: tl.constexpr):
    """Bitonic sort of the 1-D int tensor x (2**LOG_N entries, |x| < 2**30), ascending.

    Same network as ``tl.sort``, but the compare-and-swap partner is found with ``tl.sum``
    over a hypercube axis of size 2 (partner = pair sum - self) instead of ``tl.xor_sum``:
    the interpreter runs ``tl.sum`` in NumPy but any other reduction element by element,
    which made a 2048-key ``tl.sort`` take ~12 s on CPU.
    """
    h = tl.reshape(x, [2] * LOG_N)
    for s in tl.static_range(1, LOG_N + 1):
        # merge runs of 2**s keys: ascending where bit s of the index is 0, else descending
        # (the last merge, s == LOG_N, is all ascending)
        for j in tl.static_range(s - 1, -1, -1):
            partner = tl.sum(h, axis=LOG_N - 1 - j, keep_dims=True) - h
            upper = _bit_indicator(LOG_N, j)
            if s < LOG_N:
                take_min = upper == _bit_indicator(LOG_N, s)
            else:
                take_min = upper == 0
            h = tl.where(take_min, tl.minimum(h, partner), tl.maximum(h, partner))
    return tl.reshape(h, x.shape)


@triton.jit
def _plan_single_kernel(
    ids_ptr, stride_t, stride_j, top_k, num_routes, expert_lo, num_local,
    sorted_ptr, num_padded_cap, block_expert_ptr, num_blocks_cap,
    num_blocks_ptr, counts_ptr, off_ptr,
    BLOCK_M: tl.constexpr, R_PAD: tl.constexpr, LOG_R: tl.constexpr, E_BINS: tl.constexpr, FILL: tl.constexpr,
    PDL: tl.constexpr = False,
):
    """Whole blocked plan in one program (R <= 2048, E_local <= 2048).

    counts = histogram(local ids); padded = roundup(counts, BLOCK_M);
    off[e] = excl_cumsum(padded)[e] - excl_cumsum(counts)[e]   (scratch, [E_local]);
    stable sort of key = bin * 4096 + r (bin = E_local for routes not held);
    sorted position i of expert e goes to off[e] + i (off gathered back through memory).
    """
    pdl_enter(PDL)
    _fill_minus_one(sorted_ptr, 0, num_padded_cap, FILL)
    _fill_minus_one(block_expert_ptr, 0, num_blocks_cap, FILL)

    r = tl.arange(0, R_PAD)
    held, local = _load_ids(ids_ptr, r, r < num_routes, top_k, stride_t, stride_j, expert_lo, num_local)
    counts = tl.histogram(local, E_BINS, mask=held)
    padded = (counts + (BLOCK_M - 1)) // BLOCK_M * BLOCK_M
    off = (tl.cumsum(padded, 0) - padded) - (tl.cumsum(counts, 0) - counts)
    e = tl.arange(0, E_BINS)
    tl.store(counts_ptr + e, counts, mask=e < num_local)
    tl.store(off_ptr + e, off, mask=e < num_local)
    tl.store(num_blocks_ptr, tl.sum(padded, 0) // BLOCK_M)

    keys = (tl.where(held, local, num_local) << _SINGLE_KEY_BITS) + r
    skeys = _sort_ascending(keys, LOG_R)
    s_e = skeys >> _SINGLE_KEY_BITS
    s_r = skeys & _SINGLE_KEY_MASK
    s_held = s_e < num_local
    # The -1 fill and the off[] stores above must be visible to every thread before the
    # scatter and the gather below.
    tl.debug_barrier()
    dest = tl.load(off_ptr + s_e, mask=s_held, other=0) + r
    tl.store(sorted_ptr + dest, s_r, mask=s_held)
    tl.store(block_expert_ptr + dest // BLOCK_M, s_e, mask=s_held)


@triton.jit
def _count_in_memory(rows_ptr, local, held, before, E_BINS: tl.constexpr):
    """(counts, before) [E_BINS]: held routes per local expert, all of them and those where
    ``before``, counted by one relaxed CTA-scope atomic add per held route into this program's
    rows [2, E_BINS] at ``rows_ptr`` (zeroed here first; read back after a barrier, which the
    PTX memory model makes sufficient between threads of one CTA)."""
    e = tl.arange(0, E_BINS)
    tl.store(rows_ptr + e, 0)
    tl.store(rows_ptr + E_BINS + e, 0)
    tl.debug_barrier()
    # routes where ``before`` count in row 0, the others in row 1
    tl.atomic_add(rows_ptr + tl.where(before, 0, E_BINS) + local, 1, mask=held, sem="relaxed", scope="cta")
    tl.debug_barrier()
    first = tl.load(rows_ptr + e)
    return first + tl.load(rows_ptr + E_BINS + e), first


@triton.jit
def _chunk_ids(ids_ptr, lo, top_k, stride_t, stride_j, num_routes, expert_lo, num_local, CHUNK: tl.constexpr):
    """(i [CHUNK], routes rc = lo + i, held, local id) of one recount program's chunk."""
    i = tl.arange(0, CHUNK)
    rc = lo + i
    held_c, local_c = _load_ids(ids_ptr, rc, rc < num_routes, top_k, stride_t, stride_j, expert_lo, num_local)
    return i, rc, held_c, local_c


@triton.jit
def _plan_recount_kernel(
    ids_ptr, stride_t, stride_j, top_k, num_routes, expert_lo, num_local,
    sorted_ptr, num_padded_cap, block_expert_ptr, num_blocks_cap, num_blocks_ptr, counts_ptr, scratch_ptr,
    BLOCK_M: tl.constexpr, R_PAD: tl.constexpr, CHUNK: tl.constexpr, E_BINS: tl.constexpr,
    PAD_TILE: tl.constexpr, FILL: tl.constexpr, COUNT_IN_MEMORY: tl.constexpr = False, PDL: tl.constexpr = False,
):
    """Whole blocked plan in one launch of cdiv(R, CHUNK) programs that never wait for each
    other: program c counts every route itself (R <= 2048, E_local <= 2048), so no count
    crosses programs.

    counts = histogram(all held routes); before = histogram(held routes r < c*CHUNK);
    pstart = excl_cumsum(roundup(counts, BLOCK_M)).  Route r of the chunk, of expert e, goes to
    pstart[e] + before[e] + #{earlier routes of the chunk on e} (a [CHUNK, CHUNK] comparison,
    no sort; the [E_BINS] vectors are read per route with tl.gather, in registers and shared
    memory, not through global memory).  COUNT_IN_MEMORY counts through the program's own two
    rows of ``scratch`` ([programs, 2, E_BINS] int32, no initial value) with one atomic add per
    route instead of two ``tl.histogram``s.  The program holding an expert's last route writes
    that segment's padding with -1; the slots and blocks past the live part are split evenly
    over the programs.  Every slot is written by exactly one program (block_expert entries by
    each route of the block, with one value), so no ordering between programs or threads is
    needed.
    """
    pdl_enter(PDL)
    c = tl.program_id(0)
    progs = tl.num_programs(0)
    lo = c * CHUNK
    if COUNT_IN_MEMORY:
        # the chunk's own ids first, so that their load's latency passes under the count's (0.07-0.36
        # us less on an H100; loaded first before a histogram they cost up to 0.21 us more)
        i, rc, held_c, local_c = _chunk_ids(ids_ptr, lo, top_k, stride_t, stride_j, num_routes, expert_lo,
                                            num_local, CHUNK)
    r = tl.arange(0, R_PAD)
    held, local = _load_ids(ids_ptr, r, r < num_routes, top_k, stride_t, stride_j, expert_lo, num_local)
    if COUNT_IN_MEMORY:
        counts, before = _count_in_memory(scratch_ptr + c * (2 * E_BINS), local, held, r < lo, E_BINS)
    else:
        counts = tl.histogram(local, E_BINS, mask=held)
        before = tl.histogram(local, E_BINS, mask=held & (r < lo))
    padded = (counts + (BLOCK_M - 1)) // BLOCK_M * BLOCK_M
    pstart = tl.cumsum(padded, 0) - padded
    total = tl.sum(padded, 0)
    e = tl.arange(0, E_BINS)
    tl.store(counts_ptr + e, counts, mask=(e < num_local) & (c == 0))
    tl.store(num_blocks_ptr, total // BLOCK_M, mask=c == 0)

    if not COUNT_IN_MEMORY:
        i, rc, held_c, local_c = _chunk_ids(ids_ptr, lo, top_k, stride_t, stride_j, num_routes, expert_lo,
                                            num_local, CHUNK)
    key = tl.where(held_c, local_c, -1)
    rank = tl.sum(((key[:, None] == key[None, :]) & (i[None, :] < i[:, None])).to(tl.int32), axis=1)
    dest = tl.gather(pstart + before, local_c, 0) + rank
    tl.store(sorted_ptr + dest, rc, mask=held_c)
    tl.store(block_expert_ptr + dest // BLOCK_M, local_c, mask=held_c)

    # an expert's last route (at end - 1, end = pstart[e] + counts[e]) pads its segment up to
    # the next multiple of BLOCK_M (segments start at one)
    end = tl.gather(pstart + counts, local_c, 0)
    pad = tl.where(held_c & (dest + 1 == end), (end + (BLOCK_M - 1)) // BLOCK_M * BLOCK_M - end, 0)
    jj = tl.arange(0, PAD_TILE)
    for j0 in tl.static_range(0, BLOCK_M - 1, PAD_TILE):
        j = j0 + jj
        tl.store(sorted_ptr + dest[:, None] + 1 + j[None, :], -1, mask=j[None, :] < pad[:, None])

    # the dead tails, a share per program
    share = tl.cdiv(num_padded_cap - total, progs)
    _fill_minus_one(sorted_ptr, total + c * share, tl.minimum(total + (c + 1) * share, num_padded_cap), FILL)
    live_blocks = total // BLOCK_M
    share = tl.cdiv(num_blocks_cap - live_blocks, progs)
    _fill_minus_one(block_expert_ptr, live_blocks + c * share,
                    tl.minimum(live_blocks + (c + 1) * share, num_blocks_cap), FILL)


@triton.jit
def _tile_hits(ids_ptr, stride_t, stride_j, top_k, num_routes, expert_lo, num_local, E_TILE: tl.constexpr,
               R_PAD: tl.constexpr):
    """This program's experts e [E_TILE] (tile program_id(0)), the routes r [R_PAD] and
    hit [E_TILE, R_PAD]: route r is held here and on local expert e."""
    e = tl.program_id(0) * E_TILE + tl.arange(0, E_TILE)
    r = tl.arange(0, R_PAD)
    held, local = _load_ids(ids_ptr, r, r < num_routes, top_k, stride_t, stride_j, expert_lo, num_local)
    return e, r, held[None, :] & (local[None, :] == e[:, None])


@triton.jit
def _popcount32(x):
    """Set bits of each 32-bit lane of the uint32 tensor x, as int32 (SWAR, no intrinsic: the
    interpreter runs it too)."""
    x = x - ((x >> 1) & 0x55555555)
    x = (x & 0x33333333) + ((x >> 2) & 0x33333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F
    return ((x * 0x01010101) >> 24).to(tl.int32)


@triton.jit
def _rank_along_routes(hits, E_TILE: tl.constexpr, R_PAD: tl.constexpr):
    """[E_TILE, R_PAD] int32: at each hit (``hits`` 0/1), the hits before it along the routes (its
    rank; other positions hold any value).  For one expert and 32+ routes in two levels: rows of
    32 routes packed into bit masks (a sum of distinct bits), the rank within a row a popcount of
    the mask below the position, plus the exclusive cumsum of the rows' popcounts.  On an H100
    (forty-eighth session) that took the tiled path 0.1-0.2 us less than a tl.cumsum along the
    routes at 512-2048 routes over 8-256 experts (3.88 -> 3.67 us at 2048 x 256), and 0.9-3.5 us
    more in tiles of 2+ experts."""
    if E_TILE == 1 and R_PAD >= 32:
        W: tl.constexpr = 32
        rows = tl.reshape(hits, [R_PAD // W, W]).to(tl.uint32)
        k = tl.arange(0, W).to(tl.uint32)
        masks = tl.sum(rows << k[None, :], axis=1)
        below = (tl.full([W], 1, tl.uint32) << k) - 1
        within = _popcount32(masks[:, None] & below[None, :])
        row_sums = _popcount32(masks)
        return tl.reshape(within + (tl.cumsum(row_sums, 0) - row_sums)[:, None], [E_TILE, R_PAD])
    else:
        return tl.cumsum(hits, axis=1) - 1


@triton.jit
def _plan_tile_count_kernel(
    ids_ptr, stride_t, stride_j, top_k, num_routes, expert_lo, num_local, counts_ptr,
    E_TILE: tl.constexpr, R_PAD: tl.constexpr, PDL: tl.constexpr = False,
):
    """Tiled path, launch 1 (R <= R_PAD <= 2048), program p = local experts [p*E_TILE, (p+1)*E_TILE):
    counts[e] = held routes on e, by comparing every route with the tile's experts.  With PDL it
    first waits for the previous grid, then lets launch 2 start, whose programs load the ids
    and rank their routes meanwhile."""
    pdl_enter(PDL)
    e, r, hit = _tile_hits(ids_ptr, stride_t, stride_j, top_k, num_routes, expert_lo, num_local, E_TILE, R_PAD)
    tl.store(counts_ptr + e, tl.sum(hit.to(tl.int32), axis=1), mask=e < num_local)


@triton.jit
def _plan_tile_scatter_kernel(
    ids_ptr, stride_t, stride_j, top_k, num_routes, expert_lo, num_local,
    counts_ptr, sorted_ptr, num_padded_cap, block_expert_ptr, num_blocks_cap, num_blocks_ptr,
    BLOCK_M: tl.constexpr, E_TILE: tl.constexpr, R_PAD: tl.constexpr, E_PAD: tl.constexpr,
    PAD_TILE: tl.constexpr, B_TILE: tl.constexpr, FILL: tl.constexpr, PDL: tl.constexpr = False,
):
    """Tiled path, launch 2, the same expert tiles: the tile's segments of the plan.

    Before waiting for launch 1 (PDL; then it lets the next grid launch): the hits of the tile's experts and each hit's rank among
    its expert's routes (``_rank_along_routes``: ascending r).  After: blocks[e] =
    cdiv(counts[e], BLOCK_M) over all experts (launch 1's counts), the tile's first block =
    sum of blocks below it, bstart[e] = that + the exclusive cumsum within the tile.  Route r,
    rank q on expert e goes to bstart[e] * BLOCK_M + q; the rest of each segment is -1 and
    block_expert[bstart[e] ..] = e.  Every slot past the live part is -1, split evenly over the
    programs; program 0 writes num_blocks.  Every slot is written by exactly one program.
    """
    p = tl.program_id(0)
    progs = tl.num_programs(0)
    e, r, hit = _tile_hits(ids_ptr, stride_t, stride_j, top_k, num_routes, expert_lo, num_local, E_TILE, R_PAD)
    hits = hit.to(tl.int32)
    rank = _rank_along_routes(hits, E_TILE, R_PAD)
    count = tl.sum(hits, axis=1)
    pdl_enter(PDL)
    ea = tl.arange(0, E_PAD)
    blocks_all = (tl.load(counts_ptr + ea, mask=ea < num_local, other=0) + (BLOCK_M - 1)) // BLOCK_M
    total = tl.sum(blocks_all, 0)
    blocks = (count + (BLOCK_M - 1)) // BLOCK_M
    bend = tl.sum(tl.where(ea < p * E_TILE, blocks_all, 0), 0) + tl.cumsum(blocks, 0)
    bstart = bend - blocks
    tl.store(num_blocks_ptr, total, mask=p == 0)

    dest = bstart[:, None] * BLOCK_M + rank
    tl.store(sorted_ptr + dest, tl.broadcast_to(r[None, :], dest.shape), mask=hit)
    # each segment's padding: slots count .. blocks * BLOCK_M of it
    seg_end = bstart * BLOCK_M + count
    pad = blocks * BLOCK_M - count
    jj = tl.arange(0, PAD_TILE)
    for j0 in tl.static_range(0, BLOCK_M - 1, PAD_TILE):
        j = j0 + jj
        tl.store(sorted_ptr + seg_end[:, None] + j[None, :], -1, mask=j[None, :] < pad[:, None])
    # block b of the tile's blocks [bstart[0], bend[-1]) is expert e0 + #{tile experts ending at or before b}
    lo = tl.sum(tl.where(tl.arange(0, E_TILE) == 0, bstart, 0), 0)
    hi = tl.max(bend, 0)
    bb = tl.arange(0, B_TILE)
    for b0 in range(lo, hi, B_TILE):
        b = b0 + bb
        owner = p * E_TILE + tl.sum((bend[None, :] <= b[:, None]).to(tl.int32), axis=1)
        tl.store(block_expert_ptr + b, owner, mask=b < hi)

    # the dead tails, a share per program
    live = total * BLOCK_M
    share = tl.cdiv(num_padded_cap - live, progs)
    _fill_minus_one(sorted_ptr, live + p * share, tl.minimum(live + (p + 1) * share, num_padded_cap), FILL)
    share = tl.cdiv(num_blocks_cap - total, progs)
    _fill_minus_one(block_expert_ptr, total + p * share, tl.minimum(total + (p + 1) * share, num_blocks_cap), FILL)


@triton.jit
def _plan_count_kernel(
    ids_ptr, stride_t, stride_j, top_k, num_routes, expert_lo, num_local,
    sorted_ptr, num_padded_cap, sorted_fill_per_prog,
    block_expert_ptr, num_blocks_cap, blocks_fill_per_prog,
    chunk_counts_ptr, chunk_excl_ptr,
    CHUNK: tl.constexpr, E_TILE: tl.constexpr, FILL: tl.constexpr, PDL: tl.constexpr = False,
):
    """Parallel path, step 1, program c = chunk of routes [c*CHUNK, (c+1)*CHUNK).

    Fills its share of sorted_routes / block_expert with -1, then writes, for every local
    expert e: chunk_counts[c, e] = routes of e in the chunk and chunk_excl[c, e] = routes
    of the chunk with an expert < e (in-chunk exclusive cumsum).
    """
    pdl_enter(PDL)
    c = tl.program_id(0)
    lo = c * sorted_fill_per_prog
    _fill_minus_one(sorted_ptr, lo, tl.minimum(lo + sorted_fill_per_prog, num_padded_cap), FILL)
    lo = c * blocks_fill_per_prog
    _fill_minus_one(block_expert_ptr, lo, tl.minimum(lo + blocks_fill_per_prog, num_blocks_cap), FILL)

    r = c * CHUNK + tl.arange(0, CHUNK)
    held, local = _load_ids(ids_ptr, r, r < num_routes, top_k, stride_t, stride_j, expert_lo, num_local)
    carry = 0
    for e0 in range(0, num_local, E_TILE):
        in_tile = held & (local >= e0) & (local < e0 + E_TILE)
        h = tl.histogram(tl.where(in_tile, local - e0, 0), E_TILE, mask=in_tile)
        e = e0 + tl.arange(0, E_TILE)
        row = c * num_local + e
        tl.store(chunk_counts_ptr + row, h, mask=e < num_local)
        tl.store(chunk_excl_ptr + row, tl.cumsum(h, 0) - h + carry, mask=e < num_local)
        carry += tl.sum(h, 0)


@triton.jit
def _plan_chunk_scan_kernel(
    chunk_counts_ptr, chunk_off_ptr, totals_ptr, num_chunks, num_local,
    CHUNKS: tl.constexpr, EXPERTS: tl.constexpr, PDL: tl.constexpr = False,
):
    """Parallel path, step 2, program p = experts [p*EXPERTS, (p+1)*EXPERTS).

    Scans chunk_counts down the chunks: prior[c, e] = sum_{c' < c} chunk_counts[c', e].
    Overwrites chunk_off (holding chunk_excl on entry) with prior - chunk_excl, and
    writes totals[e] = routes of expert e.
    """
    pdl_enter(PDL)
    e = tl.program_id(0) * EXPERTS + tl.arange(0, EXPERTS)
    e_ok = e < num_local
    carry = tl.zeros([EXPERTS], dtype=tl.int32)
    for c0 in range(0, num_chunks, CHUNKS):
        c = c0 + tl.arange(0, CHUNKS)
        idx = c[:, None] * num_local + e[None, :]
        m = (c[:, None] < num_chunks) & e_ok[None, :]
        cnt = tl.load(chunk_counts_ptr + idx, mask=m, other=0)
        excl = tl.load(chunk_off_ptr + idx, mask=m, other=0)
        prior = tl.cumsum(cnt, 0) - cnt + carry[None, :]
        tl.store(chunk_off_ptr + idx, prior - excl, mask=m)
        carry += tl.sum(cnt, 0)
    tl.store(totals_ptr + e, carry, mask=e_ok)


@triton.jit
def _plan_scatter_kernel(
    ids_ptr, stride_t, stride_j, top_k, num_routes, expert_lo, num_local,
    totals_ptr, chunk_off_ptr, pstart_ptr,
    sorted_ptr, block_expert_ptr, num_blocks_ptr, counts_ptr,
    BLOCK_M: tl.constexpr, CHUNK: tl.constexpr, LOG_CHUNK: tl.constexpr, E_TILE: tl.constexpr,
    PDL: tl.constexpr = False,
):
    """Parallel path, step 3, program c = chunk c.

    pstart = excl_cumsum(roundup(totals, BLOCK_M)), computed by every program and stored
    to the same scratch (identical values: the concurrent stores are benign); program 0
    also writes expert_counts and num_blocks.  Then a stable in-chunk sort by
    (expert, route) and the scatter: sorted position i of expert e goes to
    pstart[e] + chunk_off[c, e] + i.
    """
    pdl_enter(PDL)
    c = tl.program_id(0)
    first = c == 0
    carry = 0
    for e0 in range(0, num_local, E_TILE):
        e = e0 + tl.arange(0, E_TILE)
        e_ok = e < num_local
        t = tl.load(totals_ptr + e, mask=e_ok, other=0)
        padded = (t + (BLOCK_M - 1)) // BLOCK_M * BLOCK_M
        tl.store(pstart_ptr + e, tl.cumsum(padded, 0) - padded + carry, mask=e_ok)
        tl.store(counts_ptr + e, t, mask=e_ok & first)
        carry += tl.sum(padded, 0)
    tl.store(num_blocks_ptr, carry // BLOCK_M, mask=first)

    i = tl.arange(0, CHUNK)
    r = c * CHUNK + i
    held, local = _load_ids(ids_ptr, r, r < num_routes, top_k, stride_t, stride_j, expert_lo, num_local)
    skeys = _sort_ascending(tl.where(held, local, num_local) * CHUNK + i, LOG_CHUNK)
    s_e = skeys // CHUNK
    s_i = skeys % CHUNK
    s_held = s_e < num_local
    # pstart[] stores above must be visible to every thread of this program.
    tl.debug_barrier()
    base = tl.load(pstart_ptr + s_e, mask=s_held, other=0)
    base += tl.load(chunk_off_ptr + c * num_local + s_e, mask=s_held, other=0)
    dest = base + i
    tl.store(sorted_ptr + dest, c * CHUNK + s_i, mask=s_held)
    tl.store(block_expert_ptr + dest // BLOCK_M, s_e, mask=s_held)


@triton.jit
def _plan_no_permute_kernel(
    ids_ptr, stride_t, stride_j, top_k, num_routes, expert_lo, num_local,
    sorted_ptr, block_expert_ptr, num_blocks_ptr, counts_ptr,
    BLOCK_M: tl.constexpr, BLOCK_R: tl.constexpr, E_TILE: tl.constexpr, FILL: tl.constexpr,
    PDL: tl.constexpr = False,
):
    """No-permute plan in one program: block b = route b.

    sorted_routes[p] = p // BLOCK_M if p % BLOCK_M == 0 else -1   (p < R * BLOCK_M)
    block_expert[b] = local id of route b, or -1 if not held      (b < R)
    expert_counts = histogram of held local ids; num_blocks = R.
    """
    pdl_enter(PDL)
    offs = tl.arange(0, FILL)
    for s in range(0, num_routes * BLOCK_M, FILL):
        p = s + offs
        tl.store(sorted_ptr + p, tl.where(p % BLOCK_M == 0, p // BLOCK_M, -1), mask=p < num_routes * BLOCK_M)
    rr = tl.arange(0, BLOCK_R)
    for r0 in range(0, num_routes, BLOCK_R):
        r = r0 + rr
        held, local = _load_ids(ids_ptr, r, r < num_routes, top_k, stride_t, stride_j, expert_lo, num_local)
        tl.store(block_expert_ptr + r, tl.where(held, local, -1), mask=r < num_routes)
    for e0 in range(0, num_local, E_TILE):
        acc = tl.zeros([E_TILE], dtype=tl.int32)
        for r0 in range(0, num_routes, BLOCK_R):
            r = r0 + rr
            held, local = _load_ids(ids_ptr, r, r < num_routes, top_k, stride_t, stride_j, expert_lo, num_local)
            in_tile = held & (local >= e0) & (local < e0 + E_TILE)
            acc += tl.histogram(tl.where(in_tile, local - e0, 0), E_TILE, mask=in_tile)
        e = e0 + tl.arange(0, E_TILE)
        tl.store(counts_ptr + e, acc, mask=e < num_local)
    tl.store(num_blocks_ptr, num_routes)
