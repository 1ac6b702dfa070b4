"""L2 prefetch from a Triton kernel (``prefetch.global.L2``, any CUDA GPU): warm lines that a
later kernel will read, without holding registers or waiting for the data.  The interpreter
cannot run inline PTX; there the prefetch does nothing (it changes no value, only timing)."""

from __future__ import annotations

import triton
import triton.language as tl

from ._runtime import interpreting

_INTERPRETING = tl.constexpr(interpreting())
LINE_BYTES = 128  # one prefetch per L2 line
MAX_LINES = 512  # lines a program prefetches at once (its pointers live in registers)


@triton.jit
def prefetch_l2(ptrs, mask):
    """Prefetch into L2 the line holding each address of ``ptrs`` where ``mask`` holds."""
    if not _INTERPRETING:
        tl.inline_asm_elementwise(
            "{ .reg .pred p; setp.ne.b32 p, $2, 0; @p prefetch.global.L2 [$1]; mov.u32 $0, 0; }",
            "=r,l,r", [ptrs, mask.to(tl.int32)], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def prefetch_span_l2(base_ptr, lo, hi, LINES: tl.constexpr):
    """Prefetch into L2 the bytes [lo, hi) past ``base_ptr`` (any type), LINES lines a step."""
    base = base_ptr.to(tl.pointer_type(tl.int8))
    for start in range(lo, hi, LINES * 128):
        offs = start + tl.arange(0, LINES).to(tl.int64) * 128
        prefetch_l2(base + offs, offs < hi)
