"""The w4a8 format: FP4 (E2M1) weights with E8M0 exponents per 32 columns, their quantiser,
container checks, and the kernels' decoding against the float64 reference."""

import pytest
import torch
from conftest import ACT_DTYPE
from test_fused_moe import make_layer, max_rel_l2, run_and_check

from fusedmoe import ExpertWeights, fused_moe, policy, quant
from fusedmoe.api import PATHS, path_quantizes_activations
from fusedmoe.reference import moe_reference, rel_l2

GRID = torch.tensor(quant.FP4_VALUES, dtype=torch.float64)


def nearest_fp4(v: torch.Tensor) -> torch.Tensor:
    """Brute-force nearest E2M1 value of each element (ties to the even code), float64."""
    cand = torch.cat([GRID, -GRID[1:]])
    codes = torch.cat([torch.arange(8), torch.arange(1, 8)])
    dist = (v.double()[..., None] - cand).abs()
    best = dist.min(dim=-1, keepdim=True).values
    # among equally near candidates, the even code (then the smaller magnitude: only 0 ties 0.25)
    key = torch.where(dist == best, codes % 2 * 16 + cand.abs(), torch.full_like(dist, 1e9))
    return cand[key.argmin(dim=-1)]


def test_quantiser_picks_the_smallest_exponent_and_the_nearest_value():
    # Groups of 32 along K (K = 70: the last group ragged), magnitudes across many binades:
    # each exponent is the smallest that holds its group's largest value, and every weight
    # is the nearest E2M1 value of w / 2^s, ties to even.
    w = torch.randn(3, 5, 70) * torch.exp2(torch.randint(-12, 4, (3, 5, 70)).float())
    w[0, 0, :32] = 0.0  # an all-zero group beside non-zero ones
    packed, exps = quant.quantize_fp4_groups(w)
    assert packed.dtype == exps.dtype == torch.uint8
    assert packed.shape == (3, 5, 35) and exps.shape == (3, 5, 3)
    s = exps.to(torch.int32) - 127
    scale = torch.ldexp(torch.ones(s.shape, dtype=torch.float64), s).repeat_interleave(32, dim=-1)[..., :70]
    got = quant.dequantize_fp4_groups(packed, exps)
    torch.testing.assert_close(got / scale, nearest_fp4(w.double() / scale), rtol=0, atol=0)
    amax = torch.nn.functional.pad(w.abs(), (0, 26)).view(3, 5, 3, 32).amax(dim=-1).double()
    top = s.amax(dim=-1, keepdim=True)
    nonzero = amax > 0
    # no value saturates, and a smaller exponent would not hold the group (unless raised to
    # the span floor of its 128-column block)
    assert (amax[nonzero] <= 6 * torch.ldexp(torch.ones_like(amax), s)[nonzero]).all()
    minimal = amax > 6 * torch.ldexp(torch.ones_like(amax), s - 1)
    assert (minimal | (s == top - quant.FP4_SPAN) | ~nonzero)[nonzero].all()
    assert (s >= top - quant.FP4_SPAN).all()


def test_packing_puts_the_even_element_in_the_low_nibble():
    # The MXFP4 byte order: element 2j in bits 0-3 of byte j, 2j+1 in bits 4-7; sign in bit 3.
    w = torch.tensor([[[1.0, -6.0, 0.5, 3.0] + [0.0] * 28]])
    packed, exps = quant.quantize_fp4_groups(w)
    assert exps.tolist() == [[[127]]]  # largest 6: exponent 0
    assert packed[0, 0, :2].tolist() == [0x2 | (0xF << 4), 0x1 | (0x5 << 4)]


def test_odd_k_and_bad_containers_are_refused():
    with pytest.raises(ValueError, match="even"):
        ExpertWeights.from_dense(torch.randn(2, 8, 33), torch.randn(2, 33, 4), "w4a8")
    good = ExpertWeights.from_dense(torch.randn(2, 8, 64), torch.randn(2, 64, 4), "w4a8")
    assert (good.hidden_size, good.intermediate_size) == (64, 4)
    with pytest.raises(TypeError, match="w13"):
        ExpertWeights.from_quantized("w4a8", good.w13.view(torch.int8), good.w2, good.w13_scale, good.w2_scale)
    with pytest.raises(ValueError, match="w2"):
        ExpertWeights.from_quantized("w4a8", good.w13, good.w2[:, :, :1], good.w13_scale, good.w2_scale)
    with pytest.raises(ValueError, match=r"w13_scale: format 'w4a8' needs a uint8 scale tensor of shape \[2, 8, 2\]"):
        ExpertWeights.from_quantized("w4a8", good.w13, good.w2)
    with pytest.raises(TypeError, match="w2_scale"):
        ExpertWeights.from_quantized("w4a8", good.w13, good.w2, good.w13_scale, good.w2_scale.float())
    # w2 rows are padded to whole 32-column groups (16-byte rows); a checkpoint's unpadded
    # [E, H, I/2] is padded by from_quantized
    ragged = ExpertWeights.from_dense(torch.randn(2, 96, 64), torch.randn(2, 64, 48), "w4a8")
    assert ragged.w2.shape == (2, 64, 32) and not ragged.w2[:, :, 24:].any()
    unpadded = ExpertWeights.from_quantized("w4a8", ragged.w13, ragged.w2[:, :, :24].contiguous(), ragged.w13_scale,
                                            ragged.w2_scale)
    assert torch.equal(unpadded.w2, ragged.w2) and unpadded.dequantize()[1].shape == (2, 64, 48)
    with pytest.raises(ValueError, match="even I"):
        ExpertWeights.from_quantized("w4a8", torch.zeros(2, 6, 32, dtype=torch.uint8),
                                     torch.zeros(2, 64, 1, dtype=torch.uint8),
                                     torch.zeros(2, 6, 2, dtype=torch.uint8), torch.zeros(2, 64, 1, dtype=torch.uint8))


def test_checkpoint_blocks_load_as_they_are(device):
    # A GPT-OSS-style checkpoint: *_blocks [E, N, K/32, 16] uint8 and *_scales [E, N, K/32]
    # uint8 are this format once the blocks are viewed as [E, N, K/2]; the layer runs on them.
    e, h, i = 4, 96, 64
    dense = ExpertWeights.from_dense(torch.randn(e, 2 * i, h) * 0.05, torch.randn(e, h, i) * 0.05, "w4a8")
    blocks13 = dense.w13.view(e, 2 * i, h // 32, 16).to(device)
    blocks2 = dense.w2.view(e, h, i // 32, 16).to(device)
    loaded = ExpertWeights.from_quantized("w4a8", blocks13.reshape(e, 2 * i, h // 2), blocks2.reshape(e, h, i // 2),
                                          dense.w13_scale.to(device), dense.w2_scale.to(device))
    x = torch.randn(3, h, device=device).to(ACT_DTYPE)
    ids = torch.tensor([[0, 3], [1, 1], [2, -1]], device=device, dtype=torch.int32)
    tw = torch.rand(3, 2, device=device)
    for path in PATHS:
        run_and_check(loaded, x, tw, ids, path)


@pytest.mark.parametrize("fmt", ["w4a8", "fp8_tensor", "bf16"])
def test_interleaved_checkpoints_load_as_from_dense(fmt):
    # GPT-OSS checkpoints interleave gate and up rows (their MXFP4 ones too): from_quantized
    # reorders w13, w13_bias and per-row scales, to what from_dense makes of the dense layer.
    e, h, i = 3, 64, 32
    w13, w2, b13 = torch.randn(e, 2 * i, h) * 0.05, torch.randn(e, h, i) * 0.05, torch.randn(e, 2 * i)
    want = ExpertWeights.from_dense(w13, w2, fmt, w13_bias=b13, gate_up_interleaved=True)
    raw = ExpertWeights.from_dense(w13, w2, fmt, w13_bias=b13)  # quantised in the checkpoint's row order
    got = ExpertWeights.from_quantized(fmt, raw.w13, raw.w2, raw.w13_scale, raw.w2_scale, w13_bias=raw.w13_bias,
                                       gate_up_interleaved=True)
    for a, b in zip((got.w13, got.w13_scale, got.w13_bias, got.w2), (want.w13, want.w13_scale, want.w13_bias, want.w2)):
        assert (a is None and b is None) or torch.equal(a.view(torch.uint8) if a.dtype.itemsize == 1 else a,
                                                        b.view(torch.uint8) if b.dtype.itemsize == 1 else b)
    block = ExpertWeights.from_dense(w13, w2, "fp8_block")
    with pytest.raises(ValueError, match="gate_up_interleaved: fp8_block"):
        ExpertWeights.from_quantized("fp8_block", block.w13, block.w2, block.w13_scale, block.w2_scale,
                                     gate_up_interleaved=True)


@pytest.mark.parametrize("path", PATHS)
def test_rows_spanning_many_binades(path, device):
    # Groups of one row 2^-9 .. 2^3 apart (within and across 128-column blocks), ragged K
    # (H 200, I 72: partial groups and K steps): the route-direct decoder folds each group's
    # exponent into fp32 weights; the grouped one makes e4m3 relative to each K step's largest
    # exponent, exact since the quantiser keeps every group within 8 binades of its block's.
    e, k, h, i, m = 5, 2, 200, 72, 6
    w13 = torch.randn(e, 2 * i, h, device=device) * torch.exp2(torch.randint(-9, 4, (e, 2 * i, h // 8, 1),
                                                                            device=device).float()).repeat(1, 1, 1, 8).view(e, 2 * i, h)
    w2 = torch.randn(e, h, i, device=device) * torch.exp2(torch.randint(-9, 4, (e, h, i // 8, 1),
                                                                        device=device).float()).repeat(1, 1, 1, 8).view(e, h, i)
    weights = ExpertWeights.from_dense(w13 * 0.05, w2 * 0.05, "w4a8")
    x = torch.randn(m, h, device=device).to(ACT_DTYPE)
    ids = torch.rand(m, e, device=device).argsort(dim=1)[:, :k].to(torch.int32).contiguous()
    tw = torch.rand(m, k, device=device)
    run_and_check(weights, x, tw, ids, path, shared=torch.randn_like(x))


def test_grouped_steps_of_32_64_and_128_columns(device):
    # The grouped FP4 decoder at every legal K step (one, two and four exponent groups per step),
    # swapped and not, with 64- and 128-column gate/up tiles (the 64-wide one requantises the
    # SwiGLU output in a launch of its own).
    weights, x, tw, ids = make_layer(24, 4, 2, 256, 96, "w4a8", device, p_drop=0.0)
    for block_k, swap, gate_n in ((32, True, 128), (64, False, 64), (128, False, 128), (128, True, 64)):
        cfg = policy.GroupedConfig(16 if swap else 64, policy.Tile(gate_n, block_k, 4, 2, swap_ab=swap),
                                   policy.Tile(64, block_k, 4, 2, swap_ab=swap))
        assert policy.legal("grouped", cfg, "w4a8"), cfg
        run_and_check(weights, x, tw, ids, "grouped", config=cfg)


def test_route_direct_takes_the_gemv_forms_only():
    # FP4 weights have no tensor-core route-direct form, nor fp16 products; K steps hold whole
    # 32-column exponent groups.
    gemv = policy.RouteDirectConfig(policy.Tile(8, 128, 4, 1), policy.Tile(16, 128, 4, 1), pdl=True)
    assert policy.legal("route_direct", gemv, "w4a8")
    for bad in (policy.RouteDirectConfig(policy.Tile(16, 128, 4, 2, swap_ab=True), gemv.down),
                policy.RouteDirectConfig(gemv.gate_up, policy.Tile(16, 128, 4, 2, swap_ab=True)),
                policy.RouteDirectConfig(gemv.gate_up, gemv.down, fp16_products=True),
                policy.RouteDirectConfig(policy.Tile(8, 16, 4, 1), gemv.down)):
        assert not policy.legal("route_direct", bad, "w4a8"), bad


def test_grouped_activation_quantisation_costs_what_fp8_does(device):
    # Against the reference with unquantised activations: route-direct is that reference (w4a16);
    # grouped quantises x and the SwiGLU output to e4m3, within the FP8 formats' 8% bound.
    weights, x, tw, ids = make_layer(6, 4, 2, 256, 96, "w4a8", device, p_drop=0.0)
    ref = moe_reference(x, weights, tw, ids)
    for path in PATHS:
        out = fused_moe(x, weights, tw, ids, path=path)
        bound = max_rel_l2(path, "w4a8") if not path_quantizes_activations(path, "w4a8") else 0.08
        assert rel_l2(out, ref) <= bound, path
