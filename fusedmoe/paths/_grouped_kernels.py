"""Triton kernels of the grouped (sorted-block) path.

Both GEMMs run one program per (live block of BLOCK_M routes of one expert, tile of N); rows
are read through the plan (``sorted_routes``), never gathered into a copy.  Programs past
``num_blocks`` (the grid is sized by an upper bound) exit at once.  With TAIL_M > 0 a block
holding at most TAIL_M routes (an expert's last block) runs a TAIL_M-row tile instead, in the
same launch (``GroupedConfig.tail_m``).

Scales (W_SCALE): 0 none, 1 one fp32 per expert (applied once at the end), 2 one fp32 per
128x128 weight block (applied per K step), 3 FP4 weights (w4a8) with an E8M0 exponent per row
per 32 columns: each K step's rows become e4m3 relative to the row's largest exponent in the
step, which scales the step's MMA sum per row (``_fp4_kernels.fp4_e4m3_step``).  A_SCALED: the
A operand is e4m3 with one fp32 scale per row per 128 columns (applied per K step, so each step
starts a fresh MMA sum).
Gate/up also takes A_SCALED == ROW_SCALED: one scale per row (fp8_tensor's x), so with
W_SCALE 0 or 1 the MMA sums go into the accumulator unscaled and both scales apply once at
the end (the FP8 sums are still promoted to fp32 every PROMOTE_K columns).  Per-step
scales need BLOCK_K dividing 128.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .._epilogue_kernels import glu, quantize_group
from .._pdl import pdl_enter
from ._fp4_kernels import fp4_e4m3_step


# FP8 x FP8 wgmma adds its products to the accumulator with less than fp32 precision (about
# 14 significant bits); promoting into a plain fp32 sum every PROMOTE_K columns (a kernel
# constexpr, GroupedConfig.fp8_promote_k) bounds the loss.  Chained over 128 columns, grouped
# FP8 missed rel-L2 0.5% (0.54-0.60% on the H200); with a fresh sum per 64 it reached 0.45% at
# most.  The launcher always passes GroupedConfig.fp8_promote_k (policy.grouped_promote_k:
# 64 below M=512, 128 from it); this default, 32, is what a direct compile (compile_check) gets.
# PROMOTE_K = 0 never promotes: Triton's own sm_90 default (max_num_imprecise_acc 2^30), the
# accumulation vLLM's FP8 kernel runs with; an opt-in that trades accuracy for time at large M.
FP8_PROMOTE_K = tl.constexpr(32)
ROW_SCALED = tl.constexpr(2)  # A_SCALED of the gate/up kernel: one activation scale per row


@triton.jit
def _accumulate(acc, a, w, sa, sw, A_SCALED: tl.constexpr, W_SCALE: tl.constexpr, SWAP_AB: tl.constexpr,
                PROMOTE_K: tl.constexpr):
    """acc + a . w^T ([BLOCK_M, N]; its transpose with SWAP_AB) for one K step, with the step's
    scales: sa per A row (A_SCALED), sw per W row or one for the tile (W_SCALE 2 or 3).  Scaled
    steps start a fresh MMA accumulator; FP8 products are promoted to fp32 every PROMOTE_K
    columns, never with PROMOTE_K == 0 (16-bit operands ignore the limit)."""
    if A_SCALED or W_SCALE >= 2:
        if SWAP_AB:
            part = tl.dot(w, tl.trans(a), max_num_imprecise_acc=PROMOTE_K if PROMOTE_K > 0 else None)
        else:
            part = tl.dot(a, tl.trans(w), max_num_imprecise_acc=PROMOTE_K if PROMOTE_K > 0 else None)
        if A_SCALED:
            part = part * (sa[None, :] if SWAP_AB else sa[:, None])
        if W_SCALE >= 2:
            part = part * (sw[:, None] if SWAP_AB else sw[None, :])
        acc = acc + part
    elif SWAP_AB:
        acc = tl.dot(w, tl.trans(a), acc, max_num_imprecise_acc=PROMOTE_K if PROMOTE_K > 0 else None)
    else:
        acc = tl.dot(a, tl.trans(w), acc, max_num_imprecise_acc=PROMOTE_K if PROMOTE_K > 0 else None)
    return acc


@triton.jit
def expert_tile(a_ptr, a_rows, a_ok, stride_a, as_ptr, stride_as,
                w_ptr, w_rows, w_ok, stride_wn, ws_ptr, s_rows, stride_wsn, K,
                A_SCALED: tl.constexpr, W_SCALE: tl.constexpr, SWAP_AB: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PROMOTE_K: tl.constexpr):
    """acc[m, n] = sum_k A[a_rows[m], k] * W[w_rows[n], k] (scaled), fp32 [BLOCK_M, BLOCK_N].

    ``w_ptr``/``ws_ptr`` already point at the expert; ``s_rows`` is the scale-block row of
    each column (W_SCALE == 2; FP4 exponents, W_SCALE == 3, are per weight row).  SWAP_AB
    computes the transposed product W . A^T (seed 001): the weight rows fill the MMA's M side
    and the few routes its N side, so BLOCK_M = 16 or 32 still runs on wgmma (which needs M >=
    64 per warpgroup); the tile is transposed back."""
    offs_k = tl.arange(0, BLOCK_K)
    a_base = a_ptr + a_rows[:, None] * stride_a
    w_base = w_ptr + w_rows[:, None].to(tl.int64) * stride_wn
    fp4_rows = ws_ptr + w_rows[:, None].to(tl.int64) * stride_wsn
    acc = tl.zeros((BLOCK_N, BLOCK_M) if SWAP_AB else (BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = offs_k < K - k0
        a = tl.load(a_base + (k0 + offs_k)[None, :], mask=a_ok[:, None] & k_ok[None, :], other=0.0)
        if W_SCALE == 3:
            w, sw = fp4_e4m3_step(w_base, fp4_rows, k0, K, w_ok[:, None], BLOCK_K)
        else:
            w = tl.load(w_base + (k0 + offs_k)[None, :], mask=w_ok[:, None] & k_ok[None, :], other=0.0)
            sw = tl.load(ws_ptr + s_rows * stride_wsn + k0 // 128, mask=w_ok, other=0.0) if W_SCALE == 2 else 0.0
        sa = tl.load(as_ptr + a_rows * stride_as + k0 // 128, mask=a_ok, other=0.0) if A_SCALED else 0.0
        acc = _accumulate(acc, a, w, sa, sw, A_SCALED, W_SCALE, SWAP_AB, PROMOTE_K)
    return tl.trans(acc) if SWAP_AB else acc


@triton.jit
def gate_up_tiles(a_ptr, a_rows, a_ok, stride_a, as_ptr, stride_as,
                  w_ptr, n0, I, stride_wn, ws_ptr, stride_wsn, K,
                  A_SCALED: tl.constexpr, W_SCALE: tl.constexpr, SWAP_AB: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PROMOTE_K: tl.constexpr):
    """(gate, up), fp32 [BLOCK_M, BLOCK_N] each: expert_tile over the gate rows n = n0 + [0,
    BLOCK_N) and the up rows I + n, sharing each step's A tile.  Two accumulators instead of
    one 2*BLOCK_N wide keep one partial alive at a time, half as wide.  Block scales need
    128 % BLOCK_N == 0: a tile's rows then share one scale per step, folded into the per-row
    activation scale (one multiply per partial element); FP4 rows (W_SCALE 3) scale per row.
    ROW_SCALED activations are not scaled here (the caller applies their one scale per row):
    without block scales each step's MMA sums go into the accumulator with no per-step multiply."""
    offs_k = tl.arange(0, BLOCK_K)
    n = n0 + tl.arange(0, BLOCK_N)
    n_ok = n < I
    a_base = a_ptr + a_rows[:, None] * stride_a
    g_base = w_ptr + n[:, None].to(tl.int64) * stride_wn
    u_base = g_base + I * stride_wn
    g_scale = ws_ptr + (n0 // 128) * stride_wsn
    u_scale = ws_ptr + (tl.cdiv(I, 128) + n0 // 128) * stride_wsn
    g_fp4 = ws_ptr + n[:, None].to(tl.int64) * stride_wsn  # W_SCALE 3: exponents per row
    u_fp4 = g_fp4 + I * stride_wsn
    shape: tl.constexpr = (BLOCK_N, BLOCK_M) if SWAP_AB else (BLOCK_M, BLOCK_N)
    gate = tl.zeros(shape, dtype=tl.float32)
    up = tl.zeros(shape, dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = offs_k < K - k0
        a = tl.load(a_base + (k0 + offs_k)[None, :], mask=a_ok[:, None] & k_ok[None, :], other=0.0)
        if A_SCALED == 1:
            sa = tl.load(as_ptr + a_rows * stride_as + k0 // 128, mask=a_ok, other=0.0)
        else:
            sa = tl.full([BLOCK_M], 1.0, tl.float32)
        if W_SCALE == 3:
            w_g, s_g = fp4_e4m3_step(g_base, g_fp4, k0, K, n_ok[:, None], BLOCK_K)
            w_u, s_u = fp4_e4m3_step(u_base, u_fp4, k0, K, n_ok[:, None], BLOCK_K)
            gate = _accumulate(gate, a, w_g, sa, s_g, A_SCALED == 1, 3, SWAP_AB, PROMOTE_K)
            up = _accumulate(up, a, w_u, sa, s_u, A_SCALED == 1, 3, SWAP_AB, PROMOTE_K)
        else:
            w_mask = n_ok[:, None] & k_ok[None, :]
            w_g = tl.load(g_base + (k0 + offs_k)[None, :], mask=w_mask, other=0.0)
            w_u = tl.load(u_base + (k0 + offs_k)[None, :], mask=w_mask, other=0.0)
            if W_SCALE == 2:
                gate = _accumulate(gate, a, w_g, sa * tl.load(g_scale + k0 // 128), 0.0, True, 0, SWAP_AB,
                                   PROMOTE_K)
                up = _accumulate(up, a, w_u, sa * tl.load(u_scale + k0 // 128), 0.0, True, 0, SWAP_AB, PROMOTE_K)
            else:
                gate = _accumulate(gate, a, w_g, sa, 0.0, A_SCALED == 1, 0, SWAP_AB, PROMOTE_K)
                up = _accumulate(up, a, w_u, sa, 0.0, A_SCALED == 1, 0, SWAP_AB, PROMOTE_K)
    if SWAP_AB:
        gate = tl.trans(gate)
        up = tl.trans(up)
    return gate, up


@triton.jit
def _program_block(block_expert_ptr, num_blocks_ptr, N, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """This program's (expert, block, N tile).  Programs walk groups of GROUP_M blocks: within
    a group the blocks change fastest, so the blocks of one expert read each weight tile back
    to back (from L2 after the first); GROUP_M = 1 is block pid // tiles, tile pid % tiles.
    Expert -1 when the block is past num_blocks or holds no held route."""
    pid = tl.program_id(0)
    num_n = tl.cdiv(N, BLOCK_N)
    if GROUP_M == 1:
        b = pid // num_n
        nt = pid % num_n
    else:
        per_group = GROUP_M * num_n
        first = (pid // per_group) * GROUP_M
        size = tl.minimum(tl.num_programs(0) // num_n - first, GROUP_M)
        b = first + (pid % per_group) % size
        nt = (pid % per_group) // size
    live = b < tl.load(num_blocks_ptr)
    return tl.load(block_expert_ptr + b, mask=live, other=-1), b, nt


@triton.jit
def _is_tail(routes_ptr, b, BLOCK_M: tl.constexpr, TAIL_M: tl.constexpr):
    """Whether live block b holds at most TAIL_M routes (its slot TAIL_M is padding): an
    expert's last block, or a no-permute block.  A block's routes fill its first slots."""
    return tl.load(routes_ptr + b * BLOCK_M + TAIL_M) < 0


@triton.jit
def grouped_gate_up_kernel(
        x_ptr, xs_ptr, w_ptr, ws_ptr, b_ptr, routes_ptr, block_expert_ptr, num_blocks_ptr, act_ptr, acts_ptr,
        H, I, TOPK, stride_x, stride_xs, stride_we, stride_wn, stride_wse, stride_wsn, stride_act, stride_acts,
        A_SCALED: tl.constexpr, W_SCALE: tl.constexpr, QUANT_OUT: tl.constexpr, SWAP_AB: tl.constexpr,
        ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr,
        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
        PROMOTE_K: tl.constexpr = FP8_PROMOTE_K, TAIL_M: tl.constexpr = 0, PDL: tl.constexpr = False):
    """act[r, n] = act(x[tok(r)] . W13[e, n] + b[e, n]) * (x[tok(r)] . W13[e, I + n] + b[e, I + n])
    for the routes r of one block and n in one BLOCK_N tile of I (bias b [E, 2I] if HAS_BIAS);
    with QUANT_OUT (BLOCK_N == 128) act is e4m3 with the tile's per-row scale in acts[r, tile].
    x's scales: A_SCALED 1 per row per 128 columns (xs[tok, k // 128]), ROW_SCALED per row
    (xs[tok, 0]).  TAIL_M > 0 (< BLOCK_M): a block of at most TAIL_M routes runs a TAIL_M-row
    tile (swapped below 64 rows) instead of padding the MMA to BLOCK_M rows.  PDL: ``pdl_enter``."""
    pdl_enter(PDL)
    e, b, nt = _program_block(block_expert_ptr, num_blocks_ptr, I, BLOCK_N, GROUP_M)
    if e < 0:
        return
    # The one-tile call stands twice: under a compile-time TAIL_M > 0 only, so that TAIL_M == 0
    # compiles no tail tile (a `tail = False` flag tested at run time still builds both).
    if TAIL_M > 0:
        if _is_tail(routes_ptr, b, BLOCK_M, TAIL_M):
            _gate_up_rows(x_ptr, xs_ptr, w_ptr, ws_ptr, b_ptr, routes_ptr + b * BLOCK_M, e, nt, act_ptr, acts_ptr,
                          H, I, TOPK, stride_x, stride_xs, stride_we, stride_wn, stride_wse, stride_wsn,
                          stride_act, stride_acts, A_SCALED, W_SCALE, QUANT_OUT, TAIL_M < 64, ACTIVATION, HAS_BIAS,
                          TAIL_M, BLOCK_N, BLOCK_K, PROMOTE_K)
        else:
            _gate_up_rows(x_ptr, xs_ptr, w_ptr, ws_ptr, b_ptr, routes_ptr + b * BLOCK_M, e, nt, act_ptr, acts_ptr,
                          H, I, TOPK, stride_x, stride_xs, stride_we, stride_wn, stride_wse, stride_wsn,
                          stride_act, stride_acts, A_SCALED, W_SCALE, QUANT_OUT, SWAP_AB, ACTIVATION, HAS_BIAS,
                          BLOCK_M, BLOCK_N, BLOCK_K, PROMOTE_K)
    else:
        _gate_up_rows(x_ptr, xs_ptr, w_ptr, ws_ptr, b_ptr, routes_ptr + b * BLOCK_M, e, nt, act_ptr, acts_ptr,
                      H, I, TOPK, stride_x, stride_xs, stride_we, stride_wn, stride_wse, stride_wsn,
                      stride_act, stride_acts, A_SCALED, W_SCALE, QUANT_OUT, SWAP_AB, ACTIVATION, HAS_BIAS,
                      BLOCK_M, BLOCK_N, BLOCK_K, PROMOTE_K)


@triton.jit
def _gate_up_rows(
        x_ptr, xs_ptr, w_ptr, ws_ptr, b_ptr, block_routes_ptr, e, nt, act_ptr, acts_ptr,
        H, I, TOPK, stride_x, stride_xs, stride_we, stride_wn, stride_wse, stride_wsn, stride_act, stride_acts,
        A_SCALED: tl.constexpr, W_SCALE: tl.constexpr, QUANT_OUT: tl.constexpr, SWAP_AB: tl.constexpr,
        ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr,
        ROWS: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PROMOTE_K: tl.constexpr):
    """grouped_gate_up_kernel's tile for the routes block_routes_ptr[0:ROWS] (-1: padding) of
    expert e and N tile nt."""
    r = tl.load(block_routes_ptr + tl.arange(0, ROWS))
    valid = r >= 0
    rows = tl.where(valid, r // TOPK, 0).to(tl.int64)
    w_e = w_ptr + e.to(tl.int64) * stride_we
    n = nt * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = n < I
    if A_SCALED or W_SCALE == 2:  # FP8: gate and up in two accumulators, each half as wide
        gate, up = gate_up_tiles(x_ptr, rows, valid, stride_x, xs_ptr, stride_xs, w_e, nt * BLOCK_N, I, stride_wn,
                                 ws_ptr + e * stride_wse, stride_wsn, H, A_SCALED, W_SCALE, SWAP_AB,
                                 ROWS, BLOCK_N, BLOCK_K, PROMOTE_K)
    else:  # one chained MMA over the gate and up rows together: [ROWS, 2*BLOCK_N]
        j = tl.arange(0, 2 * BLOCK_N)
        rows_gu = (j // BLOCK_N) * I + nt * BLOCK_N + j % BLOCK_N
        acc = expert_tile(x_ptr, rows, valid, stride_x, xs_ptr, stride_xs, w_e, rows_gu,
                          nt * BLOCK_N + j % BLOCK_N < I, stride_wn, ws_ptr, j, stride_wsn, H,  # no block scales
                          A_SCALED, W_SCALE, SWAP_AB, ROWS, 2 * BLOCK_N, BLOCK_K, PROMOTE_K)
        gate, up = tl.split(tl.permute(tl.reshape(acc, (ROWS, 2, BLOCK_N)), (0, 2, 1)))
    if A_SCALED == ROW_SCALED:
        sx = tl.load(xs_ptr + rows * stride_xs, mask=valid, other=0.0)[:, None]
        gate = gate * sx
        up = up * sx
    if W_SCALE == 1:
        gate = gate * tl.load(ws_ptr + e)
        up = up * tl.load(ws_ptr + e)
    if HAS_BIAS:
        b = b_ptr + e.to(tl.int64) * 2 * I + n
        gate += tl.load(b, mask=n_ok, other=0.0)[None, :]
        up += tl.load(b + I, mask=n_ok, other=0.0)[None, :]
    h = glu(gate, up, ACTIVATION)
    ok = valid[:, None] & n_ok[None, :]
    r64 = tl.where(valid, r, 0).to(tl.int64)
    o_ptrs = act_ptr + r64[:, None] * stride_act + n[None, :]
    if QUANT_OUT:
        q, s = quantize_group(h, ok)
        tl.store(o_ptrs, q, mask=ok)
        tl.store(acts_ptr + r64 * stride_acts + nt, s, mask=valid)
    else:
        tl.store(o_ptrs, h.to(act_ptr.dtype.element_ty), mask=ok)


@triton.jit
def grouped_down_kernel(
        act_ptr, acts_ptr, w_ptr, ws_ptr, b_ptr, routes_ptr, block_expert_ptr, num_blocks_ptr, y_ptr,
        H, I, stride_act, stride_acts, stride_we, stride_wn, stride_wse, stride_wsn, stride_y,
        A_SCALED: tl.constexpr, W_SCALE: tl.constexpr, SWAP_AB: tl.constexpr, HAS_BIAS: tl.constexpr,
        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
        PROMOTE_K: tl.constexpr = FP8_PROMOTE_K, TAIL_M: tl.constexpr = 0, PDL: tl.constexpr = False):
    """y[r, n] = act[r] . W2[e, n] (+ b[e, n], b [E, H] if HAS_BIAS) for the routes r of one block
    and n in one BLOCK_N tile of H; TAIL_M and PDL as in grouped_gate_up_kernel."""
    pdl_enter(PDL)
    e, b, nt = _program_block(block_expert_ptr, num_blocks_ptr, H, BLOCK_N, GROUP_M)
    if e < 0:
        return
    if TAIL_M > 0:
        if _is_tail(routes_ptr, b, BLOCK_M, TAIL_M):
            _down_rows(act_ptr, acts_ptr, w_ptr, ws_ptr, b_ptr, routes_ptr + b * BLOCK_M, e, nt, y_ptr,
                       H, I, stride_act, stride_acts, stride_we, stride_wn, stride_wse, stride_wsn, stride_y,
                       A_SCALED, W_SCALE, TAIL_M < 64, HAS_BIAS, TAIL_M, BLOCK_N, BLOCK_K, PROMOTE_K)
        else:
            _down_rows(act_ptr, acts_ptr, w_ptr, ws_ptr, b_ptr, routes_ptr + b * BLOCK_M, e, nt, y_ptr,
                       H, I, stride_act, stride_acts, stride_we, stride_wn, stride_wse, stride_wsn, stride_y,
                       A_SCALED, W_SCALE, SWAP_AB, HAS_BIAS, BLOCK_M, BLOCK_N, BLOCK_K, PROMOTE_K)
    else:
        _down_rows(act_ptr, acts_ptr, w_ptr, ws_ptr, b_ptr, routes_ptr + b * BLOCK_M, e, nt, y_ptr,
                   H, I, stride_act, stride_acts, stride_we, stride_wn, stride_wse, stride_wsn, stride_y,
                   A_SCALED, W_SCALE, SWAP_AB, HAS_BIAS, BLOCK_M, BLOCK_N, BLOCK_K, PROMOTE_K)


@triton.jit
def _down_rows(act_ptr, acts_ptr, w_ptr, ws_ptr, b_ptr, block_routes_ptr, e, nt, y_ptr,
               H, I, stride_act, stride_acts, stride_we, stride_wn, stride_wse, stride_wsn, stride_y,
               A_SCALED: tl.constexpr, W_SCALE: tl.constexpr, SWAP_AB: tl.constexpr, HAS_BIAS: tl.constexpr,
               ROWS: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PROMOTE_K: tl.constexpr):
    """grouped_down_kernel's tile for the routes block_routes_ptr[0:ROWS] (-1: padding) of
    expert e and N tile nt."""
    r = tl.load(block_routes_ptr + tl.arange(0, ROWS))
    valid = r >= 0
    r64 = tl.where(valid, r, 0).to(tl.int64)
    n = nt * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = n < H
    acc = expert_tile(act_ptr, r64, valid, stride_act, acts_ptr, stride_acts,
                      w_ptr + e.to(tl.int64) * stride_we, n, n_ok, stride_wn,
                      ws_ptr + e * stride_wse, n // 128, stride_wsn, I,
                      A_SCALED, W_SCALE, SWAP_AB, ROWS, BLOCK_N, BLOCK_K, PROMOTE_K)
    if W_SCALE == 1:
        acc = acc * tl.load(ws_ptr + e)
    if HAS_BIAS:
        acc += tl.load(b_ptr + e.to(tl.int64) * H + n, mask=n_ok, other=0.0)[None, :]
    tl.store(y_ptr + r64[:, None] * stride_y + n[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=valid[:, None] & n_ok[None, :])


@triton.jit
def gather_plan_rows_kernel(a_ptr, as_ptr, routes_ptr, num_blocks_ptr, out_ptr, out_s_ptr, cols, TOPK,
                            stride_a, stride_out, BLOCK_M: tl.constexpr, BLOCK_C: tl.constexpr,
                            PDL: tl.constexpr = False):
    """x rows into plan order, for the Gluon GEMMs' TMA loads: out[p] = a[t], out_s[p] = as[t]
    for t = sorted_routes[p] // TOPK, zeros where sorted_routes[p] < 0 (a [M, cols], as [M]
    with unit stride; out [P, cols], out_s [P]).  Grid (plan blocks, column splits): program
    (b, s) copies block b's rows at the column chunks s, s + splits, ... of BLOCK_C; past
    num_blocks nothing.  PDL: ``pdl_enter``."""
    pdl_enter(PDL)
    b, split, splits = tl.program_id(0), tl.program_id(1), tl.num_programs(1)
    if b >= tl.load(num_blocks_ptr):
        return
    p = b * BLOCK_M + tl.arange(0, BLOCK_M)
    route = tl.load(routes_ptr + p)
    ok = route >= 0
    src = a_ptr + tl.where(ok, route // TOPK, 0).to(tl.int64)[:, None] * stride_a
    dst = out_ptr + p.to(tl.int64)[:, None] * stride_out
    for c0 in range(split * BLOCK_C, cols, splits * BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C)
        in_row = (c < cols)[None, :]
        tl.store(dst + c[None, :], tl.load(src + c[None, :], mask=ok[:, None] & in_row, other=0.0), mask=in_row)
    if split == 0:
        tl.store(out_s_ptr + p, tl.load(as_ptr + tl.where(ok, route // TOPK, 0), mask=ok, other=0.0))
