"""Triton kernel of the routing stage (see ``fusedmoe.routing.route``).

One program routes BLOCK_M tokens.  A token's E scores sit in BLOCK_E = next_pow2(E)
lanes; lanes >= E, and experts already taken or in dropped groups, are "unavailable".
Every selection (top-k experts, best groups, the top two of a group) is the same step:

    best = max(score over available lanes)
    pick = min(lane index over available lanes whose score == best)

so among equal scores the lowest expert index wins, whatever the hardware's reduction
order.  Availability is a boolean mask, not a -inf sentinel, so experts whose score is
-inf are still picked (last, lowest index first) and padding lanes never are.  A row
with NaN scores may find no candidate; its id is then written as -1 ("no expert").
"""

from __future__ import annotations

import triton
import triton.language as tl

from ._pdl import pdl_enter


@triton.jit
def _route_kernel(
    logits_ptr,
    bias_ptr,
    weights_ptr,
    ids_ptr,
    M,
    stride_lm,
    routed_scaling,
    E: tl.constexpr,
    TOP_K: tl.constexpr,
    SIGMOID: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    RENORMALIZE: tl.constexpr,
    N_GROUPS: tl.constexpr,
    TOPK_GROUPS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_E: tl.constexpr,
    BLOCK_K: tl.constexpr,
    PDL: tl.constexpr = False,
):
    """weights/ids [M, TOP_K] (fp32/int32, row-major) from logits [M, E] (unit column stride).
    With PDL it waits for the previous grid first, then lets the next one launch."""
    NEG_INF: tl.constexpr = float("-inf")
    pdl_enter(PDL)
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    lanes = tl.arange(0, BLOCK_E)
    row_ok = rows < M
    lane_ok = lanes < E
    avail = tl.broadcast_to(lane_ok[None, :], (BLOCK_M, BLOCK_E))

    x = tl.load(
        logits_ptr + rows[:, None].to(tl.int64) * stride_lm + lanes[None, :],
        mask=row_ok[:, None] & lane_ok[None, :],
        other=0.0,
    ).to(tl.float32)

    # `score` ranks the experts, `prob` gives the weights.
    if SIGMOID:
        prob = tl.sigmoid(x)
        score = prob
        if HAS_BIAS:
            score = prob + tl.load(bias_ptr + lanes, mask=lane_ok, other=0.0).to(tl.float32)[None, :]
    else:
        # Softmax is monotone, so rank the logits themselves: fp32 holds them exactly,
        # and exp() rounding cannot create ties that the exact probabilities do not have.
        score = x
        row_max = tl.max(tl.where(avail, x, NEG_INF), axis=1)
        num = tl.where(avail, tl.exp(x - row_max[:, None]), 0.0)
        prob = num / tl.sum(num, axis=1)[:, None]

    if N_GROUPS > 1 and TOPK_GROUPS < N_GROUPS:
        GROUP: tl.constexpr = E // N_GROUPS
        group = lanes // GROUP
        # Every lane holds the score of its group: the sum of the group's top two scores.
        group_score = tl.zeros((BLOCK_M, BLOCK_E), dtype=tl.float32)
        for g in tl.static_range(N_GROUPS):
            in_g = avail & (group == g)[None, :]
            top1 = tl.max(tl.where(in_g, score, NEG_INF), axis=1)
            gs = top1
            if GROUP > 1:
                first = tl.min(tl.where(in_g & (score == top1[:, None]), lanes[None, :], BLOCK_E), axis=1)
                gs += tl.max(tl.where(in_g & (lanes[None, :] != first[:, None]), score, NEG_INF), axis=1)
            group_score = tl.where(in_g, gs[:, None], group_score)
        # Keep the TOPK_GROUPS best groups (the lowest lane of a tie is in the lowest group).
        keep = tl.zeros((BLOCK_M, BLOCK_E), dtype=tl.int1)
        for _ in tl.static_range(TOPK_GROUPS):
            best = tl.max(tl.where(avail, group_score, NEG_INF), axis=1)
            first = tl.min(tl.where(avail & (group_score == best[:, None]), lanes[None, :], BLOCK_E), axis=1)
            chosen = avail & (group[None, :] == (first // GROUP)[:, None])
            keep = keep | chosen
            avail = avail & ~chosen
        avail = keep

    cols = tl.arange(0, BLOCK_K)[None, :]
    weights = tl.zeros((BLOCK_M, BLOCK_K), dtype=tl.float32)
    picked = tl.full((BLOCK_M, BLOCK_K), NEG_INF, dtype=tl.float32)  # the picks' logits
    ids = tl.full((BLOCK_M, BLOCK_K), -1, dtype=tl.int32)
    for j in tl.static_range(TOP_K):
        best = tl.max(tl.where(avail, score, NEG_INF), axis=1)
        pick = tl.min(tl.where(avail & (score == best[:, None]), lanes[None, :], BLOCK_E), axis=1)
        hit = lanes[None, :] == pick[:, None]
        w = tl.sum(tl.where(hit, prob, 0.0), axis=1)
        weights = tl.where(cols == j, w[:, None], weights)
        if SIGMOID and RENORMALIZE:
            picked = tl.where((cols == j) & (pick < E)[:, None], tl.sum(tl.where(hit, x, 0.0), axis=1)[:, None], picked)
        ids = tl.where(cols == j, tl.where(pick < E, pick, -1)[:, None], ids)
        avail = avail & ~hit
    if RENORMALIZE:
        if SIGMOID:
            # s_j / sum(s) through log sigmoid(x) = min(x, 0) - log(1 + exp(-|x|)), each taken
            # from the largest: fp32 sigmoids of logits below about -87 are subnormal or 0, and
            # their plain quotient loses every bit or is 0 / 0
            log_s = tl.minimum(picked, 0.0) - tl.log(1.0 + tl.exp(-tl.abs(picked)))
            rel = tl.exp(log_s - tl.max(log_s, axis=1)[:, None])
            weights = rel / tl.sum(rel, axis=1)[:, None]
        else:
            weights = weights / tl.sum(weights, axis=1)[:, None]
    weights = weights * routed_scaling

    out = rows[:, None].to(tl.int64) * TOP_K + cols
    out_mask = row_ok[:, None] & (cols < TOP_K)
    tl.store(weights_ptr + out, weights, mask=out_mask)
    tl.store(ids_ptr + out, ids, mask=out_mask)
