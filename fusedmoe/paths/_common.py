"""Helpers shared by the paths' launchers."""

from __future__ import annotations

import torch

from ..weights import ExpertWeights


def scale_args(weights: ExpertWeights, scale: torch.Tensor | None, dummy: torch.Tensor):
    """Kernel arguments for one weight matrix's scales: (pointer, stride over experts,
    stride over 128-row blocks or, for FP4, over rows, W_SCALE mode: 0 none, 1 per expert, 2 per
    128x128 block, 3 FP4 codes with an E8M0 exponent per row per 32 columns)."""
    if weights.format == "w4a8":
        return scale, scale.stride(0), scale.stride(1), 3
    if weights.format == "fp8_block":
        return scale, scale.stride(0), scale.stride(1), 2
    if weights.format == "fp8_tensor":
        return scale, 1, 0, 1
    return dummy, 0, 0, 0


def optional_ptr(t: torch.Tensor | None, dummy: torch.Tensor) -> torch.Tensor:
    """``t``, or a placeholder pointer for an optional tensor a kernel will not read."""
    return dummy if t is None else t
