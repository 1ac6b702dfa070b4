"""Weights, quantisation and the element-wise stages against their torch definitions."""

import pytest
import torch
from conftest import ON_GPU, poison

from fusedmoe import quant
from fusedmoe import reference as ref
from fusedmoe.epilogue import combine_launch, quantize_rows, swiglu, swiglu_quant
from fusedmoe.weights import ExpertWeights


@pytest.mark.parametrize("fmt", ["fp8_tensor", "fp8_block"])
@pytest.mark.parametrize("i,h", [(64, 128), (72, 200), (256, 384)])  # aligned, ragged blocks, several blocks
def test_weight_quantisation_round_trip(fmt, i, h, device):
    w13 = torch.randn(3, 2 * i, h, device=device) * 0.02
    w2 = torch.randn(3, h, i, device=device) * 0.02
    ew = ExpertWeights.from_dense(w13, w2, fmt)
    d13, d2 = ew.dequantize()
    # e4m3 keeps 3 mantissa bits: a relative error of a few percent, never more.
    assert ref.rel_l2(d13, w13) < 0.05 and ref.rel_l2(d2, w2) < 0.05
    if fmt == "fp8_block":
        nb = -(-i // 128)
        assert ew.w13_scale.shape == (3, 2 * nb, -(-h // 128))
    rebuilt = ExpertWeights.from_quantized(fmt, ew.w13, ew.w2, ew.w13_scale, ew.w2_scale)
    assert rebuilt.expert_nbytes == ew.expert_nbytes


def test_fp8_block_scales_are_per_half_of_w13(device):
    # Gate and up are blocked separately: a gate block never shares a scale with up rows.
    i, h = 72, 128
    w13 = torch.randn(1, 2 * i, h, device=device)
    w13[:, i:] *= 100  # up rows 100x larger
    ew = ExpertWeights.from_dense(w13, torch.randn(1, h, i, device=device), "fp8_block")
    assert ew.w13_scale[0, 1, 0] > 50 * ew.w13_scale[0, 0, 0]
    assert ref.rel_l2(ew.dequantize()[0][:, :i], w13[:, :i]) < 0.05


# ragged, one group, partial, > 2 groups, a row longer than one load of the whole-row kernel, more
# rows than one program takes
@pytest.mark.parametrize("shape", [(5, 300), (1, 128), (7, 17), (6, 1100), (2, 9000), (70, 300)])
@pytest.mark.parametrize("whole_rows", [False, True])  # per 128 columns (fp8_block's x), per row (fp8_tensor's)
@pytest.mark.parametrize("strided", [False, True])  # rows of a wider tensor: stride(0) > cols
def test_quantize_rows_matches_torch(shape, whole_rows, strided, device):
    a = torch.randn(shape[0], shape[1] + 40 * strided, device=device)[:, : shape[1]] * 3
    a[0, : min(5, shape[1])] = 0
    a[-1, -1] = 40.0  # an outlier sets its whole row's scale, or only its group's
    q, s = quantize_rows(a, whole_rows=whole_rows)
    q_ref, s_ref = quant.quantize_rows_grouped(a, shape[1] if whole_rows else quant.GROUP)
    assert s.shape == (shape[0], 1 if whole_rows else -(-shape[1] // 128))
    assert torch.equal(s, s_ref)
    assert torch.equal(q.view(torch.uint8), q_ref.view(torch.uint8))


def test_x_group_by_format():
    # fp8_tensor scales x per row (no per-step rescale in the grouped gate/up), fp8_block per 128 columns
    assert quant.x_group("fp8_tensor", 7168) == 7168 and quant.x_group("fp8_block", 7168) == 128
    assert quant.x_row_scaled("fp8_tensor") and not quant.x_row_scaled("fp8_block")


def test_quantize_bf16_rows_matches_torch(device):
    # bf16 inputs put v / scale on e4m3 midpoints often: any 1-ulp difference in the scale shows.
    a = torch.randn(64, 2048, device=device).to(torch.bfloat16 if ON_GPU else torch.float16)
    q, s = quantize_rows(a)
    q_ref, s_ref = quant.quantize_rows_grouped(a)
    assert torch.equal(s, s_ref)
    assert torch.equal(q.view(torch.uint8), q_ref.view(torch.uint8))


def test_scale_is_the_correctly_rounded_quotient(device):
    # torch divides by a Python scalar on CUDA as a product with its reciprocal: 1 ulp off.
    amax = torch.rand(100_000, device=device) * 10 + 1e-3
    assert torch.equal(quant._safe_scale(amax), (amax.double() / 448.0).float())


@pytest.mark.parametrize("whole_rows", [False, True])
def test_zero_group_has_unit_scale(whole_rows, device):
    q, s = quantize_rows(torch.zeros(2, 256, device=device), whole_rows=whole_rows)
    assert torch.equal(s, torch.ones_like(s)) and not q.float().any()


@pytest.mark.parametrize("activation", ["silu", "gelu_tanh", "swiglu_oai"])
@pytest.mark.parametrize("rows,inter", [(1, 32), (6, 200), (33, 128)])
def test_swiglu_and_fused_quant(rows, inter, activation, device):
    gu = torch.randn(rows, 2 * inter, device=device) * 4
    h = swiglu(gu, torch.float32, activation)
    torch.testing.assert_close(h, ref.glu(gu.double(), activation).float(), rtol=1e-5, atol=1e-5)
    q, s = swiglu_quant(gu, activation)
    q_sep, s_sep = quantize_rows(h)
    # The fused kernel equals the two separate kernels bit for bit (same formulas, one pass).
    assert torch.equal(s, s_sep)
    assert torch.equal(q.view(torch.uint8), q_sep.view(torch.uint8))


@pytest.mark.parametrize("with_shared", [False, True])
def test_combine(with_shared, device):
    if not (ON_GPU or __import__("fusedmoe._runtime", fromlist=["x"]).interpreting()):
        pytest.skip("combine_launch is a kernel launcher")
    m, k, h = 5, 3, 200
    y = torch.randn(m * k, h, device=device)
    w = torch.rand(m, k, device=device)
    ids = torch.randint(-1, 10, (m, k), device=device, dtype=torch.int32)
    shared = torch.randn(m, h, device=device) if with_shared else None
    out = poison(torch.empty(m, h, device=device))
    combine_launch(y, w, ids, out, shared, expert_offset=2, num_local=5)
    held = (ref.held_routes(ids, 2, 5) >= 0).to(torch.float64)
    expected = ref.combine(y.view(m, k, h).double() * held[:, :, None], w, shared)
    torch.testing.assert_close(out.double(), expected, rtol=1e-6, atol=1e-6)


def test_quantisation_ties_round_to_even(device):
    # Values exactly on midpoints of the e4m3 grid (scale 1: each row's amax is 448) must round
    # to the even neighbour in the kernel and in the torch definition alike; -0.0 keeps its sign.
    grid = torch.arange(256, dtype=torch.uint8).view(torch.float8_e4m3fn).float()
    grid = grid[torch.isfinite(grid) & (grid >= 0)].unique()
    mids = (grid[1:] + grid[:-1]) / 2
    values = torch.cat([mids, -mids, torch.tensor([-0.0])])
    # Each 128-column group starts with 448, so every group's scale is exactly 1.
    row = torch.cat([torch.cat([torch.tensor([448.0]), chunk]) for chunk in values.split(127)])
    a = row.repeat(2, 1).to(device)
    q, s = quantize_rows(a)
    q_ref, s_ref = quant.quantize_rows_grouped(a)
    assert torch.equal(s, torch.ones_like(s)) and torch.equal(s, s_ref)
    assert torch.equal(q.view(torch.uint8), q_ref.view(torch.uint8))
    assert torch.equal(q_ref.float().cpu()[0], quant.round_to_e4m3(row))
    on_grid = quant.round_to_e4m3(values)
    assert torch.equal(on_grid[: len(mids)], mids.to(torch.float8_e4m3fn).float())  # torch's CPU cast agrees


def test_e4m3_flip_steps_mark_midpoints_only():
    # Scale 1 (each row's amax 448): a midpoint between two e4m3 values is ambiguous by one grid
    # step, a grid value and a value a quarter step off are not.
    grid = torch.arange(256, dtype=torch.uint8).view(torch.float8_e4m3fn).float()
    grid = grid[torch.isfinite(grid) & (grid > 0)].unique()
    mids = (grid[1:] + grid[:-1]) / 2
    steps = (grid[1:] - grid[:-1]).double()
    quarter = grid[:-1] + (grid[1:] - grid[:-1]) / 4
    for values, expected in ((mids, steps), (grid[:-1], torch.zeros_like(steps)), (quarter, torch.zeros_like(steps))):
        row = torch.cat([torch.tensor([448.0]), values[:127]])[None, :]
        got = quant.e4m3_flip_steps(row)
        assert torch.equal(got[0, 1:], expected[:127]) and got[0, 0] == 0


@pytest.mark.parametrize("case", [(17, 4, 2, 136, 200, "w4a8"), (1, 4, 2, 64, 32, "fp8_block"),
                                  (9, 6, 3, 256, 130, "fp8_block"), (12, 5, 2, 96, 72, "fp8_tensor")])
def test_requantisation_slack_bounds_the_replays_noise(case, monkeypatch):
    # What run_and_check allows the GPU's FP8 paths (1% and one flip per token) holds the
    # quantised replay itself when its gate/up sums move by the H200 MMA's ~2e-4 (relative).
    m, e, k, h, i, fmt = case
    w13 = torch.randn(e, 2 * i, h) * 0.05 * (0.5 + torch.rand(e, 1, 1))
    w = ExpertWeights.from_dense(w13, torch.randn(e, h, i) * 0.05 * (0.5 + torch.rand(e, h, 1)), fmt)
    x = torch.randn(m, h).to(torch.bfloat16)
    ids = torch.rand(m, e).argsort(dim=1)[:, :k].to(torch.int32)
    tw = torch.softmax(torch.randn(m, k), dim=-1)
    exact = ref.moe_reference(x, w, tw, ids, quantize_activations=True)
    allowed = 1e-2 * exact.norm() + ref.requantisation_slack(x, w, tw, ids).norm()
    glu = ref.glu
    for _ in range(4):
        monkeypatch.setattr(ref, "glu", lambda gu, a="silu": glu(gu * (1 + 2e-4 * torch.randn_like(gu)), a))
        moved = ref.moe_reference(x, w, tw, ids, quantize_activations=True)
        monkeypatch.setattr(ref, "glu", glu)
        assert (moved - exact).norm() <= allowed


def test_clone_is_a_full_copy(device):
    # Benchmarks rotate clones past L2: a clone carries scales and biases, in new memory.
    w = ExpertWeights.from_dense(torch.randn(2, 64, 32, device=device), torch.randn(2, 32, 32, device=device),
                                 "fp8_block", w13_bias=torch.randn(2, 64, device=device),
                                 w2_bias=torch.randn(2, 32, device=device))
    c = w.clone()
    for name in ("w13", "w2", "w13_scale", "w2_scale", "w13_bias", "w2_bias"):
        a, b = getattr(w, name), getattr(c, name)
        assert torch.equal(a.float(), b.float()) and a.data_ptr() != b.data_ptr(), name
