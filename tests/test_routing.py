"""Routing (stage 1): the kernel against the float64 reference, the tie rule, argument checks.

On CPU the kernel runs under TRITON_INTERPRET=1 (set by conftest.py); on a CUDA machine the
same tests run on the GPU (the ``device`` fixture).  Random inputs come from the global RNG,
seeded per test by conftest.py (FUSEDMOE_SEED replays a run).
"""

from __future__ import annotations

import pytest
import torch

from fusedmoe import routing
from fusedmoe.routing import route, route_reference

WEIGHT_ATOL = 1e-6


def _logits(m: int, e: int, device: torch.device, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return (2.0 * torch.randn(m, e, device=device)).to(dtype)


def _bias(e: int, device: torch.device) -> torch.Tensor:
    """A DeepSeek-style correction bias: the same order as the sigmoid scores' spread at the top."""
    return 0.1 * torch.randn(e, device=device)


def _unstable_rows(logits: torch.Tensor, top_k: int, rids: torch.Tensor, **kw) -> torch.Tensor:
    """Rows whose reference selection changes when the logits move by 1e-6 (relative): two
    candidates there are closer than fp32 scores can order.  [M] bool."""
    gen = torch.Generator(device="cpu").manual_seed(0)
    flagged = torch.zeros(logits.shape[0], dtype=torch.bool, device=logits.device)
    for _ in range(4):
        sign = torch.randint(0, 2, logits.shape, generator=gen).to(logits.device) * 2 - 1
        _, pids = route_reference(logits.float() * (1 + 1e-6 * sign), top_k, **kw)
        flagged |= (pids != rids).any(dim=1)
    return flagged


def _check(logits: torch.Tensor, top_k: int, *, exact_ties: bool = False, **kw) -> tuple[torch.Tensor, torch.Tensor]:
    """Route with the kernel and the reference; ids must match exactly, weights to 1e-6.

    Random logits can put two candidates within fp32 rounding of each other (seen once in
    ~10^5 rows), where the kernel's fp32 scores and the float64 reference may order them
    differently.  A row may differ only if its reference selection itself moves under a 1e-6
    perturbation of the logits.  ``exact_ties``: the ties are exact (the documented tie rule):
    every row must match."""
    w, ids = route(logits, top_k, **kw)
    rw, rids = route_reference(logits, top_k, **kw)
    m = logits.shape[0]
    assert w.dtype == torch.float32 and ids.dtype == torch.int32
    assert w.shape == ids.shape == (m, top_k)
    same = (ids == rids).all(dim=1) if m else torch.ones(0, dtype=torch.bool, device=ids.device)
    if exact_ties or bool(same.all()):
        same = torch.ones_like(same)
    else:
        unexplained = ~same & ~_unstable_rows(logits, top_k, rids, **kw)
        assert not unexplained.any(), f"ids differ from the reference in rows {unexplained.nonzero().flatten().tolist()}"
    torch.testing.assert_close(ids[same], rids[same], rtol=0, atol=0)
    torch.testing.assert_close(w[same], rw[same], rtol=0, atol=WEIGHT_ATOL)
    return w, ids


@pytest.mark.parametrize(
    "e, top_k",
    [
        (1, 1),  # a single expert: softmax is 1, padding lanes only
        (4, 1),  # Switch-style top-1
        (4, 2),  # k = E/2
        (4, 4),  # k = E: every expert, sorted
        (33, 1),  # E not a power of two: 31 masked padding lanes
        (33, 8),  # padding lanes with the largest k
        (128, 8),  # Qwen3-30B-A3B / Qwen3-235B (E=128, k=8)
        (256, 2),  # a wide row with a small k
        (256, 8),  # DeepSeek-size row through softmax
    ],
)
@pytest.mark.parametrize(
    "m",
    [
        0,  # empty batch: no launch, empty results of the right shape
        1,  # decode: one token, one program with masked rows
        3,  # a few tokens, less than one block
        17,  # several blocks when E is large, a ragged last block
        64,  # full blocks
    ],
)
@pytest.mark.parametrize("renormalize", [False, True])  # Mixtral/Qwen3 renormalise, Switch does not
def test_softmax_matches_reference(e, top_k, m, renormalize, device):
    w, _ = _check(_logits(m, e, device), top_k, renormalize=renormalize)
    if renormalize and m:
        torch.testing.assert_close(w.sum(dim=1), torch.ones(m, device=device), rtol=0, atol=WEIGHT_ATOL)


@pytest.mark.parametrize(
    "dtype",
    [
        torch.float32,  # the router in fp32 (common for routers kept in full precision)
        torch.bfloat16,  # bf16 logits: the interpreter needs fp32 math after loading
        torch.float16,  # fp16 logits
    ],
)
@pytest.mark.parametrize("scoring", ["softmax", "sigmoid"])  # Mixtral-style; grouped sigmoid with bias
def test_logit_dtypes(dtype, scoring, device):
    kw = dict(n_groups=4, topk_groups=2, bias=_bias(64, device)) if scoring == "sigmoid" else {}
    _check(_logits(19, 64, device, dtype), 6, scoring=scoring, renormalize=True, **kw)


@pytest.mark.parametrize("m", [1, 17, 64])  # decode, a ragged block, full blocks
@pytest.mark.parametrize("renormalize", [True, False])  # DeepSeek-V3 renormalises; keep the other branch covered
def test_sigmoid_deepseek_v3(m, renormalize, device):
    # DeepSeek-V3 / R1: E=256, 8 groups of 32, keep 4 groups, top-8, bias-corrected, scaled by 2.5.
    kw = dict(scoring="sigmoid", n_groups=8, topk_groups=4, bias=_bias(256, device), routed_scaling=2.5)
    w, ids = _check(_logits(m, 256, device), 8, renormalize=renormalize, **kw)
    assert all(len(set(row)) <= 4 for row in (ids // 32).tolist())  # experts from at most topk_groups groups
    if renormalize:
        torch.testing.assert_close(w.sum(dim=1), torch.full((m,), 2.5, device=device), rtol=0, atol=4 * WEIGHT_ATOL)


@pytest.mark.parametrize(
    "e, n_groups, topk_groups, top_k, with_bias",
    [
        (16, 4, 2, 3, True),  # small grouped case: k not a multiple of the group size
        (16, 4, 2, 3, False),  # same without bias: selection on the sigmoid itself
        (24, 4, 3, 5, True),  # group size 6: not a power of two, groups straddle pow2 lanes
        (8, 8, 3, 3, True),  # groups of one expert: the group score is its top-1
        (33, 1, 1, 4, True),  # plain sigmoid top-k with bias, no grouping
        (32, 4, 4, 4, True),  # topk_groups == n_groups: grouping is a no-op (skipped in the kernel)
    ],
)
@pytest.mark.parametrize("m", [1, 17])  # decode and a ragged multi-token block
def test_sigmoid_grouped(e, n_groups, topk_groups, top_k, with_bias, m, device):
    kw = dict(scoring="sigmoid", n_groups=n_groups, topk_groups=topk_groups, renormalize=True)
    _check(_logits(m, e, device), top_k, bias=_bias(e, device) if with_bias else None, **kw)


@pytest.mark.parametrize("with_bias", [False, True])
def test_sigmoid_renormalised_weights_of_far_negative_logits(with_bias, device):
    # fp32 sigmoids of logits below about -87 are subnormal, below about -104 zero: the weights
    # are renormalised through log sigmoid, so they stay finite and as the float64 reference's.
    # Each row falls by 10 from left to right, so the zero scores' lowest-index tie rule picks
    # the reference's experts.
    logits = torch.tensor([[-120.0, -130.0, -140.0, -150.0, -160.0], [-90.0, -95.0, -100.0, -105.0, -110.0],
                           [3.0, -100.0, -110.0, -120.0, -130.0]], device=device)
    bias = torch.zeros(5, device=device) if with_bias else None
    w, ids = route(logits, 3, scoring="sigmoid", renormalize=True, routed_scaling=2.5, bias=bias)
    rw, rids = route_reference(logits, 3, scoring="sigmoid", renormalize=True, routed_scaling=2.5, bias=bias)
    assert torch.equal(ids, rids)
    torch.testing.assert_close(w, rw, rtol=1e-6, atol=1e-30)


def test_softmax_tie_rule(device):
    # Equal scores: descending score order, the lower expert index first.
    logits = torch.tensor([[1.0, 3.0, 3.0, 0.0, 3.0], [2.0, 2.0, 2.0, 2.0, 2.0]], device=device)
    w, ids = route(logits, 3)
    assert ids.tolist() == [[1, 2, 4], [0, 1, 2]]
    torch.testing.assert_close(w[1], torch.full((3,), 0.2, device=device), rtol=0, atol=WEIGHT_ATOL)
    _check(logits, 3, exact_ties=True)


@pytest.mark.parametrize("scoring", ["softmax", "sigmoid"])  # both rankings (logits vs sigmoid scores)
def test_many_ties_match_reference(scoring, device):
    # Logits drawn from 3 values: nearly every selection is a tie.
    logits = torch.randint(0, 3, (40, 32), device=device).float()
    _check(logits, 8, scoring=scoring, exact_ties=True)


def test_group_tie_rule(device):
    # Groups {0,1} {2,3} {4,5} {6,7}: groups 1 and 2 tie on their top-2 sum, as do groups 0 and 3;
    # the lower group index wins each tie, so groups 0 and 1 are kept.
    logits = torch.tensor([[1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]], device=device)
    kw = dict(scoring="sigmoid", n_groups=4, topk_groups=2)
    _, ids = route(logits, 4, **kw)
    assert ids.tolist() == [[0, 3, 1, 2]]
    _check(logits, 4, **kw, exact_ties=True)


def test_top2_group_score_counts_repeated_maximum(device):
    # A group whose maximum appears twice scores 2*max, beating a group with a larger single maximum.
    logits = torch.tensor([[2.0, 2.0, -9.0, 3.0, -9.0, -9.0]], device=device)
    kw = dict(scoring="sigmoid", n_groups=2, topk_groups=1)
    _, ids = route(logits, 2, **kw)
    assert ids.tolist() == [[0, 1]]
    _check(logits, 2, **kw, exact_ties=True)


def test_masked_experts_with_minus_inf(device):
    # Experts masked with -inf are chosen last (lower index first), never padding lanes.
    logits = _logits(5, 6, device)
    logits[:, 1:4] = float("-inf")
    _, ids = _check(logits, 5)
    assert ids[:, 3:].tolist() == [[1, 2]] * 5


def test_row_stride(device):
    # A column slice of a wider tensor: row stride 48, column stride 1.
    logits = _logits(9, 48, device)[:, :40]
    _check(logits, 4, renormalize=True)


def test_plain_cpu_uses_torch(monkeypatch):
    # Without the interpreter, CPU tensors must not launch the kernel.
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    monkeypatch.setattr(routing, "_route_kernel", None)
    _check(_logits(4, 16, torch.device("cpu")), 2, renormalize=True)


_X = torch.ones(2, 8)  # 2 tokens, 8 experts
_SIG = dict(scoring="sigmoid")


@pytest.mark.parametrize(
    "args, kw, exc, match",
    [
        ((_X.numpy(), 2), {}, TypeError, "logits"),  # not a tensor
        ((_X.double(), 2), {}, TypeError, "logits"),  # float64 logits
        ((_X[0], 2), {}, ValueError, "logits"),  # 1-D logits
        ((torch.ones(8, 2).t(), 2), {}, ValueError, "logits"),  # column stride != 1
        ((torch.ones(2, 0), 1), {}, ValueError, "logits"),  # no experts
        ((_X, 0), {}, ValueError, "top_k"),  # k below 1
        ((_X, 9), {}, ValueError, "top_k"),  # k above E
        ((_X, 2.0), {}, TypeError, "top_k"),  # k not an int
        ((_X, 2), dict(scoring="tanh"), ValueError, "scoring"),  # unknown scoring
        ((_X, 2), dict(renormalize=1), TypeError, "renormalize"),  # not a bool
        ((_X, 2), dict(**_SIG, n_groups=3), ValueError, "n_groups"),  # 3 does not divide 8
        ((_X, 2), dict(n_groups=2), ValueError, "n_groups"),  # grouping with softmax
        ((_X, 2), dict(**_SIG, n_groups=2, topk_groups=3), ValueError, "topk_groups"),  # more than n_groups
        ((_X, 2), dict(**_SIG, n_groups=2, topk_groups=0), ValueError, "topk_groups"),  # below 1
        ((_X, 5), dict(**_SIG, n_groups=4, topk_groups=2), ValueError, "top_k"),  # > 2 groups x 2
        ((_X, 2), dict(bias=torch.zeros(8)), ValueError, "bias"),  # bias with softmax
        ((_X, 2), dict(**_SIG, bias=torch.zeros(7)), ValueError, "bias"),  # bias not [E]
        ((_X, 2), dict(**_SIG, bias=torch.zeros(8).long()), TypeError, "bias"),  # int bias
        ((_X, 2), dict(**_SIG, bias=torch.zeros(16)[::2]), ValueError, "bias"),  # strided
        ((_X, 2), dict(**_SIG, bias=torch.zeros(8, device="meta")), ValueError, "bias"),  # device
        ((_X, 2), dict(routed_scaling="2"), TypeError, "routed_scaling"),  # a string
        ((_X, 2), dict(routed_scaling=float("inf")), ValueError, "routed_scaling"),  # not finite
    ],
)
@pytest.mark.parametrize("fn", [route, route_reference])  # both entry points validate the same way
def test_bad_arguments(fn, args, kw, exc, match):
    with pytest.raises(exc, match=match):
        fn(*args, **kw)
