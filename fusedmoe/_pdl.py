"""Programmatic dependent launch (PDL, sm_90+): the jit side and the launch arguments.

A kernel launched with ``launch_pdl=True`` may start before the previous grid in the stream
has finished: once every program of that grid has run ``pdl_launch_dependents`` (or exited).
It must run ``pdl_wait`` before it reads anything the previous grid writes.  The interpreter
runs programs one launch after another and cannot run griddepcontrol: there the PDL code runs
without it.

Most kernels start with ``pdl_enter(PDL)``: wait, then let the next grid launch.  Such a kernel
runs in stream order (it reads and writes nothing before the wait, and its grid completes only
after its predecessor has), so a chain of them is as ordered as plain launches, but each
launch and its programs' start overlap the previous kernel's tail.  A next grid that is not
launched with PDL (torch's kernels, a caller's) starts after this one has finished, as ever.

Every kernel lets the next grid launch only after its own wait, so when a kernel launches the
grid two before it has finished: what that grid and earlier ones wrote may be read before the
wait (the route-direct down and the combine read the routing so).  Those two, the last
launches of a layer, wait late and never let the next grid launch early: on the H200 doing so
(the next layer's first kernel launched during the down) took 1.044x the time at M=1
(geomean of 15 decode cases; Hunyuan TP8 bf16 M=1 1.37x), 27th session.
"""

from __future__ import annotations

import contextlib

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

from ._runtime import has_pdl, interpreting

_INTERPRETING = tl.constexpr(interpreting())


@triton.jit
def pdl_wait():
    """Wait for the previous grid in the stream (and see its writes): griddepcontrol.wait."""
    if not _INTERPRETING:
        gdc_wait()


@triton.jit
def pdl_launch_dependents():
    """Let the next grid in the stream launch: griddepcontrol.launch_dependents."""
    if not _INTERPRETING:
        gdc_launch_dependents()


@triton.jit
def pdl_enter(PDL: tl.constexpr):
    """A PDL kernel's step before it reads what the previous grid writes: wait for that grid,
    then let the next grid launch; nothing without PDL."""
    if PDL:
        pdl_wait()
        pdl_launch_dependents()


_PDL_LAUNCH = dict(PDL=True, launch_pdl=True)
_PDL_CODE_ONLY = dict(PDL=True)
_NO_PDL: dict = {}
_plain = False  # plain_launches() in force


@contextlib.contextmanager
def plain_launches():
    """Within it every launch of this package runs without PDL (neither the code nor the launch
    attribute), as on a GPU without it: for per-kernel timing (under PDL a kernel launched early
    counts its wait for the previous grid as its own device time: the grouped combine of Mixtral
    TP2 fp8_tensor M=512 read 39.2 us with PDL and 5.0 without, thirty-sixth session) and for
    comparisons with the plain launches.  A process-wide switch: not for concurrent threads."""
    global _plain
    before, _plain = _plain, True
    try:
        yield
    finally:
        _plain = before


def pdl_launch(device: torch.device) -> dict:
    """Launch arguments of a PDL kernel (its ``PDL`` constexpr): the PDL code and launch attribute
    on sm_90+, the code alone under the interpreter (tests), nothing elsewhere, within
    ``plain_launches`` or while torch.compile traces the launch (it does not know launch_pdl).
    A shared dict, read-only: callers pass it on as ``**pdl_launch(device)``."""
    if _plain or torch.compiler.is_compiling():
        return _NO_PDL
    if has_pdl(device):
        return _PDL_LAUNCH
    return _PDL_CODE_ONLY if interpreting() else _NO_PDL
