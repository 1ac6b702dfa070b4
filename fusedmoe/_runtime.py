"""Where kernels run: on a CUDA device, or under Triton's CPU interpreter.

``TRITON_INTERPRET=1`` makes Triton run kernels on CPU tensors with NumPy; CI uses it.
Without it, CPU tensors take the torch fallback of each op.
"""

from __future__ import annotations

import functools
import os

import torch


def interpreting() -> bool:
    """True when Triton kernels run in the CPU interpreter (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def runs_triton(t: torch.Tensor) -> bool:
    """True when Triton kernels can run on tensors living where ``t`` lives."""
    return t.is_cuda or (interpreting() and t.device.type == "cpu")


@functools.lru_cache(maxsize=None)
def _sm_count(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


# The interpreter runs programs one after another: a small nominal SM count makes the
# policies pick fewer, larger programs there (tests force small tiles explicitly).
INTERPRETER_SMS = 4


@functools.lru_cache(maxsize=None)
def _device_name(index: int) -> str:
    return torch.cuda.get_device_name(index)


def device_name(device: torch.device) -> str:
    """'NVIDIA H200' for a CUDA device; 'interpreter' or 'cpu' otherwise (no tuned tables)."""
    if device.type == "cuda":
        return _device_name(device.index if device.index is not None else torch.cuda.current_device())
    return "interpreter" if interpreting() else "cpu"


def num_sms(device: torch.device) -> int:
    """Multiprocessor count of ``device`` (INTERPRETER_SMS off the GPU)."""
    if device.type == "cuda":
        return _sm_count(device.index if device.index is not None else torch.cuda.current_device())
    return INTERPRETER_SMS


@functools.lru_cache(maxsize=None)
def _capability(index: int) -> tuple[int, int]:
    return torch.cuda.get_device_capability(index)


def _compiled_capability(device: torch.device) -> tuple[int, int] | None:
    """The compute capability of a CUDA ``device`` running compiled kernels; None elsewhere
    and under the interpreter (on a CUDA device, whether it is on is read once: Triton decided
    it when the kernels were defined)."""
    if device.type != "cuda" or _interpreter_on_once():
        return None
    return _capability(device.index if device.index is not None else torch.cuda.current_device())


@functools.lru_cache(maxsize=None)
def _interpreter_on_once() -> bool:
    return interpreting()


def has_pdl(device: torch.device) -> bool:
    """Whether kernels on ``device`` can use programmatic dependent launch (CUDA, sm_90+, not
    under the interpreter)."""
    cap = _compiled_capability(device)
    return cap is not None and cap >= (9, 0)


def is_sm90(device: torch.device) -> bool:
    """Whether ``device`` is a Hopper GPU (sm_90) running compiled kernels: where the Gluon
    kernels (wgmma, TMA) run."""
    return _compiled_capability(device) == (9, 0)


def next_pow2(n: int) -> int:
    """Smallest power of two >= max(n, 1), for launch parameters (``triton.next_power_of_2`` is a
    constexpr function: microseconds a call on the host path)."""
    return 1 << (max(int(n), 1) - 1).bit_length()


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for launch grids: plain integers (``triton.cdiv`` costs microseconds a call on the host path)."""
    return -(-a // b)
