"""Argument checks shared by every public function.

Each check raises ``TypeError`` (wrong type or dtype) or ``ValueError`` (wrong rank,
shape, device, layout or value) with a message that names the argument and what was
expected.  Checks are explicit ``if`` statements, never ``assert`` (asserts vanish
under ``python -O``).
"""

from __future__ import annotations

from typing import Iterable, Sequence

import torch
from torch._subclasses.fake_tensor import is_fake

FLOAT_ACTIVATION_DTYPES = (torch.bfloat16, torch.float16)
ID_DTYPES = (torch.int32, torch.int64)
INT32_MAX = (1 << 31) - 1  # kernels index plans and rows in int32
INT64_MAX = (1 << 63) - 1  # expert ids are at most int64


def values_readable(t: torch.Tensor) -> bool:
    """Whether a value check may read ``t`` on the host (a sync): not while torch.compile
    traces, and not for tensors without data (fake, meta)."""
    return not torch.compiler.is_compiling() and t.device.type != "meta" and not is_fake(t)


def _dtype_names(dtypes: Iterable[torch.dtype]) -> str:
    return " or ".join(str(d).replace("torch.", "") for d in dtypes)


def check_tensor(
    name: str,
    t: object,
    *,
    dtypes: Sequence[torch.dtype] | None = None,
    ndim: int | None = None,
    shape: Sequence[int | None] | None = None,
    device: torch.device | None = None,
    contiguous: bool = False,
) -> torch.Tensor:
    """Check that ``t`` is a tensor with the given dtype/rank/shape/device/layout.

    ``shape`` entries set to ``None`` are not checked.  Returns ``t``.
    """
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if dtypes is not None and t.dtype not in dtypes:
        raise TypeError(f"{name}: expected dtype {_dtype_names(dtypes)}, got {str(t.dtype).replace('torch.', '')}")
    if ndim is not None and t.dim() != ndim:
        raise ValueError(f"{name}: expected a {ndim}-D tensor, got shape {tuple(t.shape)}")
    if shape is not None and tuple(t.shape) != tuple(shape):  # the exact shape, or one with wildcards
        if len(t.shape) != len(shape) or any(s is not None and s != d for s, d in zip(shape, t.shape)):
            want = "[" + ", ".join("*" if s is None else str(s) for s in shape) + "]"
            raise ValueError(f"{name}: expected shape {want}, got {list(t.shape)}")
    if device is not None and t.device != device:
        raise ValueError(f"{name}: expected a tensor on {device} (the device of the other inputs), got {t.device}")
    if contiguous and not t.is_contiguous():
        raise ValueError(f"{name}: expected a contiguous tensor (call .contiguous()), got strides {t.stride()}")
    return t


def check_int(name: str, v: object, *, lo: int | None = None, hi: int | None = None) -> int:
    """Check that ``v`` is an int (not bool) in [lo, hi]; returns it."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{name}: expected an int, got {type(v).__name__}")
    if lo is not None and v < lo:
        raise ValueError(f"{name}: expected an int >= {lo}, got {v}")
    if hi is not None and v > hi:
        raise ValueError(f"{name}: expected an int <= {hi}, got {v}")
    return v


def check_choice(name: str, v: object, choices: Sequence[str]) -> str:
    """Check that ``v`` is one of the strings in ``choices``; returns it."""
    if v not in choices:
        raise ValueError(f"{name}: expected one of {list(choices)}, got {v!r}")
    return v  # type: ignore[return-value]
