"""Triton helpers that read the w4a8 format's weights (``quant.quantize_fp4_groups``): E2M1
codes packed two per byte along K, one E8M0 exponent per 32 of them.

Decoding (``fp4_halves``): a code's magnitude bits (exponent 2 bits, mantissa 1) placed at
bits 2-4 of a byte and its sign at bit 7 make an e4m3 byte worth the code times 2^-6 exactly
(exponent field 0 is e4m3's subnormal range, as it is E2M1's).  On the GPU one inline-PTX
block turns 4 bytes (8 codes) into 8 fp16 values with two shifts, a few masks and four
e4m3-pair conversions, about 1.3 instructions per weight, where element-wise integer code
took about 10.  The interpreter, which runs no inline assembly, computes the same values with
integer operations on each code.

The GEMVs (``fp4_group_dots``) then multiply in packed fp16: each exponent group's 32
activation columns under a power-of-two scale that puts their largest magnitude in [4, 8),
16 products per lane pair summed in fp16 (at most 12 in magnitude), then fp32, times the
activation and weight scales.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .. import quant
from .._epilogue_kernels import INTERPRETING

FP4_GROUP = tl.constexpr(quant.FP4_GROUP)

# $4: 4 bytes, 8 codes (element 2j in the low nibble of byte j) -> $0 $1: the low nibbles' 4
# values as fp16 (elements 0, 2, 4, 6), $2 $3: the high nibbles' (1, 3, 5, 7), each code * 2^-6.
_FP4_TO_F16 = tl.constexpr("""
{
.reg .b32 lo, hi, t;
.reg .b16 l0, l1, h0, h1;
shl.b32 t, $4, 2;
and.b32 lo, t, 0x1C1C1C1C;
shl.b32 t, $4, 4;
and.b32 t, t, 0x80808080;
or.b32 lo, lo, t;
shr.b32 t, $4, 2;
and.b32 hi, t, 0x1C1C1C1C;
and.b32 t, $4, 0x80808080;
or.b32 hi, hi, t;
mov.b32 {l0, l1}, lo;
mov.b32 {h0, h1}, hi;
cvt.rn.f16x2.e4m3x2 $0, l0;
cvt.rn.f16x2.e4m3x2 $1, l1;
cvt.rn.f16x2.e4m3x2 $2, h0;
cvt.rn.f16x2.e4m3x2 $3, h1;
}
""")


@triton.jit
def _e2m1_times_2_pow_m6(code):
    """E2M1 codes (integer, 0..15) -> fp16 value * 2^-6 (the interpreter's form of the PTX):
    at bits 9-12 and 15 of an fp16 a code is worth its value * 2^-14, times 2^8 exactly."""
    bits = ((code & 8).to(tl.uint16) << 12) | ((code & 7).to(tl.uint16) << 9)
    return bits.to(tl.float16, bitcast=True) * 256.0


@triton.jit
def fp4_halves(packed):
    """packed [..., C] uint8 -> (lo, hi) fp16 [..., C]: the codes of elements 2j (low nibbles)
    and 2j + 1 (high nibbles), each worth its value * 2^-6 (exact)."""
    if INTERPRETING:
        lo = _e2m1_times_2_pow_m6(packed & 0xF)
        hi = _e2m1_times_2_pow_m6(packed >> 4)
    else:
        lo, hi = tl.inline_asm_elementwise(_FP4_TO_F16, "=r,=r,=r,=r,r", [packed], dtype=(tl.float16, tl.float16),
                                           is_pure=True, pack=4)
    return lo, hi


@triton.jit
def load_fp4_rows(w_rows, s_rows, k0, K, rows_ok, BLOCK_K: tl.constexpr):
    """Columns [k0, k0 + BLOCK_K) of FP4 weight rows: (packed [..., BLOCK_K/2] uint8, exponents
    [..., BLOCK_K/32] int32), zeros past K or where not rows_ok.  w_rows / s_rows [..., 1] point
    at each row's first byte / first exponent; k0 and BLOCK_K are multiples of 32, K is even."""
    kb = k0 // 2 + tl.arange(0, BLOCK_K // 2)
    # masks on kb and kg themselves (not 2 * kb < K): the compiler then sees runs of contiguous
    # bytes under one mask and loads them 16 at a time, where it loaded the bytes one by one
    packed = tl.load(w_rows + kb, mask=rows_ok & (kb < K // 2), other=0)
    kg = k0 // FP4_GROUP + tl.arange(0, BLOCK_K // FP4_GROUP)
    exps = tl.load(s_rows + kg, mask=rows_ok & (kg < tl.cdiv(K, FP4_GROUP)), other=0).to(tl.int32)
    return packed, exps


@triton.jit
def fp16_groups(v, N: tl.constexpr, G: tl.constexpr):
    """Activation rows v [N, 32 G] (fp32, columns in order) for the FP4 products, per exponent
    group: (even, odd) fp16 [N, G, 16], the group's even and odd columns each divided by the
    power of two that puts the group's largest magnitude in [4, 8), and that scale [N, G]
    (an all-tiny group, below 2^-124, is left unscaled and flushes)."""
    even, odd = tl.split(tl.reshape(v, (N, G, 16, 2)))
    amax = tl.maximum(tl.max(tl.abs(even), axis=2), tl.max(tl.abs(odd), axis=2))
    ex = (amax.to(tl.int32, bitcast=True) >> 23) & 0xFF  # amax = 2^(ex-127) * 1.f
    normal = ex > 2
    scale = tl.where(normal, (ex - 2) << 23, 127 << 23).to(tl.float32, bitcast=True)
    inv = tl.where(normal, (256 - ex) << 23, 127 << 23).to(tl.float32, bitcast=True)
    return (even * inv[:, :, None]).to(tl.float16), (odd * inv[:, :, None]).to(tl.float16), scale


@triton.jit
def fp4_group_dots(packed, exps, even, odd, scale, R: tl.constexpr, G: tl.constexpr):
    """Per-row dot products [R, G] of FP4 rows (packed [R, 16 G] uint8, exponents [R, G] int32)
    with one activation row (``fp16_groups`` of it: even, odd [G, 16] fp16, scale [G]), each
    group's products summed in fp16 per lane pair, then in fp32 times both scales."""
    lo, hi = fp4_halves(packed)
    prod = tl.reshape(lo, (R, G, 16)) * even[None, :, :] + tl.reshape(hi, (R, G, 16)) * odd[None, :, :]
    part = tl.sum(tl.sum(tl.reshape(prod, (R, G, 8, 2)), axis=2).to(tl.float32), axis=2)
    factor = ((exps + 6) << 23).to(tl.float32, bitcast=True)  # 2^(s - 127 + 6): the codes held 2^-6
    return part * factor * scale[None, :]


@triton.jit
def fp4_e4m3_step(w_rows, s_rows, k0, K, rows_ok, BLOCK_K: tl.constexpr):
    """One K step of FP4 weight rows [R] for an FP8 MMA: (e4m3 [R, BLOCK_K], fp32 scale [R]) with
    weight = e4m3 * scale, scale 2^(largest exponent of the row's step - 127).  Exact while no
    group of the step lies more than 8 binades below its row's largest (quant.FP4_SPAN: e4m3
    subnormals stop at 2^-9); a row whose exponents are all 0 scales by 0."""
    packed, exps = load_fp4_rows(w_rows, s_rows, k0, K, rows_ok, BLOCK_K)
    R: tl.constexpr = packed.shape[0]
    G: tl.constexpr = BLOCK_K // FP4_GROUP
    top = tl.max(exps, axis=1)
    # 2^(s - top + 6) in fp16 (the codes hold 2^-6), at least 2^-14
    rel = (tl.maximum(exps - top[:, None] + 6 + 15, 1) << 10).to(tl.int16).to(tl.float16, bitcast=True)
    lo, hi = fp4_halves(packed)
    lo = tl.reshape(tl.reshape(lo, (R, G, 16)) * rel[:, :, None], (R, BLOCK_K // 2))
    hi = tl.reshape(tl.reshape(hi, (R, G, 16)) * rel[:, :, None], (R, BLOCK_K // 2))
    w = tl.reshape(tl.join(lo, hi), (R, BLOCK_K)).to(tl.float8e4nv)
    return w, (top << 23).to(tl.float32, bitcast=True)


@triton.jit
def fp4_route_group_dots(packed, exps, even, odd, scale, KP: tl.constexpr, R: tl.constexpr, G: tl.constexpr):
    """``fp4_group_dots`` for KP routes at once, each with its own weight rows and activation row:
    packed [KP, R, 16 G], exps [KP, R, G], even / odd [KP, G, 16], scale [KP, G] -> [KP, R, G].
    (Gate/up keeps the two-dimensional form: called with KP = 1 it compiled to 1112 SASS
    instructions against 608, the leading unit axis costing layout shuffles.)"""
    lo, hi = fp4_halves(packed)
    prod = (tl.reshape(lo, (KP, R, G, 16)) * even[:, None, :, :]
            + tl.reshape(hi, (KP, R, G, 16)) * odd[:, None, :, :])
    part = tl.sum(tl.sum(tl.reshape(prod, (KP, R, G, 8, 2)), axis=3).to(tl.float32), axis=3)
    factor = ((exps + 6) << 23).to(tl.float32, bitcast=True)
    return part * factor * scale[:, None, :]
