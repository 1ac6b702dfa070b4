"""Per-program timelines of a kernel, for diagnosis (``scripts/decode_timeline.py``).

A kernel built with ``TRACE=True`` writes TRACE_FIELDS int64 per program into ``trace_ptr``
[programs, TRACE_FIELDS]:

    [0], [1], [2]  %globaltimer (ns): as the program starts, after its PDL wait (as [0]
                   without PDL), as it finishes its work (0 if it exits early: a route not held
                   here, or a tensor-core gate/up program that does not lead its group)
    [3]            the SM it ran on (%smid)
    [4], [5], [6]  %clock64 (the SM's cycles) at the same three points

%globaltimer is one clock for the whole GPU, so programs on different SMs compare; %clock64
counts cycles at finer grain, for durations within a program.  With ``TRACE=False`` (the
default) nothing is compiled in.  The interpreter cannot read the timers: it writes zeros
there, and the program index as the SM.
"""

from __future__ import annotations

import triton
import triton.language as tl
from triton.language.extra.cuda import globaltimer, smid

from ._runtime import interpreting

_INTERPRETING = tl.constexpr(interpreting())
TRACE_FIELDS = 8


@triton.jit
def _clock():
    return tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)


@triton.jit
def trace_mark(trace_ptr, SLOT: tl.constexpr, TRACE: tl.constexpr):
    """Write the times into fields SLOT (0: start, 1: after the PDL wait) and 4 + SLOT of this
    program's trace row."""
    if TRACE:
        row = trace_ptr + tl.program_id(0).to(tl.int64) * 8
        if _INTERPRETING:
            tl.store(row + SLOT, tl.zeros([], dtype=tl.int64))
            tl.store(row + 4 + SLOT, tl.zeros([], dtype=tl.int64))
        else:
            tl.store(row + SLOT, globaltimer())
            tl.store(row + 4 + SLOT, _clock())


@triton.jit
def trace_end(trace_ptr, TRACE: tl.constexpr):
    """Write the finishing times (fields 2 and 6) and the SM (field 3) of this program's row."""
    if TRACE:
        row = trace_ptr + tl.program_id(0).to(tl.int64) * 8
        if _INTERPRETING:
            tl.store(row + 2, tl.zeros([], dtype=tl.int64))
            tl.store(row + 6, tl.zeros([], dtype=tl.int64))
            tl.store(row + 3, tl.program_id(0).to(tl.int64))
        else:
            tl.store(row + 2, globaltimer())
            tl.store(row + 6, _clock())
            tl.store(row + 3, smid().to(tl.int64))
