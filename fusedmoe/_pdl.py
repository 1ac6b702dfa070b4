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
"""

from __future__ import annotations

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
def pdl_enter(PDL: tl.constexpr, LAUNCH_DEPENDENTS: tl.constexpr = True):
    """A PDL kernel's first step: wait for the previous grid, then (LAUNCH_DEPENDENTS) let the
    next grid launch; nothing without PDL."""
    if PDL:
        pdl_wait()
        if LAUNCH_DEPENDENTS:
            pdl_launch_dependents()


def pdl_launch(device: torch.device) -> dict:
    """Launch arguments of a PDL kernel (its ``PDL`` constexpr): the PDL code and launch attribute
    on sm_90+, the code alone under the interpreter (tests), nothing elsewhere or while
    torch.compile traces the launch (it does not know launch_pdl)."""
    if torch.compiler.is_compiling():
        return {}
    if has_pdl(device):
        return dict(PDL=True, launch_pdl=True)
    return dict(PDL=True) if interpreting() else {}
