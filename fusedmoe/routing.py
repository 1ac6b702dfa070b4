"""Stage 1, routing: router logits [M, E] -> (topk_weights [M, k] fp32, topk_ids [M, k] int32).

Two scorings, as real models use them:

- ``"softmax"`` (Mixtral, Qwen3-MoE)::

      p = softmax(fp32(logits))                      # over the E experts
      ids = topk(p, k); w = p[ids]

- ``"sigmoid"`` (DeepSeek-V3 "noaux_tc")::

      s = sigmoid(fp32(logits)); sel = s + bias      # bias: [E], default 0
      groups = E / n_groups contiguous experts each; group score = sum of its top-2 sel
      keep the topk_groups best groups; ids = topk(sel over kept experts, k); w = s[ids]

then, for both: ``if renormalize: w /= sum(w)``; ``w *= routed_scaling``.

Tie rule: ids come in descending score order, and among equal scores the lower expert
index wins; groups with equal scores are chosen the same way (lower group index first).

``route`` runs one Triton kernel on CUDA tensors and under the interpreter
(``TRITON_INTERPRET=1``), and ``route_reference`` on plain CPU tensors.  The kernel ranks
fp32 scores (softmax: the fp32 logits; sigmoid: fp32 ``sel``), the reference float64
ones, so two scores closer than fp32 rounding may rank differently (sigmoid only): fp32
sigmoids are 1 above a logit of about 17 and 0 below about -104, so such experts tie and the
lower index wins.  The kernel renormalises sigmoid weights through log sigmoid, so they stay
finite and accurate where the sigmoids themselves are subnormal or 0.
"""

from __future__ import annotations

import math

import torch

from ._launch import launch
from ._pdl import pdl_launch
from ._routing_kernels import _route_kernel
from ._runtime import cdiv, interpreting, next_pow2, runs_triton
from ._validate import check_choice, check_int, check_tensor

SCORINGS = ("softmax", "sigmoid")
LOGIT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)

# Token rows per program, one warp per row so that every reduction stays inside a warp.
# Measured on an H200 (DeepSeek-V3 shape, CUDA graph): 3.9 us per call at M=1 against
# 8.2 us with 8 rows on 4 warps; the same at M=16384 (54 us, bound by the reductions).
# The interpreter's cost is per program, not per row: there a program takes up to 64 rows.
_ROWS_PER_PROGRAM = 4
_ROWS_PER_PROGRAM_INTERPRETED = 64


def route(
    logits: torch.Tensor,
    top_k: int,
    *,
    scoring: str = "softmax",
    renormalize: bool = False,
    n_groups: int = 1,
    topk_groups: int = 1,
    bias: torch.Tensor | None = None,
    routed_scaling: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pick ``top_k`` experts per token and their weights (module docstring gives the math).

    logits: [M, E] fp32/bf16/fp16, unit column stride (any row stride); M may be 0.
    bias: [E] fp32/bf16/fp16, contiguous, sigmoid scoring only.
    Returns (topk_weights [M, top_k] fp32, topk_ids [M, top_k] int32), ids in
    descending score order, ties to the lower expert index.  One kernel launch (PDL on sm_90:
    it waits for the logits' grid, then lets the next launch start).
    """
    _check_args(logits, top_k, scoring, renormalize, n_groups, topk_groups, bias, routed_scaling)
    if not runs_triton(logits):
        return _route_torch(logits, top_k, scoring, renormalize, n_groups, topk_groups, bias, routed_scaling)
    M, E = logits.shape
    weights = torch.empty((M, top_k), dtype=torch.float32, device=logits.device)
    ids = torch.empty((M, top_k), dtype=torch.int32, device=logits.device)
    if M == 0:
        return weights, ids
    rows = _ROWS_PER_PROGRAM_INTERPRETED if interpreting() else _ROWS_PER_PROGRAM
    block_m = min(rows, next_pow2(M))
    launch(_route_kernel, (cdiv(M, block_m),),
        logits,
        bias if bias is not None else logits,  # never read without HAS_BIAS
        weights,
        ids,
        M,
        logits.stride(0),
        float(routed_scaling),
        E=E,
        TOP_K=top_k,
        SIGMOID=scoring == "sigmoid",
        HAS_BIAS=bias is not None,
        RENORMALIZE=renormalize,
        N_GROUPS=n_groups,
        TOPK_GROUPS=topk_groups,
        BLOCK_M=block_m,
        BLOCK_E=next_pow2(E),
        BLOCK_K=next_pow2(top_k),
        num_warps=min(block_m, _ROWS_PER_PROGRAM),  # one warp per row on the GPU
        **pdl_launch(logits.device),
    )
    return weights, ids


def route_reference(
    logits: torch.Tensor,
    top_k: int,
    *,
    scoring: str = "softmax",
    renormalize: bool = False,
    n_groups: int = 1,
    topk_groups: int = 1,
    bias: torch.Tensor | None = None,
    routed_scaling: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The function ``route`` computes, in torch float64; same arguments and results.

    Ties are broken explicitly: every selection is a stable descending sort, which keeps
    equal scores in index order.
    """
    _check_args(logits, top_k, scoring, renormalize, n_groups, topk_groups, bias, routed_scaling)
    return _route_torch(logits, top_k, scoring, renormalize, n_groups, topk_groups, bias, routed_scaling)


def _route_torch(logits, top_k, scoring, renormalize, n_groups, topk_groups, bias, routed_scaling):
    """Body of ``route_reference`` (arguments already checked)."""
    M, E = logits.shape
    x = logits.to(torch.float64)
    if scoring == "softmax":
        prob = torch.softmax(x, dim=-1)
        score = prob
    else:
        prob = torch.sigmoid(x)
        score = prob if bias is None else prob + bias.to(torch.float64)
    if n_groups > 1 and topk_groups < n_groups:
        group_size = E // n_groups
        per_group = score.view(M, n_groups, group_size)
        group_score = per_group.sort(dim=-1, descending=True).values[..., : min(2, group_size)].sum(dim=-1)
        keep = torch.zeros(M, n_groups, dtype=torch.bool, device=x.device)
        keep.scatter_(1, _stable_topk_ids(group_score, topk_groups), True)
        score = score.masked_fill(~keep.repeat_interleave(group_size, dim=1), float("-inf"))
    ids = _stable_topk_ids(score, top_k)
    weights = prob.gather(1, ids)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    weights = weights * routed_scaling
    return weights.to(torch.float32), ids.to(torch.int32)


def _stable_topk_ids(score: torch.Tensor, k: int) -> torch.Tensor:
    """Indices of the k largest entries along the last dim; equal entries in index order."""
    return torch.sort(score, dim=-1, descending=True, stable=True).indices[..., :k]


def _check_args(logits, top_k, scoring, renormalize, n_groups, topk_groups, bias, routed_scaling) -> None:
    """Raise TypeError/ValueError naming the first bad argument of ``route``."""
    check_tensor("logits", logits, dtypes=LOGIT_DTYPES, ndim=2)
    E = logits.shape[1]
    if E < 1:
        raise ValueError(f"logits: expected at least one expert column, got shape {list(logits.shape)}")
    if E > 1 and logits.stride(1) != 1:
        raise ValueError(f"logits: expected unit column stride (call .contiguous()), got strides {logits.stride()}")
    check_int("top_k", top_k, lo=1, hi=E)
    check_choice("scoring", scoring, SCORINGS)
    if not isinstance(renormalize, bool):
        raise TypeError(f"renormalize: expected a bool, got {type(renormalize).__name__}")
    check_int("n_groups", n_groups, lo=1, hi=E)
    if E % n_groups != 0:
        raise ValueError(f"n_groups: expected a divisor of the number of experts E={E}, got {n_groups}")
    if n_groups > 1 and scoring != "sigmoid":
        raise ValueError(f"n_groups: grouping needs scoring='sigmoid', got n_groups={n_groups} with {scoring!r}")
    check_int("topk_groups", topk_groups, lo=1, hi=n_groups)
    survivors = topk_groups * (E // n_groups)
    if top_k > survivors:
        raise ValueError(
            f"top_k: expected <= topk_groups * E / n_groups = {survivors} (the experts left after "
            f"group selection), got {top_k}"
        )
    if bias is not None:
        if scoring != "sigmoid":
            raise ValueError(f"bias: only used with scoring='sigmoid', got a bias with {scoring!r}")
        check_tensor("bias", bias, dtypes=LOGIT_DTYPES, shape=[E], device=logits.device, contiguous=True)
    if isinstance(routed_scaling, bool) or not isinstance(routed_scaling, (int, float)):
        raise TypeError(f"routed_scaling: expected a float, got {type(routed_scaling).__name__}")
    if not math.isfinite(routed_scaling):
        raise ValueError(f"routed_scaling: expected a finite number, got {routed_scaling}")
