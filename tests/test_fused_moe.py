"""The whole layer, every path and format, against the float64 reference."""

import dataclasses
import warnings

import pytest
import torch
from conftest import ACT_DTYPE, ON_GPU, PLAIN_FORMAT, poison
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fusedmoe import policy
from fusedmoe._pdl import plain_launches
from fusedmoe._runtime import interpreting
from fusedmoe.api import PATHS, fused_moe, path_quantizes_activations
from fusedmoe.reference import cosine, moe_reference, rel_l2, requantisation_slack
from fusedmoe.weights import ExpertWeights

FORMATS = (PLAIN_FORMAT, "fp8_tensor", "fp8_block", "w4a8")
TENSOR_CORE_FORMATS = (PLAIN_FORMAT, "fp8_tensor", "fp8_block")  # route-direct's MMA forms (not FP4 weights)
# Kernel-variant tests (split K and small tiles, PDL, down tiles, grouped block sizes) take w4a8
# on the GPU only: in the interpreter its FP4 decoding makes a case up to ~3x another format's
# (CI's 20 minutes); there test_w4a8.py runs its grouped K steps and tile widths, and the fuzz
# test its route-direct K splits.
VARIANT_FORMATS = FORMATS if ON_GPU else TENSOR_CORE_FORMATS
# Launch forms of the bitwise-equality tests: the interpreter runs PDL=True as the PDL kernel code
# without griddepcontrol (its down kernel takes the first K step out of the loop), a superset of
# the plain form's code, so there it runs that one alone.
PDL_FORMS = (False, True) if ON_GPU else (True,)


# Against the reference that replays the path's activation quantisation (issue 2's bounds).
MAX_REL_L2, MIN_COSINE = 5e-3, 0.99995
# On the H200 the FP8 x FP8 MMA of the paths that quantise activations sums each 128-wide K
# step with less than fp32 precision; the ~2e-4 it moves the SwiGLU output flips ~0.2% of that
# output's FP8 requantisation against the float64 replay: 0.3-0.6% at the layer's output
# (benchmarks/results/H200/2026-11-30-s2/accuracy.md).  The interpreter sums in fp32 and stays
# under the strict bound (~0.03%).
W8A8_GPU_MAX_REL_L2 = 1e-2


def max_rel_l2(path: str, fmt: str) -> float:
    """The rel-L2 bound of a path and format on this device."""
    return W8A8_GPU_MAX_REL_L2 if ON_GPU and path_quantizes_activations(path, fmt) else MAX_REL_L2


def make_layer(m, e, k, h, i, fmt, device, *, p_drop=0.1):
    """Random weights with per-expert/row scale spread, x, routing with some -1 ids."""
    w13 = torch.randn(e, 2 * i, h, device=device) * 0.05 * (0.5 + torch.rand(e, 1, 1, device=device))
    w2 = torch.randn(e, h, i, device=device) * 0.05 * (0.5 + torch.rand(e, h, 1, device=device))
    weights = ExpertWeights.from_dense(w13, w2, fmt)
    x = torch.randn(m, h, device=device).to(ACT_DTYPE)
    if k <= e:  # distinct experts per token, as a top-k router gives
        ids = torch.rand(m, e, device=device).argsort(dim=1)[:, :k]
    else:
        ids = torch.randint(0, e, (m, k), device=device)
    ids = ids.to(torch.int32).contiguous()
    ids[torch.rand(m, k, device=device) < p_drop] = -1
    tw = torch.softmax(torch.randn(m, k, device=device), dim=-1)
    return weights, x, tw, ids


def run_and_check(weights, x, tw, ids, path, *, shared=None, offset=0, n_global=None, config=None):
    out = poison(torch.empty_like(x))
    res = fused_moe(x, weights, tw, ids, path=path, out=out, shared_output=shared, expert_offset=offset,
                    num_experts=n_global, config=config)
    assert res is out
    ref = moe_reference(x, weights, tw, ids, expert_offset=offset, shared_output=shared,
                        quantize_activations=path_quantizes_activations(path, weights.format))
    err, cos = rel_l2(out, ref), cosine(out, ref)
    assert not torch.isnan(out).any(), "unwritten (NaN) output rows"
    # What the output dtype can hold: one subnormal step per element (a tiny layer's output
    # can lie below the smallest normal, where relative precision is lost: fuzz, H=16, I=8)
    info = torch.finfo(out.dtype)
    floor = info.smallest_normal * info.eps * out.numel() ** 0.5
    ref_norm = ref.double().norm().item()
    diff = (out.double() - ref.double()).norm().item()  # a zero reference needs an output within the floor
    # On the GPU an FP8 requantisation of the SwiGLU output may round the other way where its
    # value lies near an e4m3 midpoint (W8A8_GPU_MAX_REL_L2): one such flip per token is allowed
    # besides (one of an element carrying 65% of its token moved a 17-token w4a8 layer by 1.8%,
    # as 2e-4 of noise in the replay's own sums did; 2026-12-02, twentieth session)
    slack = 0.0
    if ON_GPU and path_quantizes_activations(path, weights.format):
        slack = requantisation_slack(x, weights, tw, ids, expert_offset=offset).norm().item()
    allowed = max_rel_l2(path, weights.format) * ref_norm + slack
    assert diff <= allowed + 2 * floor, f"rel-L2 {err:.3e}"
    # with a flip allowed, the cosine a rel-L2 within that bound allows
    min_cosine = min(MIN_COSINE, max(0.0, 1 - (allowed / max(ref_norm, floor)) ** 2) ** 0.5) if slack else MIN_COSINE
    assert cos >= min_cosine or ref_norm < 1e3 * floor, f"cosine {cos:.6f}"
    return out


# (M, E, k, H, I) with the reason each is here.
CASES = [
    (1, 4, 2, 64, 32),      # decode, one token, aligned sizes
    (3, 33, 4, 72, 40),     # odd expert count, sizes not multiples of a tile or of 128
    (17, 4, 2, 136, 200),   # more routes than experts: blocks hold several rows; I > 128 ragged
    (5, 1, 1, 96, 48),      # a single expert, top-1
    (64, 8, 4, 64, 32),     # many tokens: several blocks per expert
]


@pytest.mark.parametrize("m,e,k,h,i,fmt,path", [
    (*case, fmt, path) for case in CASES for fmt in FORMATS for path in PATHS
    # w4a8's 256 route-direct programs at M=64 take 45 s in the interpreter: on the GPU only
    if ON_GPU or not (fmt == "w4a8" and path == "route_direct" and case[0] == 64)])
def test_layer_matches_reference(m, e, k, h, i, fmt, path, device):
    weights, x, tw, ids = make_layer(m, e, k, h, i, fmt, device)
    run_and_check(weights, x, tw, ids, path)


@pytest.mark.parametrize("path", PATHS)
def test_zero_tokens_returns_empty(path, device):
    weights, x, tw, ids = make_layer(0, 4, 2, 64, 32, PLAIN_FORMAT, device)
    out = fused_moe(x, weights, tw, ids, path=path)
    assert out.shape == (0, 64)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("path", PATHS)
def test_shared_output_and_expert_window(fmt, path, device):
    # Expert parallelism: this rank holds global experts [6, 11) of 16; other ids contribute nothing.
    m, k, h, i = 9, 4, 80, 48
    weights, x, _, _ = make_layer(m, 5, k, h, i, fmt, device)
    ids = torch.randint(-1, 16, (m, k), device=device, dtype=torch.int32)
    tw = torch.rand(m, k, device=device)
    shared = torch.randn(m, h, device=device).to(ACT_DTYPE)
    run_and_check(weights, x, tw, ids, path, shared=shared, offset=6, n_global=16)


@pytest.mark.parametrize("path", PATHS)
def test_expert_window_over_full_weights(path, device):
    # Weights of all 12 experts, this rank computing the window [4, 9): the same result as
    # weights holding only those 5 experts; routes to other experts contribute nothing.
    m, k, h, i = 6, 3, 64, 48
    full, x, _, _ = make_layer(m, 12, k, h, i, "fp8_tensor", device)
    ids = torch.randint(-1, 12, (m, k), device=device, dtype=torch.int32)
    tw = torch.rand(m, k, device=device)
    out = fused_moe(x, full, tw, ids, path=path, expert_offset=4, num_local_experts=5)
    local = full.local_window(4, 5)
    torch.testing.assert_close(out, fused_moe(x, local, tw, ids, path=path, expert_offset=4, num_experts=12),
                               rtol=0, atol=0)
    ref = moe_reference(x, full, tw, ids, expert_offset=4, num_local_experts=5,
                        quantize_activations=path_quantizes_activations(path, "fp8_tensor"))
    assert rel_l2(out, ref) <= max_rel_l2(path, "fp8_tensor")
    with pytest.raises(ValueError, match="num_local_experts: expected 12"):
        fused_moe(x, full, tw, ids, path=path, expert_offset=10, num_local_experts=5)


@pytest.mark.parametrize("path", PATHS)
def test_expert_map(path, device):
    # A non-contiguous set of held experts given by expert_map: global ids 1, 4, 6, 9 are the
    # local experts 0..3; every other id contributes nothing.  The map is a remap of the ids, so
    # the call is bitwise the one on the local ids (fp8_block: scales of the remapped experts);
    # the 16-bit layer is checked against float64 too.  (Not the fp8_block layer: on the GPU the
    # w8a8 paths flip ~0.2% of the SwiGLU output's e4m3 codes against the float64 replay, and in
    # a layer of ~800 codes one flip can move the output by 2%: seed 1183860750, sixteenth session.)
    m, k, h, i = 7, 3, 64, 40
    emap = torch.full((10,), -1, dtype=torch.int32, device=device)
    emap[torch.tensor([1, 4, 6, 9], device=device)] = torch.arange(4, dtype=torch.int32, device=device)
    ids = torch.randint(-1, 10, (m, k), device=device, dtype=torch.int32)
    tw = torch.rand(m, k, device=device)
    local = torch.where(ids >= 0, emap[ids.clamp(min=0)], -1)
    for fmt in ("fp8_block", PLAIN_FORMAT):
        weights, x, _, _ = make_layer(m, 4, k, h, i, fmt, device)
        out = fused_moe(x, weights, tw, ids, path=path, expert_map=emap)
        assert torch.equal(out, fused_moe(x, weights, tw, local, path=path))
    ref = moe_reference(x, weights, tw, local)
    assert rel_l2(out, ref) <= max_rel_l2(path, PLAIN_FORMAT) and cosine(out, ref) >= MIN_COSINE
    with pytest.raises(ValueError, match=r"expert_map: expected ids in \[-1, 4\)"):
        fused_moe(x, weights, tw, ids, path=path, expert_map=emap + 5)
    with pytest.raises(ValueError, match="expert_map: give either"):
        fused_moe(x, weights, tw, ids, path=path, expert_map=emap, expert_offset=1)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("activation,bias", [("swiglu_oai", True), ("gelu_tanh", False), ("silu", True)])
def test_activations_and_biases(activation, bias, path, fmt, device):
    # GPT-OSS experts (clamped SwiGLU, biases on both projections, gate/up interleaved in the
    # checkpoint), GELU-gated experts, and biases with SiLU; x scaled up so that the clamp at 7 bites.
    m, e, k, h, i = 5, 6, 2, 72, 40
    w13 = torch.randn(e, 2 * i, h, device=device) * 0.2
    w2 = torch.randn(e, h, i, device=device) * 0.05
    b13 = torch.randn(e, 2 * i, device=device) if bias else None
    b2 = torch.randn(e, h, device=device) if bias else None
    weights = ExpertWeights.from_dense(w13, w2, fmt, w13_bias=b13, w2_bias=b2, gate_up_interleaved=bias)
    x = (torch.randn(m, h, device=device) * 3).to(ACT_DTYPE)
    ids = torch.randint(-1, e, (m, k), device=device, dtype=torch.int32)
    tw = torch.rand(m, k, device=device)
    out = poison(torch.empty_like(x))
    fused_moe(x, weights, tw, ids, path=path, out=out, activation=activation)
    ref = moe_reference(x, weights, tw, ids, activation=activation,
                        quantize_activations=path_quantizes_activations(path, fmt))
    assert rel_l2(out, ref) <= max_rel_l2(path, fmt) and cosine(out, ref) >= MIN_COSINE
    if bias:  # the interleaved checkpoint rows were reordered to gate rows then up rows
        assert torch.equal(weights.w13_bias[:, :i], b13[:, 0::2].float())


@pytest.mark.parametrize("tensor_cores", [False, True])
def test_split_k_adds_the_bias_once(tensor_cores, device):
    # With K split, only split 0 adds the gate/up bias; the down kernel sums the splits.
    weights = ExpertWeights.from_dense(torch.randn(3, 64, 300, device=device) * 0.05,
                                       torch.randn(3, 300, 32, device=device) * 0.05, PLAIN_FORMAT,
                                       w13_bias=torch.randn(3, 64, device=device),
                                       w2_bias=torch.randn(3, 300, device=device))
    x = torch.randn(2, 300, device=device).to(ACT_DTYPE)
    ids = torch.tensor([[0, 2], [1, -1]], device=device, dtype=torch.int32)
    tw = torch.rand(2, 2, device=device)
    gate_up = policy.Tile(8, 128, 4, 1, split_k=3, swap_ab=tensor_cores)
    cfg = policy.RouteDirectConfig(gate_up, policy.Tile(16, 128, 4, 1))
    run_and_check(weights, x, tw, ids, "route_direct", config=cfg)


def test_all_routes_dropped_gives_shared_only(device):
    # No route held: the output is exactly the shared expert's output.
    weights, x, tw, ids = make_layer(4, 4, 2, 64, 32, PLAIN_FORMAT, device)
    ids.fill_(-1)
    shared = torch.randn(4, 64, device=device).to(ACT_DTYPE)
    for path in PATHS:
        out = fused_moe(x, weights, tw, ids, path=path, shared_output=shared)
        torch.testing.assert_close(out, shared, rtol=0, atol=0)


@pytest.mark.parametrize("fmt", TENSOR_CORE_FORMATS)
@pytest.mark.parametrize("m,e,k,split", [
    (70, 3, 2, 1),   # 140 routes on 3 experts: several groups of 16 per expert, a scan past 128 ids
    (2, 40, 4, 2),   # decode-like: routes rarely share an expert; K split
    (9, 5, 3, 3),    # ragged K split (H = 300 is not a multiple of 3 x 128)
])
def test_route_direct_tensor_core_form(fmt, m, e, k, split, device):
    # The swap-AB gate/up (routes sharing an expert are grouped by a scan of topk_ids).  The
    # interpreter takes the 140 routes on a smaller layer (H 136, I 40: 2 K steps, 3 tiles of I).
    h, i = (136, 40) if m > 64 and not ON_GPU else (300, 72)
    weights, x, tw, ids = make_layer(m, e, k, h, i, fmt, device)
    cfg = policy.RouteDirectConfig(policy.Tile(16, 128, 4, 2, split_k=split, swap_ab=True), policy.Tile(16, 128, 4, 1))
    assert policy.legal("route_direct", cfg, fmt)
    run_and_check(weights, x, tw, ids, "route_direct", config=cfg)


@pytest.mark.parametrize("fmt", ["fp8_tensor", "fp8_block"])
@pytest.mark.parametrize("m,e,k,split,bias", [
    (3, 6, 2, 1, False),    # k = 2: the stacked tile is 2 x BLOCK_N rows, the N side padded to 16
    (2, 40, 8, 2, True),    # k = 8, K-split partials reduced while loading, biases
    (2, 20, 12, 1, False),  # k = 12 -> 16 stacked blocks, I (72) not a multiple of the K step
])
def test_route_direct_tensor_core_down(fmt, m, e, k, split, bias, device):
    # The down + combine with the token's k expert tiles stacked into one MMA (FP8 weights).
    h, i = 300, 72
    weights = ExpertWeights.from_dense(torch.randn(e, 2 * i, h, device=device) * 0.05,
                                       torch.randn(e, h, i, device=device) * 0.05, fmt,
                                       w13_bias=torch.randn(e, 2 * i, device=device) if bias else None,
                                       w2_bias=torch.randn(e, h, device=device) if bias else None)
    x = torch.randn(m, h, device=device).to(ACT_DTYPE)
    ids = torch.rand(m, e, device=device).argsort(dim=1)[:, :k].to(torch.int32).contiguous()
    ids[0, 0] = -1
    tw = torch.rand(m, k, device=device)
    gate_up = policy.Tile(16, 128, 4, 2, split_k=split, swap_ab=True)
    cfg = policy.RouteDirectConfig(gate_up, policy.Tile(16, 128, 4, 2, swap_ab=True))
    assert policy.legal("route_direct", cfg, fmt)
    run_and_check(weights, x, tw, ids, "route_direct", shared=torch.randn_like(x), config=cfg)


@pytest.mark.parametrize("fmt", ["fp8_tensor", "fp8_block"])
@pytest.mark.parametrize("x_scale", [1e-2, 1e-4])
def test_tensor_core_fp8_forms_keep_small_activations(fmt, x_scale, device):
    # Found by review: a fixed 2^-4 scale put activations below ~1e-3 into fp16 subnormals
    # (3% off at rms 1e-5).  Each row's own power-of-two scale keeps fp16's relative precision.
    e, k, h, i, m = 4, 2, 64, 128, 4
    w13 = torch.randn(e, 2 * i, h, device=device) * 0.05
    w2 = torch.randn(e, h, i, device=device) * 0.05 / x_scale ** 2
    weights = ExpertWeights.from_dense(w13, w2, fmt)
    x = (torch.randn(m, h, device=device) * x_scale).to(ACT_DTYPE)
    ids = torch.rand(m, e, device=device).argsort(dim=1)[:, :k].to(torch.int32).contiguous()
    tw = torch.rand(m, k, device=device)
    cfg = policy.RouteDirectConfig(policy.Tile(16, 128, 4, 2, swap_ab=True), policy.Tile(16, 128, 4, 2, swap_ab=True))
    run_and_check(weights, x, tw, ids, "route_direct", config=cfg)


@pytest.mark.parametrize("fmt", ["fp8_tensor", "fp8_block"])
def test_tensor_core_form_takes_bf16_outliers(fmt, device):
    # FP8 weights meet bf16 activations in fp16 (a power-of-two scale per row): large and tiny
    # x must give what the GEMV form (fp32 products) gives.  Compared with each other, not the
    # reference: both round their output to bf16, so elements agree to about one bf16 step.  The
    # two sum in different orders, and the outlier row's sums of +-1e5 terms cancel to small
    # elements, whose fp32 rounding can differ by more than a step (CI seed 1002797857): so the
    # whole agrees to bf16 precision and 99% of the elements to one step each.
    weights, x, tw, ids = make_layer(5, 8, 3, 300, 72, fmt, device)
    x = x.to(torch.bfloat16)
    x[0, :5] = torch.tensor([3e4, -2e-5, 1e-6, 7000.0, -1e-3])
    tiles = dict(block_n=16, block_k=128, num_warps=4, split_k=2)
    mma = policy.RouteDirectConfig(policy.Tile(num_stages=2, swap_ab=True, **tiles), policy.Tile(16, 128, 4, 1))
    gemv = policy.RouteDirectConfig(policy.Tile(num_stages=1, **tiles), policy.Tile(16, 128, 4, 1))
    a = fused_moe(x, weights, tw, ids, path="route_direct", config=mma)
    b = fused_moe(x, weights, tw, ids, path="route_direct", config=gemv)
    assert torch.isfinite(a).all() and torch.isfinite(b).all()
    assert rel_l2(a, b) <= 2.0 ** -8
    one_step = (a.float() - b.float()).abs() <= 2.0 ** -7 * torch.maximum(a.float().abs(), b.float().abs())
    assert one_step.float().mean() >= 0.99


@pytest.mark.parametrize("fmt", VARIANT_FORMATS)
@pytest.mark.parametrize("gate_up", [policy.Tile(8, 128, 4, 1, split_k=3), policy.Tile(2, 512, 4, 1, split_k=2)])
def test_route_direct_split_k_and_small_tiles(fmt, gate_up, device):
    # Split K with the SwiGLU applied in the down kernel, tiles smaller than I and H, and the
    # narrowest GEMV tile (2 rows of gate and up) with a K step wider than a split's K range.
    weights, x, tw, ids = make_layer(2, 6, 3, 300, 136, fmt, device)
    cfg = policy.RouteDirectConfig(gate_up, policy.Tile(16, 128, 4, 1))
    run_and_check(weights, x, tw, ids, "route_direct", config=cfg)


@pytest.mark.parametrize("fmt", ["fp8_tensor", "fp8_block"])
@pytest.mark.parametrize("gate_up,down,down_tiles", [
    (policy.Tile(8, 128, 4, 1), policy.Tile(16, 256, 4, 1), 1),  # down steps of two 128-column scale groups
    (policy.Tile(4, 512, 4, 1, split_k=2), policy.Tile(8, 512, 4, 1), 2)])
def test_route_direct_fp16_products(fmt, gate_up, down, down_tiles, device):
    # The GEMV kernels with their products in packed fp16 (each 16 columns of x or act under their
    # own power-of-two scale), on ragged sizes (H 1000: partial K steps and splits; I 200: 12.5
    # chunks; in the interpreter 3 tokens, H 520, I 104: 6.5 chunks), dropped routes and an expert
    # window, with x spanning 2^-20..2^4 across columns and a row of zeros: the fp32-product form's
    # output within fp16's rounding.
    m, e, k, h, i = (4, 6, 3, 1000, 200) if ON_GPU else (3, 6, 3, 520, 104)
    weights, x, _, _ = make_layer(m, e, k, h, i, fmt, device)
    ids = torch.randint(-1, 9, (m, k), device=device, dtype=torch.int32)  # this rank: experts [2, 8)
    tw = torch.rand(m, k, device=device)
    spread = torch.exp2(torch.linspace(-20, 4, h, device=device))[torch.randperm(h, device=device)]
    x = (x.float() * spread).to(ACT_DTYPE)
    x[1] = 0
    half = policy.RouteDirectConfig(gate_up, down, down_tiles=down_tiles, fp16_products=True)
    assert policy.legal("route_direct", half, fmt)
    out = run_and_check(weights, x, tw, ids, "route_direct", offset=2, n_global=9, config=half)
    full = fused_moe(x, weights, tw, ids, path="route_direct", expert_offset=2, num_experts=9,
                     config=dataclasses.replace(half, fp16_products=False))
    assert rel_l2(out, full) <= 2.0 ** -9


@pytest.mark.parametrize("fmt", TENSOR_CORE_FORMATS)
@pytest.mark.parametrize("down,fp16,pdl,shape", [
    (policy.Tile(16, 128, 4, 1), False, True, (3, 9, 4, 200, 256)),   # DeepSeek-like tile: routes over warps
    (policy.Tile(8, 512, 8, 1), False, False, (2, 5, 2, 136, 1040)),  # Mixtral-like: K steps past I
    (policy.Tile(4, 256, 8, 1), True, True, (4, 12, 8, 96, 400)),     # Qwen3-like, fp16 products
    (policy.Tile(16, 256, 8, 1), False, True, (1, 7, 8, 1000, 192))])  # Hunyuan-like: one K step
def test_route_direct_gluon_down(fmt, down, fp16, pdl, shape, device):
    # The Gluon down (sm_90; elsewhere the Triton down runs the same tile) on ragged H, I a
    # multiple of 16 (its whole-group masks), dropped routes, an expert window, biases and a
    # shared output: within the bounds against float64, and within rounding of the Triton down.
    m, e, k, h, i = shape
    weights, x, _, _ = make_layer(m, e, k, h, i, fmt, device)
    weights = dataclasses.replace(weights, w2_bias=torch.randn(e, h, device=device) * 0.1)
    ids = torch.randint(-1, e + 2, (m, k), device=device, dtype=torch.int32)  # this rank: experts [1, e + 1)
    tw = torch.rand(m, k, device=device)
    shared = torch.randn(m, h, device=device).to(ACT_DTYPE)
    fp16 = fp16 and fmt != PLAIN_FORMAT
    cfg = policy.RouteDirectConfig(policy.Tile(8, 128, 4, 1), down, pdl=pdl, fp16_products=fp16, down_gluon=True)
    assert policy.legal("route_direct", cfg, fmt)
    out = run_and_check(weights, x, tw, ids, "route_direct", shared=shared, offset=1, n_global=e + 2, config=cfg)
    triton_down = fused_moe(x, weights, tw, ids, path="route_direct", shared_output=shared, expert_offset=1,
                            num_experts=e + 2, config=dataclasses.replace(cfg, down_gluon=False))
    assert rel_l2(out, triton_down) <= 2.0 ** -8
    again = fused_moe(x, weights, tw, ids, path="route_direct", shared_output=shared, expert_offset=1,
                      num_experts=e + 2, config=cfg)  # the cached launch
    assert torch.equal(again, out)


def test_route_direct_gluon_down_legality():
    gemv = policy.RouteDirectConfig(policy.Tile(8, 128, 4, 1), policy.Tile(16, 128, 4, 1), down_gluon=True)
    assert all(policy.legal("route_direct", gemv, f) for f in ("bf16", "fp16", "fp8_tensor", "fp8_block"))
    assert not policy.legal("route_direct", gemv, "w4a8")
    for bad in (dict(down_tiles=2), dict(gate_up=policy.Tile(8, 128, 4, 1, split_k=2)),
                dict(down=policy.Tile(16, 128, 4, 2)), dict(down=policy.Tile(16, 128, 4, 1, max_registers=96)),
                dict(down=policy.Tile(16, 128, 4, 3, swap_ab=True))):
        assert not policy.legal("route_direct", dataclasses.replace(gemv, **bad), "fp8_tensor"), bad
    assert policy.config_from_json(gemv.json) == gemv


@pytest.mark.parametrize("fmt", ["fp8_tensor", "fp8_block"])
def test_route_direct_fp16_products_at_the_fp16_bound(fmt, device):
    # The largest sums the fp16 products can meet: a gate row whose first 16 weights are stored
    # as 448 (each expert's largest weight) against 16 activations that scale to just under 8:
    # each lane sums 8 products of 448 * 7.97 = 28560, below 2^15 (a scale window one binade
    # higher would reach inf).
    e, h, i = 3, 256, 48
    w13 = torch.randn(e, 2 * i, h, device=device) * 0.05
    w13[:, 0, :16] = 1.0
    w2 = torch.randn(e, h, i, device=device) * 0.05
    weights = ExpertWeights.from_dense(w13, w2, fmt)
    x = (torch.randn(2, h, device=device) * 0.05).to(ACT_DTYPE)
    x[:, :16] = 1.9921875  # exact in bf16 and fp16: scaled to 7.96875
    ids = torch.tensor([[0, 1], [2, 0]], device=device, dtype=torch.int32)
    tw = torch.full((2, 2), 0.5, device=device)
    half = policy.RouteDirectConfig(policy.Tile(8, 256, 4, 1), policy.Tile(16, 128, 4, 1), fp16_products=True)
    out = run_and_check(weights, x, tw, ids, "route_direct", config=half)
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("fmt", ["fp8_tensor", "w4a8"])
def test_grouped_fp16_route_outputs_beyond_fp16(fmt, device):
    # fp16 activations: one route's down output peaks near 1.5e5 (above fp16's 65504) while the
    # weighted sum (routing weight 0.25) fits; the grouped path keeps route outputs in fp32 then.
    e, h, i = 2, 64, 64
    gen = torch.Generator(device=device).manual_seed(4)
    w13 = torch.randn(e, 2 * i, h, device=device, generator=gen) * 0.1
    w2 = torch.randn(e, h, i, device=device, generator=gen) * 0.1
    x = torch.randn(3, h, device=device, generator=gen).half()
    ids = torch.zeros(3, 1, device=device, dtype=torch.int32)
    tw = torch.full((3, 1), 0.25, device=device)
    peak = moe_reference(x, ExpertWeights.from_dense(w13, w2, fmt), torch.ones_like(tw), ids,
                         quantize_activations=True).abs().max().item()
    weights = ExpertWeights.from_dense(w13, w2 * (1.5e5 / peak), fmt)
    out = run_and_check(weights, x, tw, ids, "grouped")
    assert torch.isfinite(out).all() and out.abs().max() > 2e4


def test_fp16_products_legality():
    gemv = policy.RouteDirectConfig(policy.Tile(8, 128, 4, 1), policy.Tile(16, 128, 4, 1), fp16_products=True)
    assert policy.legal("route_direct", gemv, "fp8_tensor") and policy.legal("route_direct", gemv, "fp8_block")
    assert not policy.legal("route_direct", gemv, PLAIN_FORMAT)  # 16-bit weights: nothing to convert
    mma = dataclasses.replace(gemv, gate_up=policy.Tile(16, 128, 4, 2, swap_ab=True))
    assert policy.legal("route_direct", mma, "fp8_tensor")  # the GEMV down takes them
    both = dataclasses.replace(mma, down=policy.Tile(16, 128, 4, 2, swap_ab=True))
    assert not policy.legal("route_direct", both, "fp8_tensor")  # no GEMV form left
    narrow = dataclasses.replace(gemv, down=policy.Tile(16, 8, 4, 1))
    assert not policy.legal("route_direct", narrow, "fp8_tensor")  # K steps of whole 16-column chunks


@pytest.mark.parametrize("fp16", [False, True])
@pytest.mark.parametrize("gate_up,down,down_tiles", [
    (policy.Tile(8, 256, 4, 1), policy.Tile(16, 256, 4, 1), 1),  # K steps of two scale groups
    (policy.Tile(16, 128, 4, 1, split_k=2), policy.Tile(8, 128, 4, 1), 3)])
def test_route_direct_block_scale_forms(fp16, gate_up, down, down_tiles, device):
    # fp8_block's GEMV kernels with one block-scale row per K step (gate/up: one each for its gate
    # and up rows; down: one per route) and with a scale per weight row: tiles past the first
    # 128-row scale block (I 136, H 300) and partial groups, dropped routes and an expert window.
    m, e, k, h, i = 3, 6, 3, 300, 136
    weights, x, tw, _ = make_layer(m, e, k, h, i, "fp8_block", device)
    ids = torch.randint(-1, 9, (m, k), device=device, dtype=torch.int32)  # this rank: experts [2, 8)
    rows = policy.RouteDirectConfig(gate_up, down, down_tiles=down_tiles, fp16_products=fp16)
    per_row = dataclasses.replace(rows, block_scale_rows=False)
    a = run_and_check(weights, x, tw, ids, "route_direct", offset=2, n_global=9, config=rows)
    b = run_and_check(weights, x, tw, ids, "route_direct", offset=2, n_global=9, config=per_row)
    assert rel_l2(a, b) <= 2.0 ** -12


def test_block_scale_rows_legality(device):
    # One block-scale row per K step holds for GEMV tiles of at most 128 rows; wider ones take the
    # per-row form, and the tensor-core forms are not bound by it.
    wide = policy.RouteDirectConfig(policy.Tile(256, 128, 4, 1), policy.Tile(16, 128, 4, 1))
    assert policy.legal("route_direct", wide, "fp8_tensor") and not policy.legal("route_direct", wide, "fp8_block")
    assert policy.legal("route_direct", dataclasses.replace(wide, block_scale_rows=False), "fp8_block")
    wide_down = policy.RouteDirectConfig(policy.Tile(128, 128, 4, 1), policy.Tile(256, 128, 4, 1))
    assert not policy.legal("route_direct", wide_down, "fp8_block")
    assert policy.legal("route_direct", dataclasses.replace(wide_down, down=policy.Tile(128, 128, 4, 1)), "fp8_block")
    mma = policy.RouteDirectConfig(policy.Tile(256, 128, 4, 2, swap_ab=True), policy.Tile(16, 128, 4, 1))
    assert policy.legal("route_direct", mma, "fp8_block")
    weights, x, tw, ids = make_layer(2, 4, 2, 256, 384, "fp8_block", device)
    with pytest.raises(ValueError, match="config"):
        fused_moe(x, weights, tw, ids, path="route_direct", config=wide)


def within_one_ulp(got, want):
    """got equals want (16-bit floats) but for at most 1% of elements, each one ulp off."""
    ulps = (got.view(torch.int16).int() - want.view(torch.int16).int()).abs()
    assert int(ulps.max()) <= 1 and int((ulps > 0).sum()) <= max(1, got.numel() // 100)


@pytest.mark.parametrize("fmt,tensor_cores", [(f, False) for f in VARIANT_FORMATS] +
                         [(f, True) for f in TENSOR_CORE_FORMATS])
# down's whole K in the tile loaded before the wait, or two steps (the interpreter: two steps only)
@pytest.mark.parametrize("i", [100, 136] if ON_GPU else [136])
def test_route_direct_pdl_equals_the_plain_launches(fmt, tensor_cores, i, device):
    # Programmatic dependent launch changes when the kernels start, not what they compute: the
    # plain launches' output to the last bit but for rare ulps (the PDL down takes its first K
    # step out of its loop, so that step's weights load before the wait; on the GPU the two
    # forms' fp32 sums then differed in about one output of 4000, by one bf16 ulp, twelfth
    # session).  Replayed from a CUDA graph of three chained layers with new inputs, it is
    # bitwise its own eager launches and within an ulp of the plain ones: no race between the
    # overlapped grids.  The interpreter runs the PDL code without griddepcontrol, bitwise.
    from fusedmoe._pdl import pdl_launch

    m, e, k, h = 3, 6, 3, 300
    weights, x, tw, ids = make_layer(m, e, k, h, i, fmt, device)
    shared = torch.randn_like(x)
    if tensor_cores:
        down_mma = fmt != PLAIN_FORMAT  # the tensor-core down takes FP8 weights only
        tiles = (policy.Tile(16, 128, 4, 2, split_k=2, swap_ab=True), policy.Tile(16, 128, 4, 2, swap_ab=down_mma))
    else:
        tiles = (policy.Tile(8, 128, 4, 1, split_k=2), policy.Tile(16, 128, 4, 1))
    plain, pdl = policy.RouteDirectConfig(*tiles), policy.RouteDirectConfig(*tiles, pdl=True)
    assert policy.legal("route_direct", pdl, fmt)
    assert pdl_launch(x.device).get("PDL")  # the PDL kernel code runs here too
    want = fused_moe(x, weights, tw, ids, path="route_direct", config=plain, shared_output=shared)
    got = fused_moe(x, weights, tw, ids, path="route_direct", config=pdl, shared_output=shared)
    if not ON_GPU:  # the interpreter sums both forms alike
        assert torch.equal(got.view(torch.int16), want.view(torch.int16))
        return
    within_one_ulp(got, want)

    def layers(cfg, inp):  # down(PDL) of one layer -> gate/up(PDL) of the next, act buffers reused
        for _ in range(3):
            inp = fused_moe(inp, weights, tw, ids, path="route_direct", config=cfg, shared_output=shared,
                            check_ids=False)
        return inp

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = layers(pdl, x)
    for _ in range(3):
        _, x_new, tw_new, ids_new = make_layer(m, e, k, h, i, fmt, device)
        x.copy_(x_new), tw.copy_(tw_new), ids.copy_(ids_new), shared.normal_()
        out.fill_(float("nan"))
        graph.replay()
        want = layers(pdl, x)
        assert torch.isfinite(want).all() and torch.equal(out.view(torch.int16), want.view(torch.int16))
        within_one_ulp(out, layers(plain, x))  # and a race both would share shows against the plain launches


@pytest.mark.parametrize("fmt", ["fp8_tensor", "fp8_block"])
@pytest.mark.parametrize("promote_k", [0, 64, 128])
def test_grouped_fp8_promotion_intervals(fmt, promote_k, device):
    # The promotion interval (0: never) changes only how the MMA rounds (on sm_90); the layer is the same.
    weights, x, tw, ids = make_layer(37, 8, 2, 300, 136, fmt, device)
    base = policy.grouped_config(37, 2, 8, 300, 136, fmt)
    run_and_check(weights, x, tw, ids, "grouped", config=dataclasses.replace(base, fp8_promote_k=promote_k))


@pytest.mark.parametrize("fmt", VARIANT_FORMATS)
@pytest.mark.parametrize("block_m,swap_ab,group_m", [(16, True, 1), (32, True, 4), (32, False, 1), (64, False, 3),
                                                     (16, True, 16)])
def test_grouped_block_sizes_and_swap_ab(block_m, swap_ab, group_m, fmt, device):
    # BLOCK_M the policy can pick, with and without swap-AB (weights on the MMA's M side), and
    # groups of blocks walked together (a last partial group, a group wider than the grid), on
    # a skewed routing (half the routes on expert 0) and ragged H, I.
    weights, x, tw, ids = make_layer(40, 6, 2, 72, 136, fmt, device)
    ids[::2, 0] = 0
    gate_n = 128 if fmt != PLAIN_FORMAT else 32
    cfg = policy.GroupedConfig(block_m, policy.Tile(gate_n, 64, 4, 2, swap_ab=swap_ab),
                               policy.Tile(64, 64, 4, 2, swap_ab=swap_ab), group_m)
    run_and_check(weights, x, tw, ids, "grouped", config=cfg)


@pytest.mark.parametrize("fmt", ["fp8_tensor", "fp8_block"])
@pytest.mark.parametrize("block_m,gate_n", [(32, 64), (64, 64), (64, 32), (128, 32)])
def test_grouped_fp8_gate_up_tiles_of_part_of_a_group(block_m, gate_n, fmt, monkeypatch, device):
    # FP8 gate/up tiles of 64 or 32 columns hold part of a SwiGLU output group: it is written in
    # fp32 and requantised by a launch of its own, to the same rows and scales as the fused epilogue.
    weights, x, tw, ids = make_layer(23, 6, 2, 72, 200, fmt, device)
    fused = policy.GroupedConfig(block_m, policy.Tile(128, 64, 4, 2, swap_ab=block_m < 64),
                                 policy.Tile(64, 64, 4, 2, swap_ab=block_m < 64))
    split = dataclasses.replace(fused, gate_up=dataclasses.replace(fused.gate_up, block_n=gate_n))
    assert policy.legal("grouped", split, fmt)
    # 32 columns swapped would put 32 weight rows on the MMA's M side (no wgmma): not a config
    assert not policy.legal("grouped", dataclasses.replace(fused, gate_up=policy.Tile(32, 64, 4, 2, swap_ab=True)), fmt)
    assert not policy.legal("grouped", dataclasses.replace(fused, gate_up=policy.Tile(16, 64, 4, 2)), fmt)
    got = run_and_check(weights, x, tw, ids, "grouped", config=split)
    want = fused_moe(x, weights, tw, ids, path="grouped", config=fused)
    assert rel_l2(got, want) <= 1e-2  # the MMA may add in another order; the rest is the same arithmetic
    from fusedmoe.paths import grouped
    names = _count_launches(monkeypatch, lambda: fused_moe(x, weights, tw, ids, path="grouped", config=split,
                                                           check_ids=False))
    assert len(names) == grouped.kernel_launches(23, 2, weights, split) == grouped.kernel_launches(23, 2, weights) + 1


@pytest.mark.parametrize("fmt", VARIANT_FORMATS)
@pytest.mark.parametrize("block_m,tail_m", [(64, 32), (32, 16)])
def test_grouped_tail_tiles(block_m, tail_m, fmt, device):
    # Blocks of at most tail_m routes run a tile of tail_m rows: experts whose last block holds
    # exactly tail_m routes, tail_m + 1, one, and a whole block (no tail), with top-2 routes.
    counts = [block_m + tail_m, tail_m + 1, 1, block_m, tail_m - 1]
    experts = torch.cat([torch.full((c,), j, dtype=torch.int32) for j, c in enumerate(counts)])
    experts = experts[torch.randperm(len(experts))]
    if len(experts) % 2:
        experts = torch.cat([experts, torch.tensor([-1], dtype=torch.int32)])
    weights, x, tw, _ = make_layer(len(experts) // 2, len(counts), 2, 72, 136, fmt, device)
    ids = experts.view(-1, 2).to(device)
    ids = torch.where(ids[:, :1] == ids[:, 1:], torch.stack([ids[:, 0], -torch.ones_like(ids[:, 0])], 1), ids)
    ids = ids.contiguous()
    swap = block_m < 64
    gate_n = 128 if fmt != PLAIN_FORMAT else 32
    base = policy.GroupedConfig(block_m, policy.Tile(gate_n, 64, 4, 2, swap_ab=swap),
                                policy.Tile(64, 64, 4, 2, swap_ab=swap), 2)
    tail = dataclasses.replace(base, tail_m=tail_m)
    assert policy.legal("grouped", tail, fmt)
    got = run_and_check(weights, x, tw, ids, "grouped", config=tail)
    want = fused_moe(x, weights, tw, ids, path="grouped", config=base)
    assert rel_l2(got, want) <= 1e-2  # the MMA may add in another order; the rest is the same arithmetic


@pytest.mark.parametrize("fmt", VARIANT_FORMATS)
def test_register_caps_compute_the_same_layer(fmt, device):
    # Tile.max_registers caps the registers per thread (the compiler spills above the cap, on
    # the GPU: 128 for an 8-warp FP8 gate/up of 64 columns spills in its K loop); the output
    # is the uncapped config's, bit for bit (the same instructions, some through local memory).
    weights, x, tw, ids = make_layer(37, 5, 2, 256, 256, fmt, device)
    base = policy.grouped_config(37, 2, 5, 256, 256, fmt)
    capped = dataclasses.replace(base, gate_up=dataclasses.replace(base.gate_up, num_warps=8, max_registers=128),
                                 down=dataclasses.replace(base.down, max_registers=168))
    assert policy.legal("grouped", capped, fmt)
    got = run_and_check(weights, x, tw, ids, "grouped", config=capped)
    want = fused_moe(x, weights, tw, ids, path="grouped",
                     config=dataclasses.replace(capped, gate_up=dataclasses.replace(capped.gate_up, max_registers=0),
                                                down=dataclasses.replace(capped.down, max_registers=0)))
    assert torch.equal(got, want)
    rd = policy.route_direct_config(3, 2, 5, 256, 256, fmt, 132)
    rd = dataclasses.replace(rd, gate_up=dataclasses.replace(rd.gate_up, max_registers=64))
    run_and_check(weights, x[:3], tw[:3], ids[:3], "route_direct", config=rd)


def test_grouped_tail_tiles_legal():
    gu, dn = policy.Tile(64, 64, 4, 2), policy.Tile(64, 64, 4, 2)
    cfg = policy.GroupedConfig(128, gu, dn, 1, 64)
    assert all(policy.legal("grouped", dataclasses.replace(cfg, tail_m=t), "bf16") for t in (0, 16, 32, 64))
    for bad in (8, 48, 128, 256):
        assert not policy.legal("grouped", dataclasses.replace(cfg, tail_m=bad), "bf16")
    assert not policy.legal("grouped", dataclasses.replace(cfg, block_m=64, tail_m=64), "bf16")
    # FP8 tails below 64 rows are swapped: 32 gate/up columns would have no wgmma there
    narrow = dataclasses.replace(cfg, gate_up=policy.Tile(32, 64, 4, 2))
    assert policy.legal("grouped", dataclasses.replace(narrow, tail_m=64), "fp8_tensor")
    assert not policy.legal("grouped", dataclasses.replace(narrow, tail_m=32), "fp8_tensor")


def _windowed_ids(ids, e, gen_device):
    """ids of a rank holding experts 1..e of e + 3: the held ones shifted into the window, and
    about a tenth replaced by any global id (some outside the window)."""
    ids = torch.where(ids >= 0, ids + 1, ids)
    other = torch.randint(0, e + 3, ids.shape, device=gen_device, dtype=ids.dtype)
    return torch.where(torch.rand(ids.shape, device=gen_device) < 0.1, other, ids).contiguous()


def _skewed_top1_ids(counts, device, p_drop=0.1):
    """[sum(counts), 1] int32 ids, counts[e] routes to expert e in random token order, then
    about p_drop of them -1."""
    ids = torch.repeat_interleave(torch.arange(len(counts)), torch.tensor(counts))
    ids = ids[torch.randperm(len(ids))].to(device=device, dtype=torch.int32).view(-1, 1).contiguous()
    ids[torch.rand(ids.shape, device=device) < p_drop] = -1
    return ids


@pytest.mark.parametrize("group_m", [1, 4])
@pytest.mark.parametrize("case", ["ragged", "no_permute_top1", "half_blocks"])
@pytest.mark.parametrize("gluon_set", policy.GLUON_SETS)
def test_grouped_gluon_config(gluon_set, group_m, case, monkeypatch, device):
    # GroupedConfig.gluon: on sm_90 the Gluon kernels (TMA weights, async wgmma; at BLOCK_M 128
    # warp-specialised, with gate/up tiles of 64 columns or of 128 quantised in the epilogue)
    # compute the layer; elsewhere, and under the interpreter, the Triton kernels run the same
    # tiles (policy.gluon_fallback).
    # ragged: H and I multiples of 16 (the Gluon kernels' need) but not of 128 or of the tiles.
    # no_permute_top1: one route per block (routes * 4 <= experts), top-1, tiles wider than H, I.
    # half_blocks: top-1 routes skewed so that, after the -1 ids and the window's replacements
    # (about 18% of an expert's routes, some gained back), at BLOCK_M 128 two experts' last
    # blocks hold routes past row 64 (about 62 and 26 of them) and two hold none there (about
    # 28 and 41 routes): the warp-specialised kernels' second warpgroup computes in two and only
    # releases the ring in the others.
    # All on an expert window with ids outside it, -1 ids and a shared output; on the GPU
    # also replayed from a CUDA graph.
    from fusedmoe.paths import grouped
    from fusedmoe._runtime import is_sm90

    # on the GPU, H and I past 4 K steps of 128 so that the ring's slots are reused (barrier phases)
    ragged = (300, 6, 2, 656, 528) if ON_GPU else (40, 6, 2, 272, 144)
    counts = (300, 180, 40, 100)
    m, e, k, h, i = {"ragged": ragged, "no_permute_top1": (3, 64, 1, 48, 48),
                     "half_blocks": (sum(counts), len(counts), 1, *ragged[3:])}[case]
    weights, x, tw, ids = make_layer(m, e, k, h, i, "fp8_tensor", device)
    if case == "half_blocks":
        ids = _skewed_top1_ids(counts, device)
    ids = _windowed_ids(ids, e, device)
    shared = torch.randn_like(x)
    window = dict(shared_output=shared, expert_offset=1, num_experts=e + 3)
    cfg = policy.gluon_grouped_config(group_m, *gluon_set)
    assert policy.legal("grouped", cfg, "fp8_tensor")
    assert not policy.legal("grouped", cfg, "fp8_block") and not policy.legal("grouped", cfg, "bf16")
    assert not policy.legal("grouped", dataclasses.replace(cfg, fp8_promote_k=64), "fp8_tensor")
    assert not policy.legal("grouped", dataclasses.replace(cfg, down=policy.Tile(64, 128, 4, 3)), "fp8_tensor")
    assert grouped.uses_gluon(weights, cfg, x.device, "silu") == is_sm90(x.device)
    assert not grouped.uses_gluon(weights, cfg, x.device, "gelu_tanh")  # SiLU only: Triton runs the rest
    got = run_and_check(weights, x, tw, ids, "grouped", config=cfg, shared=shared, offset=1, n_global=e + 3)
    if grouped.uses_gluon(weights, cfg, x.device, "silu"):  # against the Triton kernels with the same tiles
        want = fused_moe(x, weights, tw, ids, path="grouped", config=dataclasses.replace(cfg, gluon=False), **window)
        # another summation order, then the same requantisation of nearly the same fp32 values:
        # e4m3 codes differ only where a sum lands next to a rounding midpoint.  (A bf16
        # intermediate, rounded before the requantisation, passed the old 1e-2 here and failed
        # the tuner's 1% gate against the reference at real shapes: tenth session.)
        assert rel_l2(got, want) <= 2e-3
    names = _count_launches(monkeypatch, lambda: fused_moe(x, weights, tw, ids, path="grouped", config=cfg,
                                                           check_ids=False, **window))
    gluon = grouped.uses_gluon(weights, cfg, x.device, "silu")
    assert len(names) == grouped.kernel_launches(m, k, weights, cfg, gluon=gluon)
    if not ON_GPU:
        return
    out = torch.empty_like(x)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fused_moe(x, weights, tw, ids, path="grouped", config=cfg, out=out, check_ids=False, **window)
    for _ in range(2):
        _, x_new, tw_new, ids_new = make_layer(m, e, k, h, i, "fp8_tensor", device)
        if case == "half_blocks":
            ids_new = _skewed_top1_ids(counts, device)
        x.copy_(x_new), tw.copy_(tw_new), ids.copy_(_windowed_ids(ids_new, e, device)), shared.normal_()
        out.fill_(float("nan"))
        graph.replay()
        assert torch.equal(out, fused_moe(x, weights, tw, ids, path="grouped", config=cfg, **window))


@pytest.mark.parametrize("fmt,cfg", [(f, None) for f in VARIANT_FORMATS] + [
    # an FP8 gate/up of 64 columns: the requantisation launch between the GEMMs
    ("fp8_block", policy.GroupedConfig(32, policy.Tile(64, 64, 4, 2), policy.Tile(64, 64, 4, 2, swap_ab=True))),
    # the Gluon kernels on sm_90 (their Triton fallback elsewhere), gather launch included
    *[("fp8_tensor", policy.gluon_grouped_config(4, *gluon_set)) for gluon_set in policy.GLUON_SETS]])
def test_grouped_pdl_equals_the_plain_launches(fmt, cfg, device):
    # Every grouped launch is programmatic dependent on sm_90 (each waits for the previous grid,
    # then lets the next launch): it changes when kernels start, not what they compute, so the
    # layer is bitwise the plain launches'.  Replayed from a CUDA graph of three chained layers
    # (the combine of one -> the x quantisation or plan of the next) with new inputs, it is
    # bitwise its eager launches and the plain ones: no race between the overlapped grids.
    from fusedmoe._pdl import pdl_launch

    m, e, k, h, i = (300, 6, 2, 656, 528) if ON_GPU and cfg is not None and cfg.gluon else (23, 6, 2, 72, 200)
    weights, x, tw, ids = make_layer(m, e, k, h, i, fmt, device)
    ids = _windowed_ids(ids, e, device)
    shared = torch.randn_like(x)
    window = dict(shared_output=shared, expert_offset=1, num_experts=e + 3, check_ids=False)
    assert pdl_launch(x.device).get("PDL")  # the PDL kernel code runs here too

    def layers(inp):  # each layer's output is the next one's x
        for _ in range(3):
            inp = fused_moe(inp, weights, tw, ids, path="grouped", config=cfg, **window)
        return inp

    got = fused_moe(x, weights, tw, ids, path="grouped", config=cfg, **window)
    graph = None
    if ON_GPU:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = layers(x)
    with plain_launches():
        want = fused_moe(x, weights, tw, ids, path="grouped", config=cfg, **window)
    assert torch.isfinite(want).all() and torch.equal(got.view(torch.int16), want.view(torch.int16))
    if graph is None:
        return
    for _ in range(3):
        _, x_new, tw_new, ids_new = make_layer(m, e, k, h, i, fmt, device)
        x.copy_(x_new), tw.copy_(tw_new), ids.copy_(_windowed_ids(ids_new, e, device)), shared.normal_()
        out.fill_(float("nan"))
        graph.replay()
        eager = layers(x)
        assert torch.isfinite(eager).all() and torch.equal(out.view(torch.int16), eager.view(torch.int16))
        with plain_launches():
            assert torch.equal(out.view(torch.int16), layers(x).view(torch.int16))


@pytest.mark.parametrize("path", PATHS)
def test_routing_and_layers_chained_under_pdl(path, device):
    # A decode step as an engine runs it: router logits (a torch matmul, not a PDL launch),
    # routing (PDL: the layer's first launch may start during it), the MoE layer (PDL), whose
    # output is the next step's x.  Replayed from a CUDA graph of three chained steps with new
    # inputs, the output is bitwise the eager steps' and the plain (non-PDL) launches'.
    from fusedmoe.routing import route

    m, e, k, h, i = 5, 8, 3, 96, 72
    weights, x, _, _ = make_layer(m, e, k, h, i, "fp8_tensor", device)
    router = torch.randn(h, e, device=device).to(x.dtype)

    def steps(inp):
        for _ in range(3):
            tw, ids = route(inp @ router, k, renormalize=True)
            inp = fused_moe(inp, weights, tw, ids, path=path, check_ids=False)
        return inp

    def plain_steps(inp):
        with plain_launches():
            return steps(inp)

    got = steps(x)
    assert torch.isfinite(got).all() and torch.equal(got.view(torch.int16), plain_steps(x).view(torch.int16))
    if not ON_GPU:
        return
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = steps(x)
    for _ in range(3):
        x.copy_(torch.randn_like(x)), router.normal_()
        out.fill_(float("nan"))
        graph.replay()
        eager = steps(x)
        assert torch.isfinite(eager).all() and torch.equal(out.view(torch.int16), eager.view(torch.int16))
        assert torch.equal(out.view(torch.int16), plain_steps(x).view(torch.int16))


@pytest.mark.parametrize("splits", [1, 2, 5])
@pytest.mark.parametrize("block_m,top_k,no_permute", [(16, 2, False), (64, 1, False), (8, 3, True)])
def test_gather_plan_rows(block_m, top_k, no_permute, splits, device):
    # The Gluon path's x in plan order: row p holds x[sorted_routes[p] // top_k] and its scale,
    # zeros on padding rows; blocks past num_blocks are left alone.  On an expert window (ids
    # outside it and -1 held nowhere), blocked and no-permute plans; each block's columns in
    # one program or split over several (80 columns in chunks of 32: 5 splits leave some idle).
    from fusedmoe.paths._grouped_kernels import gather_plan_rows_kernel
    from fusedmoe.paths.grouped import gather_splits
    from fusedmoe.plan import build_plan

    assert gather_splits(16, 4096, 256, 132) == 16 and gather_splits(600, 4096, 256, 132) == 1
    assert gather_splits(40, 4096, 256, 132) == 14 and gather_splits(0, 80, 32, 132) == 3

    m, e, cols = 37, 5, 80
    ids = torch.randint(-1, e, (m, top_k), device=device, dtype=torch.int32)
    plan = build_plan(ids, e, block_m, expert_offset=1, num_local_experts=e - 2, no_permute=no_permute)
    x = torch.randn(m, cols, device=device).to(torch.float8_e4m3fn)
    xs = torch.rand(m, 1, device=device) + 0.5
    rows = plan.sorted_routes.numel()
    got = torch.full((rows, cols), float("nan"), device=device).to(torch.float8_e4m3fn)
    got_s = torch.full((rows,), float("nan"), device=device)
    gather_plan_rows_kernel[(plan.block_expert.numel(), splits)](
        x, xs, plan.sorted_routes, plan.num_blocks, got, got_s, cols, top_k, x.stride(0), got.stride(0),
        BLOCK_M=block_m, BLOCK_C=32)
    live = int(plan.num_blocks) * block_m
    routes = plan.sorted_routes[:live].long()
    held = routes >= 0
    want = torch.zeros(live, cols, device=device)
    want[held] = x.float()[routes[held] // top_k]
    want_s = torch.zeros(live, device=device)
    want_s[held] = xs.view(-1)[routes[held] // top_k]
    assert torch.equal(got[:live].float(), want) and torch.equal(got_s[:live], want_s)
    assert got_s[live:].isnan().all()


@pytest.mark.parametrize("path", PATHS)
def test_int64_ids_and_bf16_weights_read_directly(path, device):
    # int64 ids (what torch.topk returns) and bf16 routing weights are read by the kernels as
    # they are, on every path, with -1 ids among them.
    weights, x, tw, ids = make_layer(20, 6, 2, 64, 32, "fp8_tensor", device)
    run_and_check(weights, x, tw.to(torch.bfloat16), ids.to(torch.int64), path)


@pytest.mark.parametrize("fmt", VARIANT_FORMATS)
@pytest.mark.parametrize("pdl", PDL_FORMS)
def test_route_direct_down_tiles_are_bitwise_one_tile_per_program(fmt, pdl, device):
    # A down program walking several H tiles changes which program reads which weights, not
    # what is computed: bitwise one tile per program, and the reference.
    # H = 200 is not a multiple of 16 * 3 rows (the last program's tiles run past H), I = 136
    # takes two down K steps (the second partial), and split K 2 reduces in the down kernel.
    down_tiles = 3
    m, e, k, h, i = 3, 6, 3, 200, 136
    weights, x, tw, ids = make_layer(m, e, k, h, i, fmt, device)
    shared = torch.randn_like(x)
    plain = policy.RouteDirectConfig(policy.Tile(8, 128, 4, 1, split_k=2), policy.Tile(16, 128, 4, 1), pdl=pdl)
    walk = policy.RouteDirectConfig(policy.Tile(8, 128, 4, 1, split_k=2), policy.Tile(16, 128, 4, 1), pdl=pdl,
                                     down_tiles=down_tiles)
    assert policy.legal("route_direct", walk, fmt)
    want = fused_moe(x, weights, tw, ids, path="route_direct", config=plain, shared_output=shared)
    got = run_and_check(weights, x, tw, ids, "route_direct", shared=shared, config=walk)
    assert torch.equal(got.view(torch.int16), want.view(torch.int16))


@pytest.mark.parametrize("fmt", VARIANT_FORMATS)
@pytest.mark.parametrize("pdl", PDL_FORMS)
def test_route_direct_gemv_pipeline_is_bitwise_unpipelined(fmt, pdl, device):
    # A software-pipelined K loop (tiles copied to shared memory steps ahead) changes when the
    # weights arrive, not what is computed: bitwise the plain loads' output, and the reference.
    # H = 300 (two splits of 128-column steps) and I = 136 end in partial K steps; 3 down tiles
    # per program.
    m, e, k, h, i = 3, 6, 3, 300, 136
    weights, x, tw, ids = make_layer(m, e, k, h, i, fmt, device)
    shared = torch.randn_like(x)
    plain = policy.RouteDirectConfig(policy.Tile(8, 128, 4, 1, split_k=2), policy.Tile(16, 128, 4, 1), pdl=pdl,
                                     down_tiles=3)
    want = fused_moe(x, weights, tw, ids, path="route_direct", config=plain, shared_output=shared)
    for stages in (2, 3) if ON_GPU else (2,):  # the interpreter runs every depth alike
        deep = dataclasses.replace(plain, gate_up=policy.Tile(8, 128, 4, stages, split_k=2),
                                   down=policy.Tile(16, 128, 4, stages))
        got = run_and_check(weights, x, tw, ids, "route_direct", shared=shared, config=deep)
        assert torch.equal(got.view(torch.int16), want.view(torch.int16)), stages


@pytest.mark.parametrize("fmt,tensor_cores", [(PLAIN_FORMAT, False), (PLAIN_FORMAT, True), ("fp8_block", True)])
def test_route_direct_trace_writes_each_programs_row_and_leaves_the_output(fmt, tensor_cores, device):
    # The timeline probe's kernels (TRACE, scripts/decode_timeline.py) compute what the plain
    # ones do, and write one row per program: gate/up rows first, then down rows; on the GPU
    # times that rise from start to wait to end, and the SM.  Rows past the programs stay
    # untouched.  The interpreter has no timers: zeros, and the program index for the SM.
    from fusedmoe._trace import TRACE_FIELDS
    from fusedmoe.paths.route_direct import launch_programs, route_direct_moe

    blocked = fmt == "fp8_block"  # 128-column scale blocks: K steps of 128
    m, e, k, h, i, bk = (3, 5, 2, 256, 128, 128) if blocked else (3, 5, 2, 96, 40, 64)
    weights, x, tw, ids = make_layer(m, e, k, h, i, fmt, device, p_drop=0.0)
    tiles = (policy.Tile(16, bk, 4, 1, swap_ab=tensor_cores), policy.Tile(16, bk, 4, 1, swap_ab=blocked))
    cfg = policy.RouteDirectConfig(*tiles, pdl=True)
    assert policy.legal("route_direct", cfg, fmt)
    n_gu, n_dn = launch_programs(m, k, i, h, cfg)
    assert (n_gu, n_dn) == (m * k * -(-i // 16), m * (h // 16))
    trace = poison(torch.empty(n_gu + n_dn + 2, TRACE_FIELDS, dtype=torch.int64, device=device))
    out = poison(torch.empty_like(x))
    route_direct_moe(x, weights, tw, ids, out, None, 0, cfg, trace=trace)
    want = fused_moe(x, weights, tw, ids, path="route_direct", config=cfg)
    assert torch.equal(out.view(torch.int16), want.view(torch.int16))
    gu, dn, rest = trace[:n_gu].cpu(), trace[n_gu:n_gu + n_dn].cpu(), trace[n_gu + n_dn:].cpu()
    assert bool((rest == -7).all())
    assert bool((gu[:, :2] != -7).all()) and bool((dn[:, :3] != -7).all()) and bool((dn[:, 3] != -7).all())
    # tensor-core gate/up: programs that do not lead their route group exit before the end fields
    finished = gu[:, 3] != -7
    assert bool(finished.any()) and (tensor_cores or bool(finished.all()))
    if ON_GPU:
        for rows in (gu[finished], dn):
            assert bool((rows[:, 0] <= rows[:, 1]).all()) and bool((rows[:, 1] <= rows[:, 2]).all())
            assert bool((rows[:, 4] <= rows[:, 6]).all()) and bool((rows[:, 3] >= 0).all())
    else:
        assert torch.equal(dn[:, 3], torch.arange(n_dn)) and bool((dn[:, :3] == 0).all())
    with pytest.raises(ValueError, match="trace"):
        route_direct_moe(x, weights, tw, ids, out, None, 0, cfg, trace=trace[:n_gu])


@settings(max_examples=int(__import__("os").environ.get("FUSEDMOE_FUZZ", 100)), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(m=st.integers(1, 6), e=st.integers(1, 9), k=st.integers(1, 4), h=st.integers(16, 150),
       i=st.integers(8, 140), fmt=st.sampled_from(FORMATS), path=st.sampled_from(PATHS),
       offset=st.integers(0, 3), data=st.data())
def test_fuzz_against_reference(m, e, k, h, i, fmt, path, offset, data, device):
    # Random shapes, formats, paths and expert windows: the op must always match the reference.
    torch.manual_seed(data.draw(st.integers(0, 2**31 - 1)))
    if fmt == "w4a8":  # two FP4 weights per byte along K: even H and I
        h, i = h + h % 2, i + i % 2
    weights, x, _, _ = make_layer(m, e, 1, h, i, fmt, device)
    n_global = offset + e + data.draw(st.integers(0, 3))
    ids = torch.randint(-1, n_global, (m, k), device=device, dtype=torch.int32)
    tw = torch.rand(m, k, device=device)
    shared = torch.randn(m, h, device=device).to(ACT_DTYPE) if data.draw(st.booleans()) else None
    config = None
    if path == "route_direct" and data.draw(st.booleans()):  # the GEMV forms, any tile
        block_k = 128 if fmt == "fp8_block" else data.draw(st.sampled_from([32, 64, 128]))
        config = policy.RouteDirectConfig(
            policy.Tile(data.draw(st.sampled_from([4, 8, 16])), block_k, 4, data.draw(st.integers(1, 3)),
                        data.draw(st.integers(1, 3))),
            policy.Tile(data.draw(st.sampled_from([8, 16])), block_k, 4, data.draw(st.integers(1, 3))),
            pdl=data.draw(st.booleans()),
            down_tiles=data.draw(st.integers(1, 4)))
    elif path == "route_direct" and fmt != "w4a8" and data.draw(st.booleans()):  # the tensor-core forms, any tile
        block_k = 128 if fmt == "fp8_block" else data.draw(st.sampled_from([16, 32, 64, 128]))
        gate_up = policy.Tile(data.draw(st.sampled_from([8, 16, 32])), block_k, 4, 2, data.draw(st.integers(1, 3)),
                              swap_ab=True)
        tc_down = fmt != PLAIN_FORMAT and data.draw(st.booleans())  # FP8: the tensor-core down too
        config = policy.RouteDirectConfig(gate_up, policy.Tile(16, 128, 4, 2 if tc_down else 1, swap_ab=tc_down))
    elif path == "grouped" and data.draw(st.booleans()):  # any legal tiles, as the tuner may pick them
        block_m = data.draw(st.sampled_from([16, 32, 64, 128]))
        swap = block_m < 64  # swapped exactly below 64 rows, as tune.apply sets it
        gate_up = policy.Tile(data.draw(st.sampled_from([64, 128] if swap else [32, 64, 128])),
                              data.draw(st.sampled_from([32, 64, 128])), 4, 2, swap_ab=swap)
        down = policy.Tile(data.draw(st.sampled_from([32, 64, 128])), data.draw(st.sampled_from([32, 64, 128])), 4, 2,
                           swap_ab=swap)
        promote = data.draw(st.sampled_from([0, 32, 64, 128]))  # 0: never
        promote = min(promote, gate_up.block_k, down.block_k) if promote else 0
        config = policy.GroupedConfig(block_m, gate_up, down, data.draw(st.sampled_from([1, 2, 4])), promote)
        assert policy.legal("grouped", config, fmt), config
        tails = [c for c in (dataclasses.replace(config, tail_m=t) for t in (16, 32, 64)) if policy.legal("grouped", c, fmt)]
        if tails and data.draw(st.booleans()):  # an expert's last block on a tile of fewer rows
            config = data.draw(st.sampled_from(tails))
    run_and_check(weights, x, tw, ids, path, shared=shared, offset=offset, n_global=n_global, config=config)


def test_torch_compile_treats_the_op_as_one_node(device):
    # Under torch.compile the layer is the registered op fusedmoe::fused_moe (fake tensors for
    # tracing), fullgraph, with the same result as eager.
    weights, x, tw, ids = make_layer(3, 4, 2, 64, 32, "fp8_block", device)
    compiled = torch.compile(lambda a, w, i: fused_moe(a, weights, w, i, path="route_direct"),
                             backend="aot_eager", fullgraph=True)
    torch.testing.assert_close(compiled(x, tw, ids), fused_moe(x, weights, tw, ids, path="route_direct"),
                               rtol=0, atol=0)


def test_torch_compile_with_grad_inputs_and_a_config(device):
    # Inputs that require grad (a model outside no_grad, weights as Parameters) compile as in eager:
    # the output carries no gradient.  A config goes through the op too (as JSON), bitwise eager.
    weights, x, tw, ids = make_layer(3, 4, 2, 64, 32, "fp8_block", device)
    grad_weights = dataclasses.replace(weights, w13=weights.w13.float().requires_grad_().to(weights.w13.dtype))
    config = policy.RouteDirectConfig(policy.Tile(8, 128, 4, 1, split_k=2), policy.Tile(16, 128, 4, 1))
    for cfg in (None, config):
        def layer(a, w, i):
            return fused_moe(a, grad_weights, w, i, path="route_direct", config=cfg)
        compiled = torch.compile(layer, backend="aot_eager", fullgraph=True)
        got = compiled(x.clone().requires_grad_(), tw.clone().requires_grad_(), ids)
        assert not got.requires_grad
        torch.testing.assert_close(got, fused_moe(x, weights, tw, ids, path="route_direct", config=cfg),
                                   rtol=0, atol=0)


def test_fake_and_meta_tensors_trace_the_op():
    # make_fx (fake), FakeTensorMode and meta tensors see one op with the output's shape: no id
    # check (it would read data), no kernel
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    from fusedmoe import ExpertWeights

    weights, x, tw, ids = make_layer(3, 4, 2, 64, 32, "fp16", "cpu")
    x = x.half()
    graph = make_fx(lambda a, b, c, w13, w2: fused_moe(a, ExpertWeights("fp16", w13, w2), b, c),
                    tracing_mode="fake")(x, tw, ids, weights.w13, weights.w2)
    assert [n.target for n in graph.graph.nodes if n.op == "call_function"] == [torch.ops.fusedmoe.fused_moe.default]
    with FakeTensorMode() as mode:
        fake = [mode.from_tensor(t) for t in (x, tw, ids, weights.w13, weights.w2)]
        got = fused_moe(fake[0], ExpertWeights("fp16", fake[3], fake[4]), fake[1], fake[2])
        assert got.shape == x.shape and got.dtype == x.dtype
    meta = fused_moe(x.to("meta"), ExpertWeights("fp16", weights.w13.to("meta"), weights.w2.to("meta")),
                     tw.to("meta"), ids.to("meta"))
    assert meta.device.type == "meta" and meta.shape == x.shape


def test_bf16_weights_are_exact_in_the_interpreter_too(device):
    # Triton's interpreter computes bf16 wrongly (triton-lang/triton#11584): there bf16 weights
    # run the torch reference, with a warning; on the GPU the kernels
    weights, x, tw, ids = make_layer(3, 4, 2, 64, 32, "bf16", device)
    x = x.to(torch.bfloat16)
    interpreted = torch.device(device).type == "cpu" and interpreting()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = fused_moe(x, weights, tw, ids, path="route_direct")
    assert any("bf16" in str(w.message) for w in caught) == interpreted
    assert rel_l2(got, moe_reference(x, weights, tw, ids)) < 3e-3


@pytest.mark.parametrize("path", PATHS)
def test_strided_rows_and_top_k_above_8(path, device):
    # x, out and shared_output as row slices of wider buffers (row stride > H), and top-k 12:
    # the down tile holds next_pow2(k) = 16 routes.
    m, e, k, h, i = 3, 16, 12, 72, 40
    weights, _, tw, ids = make_layer(m, e, k, h, i, "fp8_block", device)
    x = torch.randn(m, h + 24, device=device).to(ACT_DTYPE)[:, :h]
    shared = torch.randn(m, h + 8, device=device).to(ACT_DTYPE)[:, 8:]
    out = poison(torch.empty(m, h + 40, device=device, dtype=ACT_DTYPE))[:, 40:]
    fused_moe(x, weights, tw, ids, path=path, out=out, shared_output=shared)
    ref = moe_reference(x, weights, tw, ids, shared_output=shared,
                        quantize_activations=path_quantizes_activations(path, "fp8_block"))
    assert rel_l2(out, ref) <= max_rel_l2(path, "fp8_block") and cosine(out, ref) >= MIN_COSINE


def _count_launches(monkeypatch, fn):
    """Triton kernel launches made by fn() (interpreter or GPU JIT): with fusedmoe's launch cache
    emptied, every launch goes through Triton's run()."""
    import triton.runtime.interpreter as interp
    import triton.runtime.jit as jit

    from fusedmoe import _launch

    monkeypatch.setattr(_launch, "_cache", {})
    names = []
    for cls in (interp.InterpretedFunction, jit.JITFunction):
        original = cls.run

        def counting(self, *args, _original=original, **kwargs):
            names.append(getattr(self, "__name__", None) or getattr(self.fn, "__name__", "?"))
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(cls, "run", counting)
    fn()
    return names


@pytest.mark.parametrize("fmt,path,launches", [
    (PLAIN_FORMAT, "route_direct", 2), ("fp8_block", "route_direct", 2),   # decode: gate/up, down+combine
    (PLAIN_FORMAT, "grouped", 4), ("fp8_block", "grouped", 5),             # [quantise x,] plan, 2 GEMMs, combine
])
def test_kernel_launches_per_call(fmt, path, launches, monkeypatch, device):
    # Launches are graph nodes at decode: int64 ids and bf16 routing weights add none.
    weights, x, tw, ids = make_layer(4, 8, 2, 64, 32, fmt, device)
    names = _count_launches(monkeypatch, lambda: fused_moe(x, weights, tw.bfloat16(), ids.long(), path=path,
                                                           check_ids=False))
    assert len(names) == launches, names
    from fusedmoe.paths import grouped, route_direct
    expected = route_direct.KERNEL_LAUNCHES if path == "route_direct" else grouped.kernel_launches(4, 2, weights)
    assert expected == launches  # what fusedmoe info reports
