"""Expert parallelism over torch.distributed.

Every rank of ``group`` holds a contiguous window of E_local = E / world experts (rank r holds
global ids [r * E_local, (r + 1) * E_local)) and sees the same tokens and routing (replicated,
as after attention with tensor parallelism).  Each rank computes its experts' contributions
with ``fused_moe(expert_offset=...)`` (routes to other ranks' experts cost nothing), then one
all-reduce sums the partial outputs.  The shared expert's output is added once, on rank 0.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from .api import fused_moe
from .weights import ExpertWeights


def expert_parallel_moe(x: torch.Tensor, weights: ExpertWeights, topk_weights: torch.Tensor,
                        topk_ids: torch.Tensor, *, num_experts: int, group: dist.ProcessGroup | None = None,
                        shared_output: torch.Tensor | None = None, out: torch.Tensor | None = None,
                        **kwargs) -> torch.Tensor:
    """The layer over all ranks of ``group``: x [M, H] -> [M, H], the same on every rank.

    ``weights`` hold this rank's E / world experts; ``kwargs`` go to :func:`fused_moe`
    (path, activation, check_ids, ...), except the expert window, which the rank sets.  An
    ``out`` that is not contiguous gets the result through a contiguous buffer (the all-reduce
    sums whole storage)."""
    if not isinstance(weights, ExpertWeights):
        raise TypeError(f"weights: expected an ExpertWeights, got {type(weights).__name__}")
    for name in ("expert_offset", "num_local_experts", "expert_map"):
        if name in kwargs:
            raise ValueError(f"{name}: set by expert_parallel_moe (rank r holds experts [r * E_local, "
                             f"(r + 1) * E_local)); do not pass it")
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    if weights.num_experts * world != num_experts:
        raise ValueError(f"num_experts: expected {weights.num_experts} local experts x {world} ranks = "
                         f"{weights.num_experts * world}, got {num_experts}")
    result = out if out is None or out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    result = fused_moe(x, weights, topk_weights, topk_ids, expert_offset=rank * weights.num_experts,
                       num_experts=num_experts, shared_output=shared_output if rank == 0 else None, out=result,
                       **kwargs)
    dist.all_reduce(result, group=group)
    return result if out is None or result is out else out.copy_(result)
