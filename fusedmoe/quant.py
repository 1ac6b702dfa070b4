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


def round_to_e4m3(v: torch.Tensor) -> torch.Tensor:
    """float32 v, |v| <= 448 -> the nearest e4m3 value (ties to even), still float32.

    Exact: the step of v's binade (2^(e-3), subnormals 2^-9) is a power of two, so v / step
    is exact and torch.round (half to even) picks the neighbour."""
    _, exp = torch.frexp(v)  # v = m * 2^exp, 0.5 <= |m| < 1
    step = torch.ldexp(torch.ones_like(v), (exp - 4).clamp(min=-9))
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


def dequantize_rows_grouped(q: torch.Tensor, scale: torch.Tensor, group: int = GROUP,
                            dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Inverse of :func:`quantize_rows_grouped`: [T, K] e4m3 + [T, G] scales -> [T, K] ``dtype``."""
    k = q.shape[1]
    return q.to(dtype) * scale.to(dtype).repeat_interleave(group, dim=1)[:, :k]


def fake_quantize_rows_grouped(a: torch.Tensor, group: int = GROUP) -> torch.Tensor:
    """Quantise then dequantise (float64): what a kernel's FP8 activation holds."""
    q, s = quantize_rows_grouped(a, group)
    return dequantize_rows_grouped(q, s, group)
