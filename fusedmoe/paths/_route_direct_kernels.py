"""Triton kernels of the route-direct path (decode): no plan, no sort.

At decode the layer is a stream of weight bytes; what limits a GEMV kernel is how many bytes
each SM keeps in flight, so both GEMV kernels issue one wide tile per step (BLOCK_K spans much
of K), and with STAGES > 1 their K loop is software-pipelined: each step's tiles are copied to
shared memory (cp.async) STAGES - 1 steps ahead, in flight without holding registers.  Only
that loop is pipelined (``tl.range``); the kernels compile with num_stages 1.

gate/up: one program per (route, tile of BLOCK_N rows of I, K split), routes fastest in the
grid order so that routes sharing an expert stream each tile once from HBM and then from L2.  The route's expert is
read straight from ``topk_ids``; the program loads the gate and up rows of its tile [2*BLOCK_N,
BLOCK_K] and reduces them against x[token] (weights upcast to fp32 in registers, activations
kept in their input precision: "w8a16" for FP8).  With one K split it applies SwiGLU and writes
act [R, I] fp32; with several it writes raw partial sums [S, R, 2I] fp32 and the down kernel
reduces them and applies SwiGLU as it reads them (the split reduction costs no launch).

down + combine: one program per (token, TILES consecutive tiles of BLOCK_N rows of H) loads
the rows of all the token's k experts at once, a [k, BLOCK_N, BLOCK_K] tile, and reduces over
K, then over the routes with their weights: deterministic, no position map, no atomics.

Block scales (W_SCALE == 2) need BLOCK_K to be a multiple of 128: products are summed per
128-column group, scaled, then summed.  FP4 weights (W_SCALE == 3, the w4a8 format) are decoded
in registers and multiplied with the activations (not quantised: "w4a16") in packed fp16, per
32-column exponent group (``_fp4_kernels.fp4_group_dots``; BLOCK_K a multiple of 32).

PDL (programmatic dependent launch, sm_90+; ``RouteDirectConfig.pdl``): both kernels are
launched so that each may start before its predecessor in the stream has finished.  A
gate/up program first waits for the predecessor grid (``griddepcontrol.wait``: its writes are
then visible), then lets the down grid launch.  A down program reads the routing (written
before gate/up began) and loads the weight tile of its first K step, then waits for the
gate/up grid before it reads act or writes out.  So the down grid's launch and first weight
loads overlap the gate/up tail instead of following it.  Without PDL the two instructions do nothing.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .._epilogue_kernels import glu, is_held
from .._pdl import pdl_enter, pdl_wait
from .._trace import trace_end, trace_mark
from ._fp4_kernels import FP4_GROUP, fp16_groups, fp4_group_dots, fp4_route_group_dots, load_fp4_rows


@triton.jit
def _group_sums(parts, GROUPS: tl.constexpr):
    """parts [..., C] summed over each of its GROUPS runs of C / GROUPS columns: [..., GROUPS]."""
    return tl.sum(tl.reshape(parts, parts.shape[:-1] + [GROUPS, parts.shape[-1] // GROUPS]), axis=-1)


@triton.jit
def _scaled_sums(parts, scale_ptrs, scale_ok, W_SCALE: tl.constexpr, GROUPS: tl.constexpr):
    """Sums over the last axis of parts [..., C], partial products of a K step's columns in
    order; with block scales (W_SCALE == 2) each of the GROUPS runs of C / GROUPS (one
    128-column group) is summed and multiplied by its scale (at scale_ptrs [..., GROUPS], masked
    by scale_ok, loaded here: after the products) first."""
    if W_SCALE == 2:
        return tl.sum(_group_sums(parts, GROUPS) * tl.load(scale_ptrs, mask=scale_ok, other=0.0), axis=-1)
    return tl.sum(parts, axis=-1)


# fp16 products: activation columns under one power-of-two scale (``_fp16_chunks``)
FP16_CHUNK = tl.constexpr(16)


@triton.jit
def _fp16_chunks(v, ROWS: tl.constexpr, BLOCK_K: tl.constexpr):
    """Activation rows v [ROWS, BLOCK_K] (fp32) for fp16 products: each FP16_CHUNK columns divided
    by the power of two that puts their largest magnitude in [4, 8) and rounded to fp16 (exact
    for bf16 and fp16 values above 2^-17 of that maximum; an all-tiny chunk, below 2^-124, is
    left unscaled and flushes).  Returns (v16 [ROWS, NC, FP16_CHUNK/2, 2], scale [ROWS, NC])."""
    NC: tl.constexpr = BLOCK_K // FP16_CHUNK
    vc = tl.reshape(v, (ROWS, NC, FP16_CHUNK))
    ex = (tl.max(tl.abs(vc), axis=2).to(tl.int32, bitcast=True) >> 23) & 0xFF  # amax = 2^(ex-127) * 1.f
    normal = ex > 2
    scale = tl.where(normal, (ex - 2) << 23, 127 << 23).to(tl.float32, bitcast=True)
    inv = tl.where(normal, (256 - ex) << 23, 127 << 23).to(tl.float32, bitcast=True)
    return tl.reshape((vc * inv[:, :, None]).to(tl.float16), (ROWS, NC, FP16_CHUNK // 2, 2)), scale


@triton.jit
def _pair_sums(w16, v16):
    """sum over the chunk of w16 * v16 ([..., NC, FP16_CHUNK/2, 2] fp16, below 2^15 in magnitude:
    |w| <= 448 as stored, |v16| < 8), each lane of a column pair summing its 8 products in fp16,
    the two lanes then added in fp32: [..., NC]."""
    return tl.sum(tl.sum(w16 * v16, axis=-2).to(tl.float32), axis=-1)


@triton.jit
def _chunk_dots_fp16(w, v, ROWS: tl.constexpr, BLOCK_K: tl.constexpr):
    """Dot products per FP16_CHUNK columns [ROWS, BLOCK_K / FP16_CHUNK] of FP8 weights w [ROWS,
    BLOCK_K] (as stored) with one activation row v [BLOCK_K] (fp32), the products in packed fp16
    (``RouteDirectConfig.fp16_products``): v under ``_fp16_chunks``, ``_pair_sums`` per chunk,
    each scaled back.  One e4m3-pair conversion and one fp16-pair FMA per two weights, where
    the fp32 form takes a conversion and an FMA per weight besides."""
    v16, scale = _fp16_chunks(tl.reshape(v, (1, BLOCK_K)), 1, BLOCK_K)
    w16 = tl.reshape(w.to(tl.float16), (ROWS, BLOCK_K // FP16_CHUNK, FP16_CHUNK // 2, 2))
    return _pair_sums(w16, v16) * scale


@triton.jit
def _gate_up_program(R, I, H, SPLIT_K: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                     PDL: tl.constexpr, trace_ptr, TRACE: tl.constexpr):
    """This gate/up program's route r, tile nt of I, split s, its 2*BLOCK_N weight rows
    (gate rows then up rows: w_rows, valid n_ok, scale-block rows s_rows) and K range
    [k_lo, k_hi).  Routes change fastest in the grid, so routes that share an expert read
    the same tile at the same time (L2).  With PDL it first waits for the previous grid, then
    lets the down grid launch, before the program reads anything.  TRACE: ``_trace``'s fields 0, 1."""
    trace_mark(trace_ptr, 0, TRACE)
    pdl_enter(PDL)
    trace_mark(trace_ptr, 1, TRACE)
    pid = tl.program_id(0)
    r = pid % R
    rest = pid // R
    nt = rest // SPLIT_K
    s = rest % SPLIT_K
    j = tl.arange(0, 2 * BLOCK_N)
    half = j // BLOCK_N
    n = nt * BLOCK_N + j % BLOCK_N
    w_rows = (half * I + n).to(tl.int64)
    s_rows = half * tl.cdiv(I, 128) + n // 128
    k_per = tl.cdiv(tl.cdiv(H, SPLIT_K), BLOCK_K) * BLOCK_K
    k_lo = s * k_per
    return r, nt, s, w_rows, n < I, s_rows, k_lo, tl.minimum(H, k_lo + k_per)


@triton.jit
def route_gate_up_kernel(
        x_ptr, w_ptr, ws_ptr, b_ptr, ids_ptr, act_ptr,
        H, I, R, expert_offset, num_local, TOPK, stride_x, stride_we, stride_wn, stride_wse, stride_wsn,
        W_SCALE: tl.constexpr, SPLIT_K: tl.constexpr, ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr,
        BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PDL: tl.constexpr = False,
        FP16_PRODUCTS: tl.constexpr = False, STAGES: tl.constexpr = 1, SCALE_ROWS: tl.constexpr = True,
        trace_ptr=None, TRACE: tl.constexpr = False):
    """SPLIT_K == 1: act[r, n] = act(G_e x_t + b_g)[n] * (U_e x_t + b_u)[n]; else act[s, r, :] =
    partial [G_e x_t, U_e x_t] over the s-th K range (the bias in split 0).  e = ids[r] -
    expert_offset, t = r // TOPK; bias b [E, 2I] if HAS_BIAS.  FP16_PRODUCTS (FP8 weights):
    the products in packed fp16 (``_chunk_dots_fp16``).  W_SCALE 3: FP4 rows of H/2 bytes,
    one exponent per 32 columns (ws [E, 2I, H/32]).  STAGES: the K loop's pipeline depth.
    SCALE_ROWS (block scales): ``RouteDirectConfig.block_scale_rows``.
    TRACE: each program's timeline into trace_ptr (``fusedmoe._trace``)."""
    r, nt, s, w_rows, n_ok, s_rows, k_lo, k_hi = _gate_up_program(R, I, H, SPLIT_K, BLOCK_N, BLOCK_K, PDL,
                                                                  trace_ptr, TRACE)
    gid = tl.load(ids_ptr + r)
    if not is_held(gid, expert_offset, num_local):
        return
    e = (gid - expert_offset).to(tl.int64)
    tok = (r // TOPK).to(tl.int64)
    offs_k = tl.arange(0, BLOCK_K)
    offs_g = tl.arange(0, BLOCK_K // 128) if W_SCALE == 2 else tl.arange(0, 1)
    w_base = w_ptr + e * stride_we + w_rows[:, None] * stride_wn
    x_base = x_ptr + tok * stride_x
    acc = tl.zeros([2 * BLOCK_N], dtype=tl.float32)
    s_base = ws_ptr + e * stride_wse + (w_rows if W_SCALE == 3 else s_rows)[:, None] * stride_wsn
    # SCALE_ROWS: the tile's gate rows lie in one 128-row scale block, its up rows in another
    # (BLOCK_N <= 128, a power of two), so a K step needs one scale row of each
    gate_scales = ws_ptr + e * stride_wse + (nt * BLOCK_N // 128) * stride_wsn
    up_scales = gate_scales + tl.cdiv(I, 128) * stride_wsn
    is_gate = (tl.arange(0, 2 * BLOCK_N) < BLOCK_N)[:, None]
    for k0 in tl.range(k_lo, k_hi, BLOCK_K, num_stages=STAGES):
        kk = k0 + offs_k
        k_ok = kk < k_hi
        scales = 1.0
        if W_SCALE == 2 and SCALE_ROWS:  # first: two values a group, their latency under the weights'
            g_rows = k0 // 128 + offs_g
            g_ok = g_rows * 128 < k_hi
            scales = tl.where(is_gate, tl.load(gate_scales + g_rows, mask=g_ok, other=0.0)[None, :],
                              tl.load(up_scales + g_rows, mask=g_ok, other=0.0)[None, :])
        v = tl.load(x_base + kk, mask=k_ok, other=0.0)
        if W_SCALE == 3:  # FP4 codes, products in packed fp16 per 32-column exponent group
            G: tl.constexpr = BLOCK_K // FP4_GROUP
            packed, exps = load_fp4_rows(w_base, s_base, k0, k_hi, n_ok[:, None], BLOCK_K)
            even, odd, vs = fp16_groups(tl.reshape(v.to(tl.float32), (1, BLOCK_K)), 1, G)
            acc += tl.sum(fp4_group_dots(packed, exps, tl.reshape(even, (G, 16)), tl.reshape(odd, (G, 16)),
                                         tl.reshape(vs, (G,)), 2 * BLOCK_N, G), axis=1)
        else:
            w = tl.load(w_base + kk[None, :], mask=n_ok[:, None] & k_ok[None, :], other=0.0)
            g = k0 // 128 + offs_g
            s_ok = n_ok[:, None] & (g * 128 < k_hi)[None, :]
            if FP16_PRODUCTS:
                parts = _chunk_dots_fp16(w, v.to(tl.float32), 2 * BLOCK_N, BLOCK_K)
            else:
                parts = w.to(tl.float32) * v.to(tl.float32)[None, :]
            if W_SCALE == 2 and SCALE_ROWS:
                acc += tl.sum(_group_sums(parts, BLOCK_K // 128) * scales, axis=-1)
            else:  # a scale per weight row, loaded after the products
                acc += _scaled_sums(parts, s_base + g[None, :], s_ok, W_SCALE, BLOCK_K // 128)
    if W_SCALE == 1:
        acc = acc * tl.load(ws_ptr + e)
    if HAS_BIAS:
        acc += tl.load(b_ptr + e * 2 * I + w_rows, mask=n_ok & (s == 0), other=0.0)
    if SPLIT_K == 1:
        gate, up = tl.split(tl.permute(tl.reshape(acc, (2, BLOCK_N)), (1, 0)))
        cols = nt * BLOCK_N + tl.arange(0, BLOCK_N)
        tl.store(act_ptr + r.to(tl.int64) * I + cols, glu(gate, up, ACTIVATION), mask=cols < I)
    else:
        base = act_ptr + (s.to(tl.int64) * R + r) * (2 * I)
        tl.store(base + w_rows, acc, mask=n_ok)
    trace_end(trace_ptr, TRACE)


@triton.jit
def _fp16_rows(v):
    """Rows of v (fp32 [R, K]) as fp16 after a power-of-two scale per row that puts the row's
    largest magnitude in [2^14, 2^15): returns (v16 [R, K], scale [R]), v ~ v16 * scale with
    fp16's relative rounding (2^-11) for every element above 2^-28 of its row's maximum.  The
    scale comes from the exponent bits of the row maximum (exact, no transcendental)."""
    amax = tl.max(tl.abs(v), axis=1)
    exponent = (amax.to(tl.int32, bitcast=True) >> 23) & 0xFF
    bits = tl.where(exponent > 14, (exponent - 14) << 23, 127 << 23)  # 2^(e - 14), or 1 for tiny rows
    scale = bits.to(tl.float32, bitcast=True)
    return (v / scale[:, None]).to(tl.float16), scale


@triton.jit
def _route_group(ids_ptr, r, gid, R, MATES: tl.constexpr, CHUNK: tl.constexpr):
    """The routes that share route r's expert ``gid``, taken MATES at a time in route order.

    Returns (lead, mates [MATES], ok [MATES]): lead is True when r opens a group (the number of
    earlier routes on gid is a multiple of MATES); mates are the group's route indices, r
    first.  A scan of topk_ids (R is small at decode) stands in for a sorted plan."""
    rank = 0
    for c in range(0, r, CHUNK):
        idx = c + tl.arange(0, CHUNK)
        rank += tl.sum((tl.load(ids_ptr + idx, mask=idx < r, other=-1) == gid).to(tl.int32))
    slots = tl.arange(0, MATES)
    mates = tl.zeros([MATES], dtype=tl.int32)
    found = 0
    for c in range(r, R, CHUNK):
        idx = c + tl.arange(0, CHUNK)
        same = (tl.load(ids_ptr + idx, mask=idx < R, other=-1) == gid).to(tl.int32)
        slot = found + tl.cumsum(same, axis=0) - 1
        hit = (same[None, :] > 0) & (slot[None, :] == slots[:, None])
        mates += tl.sum(tl.where(hit, idx[None, :], 0), axis=1)
        found += tl.sum(same)
    return rank % MATES == 0, mates, slots < found


@triton.jit
def route_gate_up_mma_kernel(
        x_ptr, w_ptr, ws_ptr, b_ptr, ids_ptr, act_ptr,
        H, I, R, expert_offset, num_local, TOPK, stride_x, stride_we, stride_wn, stride_wse, stride_wsn,
        W_SCALE: tl.constexpr, SPLIT_K: tl.constexpr, ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr,
        BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PDL: tl.constexpr = False, trace_ptr=None,
        TRACE: tl.constexpr = False):
    """The gate/up step of route_gate_up_kernel (same outputs) on the tensor cores, swap-AB:
    the expert's [2*BLOCK_N, BLOCK_K] weight tile is the MMA's M side and up to 16 routes on
    that expert its N side, so routes sharing an expert stream its rows once.  Only the route
    that leads each group of 16 works; the others exit.  16-bit weights meet the activations
    as they are.  FP8 weights are upcast to fp16 (exact; one conversion per two weights, where
    bf16 takes several), and each step's activation rows go to fp16 under a power-of-two scale
    per row (``_fp16_rows``), applied back to that step's fp32 partial.  Products are summed
    in fp32.  Block scales need BLOCK_K 128."""
    MATES: tl.constexpr = 16
    r, nt, s, w_rows, n_ok, s_rows, k_lo, k_hi = _gate_up_program(R, I, H, SPLIT_K, BLOCK_N, BLOCK_K, PDL,
                                                                  trace_ptr, TRACE)
    gid = tl.load(ids_ptr + r)
    if not is_held(gid, expert_offset, num_local):
        return
    lead, mates, ok = _route_group(ids_ptr, r, gid, R, MATES, 128)
    if not lead:
        return
    e = (gid - expert_offset).to(tl.int64)
    tok = tl.where(ok, mates // TOPK, 0).to(tl.int64)
    offs_k = tl.arange(0, BLOCK_K)
    x_base = x_ptr + tok[:, None] * stride_x
    w_base = w_ptr + e * stride_we + w_rows[:, None] * stride_wn
    acc = tl.zeros([2 * BLOCK_N, MATES], dtype=tl.float32)
    for k0 in range(k_lo, k_hi, BLOCK_K):
        kk = k0 + offs_k
        k_ok = kk < k_hi
        xt = tl.load(x_base + kk[None, :], mask=ok[:, None] & k_ok[None, :], other=0.0)
        w = tl.load(w_base + kk[None, :], mask=n_ok[:, None] & k_ok[None, :], other=0.0)
        if W_SCALE != 0:  # e4m3 -> fp16 is one conversion per two weights (-> bf16 takes several)
            x16, sx = _fp16_rows(xt.to(tl.float32))
            part = tl.dot(w.to(tl.float16), tl.trans(x16)) * sx[None, :]
            if W_SCALE == 2:
                sw = tl.load(ws_ptr + e * stride_wse + s_rows * stride_wsn + k0 // 128, mask=n_ok, other=0.0)
                part = part * sw[:, None]
            acc += part
        else:
            acc = tl.dot(w.to(xt.dtype), tl.trans(xt), acc)
    acc = tl.trans(acc)
    if W_SCALE == 1:
        acc = acc * tl.load(ws_ptr + e)
    if HAS_BIAS:
        acc += tl.load(b_ptr + e * 2 * I + w_rows, mask=n_ok & (s == 0), other=0.0)[None, :]
    rows = tl.where(ok, mates, 0).to(tl.int64)
    if SPLIT_K == 1:
        gate, up = tl.split(tl.permute(tl.reshape(acc, (MATES, 2, BLOCK_N)), (0, 2, 1)))
        cols = nt * BLOCK_N + tl.arange(0, BLOCK_N)
        tl.store(act_ptr + rows[:, None] * I + cols[None, :], glu(gate, up, ACTIVATION),
                 mask=ok[:, None] & (cols < I)[None, :])
    else:
        base = act_ptr + (s.to(tl.int64) * R + rows[:, None]) * (2 * I)
        tl.store(base + w_rows[None, :], acc, mask=ok[:, None] & n_ok[None, :])
    trace_end(trace_ptr, TRACE)


@triton.jit
def _load_act(act_ptr, r, ok, kk, I, R, SPLIT_K: tl.constexpr, ACTIVATION: tl.constexpr):
    """Activation output [KP, BLOCK_K] of routes r [KP] at columns kk, reducing K-split partials."""
    mask = ok[:, None] & (kk < I)[None, :]
    r64 = r.to(tl.int64)[:, None]
    if SPLIT_K == 1:
        return tl.load(act_ptr + r64 * I + kk[None, :], mask=mask, other=0.0)
    gate = tl.zeros([r.shape[0], kk.shape[0]], dtype=tl.float32)
    up = tl.zeros([r.shape[0], kk.shape[0]], dtype=tl.float32)
    for s in tl.static_range(SPLIT_K):
        base = act_ptr + (r64 + s * R) * (2 * I) + kk[None, :]
        gate += tl.load(base, mask=mask, other=0.0)
        up += tl.load(base + I, mask=mask, other=0.0)
    return glu(gate, up, ACTIVATION)


@triton.jit
def _token_routes(ids_ptr, t, expert_offset, num_local, TOPK: tl.constexpr, COLS: tl.constexpr):
    """Token t's routes r = t*TOPK + j for j < COLS (COLS >= TOPK, a power of two): (r, held,
    local expert e as int64, 0 where not held)."""
    j = tl.arange(0, COLS)
    r = t * TOPK + j
    gid = tl.load(ids_ptr + r, mask=j < TOPK, other=-1)
    held = is_held(gid, expert_offset, num_local)
    return r, held, tl.where(held, gid - expert_offset, 0).to(tl.int64)


@triton.jit
def _combine_token(y, r, held, e, t, n, n_ok, ws_ptr, b_ptr, tw_ptr, shared_ptr, out_ptr, H, stride_s, stride_o,
                   W_SCALE: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_SHARED: tl.constexpr):
    """out[t, n] = sum_j w[r_j] * (scale_e * y[j, n] + b[e_j, n]) (+ shared[t, n]) over held
    routes, for y [KP, BLOCK_N] the token's per-route down products: fixed order, no atomics."""
    if W_SCALE == 1:
        y = y * tl.load(ws_ptr + e, mask=held, other=0.0)[:, None]
    if HAS_BIAS:
        y += tl.load(b_ptr + e[:, None] * H + n[None, :], mask=held[:, None] & n_ok[None, :], other=0.0)
    route_w = tl.load(tw_ptr + r, mask=held, other=0.0).to(tl.float32)
    total = tl.sum(y * route_w[:, None], axis=0)
    if HAS_SHARED:
        total += tl.load(shared_ptr + t.to(tl.int64) * stride_s + n, mask=n_ok, other=0.0).to(tl.float32)
    tl.store(out_ptr + t.to(tl.int64) * stride_o + n, total.to(out_ptr.dtype.element_ty), mask=n_ok)


@triton.jit
def _down_weights(w_ptr, ws_ptr, e, held, t0, it, steps, offs_n, offs_k, H, I, stride_we, stride_wn, stride_wse,
                  stride_wsn, W_SCALE: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """route_down_kernel's weight tile [KP, BLOCK_N, BLOCK_K] as stored (FP4 weights, W_SCALE 3:
    [KP, BLOCK_N, BLOCK_K / 2] bytes) of its step ``it``: H tile t0 + it // steps, K step it %
    steps, for the routes' experts e [KP] (masked to held routes, H and I)."""
    n = (t0 + it // steps) * BLOCK_N + offs_n
    kk = (it % steps) * BLOCK_K + offs_k
    row_ok = held[:, None] & (n < H)[None, :]
    rows = w_ptr + e[:, None, None] * stride_we + n[None, :, None].to(tl.int64) * stride_wn
    if W_SCALE == 3:
        kb = (it % steps) * (BLOCK_K // 2) + tl.arange(0, BLOCK_K // 2)
        w = tl.load(rows + kb[None, None, :], mask=row_ok[:, :, None] & (kb < I // 2)[None, None, :], other=0)
    else:
        w = tl.load(rows + kk[None, None, :], mask=row_ok[:, :, None] & (kk < I)[None, None, :], other=0.0)
    return w


@triton.jit
def _route_chunk_dots(w, a, KP: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Dot products per FP16_CHUNK columns [KP, BLOCK_N, BLOCK_K / FP16_CHUNK] of FP8 weight tiles
    w [KP, BLOCK_N, BLOCK_K] with the routes' act rows a [KP, BLOCK_K] (fp32), in packed fp16 as
    ``_chunk_dots_fp16``, each route's row under its own chunk scales."""
    NC: tl.constexpr = BLOCK_K // FP16_CHUNK
    a16, scale = _fp16_chunks(a, KP, BLOCK_K)
    w16 = tl.reshape(w.to(tl.float16), (KP, BLOCK_N, NC, FP16_CHUNK // 2, 2))
    return _pair_sums(w16, a16[:, None, :, :, :]) * scale[:, None, :]


@triton.jit
def _down_step(act_ptr, w, r, held, row_ok, k0, offs_k, offs_g, s_rows, s_base, I, R, KP: tl.constexpr,
               W_SCALE: tl.constexpr, SPLIT_K: tl.constexpr, ACTIVATION: tl.constexpr, BLOCK_N: tl.constexpr,
               BLOCK_K: tl.constexpr, FP16_PRODUCTS: tl.constexpr, SCALE_ROWS: tl.constexpr):
    """One K step of route_down_kernel: the token's per-route products [KP, BLOCK_N] of weight
    tile w [KP, BLOCK_N, BLOCK_K] (loaded) with the routes' act columns k0 + offs_k (FP16_PRODUCTS:
    ``_route_chunk_dots``).  Block scales
    (W_SCALE == 2): with SCALE_ROWS the tile's rows lie in one 128-row scale block, whose row for
    each route's expert starts at s_rows [KP], loaded first; else each weight row's scales at
    s_base [KP, BLOCK_N] (masked by row_ok), loaded after the products."""
    kk = k0 + offs_k
    if W_SCALE == 2 and SCALE_ROWS:  # first: a few values a route, their latency under the activations'
        g_rows = k0 // 128 + offs_g
        rows = tl.load(s_rows[:, None] + g_rows[None, :], mask=held[:, None] & (g_rows * 128 < I)[None, :], other=0.0)
        return _down_products(act_ptr, w, r, held, kk, rows[:, None, :], I, R, KP, SPLIT_K, ACTIVATION, BLOCK_N,
                              BLOCK_K, FP16_PRODUCTS)
    a = _load_act(act_ptr, r, held, kk, I, R, SPLIT_K, ACTIVATION)
    g = k0 // 128 + offs_g
    if FP16_PRODUCTS:
        chunk = _route_chunk_dots(w, a, KP, BLOCK_N, BLOCK_K)
        return _scaled_sums(chunk, s_base[:, :, None] + g[None, None, :],
                            row_ok[:, :, None] & (g * 128 < I)[None, None, :], W_SCALE, BLOCK_K // 128)
    w = tl.reshape(w.to(tl.float32), (KP * BLOCK_N, BLOCK_K))
    v = tl.reshape(tl.broadcast_to(a[:, None, :], (KP, BLOCK_N, BLOCK_K)), (KP * BLOCK_N, BLOCK_K))
    sp = tl.reshape(tl.broadcast_to(s_base[:, :, None], (KP, BLOCK_N, offs_g.shape[0])),
                    (KP * BLOCK_N, offs_g.shape[0])) + g[None, :]
    s_ok = tl.reshape(tl.broadcast_to(row_ok[:, :, None], (KP, BLOCK_N, offs_g.shape[0])),
                      (KP * BLOCK_N, offs_g.shape[0])) & (g * 128 < I)[None, :]
    return tl.reshape(_scaled_sums(w * v, sp, s_ok, W_SCALE, BLOCK_K // 128), (KP, BLOCK_N))


@triton.jit
def _down_products(act_ptr, w, r, held, kk, scales, I, R, KP: tl.constexpr, SPLIT_K: tl.constexpr,
                   ACTIVATION: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, FP16_PRODUCTS: tl.constexpr):
    """``_down_step``'s products with block scales already loaded, scales [KP, 1, BLOCK_K / 128]."""
    a = _load_act(act_ptr, r, held, kk, I, R, SPLIT_K, ACTIVATION)
    G: tl.constexpr = BLOCK_K // 128
    if FP16_PRODUCTS:
        chunk = _route_chunk_dots(w, a, KP, BLOCK_N, BLOCK_K)
        return tl.sum(_group_sums(chunk, G) * scales, axis=-1)
    parts = w.to(tl.float32) * a[:, None, :]
    return tl.sum(_group_sums(parts, G) * scales, axis=-1)


@triton.jit
def _down_step_fp4(act_ptr, w, r, held, row_ok, k0, s_base, I, R, KP: tl.constexpr, SPLIT_K: tl.constexpr,
                   ACTIVATION: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """``_down_step`` for FP4 weights: w [KP, BLOCK_N, BLOCK_K/2] bytes, s_base [KP, BLOCK_N] at
    each row's exponents; products in packed fp16 per exponent group (``fp4_route_group_dots``)."""
    G: tl.constexpr = BLOCK_K // FP4_GROUP
    a = _load_act(act_ptr, r, held, k0 + tl.arange(0, BLOCK_K), I, R, SPLIT_K, ACTIVATION)
    kg = k0 // FP4_GROUP + tl.arange(0, G)
    exps = tl.load(s_base[:, :, None] + kg[None, None, :],
                   mask=row_ok[:, :, None] & (kg < tl.cdiv(I, FP4_GROUP))[None, None, :], other=0).to(tl.int32)
    even, odd, sc = fp16_groups(a, KP, G)
    return tl.sum(fp4_route_group_dots(w, exps, even, odd, sc, KP, BLOCK_N, G), axis=2)


@triton.jit
def _down_tile_step(act_ptr, w, acc, it, steps, t0, r, held, e, t, offs_n, offs_k, offs_g, ws_ptr, b_ptr, tw_ptr,
                    shared_ptr, out_ptr, H, I, R, stride_wse, stride_wsn, stride_s, stride_o, KP: tl.constexpr,
                    W_SCALE: tl.constexpr, SPLIT_K: tl.constexpr, ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr,
                    HAS_SHARED: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, TILES: tl.constexpr,
                    FP16_PRODUCTS: tl.constexpr, SCALE_ROWS: tl.constexpr):
    """Step ``it`` of route_down_kernel with its weight tile w (loaded): adds the token's
    per-route products [KP, BLOCK_N] to acc; with TILES > 1, at a tile's last K step, combines
    them into out and returns a zeroed acc for the next tile (TILES == 1: the caller combines
    after its loop, which keeps the combine's registers out of the loop)."""
    n = (t0 + it // steps) * BLOCK_N + offs_n
    n_ok = n < H
    k0 = (it % steps) * BLOCK_K
    s_base = ws_ptr + e[:, None] * stride_wse + (n if W_SCALE == 3 else n // 128)[None, :].to(tl.int64) * stride_wsn
    if W_SCALE == 3:
        acc += _down_step_fp4(act_ptr, w, r, held, held[:, None] & n_ok[None, :], k0, s_base, I, R, KP, SPLIT_K,
                              ACTIVATION, BLOCK_N, BLOCK_K)
    else:
        s_rows = ws_ptr + e * stride_wse + ((t0 + it // steps) * BLOCK_N // 128).to(tl.int64) * stride_wsn
        acc += _down_step(act_ptr, w, r, held, held[:, None] & n_ok[None, :], k0, offs_k, offs_g, s_rows, s_base, I,
                          R, KP, W_SCALE, SPLIT_K, ACTIVATION, BLOCK_N, BLOCK_K, FP16_PRODUCTS, SCALE_ROWS)
    if TILES > 1 and k0 + BLOCK_K >= I:
        _combine_token(acc, r, held, e, t, n, n_ok, ws_ptr, b_ptr, tw_ptr, shared_ptr, out_ptr, H, stride_s, stride_o,
                       W_SCALE, HAS_BIAS, HAS_SHARED)
        acc = tl.zeros([KP, BLOCK_N], dtype=tl.float32)
    return acc


@triton.jit
def route_down_kernel(
        act_ptr, w_ptr, ws_ptr, b_ptr, ids_ptr, tw_ptr, shared_ptr, out_ptr,
        H, I, R, expert_offset, num_local, stride_we, stride_wn, stride_wse, stride_wsn, stride_s, stride_o,
        TOPK: tl.constexpr, W_SCALE: tl.constexpr, SPLIT_K: tl.constexpr, HAS_SHARED: tl.constexpr,
        ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
        PDL: tl.constexpr = False, TILES: tl.constexpr = 1, FP16_PRODUCTS: tl.constexpr = False,
        STAGES: tl.constexpr = 1, SCALE_ROWS: tl.constexpr = True, trace_ptr=None, TRACE: tl.constexpr = False):
    """out[t, n] = sum_j w[t,j] * (W2_e act_r + b_e)[n] (+ shared[t, n]), r = t*TOPK + j, over held
    routes; bias b [E, H] if HAS_BIAS.  A program computes TILES consecutive tiles of BLOCK_N
    rows of H for its token, one K step after another (its routes read once).  With PDL the
    weight tile of its first step is loaded before the wait for gate/up.  STAGES: the step
    loop's pipeline depth.  SCALE_ROWS (block scales): ``RouteDirectConfig.block_scale_rows``.
    TRACE: each program's timeline into trace_ptr (``fusedmoe._trace``)."""
    trace_mark(trace_ptr, 0, TRACE)
    KP: tl.constexpr = triton.next_power_of_2(TOPK)
    pid = tl.program_id(0)
    t = pid % (R // TOPK)  # token-fastest, as in gate/up: shared experts' tiles meet in L2
    t0 = (pid // (R // TOPK)) * TILES
    r, held, e = _token_routes(ids_ptr, t, expert_offset, num_local, TOPK, KP)
    offs_n = tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    offs_g = tl.arange(0, BLOCK_K // 128) if W_SCALE == 2 else tl.arange(0, 1)
    steps = tl.cdiv(I, BLOCK_K)
    acc = tl.zeros([KP, BLOCK_N], dtype=tl.float32)
    first = 0
    if PDL:  # the first weights are in flight while gate/up finishes
        w = _down_weights(w_ptr, ws_ptr, e, held, t0, 0, steps, offs_n, offs_k, H, I, stride_we, stride_wn,
                          stride_wse, stride_wsn, W_SCALE, BLOCK_N, BLOCK_K)
        pdl_wait()
        trace_mark(trace_ptr, 1, TRACE)
        acc = _down_tile_step(act_ptr, w, acc, 0, steps, t0, r, held, e, t, offs_n, offs_k, offs_g, ws_ptr,
                              b_ptr, tw_ptr, shared_ptr, out_ptr, H, I, R, stride_wse, stride_wsn, stride_s,
                              stride_o, KP, W_SCALE, SPLIT_K, ACTIVATION, HAS_BIAS, HAS_SHARED, BLOCK_N, BLOCK_K, TILES,
                              FP16_PRODUCTS, SCALE_ROWS)
        first = 1
    else:
        trace_mark(trace_ptr, 1, TRACE)
    for it in tl.range(first, TILES * steps, num_stages=STAGES):
        w = _down_weights(w_ptr, ws_ptr, e, held, t0, it, steps, offs_n, offs_k, H, I, stride_we, stride_wn,
                          stride_wse, stride_wsn, W_SCALE, BLOCK_N, BLOCK_K)
        acc = _down_tile_step(act_ptr, w, acc, it, steps, t0, r, held, e, t, offs_n, offs_k, offs_g, ws_ptr,
                              b_ptr, tw_ptr, shared_ptr, out_ptr, H, I, R, stride_wse, stride_wsn, stride_s,
                              stride_o, KP, W_SCALE, SPLIT_K, ACTIVATION, HAS_BIAS, HAS_SHARED, BLOCK_N, BLOCK_K, TILES,
                              FP16_PRODUCTS, SCALE_ROWS)
    if TILES == 1:
        n = t0 * BLOCK_N + offs_n
        _combine_token(acc, r, held, e, t, n, n < H, ws_ptr, b_ptr, tw_ptr, shared_ptr, out_ptr, H, stride_s, stride_o,
                       W_SCALE, HAS_BIAS, HAS_SHARED)
    trace_end(trace_ptr, TRACE)


@triton.jit
def route_down_mma_kernel(
        act_ptr, w_ptr, ws_ptr, b_ptr, ids_ptr, tw_ptr, shared_ptr, out_ptr,
        H, I, R, expert_offset, num_local, stride_we, stride_wn, stride_wse, stride_wsn, stride_s, stride_o,
        TOPK: tl.constexpr, W_SCALE: tl.constexpr, SPLIT_K: tl.constexpr, HAS_SHARED: tl.constexpr,
        ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
        PDL: tl.constexpr = False, trace_ptr=None, TRACE: tl.constexpr = False):
    """route_down_kernel (same output) on the tensor cores, for FP8 weights: the [BLOCK_N,
    BLOCK_K] tiles of the token's k experts are stacked into one [k*BLOCK_N, BLOCK_K] MMA
    operand and multiplied by the token's k activation rows (the N side, padded to 16); route
    j's result is column j of row block j.  Weights are upcast to fp16 (one conversion per two
    weights) and each step's fp32 activation rows go to fp16 under a power-of-two scale per row
    (``_fp16_rows``), applied back to the step's partial.  Block scales need BLOCK_K 128."""
    trace_mark(trace_ptr, 0, TRACE)
    KP: tl.constexpr = triton.next_power_of_2(TOPK)
    NC: tl.constexpr = 16 if KP < 16 else KP
    pid = tl.program_id(0)
    t = pid % (R // TOPK)
    n0 = (pid // (R // TOPK)) * BLOCK_N
    # stacked rows: route j = row // BLOCK_N, output column n0 + row % BLOCK_N
    row = tl.arange(0, KP * BLOCK_N)
    j_row = row // BLOCK_N
    n_row = n0 + row % BLOCK_N
    gid_row = tl.load(ids_ptr + t * TOPK + j_row, mask=j_row < TOPK, other=-1)
    held_row = is_held(gid_row, expert_offset, num_local)
    e_row = tl.where(held_row, gid_row - expert_offset, 0).to(tl.int64)
    row_ok = held_row & (n_row < H)
    w_rows = w_ptr + e_row[:, None] * stride_we + n_row[:, None].to(tl.int64) * stride_wn
    r_c, held_c, _ = _token_routes(ids_ptr, t, expert_offset, num_local, TOPK, NC)  # activation rows: the N side
    offs_k = tl.arange(0, BLOCK_K)
    if PDL:
        pdl_wait()
    trace_mark(trace_ptr, 1, TRACE)
    acc = tl.zeros([KP * BLOCK_N, NC], dtype=tl.float32)
    for k0 in range(0, I, BLOCK_K):
        kk = k0 + offs_k
        a16, sa = _fp16_rows(_load_act(act_ptr, r_c, held_c, kk, I, R, SPLIT_K, ACTIVATION))
        w = tl.load(w_rows + kk[None, :], mask=row_ok[:, None] & (kk < I)[None, :], other=0.0).to(tl.float16)
        part = tl.dot(w, tl.trans(a16)) * sa[None, :]
        if W_SCALE == 2:
            s = tl.load(ws_ptr + e_row * stride_wse + (n_row // 128) * stride_wsn + k0 // 128, mask=row_ok, other=0.0)
            part = part * s[:, None]
        acc += part
    d = tl.reshape(acc, (KP, BLOCK_N, NC))
    own = tl.arange(0, NC)[None, None, :] == tl.arange(0, KP)[:, None, None]
    y = tl.sum(tl.where(own, d, 0.0), axis=2)  # [KP, BLOCK_N]
    r, held, e = _token_routes(ids_ptr, t, expert_offset, num_local, TOPK, KP)
    n = n0 + tl.arange(0, BLOCK_N)
    _combine_token(y, r, held, e, t, n, n < H, ws_ptr, b_ptr, tw_ptr, shared_ptr, out_ptr, H, stride_s, stride_o,
                   W_SCALE, HAS_BIAS, HAS_SHARED)
    trace_end(trace_ptr, TRACE)
