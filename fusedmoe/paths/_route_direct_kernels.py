"""Triton kernels of the route-direct path (decode): no plan, no sort.

gate/up: one program per (route, tile of BLOCK_N rows of I, K split).  The route's expert is
read straight from ``topk_ids``; the program streams the gate and up rows of its tile and
reduces them against x[token] (a GEMV: weights upcast to fp32 in registers, activations kept
in their input precision, "w8a16" for FP8).  With one K split it applies SwiGLU and writes
act [R, I] fp32; with several it writes raw partial sums [S, R, 2I] fp32 and the down kernel
reduces them and applies SwiGLU as it reads them (the split reduction costs no launch).

down + combine: one program per (token, tile of BLOCK_N rows of H); loops over the token's
routes in the fixed order j = 0..k-1, so the combine is deterministic and needs no position map.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .._epilogue_kernels import is_held, silu_mul


@triton.jit
def _gemv_step(w_ptrs, w_ok, v, ws_ptr, s_rows, stride_wsn, k0, W_SCALE: tl.constexpr):
    """sum_k W[n, k] * v[k] over one K step, fp32 [N]; block scales applied (W_SCALE == 2)."""
    w = tl.load(w_ptrs, mask=w_ok, other=0.0).to(tl.float32)
    part = tl.sum(w * v[None, :], axis=1)
    if W_SCALE == 2:
        part = part * tl.load(ws_ptr + s_rows * stride_wsn + k0 // 128)
    return part


@triton.jit
def route_gate_up_kernel(
        x_ptr, w_ptr, ws_ptr, ids_ptr, act_ptr,
        H, I, R, expert_offset, num_local, TOPK, stride_x, stride_we, stride_wn, stride_wse, stride_wsn,
        W_SCALE: tl.constexpr, SPLIT_K: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """SPLIT_K == 1: act[r, n] = SiLU(G_e x_t)[n] * (U_e x_t)[n]; else act[s, r, :] = partial
    [G_e x_t, U_e x_t] over the s-th K range.  e = ids[r] - expert_offset, t = r // TOPK."""
    pid = tl.program_id(0)
    num_n = tl.cdiv(I, BLOCK_N)
    r = pid // (num_n * SPLIT_K)
    rest = pid % (num_n * SPLIT_K)
    nt = rest // SPLIT_K
    s = rest % SPLIT_K
    gid = tl.load(ids_ptr + r)
    if not is_held(gid, expert_offset, num_local):
        return
    e = (gid - expert_offset).to(tl.int64)
    tok = (r // TOPK).to(tl.int64)
    j = tl.arange(0, 2 * BLOCK_N)
    half = j // BLOCK_N
    n = nt * BLOCK_N + j % BLOCK_N
    n_ok = n < I
    w_rows = (half * I + n).to(tl.int64)
    s_rows = half * tl.cdiv(I, 128) + n // 128
    k_per = tl.cdiv(tl.cdiv(H, SPLIT_K), BLOCK_K) * BLOCK_K
    k_lo = s * k_per
    k_hi = tl.minimum(H, k_lo + k_per)
    offs_k = tl.arange(0, BLOCK_K)
    w_base = w_ptr + e * stride_we + w_rows[:, None] * stride_wn
    ws_base = ws_ptr + e * stride_wse
    acc = tl.zeros([2 * BLOCK_N], dtype=tl.float32)
    for k0 in range(k_lo, k_hi, BLOCK_K):
        kk = k0 + offs_k
        k_ok = kk < k_hi
        v = tl.load(x_ptr + tok * stride_x + kk, mask=k_ok, other=0.0).to(tl.float32)
        acc += _gemv_step(w_base + kk[None, :], n_ok[:, None] & k_ok[None, :], v, ws_base, s_rows, stride_wsn,
                          k0, W_SCALE)
    if W_SCALE == 1:
        acc = acc * tl.load(ws_ptr + e)
    if SPLIT_K == 1:
        gate, up = tl.split(tl.permute(tl.reshape(acc, (2, BLOCK_N)), (1, 0)))
        cols = nt * BLOCK_N + tl.arange(0, BLOCK_N)
        tl.store(act_ptr + r.to(tl.int64) * I + cols, silu_mul(gate, up), mask=cols < I)
    else:
        base = act_ptr + (s.to(tl.int64) * R + r) * (2 * I)
        tl.store(base + w_rows, acc, mask=n_ok)


@triton.jit
def _load_act(act_ptr, r, kk, k_ok, I, R, SPLIT_K: tl.constexpr):
    """SwiGLU output of route r at columns kk, reducing the K-split partials if any."""
    if SPLIT_K == 1:
        return tl.load(act_ptr + r.to(tl.int64) * I + kk, mask=k_ok, other=0.0)
    gate = tl.zeros(kk.shape, dtype=tl.float32)
    up = tl.zeros(kk.shape, dtype=tl.float32)
    for s in tl.static_range(SPLIT_K):
        base = act_ptr + (r.to(tl.int64) + s * R) * (2 * I)
        gate += tl.load(base + kk, mask=k_ok, other=0.0)
        up += tl.load(base + I + kk, mask=k_ok, other=0.0)
    return silu_mul(gate, up)


@triton.jit
def route_down_kernel(
        act_ptr, w_ptr, ws_ptr, ids_ptr, tw_ptr, shared_ptr, out_ptr,
        H, I, R, expert_offset, num_local, stride_we, stride_wn, stride_wse, stride_wsn, stride_s, stride_o,
        TOPK: tl.constexpr, W_SCALE: tl.constexpr, SPLIT_K: tl.constexpr, HAS_SHARED: tl.constexpr,
        BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """out[t, n] = sum_j w[t,j] * (W2_e act_r)[n] (+ shared[t, n]), r = t*TOPK + j, over held routes."""
    pid = tl.program_id(0)
    num_n = tl.cdiv(H, BLOCK_N)
    t = pid // num_n
    n = (pid % num_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = n < H
    s_rows = n // 128
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for j in tl.static_range(TOPK):
        r = t * TOPK + j
        gid = tl.load(ids_ptr + r)
        if is_held(gid, expert_offset, num_local):
            e = (gid - expert_offset).to(tl.int64)
            w_base = w_ptr + e * stride_we + n[:, None].to(tl.int64) * stride_wn
            ws_base = ws_ptr + e * stride_wse
            part = tl.zeros([BLOCK_N], dtype=tl.float32)
            for k0 in range(0, I, BLOCK_K):
                kk = k0 + offs_k
                k_ok = kk < I
                v = _load_act(act_ptr, r, kk, k_ok, I, R, SPLIT_K)
                part += _gemv_step(w_base + kk[None, :], n_ok[:, None] & k_ok[None, :], v, ws_base, s_rows,
                                   stride_wsn, k0, W_SCALE)
            if W_SCALE == 1:
                part = part * tl.load(ws_ptr + e)
            acc += tl.load(tw_ptr + r).to(tl.float32) * part
    if HAS_SHARED:
        acc += tl.load(shared_ptr + t.to(tl.int64) * stride_s + n, mask=n_ok, other=0.0).to(tl.float32)
    tl.store(out_ptr + t.to(tl.int64) * stride_o + n, acc.to(out_ptr.dtype.element_ty), mask=n_ok)
