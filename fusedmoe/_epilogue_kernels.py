"""Triton kernels of the element-wise stages: FP8 row(-group) quantisation, SwiGLU (optionally
fused with the quantisation of its output) and the top-k combine.

The @triton.jit helpers ``glu`` and ``quantize_group`` (``scale_of`` and ``to_e4m3``) are the
single definition of those formulas: every kernel that applies them (here, in the GEMM
epilogues, and in Gluon kernels, which can call them) calls these, so that the fused and the
separate kernels give bitwise equal results.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ._pdl import pdl_enter, pdl_wait
from ._runtime import interpreting

FP8_MAX = 448.0
# Whether kernels run in Triton's CPU interpreter, for the jit code of every kernel module: there
# the fp32 -> e4m3 cast mis-rounds (``to_e4m3`` rounds to the grid first; compiled for sm_90 the
# cast is one cvt.rn.satfinite.e4m3x2.f32 per two values, to nearest, ties to even, the same
# rounding in about a twentieth of the instructions), griddepcontrol cannot run, and inline PTX
# has no interpreter form.
INTERPRETING = tl.constexpr(interpreting())


@triton.jit
def round_to_e4m3_grid(v):
    """v (fp32, |v| <= 448) rounded to the nearest e4m3 value, ties to even, still fp32.

    Exact integer and power-of-two arithmetic, the same definition as
    fusedmoe.quant.round_to_e4m3: the later cast to e4m3 then has nothing to round, so the
    kernels equal the torch definition bit for bit under the interpreter, whose cast
    mis-rounds values that carry into the next binade (125.8 -> 64, Triton 3.6).  Compiled
    kernels leave the rounding to the cast (``to_e4m3``).  (Where 0.11% of bf16 activations
    once quantised differently on the H200, the quotient was the approximate ``/``, one ulp
    off exact midpoints; it is ``tl.div_rn`` now.)"""
    a = tl.abs(v)
    binade = tl.maximum((a.to(tl.int32, bitcast=True) >> 23) - 127, -6)  # floor(log2 a); -6: subnormals
    step = ((binade - 3 + 127) << 23).to(tl.float32, bitcast=True)      # 2^(binade-3), the grid step
    t = a * ((3 - binade + 127) << 23).to(tl.float32, bitcast=True)     # a / step, exact, t < 16
    f = tl.floor(t)
    odd = f - 2.0 * tl.floor(f * 0.5)
    up = (t - f > 0.5) | ((t - f == 0.5) & (odd == 1.0))
    r = tl.where(up, f + 1.0, f) * step
    sign = v.to(tl.int32, bitcast=True) & -2147483648  # keep the sign bit, of -0.0 too
    return (r.to(tl.int32, bitcast=True) | sign).to(tl.float32, bitcast=True)


# Gated activations, by the constexpr ACTIVATION of the kernels (fusedmoe.epilogue.ACTIVATIONS).
SILU, GELU_TANH, SWIGLU_OAI = tl.constexpr(0), tl.constexpr(1), tl.constexpr(2)
OAI_ALPHA, OAI_LIMIT = tl.constexpr(1.702), tl.constexpr(7.0)


@triton.jit
def glu(gate, up, ACTIVATION: tl.constexpr):
    """act(gate) * up in fp32.  SILU: gate * sigmoid(gate) * up.  GELU_TANH: the tanh GELU of
    gate times up.  SWIGLU_OAI (GPT-OSS): gate clamped above at 7, up to [-7, 7],
    gate * sigmoid(1.702 * gate) * (up + 1)."""
    gate = gate.to(tl.float32)
    up = up.to(tl.float32)
    if ACTIVATION == SILU:
        return tl.div_rn(gate, 1.0 + tl.exp(-gate)) * up
    elif ACTIVATION == GELU_TANH:
        z = 0.7978845608028654 * (gate + 0.044715 * gate * gate * gate)
        return gate * tl.div_rn(1.0, 1.0 + tl.exp(-2.0 * z)) * up  # 0.5 * (1 + tanh z) = sigmoid(2z)
    else:
        gate = tl.minimum(gate, OAI_LIMIT)
        up = tl.minimum(tl.maximum(up, -OAI_LIMIT), OAI_LIMIT)
        return tl.div_rn(gate, 1.0 + tl.exp(-OAI_ALPHA * gate)) * (up + 1.0)


@triton.jit
def to_e4m3(v, scale):
    """v [R, G] / scale [R] (IEEE quotient), clamped to +-448 and rounded to e4m3 (nearest, ties
    to even)."""
    q = tl.minimum(tl.maximum(tl.div_rn(v, scale[:, None]), -448.0), 448.0)
    if INTERPRETING:
        q = round_to_e4m3_grid(q)
    return q.to(tl.float8e4nv)


@triton.jit
def scale_of(amax):
    """amax / 448, or 1 for an all-zero group."""
    return tl.where(amax > 0, tl.div_rn(amax, 448.0), 1.0)


@triton.jit
def quantize_group(v, ok):
    """Quantise the rows of v [R, G] (one 128-group per row; ``ok`` masks missing columns) to
    e4m3 with scale = amax / 448 (1 for an all-zero group).  Returns (q [R, G], scale [R])."""
    scale = scale_of(tl.max(tl.where(ok, tl.abs(v), 0.0), axis=1))
    return to_e4m3(v, scale), scale


@triton.jit
def _quantize_rows_kernel(a_ptr, q_ptr, s_ptr, rows, cols, stride_a, stride_q, stride_s,
                          BLOCK_R: tl.constexpr, GROUP: tl.constexpr, PDL: tl.constexpr = False):
    """a [rows, cols] -> q e4m3 [rows, cols], s fp32 [rows, ceil(cols/GROUP)]; grid (row blocks, groups)."""
    pdl_enter(PDL)
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(1) * GROUP + tl.arange(0, GROUP)
    ok = (r[:, None] < rows) & (c[None, :] < cols)
    v = tl.load(a_ptr + r[:, None].to(tl.int64) * stride_a + c[None, :], mask=ok, other=0.0).to(tl.float32)
    q, s = quantize_group(v, ok)
    tl.store(q_ptr + r[:, None].to(tl.int64) * stride_q + c[None, :], q, mask=ok)
    tl.store(s_ptr + r.to(tl.int64) * stride_s + tl.program_id(1), s, mask=r < rows)


@triton.jit
def _quantize_whole_rows_kernel(a_ptr, q_ptr, s_ptr, rows, cols, stride_a, stride_q,
                                BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, PDL: tl.constexpr = False):
    """a [rows, cols] -> q e4m3 [rows, cols], s fp32 [rows]: one scale per row (the row's amax
    / 448), the same rounding as quantize_group; two passes over the row; grid (row blocks,)."""
    pdl_enter(PDL)
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    r_ok = r < rows
    a_row = a_ptr + r[:, None].to(tl.int64) * stride_a
    amax = tl.zeros([BLOCK_R], dtype=tl.float32)
    for c0 in range(0, cols, BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C)
        v = tl.load(a_row + c[None, :], mask=r_ok[:, None] & (c < cols)[None, :], other=0.0).to(tl.float32)
        amax = tl.maximum(amax, tl.max(tl.abs(v), axis=1))
    scale = scale_of(amax)
    for c0 in range(0, cols, BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C)
        ok = r_ok[:, None] & (c < cols)[None, :]
        v = tl.load(a_row + c[None, :], mask=ok, other=0.0).to(tl.float32)
        tl.store(q_ptr + r[:, None].to(tl.int64) * stride_q + c[None, :], to_e4m3(v, scale), mask=ok)
    tl.store(s_ptr + r, scale, mask=r_ok)


@triton.jit
def _swiglu_kernel(gu_ptr, out_ptr, s_ptr, rows, inter, stride_gu, stride_o, stride_s,
                   QUANT: tl.constexpr, ACTIVATION: tl.constexpr, BLOCK_R: tl.constexpr, GROUP: tl.constexpr):
    """gate_up [rows, 2I] -> act(gate) * up [rows, I]; with QUANT, e4m3 + per-128-group scales."""
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(1) * GROUP + tl.arange(0, GROUP)
    ok = (r[:, None] < rows) & (c[None, :] < inter)
    base = gu_ptr + r[:, None].to(tl.int64) * stride_gu + c[None, :]
    h = glu(tl.load(base, mask=ok, other=0.0), tl.load(base + inter, mask=ok, other=0.0), ACTIVATION)
    o_ptrs = out_ptr + r[:, None].to(tl.int64) * stride_o + c[None, :]
    if QUANT:
        q, s = quantize_group(h, ok)
        tl.store(o_ptrs, q, mask=ok)
        tl.store(s_ptr + r.to(tl.int64) * stride_s + tl.program_id(1), s, mask=r < rows)
    else:
        tl.store(o_ptrs, h.to(out_ptr.dtype.element_ty), mask=ok)


@triton.jit
def is_held(expert, expert_offset, num_local):
    """True where a global expert id belongs to this rank's window (never for -1)."""
    local = expert - expert_offset
    return (expert >= 0) & (local >= 0) & (local < num_local)


@triton.jit
def _combine_kernel(y_ptr, w_ptr, ids_ptr, shared_ptr, out_ptr, hidden, expert_offset, num_local,
                    stride_y, stride_s, stride_o,
                    TOPK: tl.constexpr, TOPK_PAD: tl.constexpr, HAS_SHARED: tl.constexpr, BLOCK_H: tl.constexpr,
                    PDL: tl.constexpr = False):
    """out[t] = sum_j w[t,j] * y[t*k+j] (+ shared[t]); routes not held are skipped.  Fixed order j = 0..k-1.

    With PDL (the last launch of a chain of ``pdl_enter`` kernels) the routing and shared[t],
    written before the chain began, are read before the wait for the grid that writes y; the
    next grid is not let launch early."""
    t = tl.program_id(0)
    h = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    h_ok = h < hidden
    j = tl.arange(0, TOPK_PAD)  # the token's routes, TOPK_PAD = next power of two >= TOPK
    r = t * TOPK + j
    held = is_held(tl.load(ids_ptr + r, mask=j < TOPK, other=-1), expert_offset, num_local)
    w = tl.where(held, tl.load(w_ptr + r, mask=held, other=0.0).to(tl.float32), 0.0)
    acc = tl.zeros([BLOCK_H], dtype=tl.float32)
    if HAS_SHARED:
        shared = tl.load(shared_ptr + t.to(tl.int64) * stride_s + h, mask=h_ok, other=0.0).to(tl.float32)
    if PDL:
        pdl_wait()
    for jj in tl.static_range(TOPK):
        rj = t * TOPK + jj
        held_j = tl.sum(tl.where(j == jj, held.to(tl.int32), 0), 0) > 0
        w_j = tl.sum(tl.where(j == jj, w, 0.0), 0)
        y = tl.load(y_ptr + rj.to(tl.int64) * stride_y + h, mask=h_ok & held_j, other=0.0).to(tl.float32)
        acc += w_j * y
    if HAS_SHARED:
        acc += shared
    tl.store(out_ptr + t.to(tl.int64) * stride_o + h, acc.to(out_ptr.dtype.element_ty), mask=h_ok)
