"""Element-wise stages: FP8 activation quantisation, SwiGLU (+ fused FP8 requantisation), combine.

Each op runs its Triton kernel on CUDA tensors (or under the interpreter) and the torch
reference elsewhere.  Shapes:
    quantize_rows(a [T, K])            -> (e4m3 [T, K], fp32 scales [T, ceil(K/128)])
    quantize_rows(a, whole_rows=True)  -> (e4m3 [T, K], fp32 scales [T, 1])
    swiglu(gate_up [R, 2I])            -> [R, I]
    swiglu_quant(gate_up [R, 2I])      -> (e4m3 [R, I], fp32 scales [R, ceil(I/128)])
    combine(y [M*k, H], w [M, k], ids) -> [M, H]
"""

from __future__ import annotations

import torch

from . import quant
from . import reference as ref
from ._epilogue_kernels import _combine_kernel, _quantize_rows_kernel, _quantize_whole_rows_kernel, _swiglu_kernel
from ._launch import launch
from ._pdl import pdl_launch
from ._runtime import cdiv, next_pow2, runs_triton
from ._validate import check_choice

_BLOCK_R = 4
# Whole-row quantisation (fp8_tensor's x): one program per row, chunks of up to this many
# columns (8 warps, 31 registers on sm_90: 8 programs and 32 KB of loads in flight per SM).
# Four rows of 512-column chunks per program, the first form, left 128 programs at M=512 and
# took 24 us there for a 7 MB x (DeepSeek-V3 TP8, 2026-11-30-s7/kernels.md).  Unmeasured.
_WHOLE_ROW_COLS = 2048

# The gated activations of the layer: act(gate) * up (see _epilogue_kernels.glu).
ACTIVATIONS = {"silu": 0, "gelu_tanh": 1, "swiglu_oai": 2}


def _check_2d(name: str, t: torch.Tensor) -> None:
    if t.dim() != 2 or t.stride(1) != 1:
        raise ValueError(f"{name}: expected a 2-D tensor with unit column stride, got shape {list(t.shape)} "
                         f"strides {t.stride()}")


def quantize_rows(a: torch.Tensor, whole_rows: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-row dynamic e4m3 quantisation (see :mod:`fusedmoe.quant`): one scale per 128 columns
    (s [T, ceil(K/128)]), or with ``whole_rows`` one per row (s [T, 1])."""
    _check_2d("a", a)
    rows, cols = a.shape
    if not runs_triton(a):
        return quant.quantize_rows_grouped(a, max(cols, 1) if whole_rows else quant.GROUP)
    groups = min(cols, 1) if whole_rows else cdiv(cols, quant.GROUP)  # as the torch definition
    q = torch.empty(rows, cols, dtype=quant.FP8_DTYPE, device=a.device)
    s = torch.empty(rows, groups, dtype=torch.float32, device=a.device)
    if rows and cols and whole_rows:
        block_c = min(next_pow2(cols), _WHOLE_ROW_COLS)
        launch(_quantize_whole_rows_kernel, (rows,), a, q, s, rows, cols, a.stride(0), q.stride(0), BLOCK_R=1,
               BLOCK_C=block_c, num_warps=8 if block_c == _WHOLE_ROW_COLS else 4, **pdl_launch(a.device))
    elif rows and cols:
        launch(_quantize_rows_kernel, (cdiv(rows, _BLOCK_R), groups),
            a, q, s, rows, cols, a.stride(0), q.stride(0), s.stride(0), BLOCK_R=_BLOCK_R, GROUP=quant.GROUP,
            **pdl_launch(a.device))
    return q, s


def _swiglu_launch(gate_up: torch.Tensor, out: torch.Tensor, scales: torch.Tensor | None, activation: str) -> None:
    check_choice("activation", activation, tuple(ACTIVATIONS))
    rows, inter = gate_up.shape[0], gate_up.shape[1] // 2
    if rows and inter:
        launch(_swiglu_kernel, (cdiv(rows, _BLOCK_R), cdiv(inter, quant.GROUP)),
            gate_up, out, scales if scales is not None else out, rows, inter, gate_up.stride(0), out.stride(0),
            scales.stride(0) if scales is not None else 0,
            QUANT=scales is not None, ACTIVATION=ACTIVATIONS[activation], BLOCK_R=_BLOCK_R, GROUP=quant.GROUP)


def swiglu(gate_up: torch.Tensor, out_dtype: torch.dtype | None = None, activation: str = "silu") -> torch.Tensor:
    """act(gate) * up for gate_up [R, 2I] -> [R, I] in ``out_dtype`` (default: input dtype)."""
    _check_2d("gate_up", gate_up)
    if gate_up.shape[1] % 2:
        raise ValueError(f"gate_up: expected an even number of columns [R, 2I], got {list(gate_up.shape)}")
    out_dtype = out_dtype or gate_up.dtype
    if not runs_triton(gate_up):
        return ref.glu(gate_up.to(torch.float32), activation).to(out_dtype)
    out = torch.empty(gate_up.shape[0], gate_up.shape[1] // 2, dtype=out_dtype, device=gate_up.device)
    _swiglu_launch(gate_up, out, None, activation)
    return out


def swiglu_quant(gate_up: torch.Tensor, activation: str = "silu") -> tuple[torch.Tensor, torch.Tensor]:
    """The gated activation fused with per-row per-128-group e4m3 quantisation of its output
    (one pass); equal to ``quantize_rows(swiglu(gate_up, float32, activation))``."""
    _check_2d("gate_up", gate_up)
    if gate_up.shape[1] % 2:
        raise ValueError(f"gate_up: expected an even number of columns [R, 2I], got {list(gate_up.shape)}")
    if not runs_triton(gate_up):
        return quant.quantize_rows_grouped(ref.glu(gate_up.to(torch.float32), activation))
    rows, inter = gate_up.shape[0], gate_up.shape[1] // 2
    q = torch.empty(rows, inter, dtype=quant.FP8_DTYPE, device=gate_up.device)
    s = torch.empty(rows, cdiv(inter, quant.GROUP), dtype=torch.float32, device=gate_up.device)
    _swiglu_launch(gate_up, q, s, activation)
    return q, s


def combine_launch(y: torch.Tensor, topk_weights: torch.Tensor, topk_ids: torch.Tensor, out: torch.Tensor,
                   shared_output: torch.Tensor | None, expert_offset: int, num_local: int) -> None:
    """Launch the combine kernel: out[t] = sum_j w[t,j] * y[t*k+j] (+ shared[t]) over held routes."""
    m, k = topk_ids.shape
    hidden = out.shape[1]
    if m == 0:
        return
    block_h = min(1024, next_pow2(hidden))
    launch(_combine_kernel, (m, cdiv(hidden, block_h)),
        y, topk_weights, topk_ids, shared_output if shared_output is not None else out, out, hidden,
        expert_offset, num_local, y.stride(0), shared_output.stride(0) if shared_output is not None else 0,
        out.stride(0), TOPK=k, TOPK_PAD=next_pow2(k), HAS_SHARED=shared_output is not None, BLOCK_H=block_h,
        **pdl_launch(out.device))
