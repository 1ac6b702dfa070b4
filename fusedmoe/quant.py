"""FP8 (e4m3) quantisation helpers in torch: weights per tensor / per 128x128 block,
activations per row per 128-wide group along K, or per whole row (``x_group``).

These are the definitions the kernels reproduce and the reference replays:

    scale = amax / 448            (amax of the group; a group of zeros gets scale 1)
    q     = fp8(clamp(v / scale, -448, 448))    (round to nearest, ties to even)
    v'    = q * scale

The rounding to the e4m3 grid is done here explicitly (``round_to_e4m3``) rather than by
torch's float8 cast, so that the definition does not depend on how a torch build rounds ties:
with bf16 inputs, v / scale lands exactly on a midpoint for ~0.1% of elements.
"""

from __future__ import annotations

import torch

FP8_DTYPE = torch.float8_e4m3fn
FP8_MAX = 448.0
GROUP = 128  # activation group width and weight block edge


def _safe_scale(amax: torch.Tensor) -> torch.Tensor:
    """amax / 448 with zero groups mapped to scale 1 (their values quantise to 0).

    The divisor is a tensor on purpose: torch's CUDA kernel divides by a Python scalar as a
    multiplication by its reciprocal, which is 1 ulp off the correctly rounded quotient the
    kernels compute (tl.div_rn) for some amax; that flipped 0.1% of the x codes on the H200."""
    amax = amax.to(torch.float32)
    return torch.where(amax > 0, amax / torch.full_like(amax, FP8_MAX), torch.ones_like(amax))


def e4m3_step(v: torch.Tensor) -> torch.Tensor:
    """The spacing of the e4m3 values around each v (|v| <= 448), in v's dtype: 2^(e-3) in
    v's binade [2^e, 2^(e+1)), 2^-9 among the subnormals."""
    _, exp = torch.frexp(v)  # v = m * 2^exp, 0.5 <= |m| < 1
    return torch.ldexp(torch.ones_like(v), (exp - 4).clamp(min=-9))


def round_to_e4m3(v: torch.Tensor) -> torch.Tensor:
    """float32 v, |v| <= 448 -> the nearest e4m3 value (ties to even), still float32.

    Exact: the step of v's binade (``e4m3_step``) is a power of two, so v / step is exact and
    torch.round (half to even) picks the neighbour."""
    step = e4m3_step(v)
    return torch.round(v / step) * step


def _to_fp8(v: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return round_to_e4m3((v.to(torch.float32) / scale).clamp(-FP8_MAX, FP8_MAX)).to(FP8_DTYPE)


def _per_expert(quantize, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``quantize`` ([1, N, K] -> (e4m3, scale [1, ...])) applied one expert at a time: its
    float32 temporaries stay one expert's size (DeepSeek-V3's w13 is 15 GB in bf16; whole,
    its float32 quotient alone needed 28 GiB more)."""
    if w.shape[0] == 0:
        return quantize(w)
    q0, s0 = quantize(w[:1])
    q = q0.new_empty((w.shape[0], *q0.shape[1:]))
    scale = s0.new_empty((w.shape[0], *s0.shape[1:]))
    q[:1], scale[:1] = q0, s0
    for e in range(1, w.shape[0]):  # written in place: no second copy of the e4m3 weights
        q[e:e + 1], scale[e:e + 1] = quantize(w[e:e + 1])
    return q, scale


def quantize_fp8_per_expert(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """[E, N, K] float -> (e4m3 [E, N, K], fp32 scale [E]), one scale per expert."""
    def one(we):
        scale = _safe_scale(we.abs().amax(dim=(1, 2)))
        return _to_fp8(we, scale[:, None, None]), scale

    return _per_expert(one, w)


def _blocked(w: torch.Tensor, block: int) -> torch.Tensor:
    """Pad [E, N, K] with zeros to multiples of ``block`` and view as [E, nb, block, kb, block]."""
    e, n, k = w.shape
    nb, kb = -(-n // block), -(-k // block)
    padded = torch.zeros(e, nb * block, kb * block, dtype=torch.float32, device=w.device)
    padded[:, :n, :k] = w.to(torch.float32)
    return padded.view(e, nb, block, kb, block)


def quantize_fp8_blocks(w: torch.Tensor, block: int = GROUP) -> tuple[torch.Tensor, torch.Tensor]:
    """[E, N, K] float -> (e4m3 [E, N, K], fp32 scale [E, ceil(N/block), ceil(K/block)]).

    The last block along N or K may be ragged; its scale covers the rows/columns that exist.
    """
    _, n, k = w.shape

    def one(we):
        blocks = _blocked(we, block)
        scale = _safe_scale(blocks.abs().amax(dim=(2, 4)))
        q = round_to_e4m3((blocks / scale[:, :, None, :, None]).clamp(-FP8_MAX, FP8_MAX))
        q = q.reshape(we.shape[0], blocks.shape[1] * block, blocks.shape[3] * block)[:, :n, :k]
        return q.to(FP8_DTYPE).contiguous(), scale

    return _per_expert(one, w)


def expand_block_scales(scale: torch.Tensor, n: int, k: int, block: int = GROUP) -> torch.Tensor:
    """[E, nb, kb] block scales -> [E, n, k] per-element scales."""
    return scale.repeat_interleave(block, dim=1)[:, :n].repeat_interleave(block, dim=2)[:, :, :k]


def x_row_scaled(fmt: str) -> bool:
    """Whether the activations x entering the grouped gate/up GEMM take one scale per row: with
    one weight scale per expert (fp8_tensor), so the MMA needs no per-step rescale and both
    scales apply once at the end; with 128x128 weight blocks (fp8_block) x keeps one scale per
    128 columns, as the blocks."""
    return fmt == "fp8_tensor"


def x_group(fmt: str, cols: int) -> int:
    """Columns per scale of x entering the grouped gate/up GEMM (``x_row_scaled``)."""
    return max(cols, 1) if x_row_scaled(fmt) else GROUP


def quantize_rows_grouped(a: torch.Tensor, group: int = GROUP) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-row, per-``group``-column dynamic quantisation.

    a: [T, K] float -> (e4m3 [T, K], fp32 scale [T, ceil(K/group)]).
    """
    t, k = a.shape
    g = -(-k // group)
    padded = torch.zeros(t, g * group, dtype=torch.float32, device=a.device)
    padded[:, :k] = a.to(torch.float32)
    padded = padded.view(t, g, group)
    scale = _safe_scale(padded.abs().amax(dim=2))
    q = _to_fp8(padded, scale[:, :, None]).view(t, g * group)[:, :k].contiguous()
    return q, scale


def e4m3_flip_steps(a: torch.Tensor, group: int = GROUP, rel: float = 2.0 ** -9) -> torch.Tensor:
    """[T, K] float64: for each element of a [T, K] whose scaled value (a over its group's scale,
    as ``quantize_rows_grouped`` takes it) lies within ``rel`` of a midpoint between two
    neighbouring e4m3 values, relative to its magnitude, the distance between those two
    dequantised; 0 elsewhere.  A value that far from the float64 one may round the other way."""
    k = a.shape[1]
    _, scale = quantize_rows_grouped(a, group)
    scale = scale.to(torch.float64).repeat_interleave(group, dim=1)[:, :k]
    v = a.to(torch.float32).to(torch.float64).abs() / scale
    step = e4m3_step(v)
    t = v / step
    near = ((t - torch.floor(t) - 0.5).abs() * step <= rel * v) & (v < FP8_MAX) & (v > 0)
    return torch.where(near, step * scale, torch.zeros_like(v))


def dequantize_rows_grouped(q: torch.Tensor, scale: torch.Tensor, group: int = GROUP,
                            dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Inverse of :func:`quantize_rows_grouped`: [T, K] e4m3 + [T, G] scales -> [T, K] ``dtype``."""
    k = q.shape[1]
    return q.to(dtype) * scale.to(dtype).repeat_interleave(group, dim=1)[:, :k]


def fake_quantize_rows_grouped(a: torch.Tensor, group: int = GROUP) -> torch.Tensor:
    """Quantise then dequantise (float64): what a kernel's FP8 activation holds."""
    q, s = quantize_rows_grouped(a, group)
    return dequantize_rows_grouped(q, s, group)


# ---- FP4 (E2M1) weights with E8M0 group scales: the "w4a8" format ------------------------------
#
#     w = e2m1 * 2^(s - 127)     one uint8 exponent s per FP4_GROUP weights along K
#
# Two E2M1 codes per byte along K, element 2j in the low nibble of byte j (the MXFP4 layout
# of GPT-OSS checkpoints: their ``*_blocks`` [E, N, K/32, 16] are [E, N, K/2] bytes and their
# ``*_scales`` [E, N, K/32] these exponents).  A code is a sign bit and a magnitude of
# FP4_VALUES[code & 7].

FP4_GROUP = 32
FP4_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
# The grouped path multiplies FP4 weights on FP8 tensor cores: each K step's weights become e4m3
# relative to the step's largest group exponent, exact while no group of a 128-column block
# lies more than FP4_SPAN binades below the block's largest (e4m3 subnormals reach 2^-9 =
# 0.5 * 2^-8).  ``quantize_fp4_groups`` raises smaller exponents to that floor.
FP4_SPAN = 8
# Round to the nearest magnitude, ties to the even code: midpoints between FP4_VALUES, and
# whether a value exactly on one rounds up (to an even code).
_FP4_MIDPOINTS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)


def _fp4_codes(v: torch.Tensor) -> torch.Tensor:
    """float v with |v| <= 6 -> E2M1 codes (uint8, sign in bit 3), nearest value, ties to even."""
    mag = v.abs()
    code = torch.zeros(v.shape, dtype=torch.int32, device=v.device)
    for i, t in enumerate(_FP4_MIDPOINTS):
        code += (mag > t).to(torch.int32) + ((mag == t) & (i % 2 == 1)).to(torch.int32)
    code += torch.where((v < 0) & (code > 0), 8, 0).to(torch.int32)
    return code.to(torch.uint8)


def fp4_exponents(amax: torch.Tensor) -> torch.Tensor:
    """Smallest integer s with amax <= 6 * 2^s, per element of amax (float, > 0), exactly:
    amax = m * 2^e with 0.5 <= m < 1 gives e - 3 when m <= 0.75, else e - 2."""
    m, e = torch.frexp(amax)
    return torch.where(m <= 0.75, e - 3, e - 2).to(torch.int32)


def quantize_fp4_groups(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """[E, N, K] float, K even -> (packed E2M1 [E, N, K/2] uint8, E8M0 scales [E, N, ceil(K/32)] uint8).

    Each group's exponent is the smallest that holds its largest magnitude (no value
    saturates), raised to at most FP4_SPAN below the largest exponent of its 128-column block;
    an all-zero block takes exponent 0.  The last group may be ragged."""
    _, n, k = w.shape
    if k % 2:
        raise ValueError(f"w: expected an even K to pack two FP4 values per byte, got shape {list(w.shape)}")

    def one(we):
        groups = -(-k // FP4_GROUP)
        blocks = -(-groups // (GROUP // FP4_GROUP))
        padded = torch.zeros(we.shape[0], n, blocks * GROUP, dtype=torch.float32, device=we.device)
        padded[:, :, :k] = we.to(torch.float32)
        g = padded.view(we.shape[0], n, blocks * (GROUP // FP4_GROUP), FP4_GROUP)
        amax = g.abs().amax(dim=3)
        s = torch.where(amax > 0, fp4_exponents(amax.clamp(min=torch.finfo(torch.float32).tiny)), -127)
        per_block = s.view(we.shape[0], n, blocks, GROUP // FP4_GROUP)
        top = per_block.amax(dim=3, keepdim=True)
        s = torch.where(top == -127, 0, torch.maximum(per_block, top - FP4_SPAN)).clamp(-127, 127)
        s = s.view(we.shape[0], n, -1)
        codes = _fp4_codes(g / torch.ldexp(torch.ones_like(amax), s)[..., None]).view(we.shape[0], n, -1)[:, :, :k]
        packed = (codes[:, :, 0::2] | (codes[:, :, 1::2] << 4)).contiguous()
        return packed, (s[:, :, :groups] + 127).to(torch.uint8).contiguous()

    return _per_expert(one, w)


def dequantize_fp4_groups(packed: torch.Tensor, scales: torch.Tensor,
                          dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Inverse of :func:`quantize_fp4_groups`: [E, N, C] codes + [E, N, ceil(K/32)] exponents -> [E, N, 2C]
    (C = K/2, or rows zero-padded to whole groups, whose extra columns the caller slices off)."""
    codes = torch.stack([packed & 0xF, packed >> 4], dim=-1).flatten(-2).to(torch.int64)
    table = torch.tensor(FP4_VALUES, dtype=dtype, device=packed.device)
    values = table[codes & 7] * torch.where(codes & 8 > 0, -1.0, 1.0).to(dtype)
    k = codes.shape[-1]
    factor = torch.ldexp(torch.ones(scales.shape, dtype=dtype, device=scales.device), scales.to(torch.int32) - 127)
    return values * factor.repeat_interleave(FP4_GROUP, dim=-1)[..., :k]
