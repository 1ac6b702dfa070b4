"""Bad input raises a clear exception naming the argument; it never crashes."""

import pytest
import torch
from conftest import ACT_DTYPE, PLAIN_FORMAT

from fusedmoe.api import fused_moe
from fusedmoe.weights import ExpertWeights


@pytest.fixture
def layer(device):
    e, h, i, m, k = 4, 64, 32, 3, 2
    w = ExpertWeights.from_dense(torch.randn(e, 2 * i, h, device=device), torch.randn(e, h, i, device=device),
                                 PLAIN_FORMAT)
    x = torch.randn(m, h, device=device).to(ACT_DTYPE)
    ids = torch.randint(0, e, (m, k), device=device, dtype=torch.int32)
    return w, x, torch.rand(m, k, device=device), ids


def test_good_input_runs(layer):
    w, x, tw, ids = layer
    fused_moe(x, w, tw, ids)


@pytest.mark.parametrize("mutate,exc,match", [
    (lambda w, x, tw, ids: (w, x.float(), tw, ids), TypeError, "x: expected dtype"),
    (lambda w, x, tw, ids: (w, x[:, :10], tw, ids), ValueError, "x: expected shape"),
    (lambda w, x, tw, ids: (w, x.t().contiguous().t(), tw, ids), ValueError, "x: expected rows"),
    (lambda w, x, tw, ids: (w, x[None], tw, ids), ValueError, "x: expected a 2-D"),
    (lambda w, x, tw, ids: (w, x, tw, ids.float()), TypeError, "topk_ids: expected dtype"),
    (lambda w, x, tw, ids: (w, x, tw, ids[:2]), ValueError, "topk_ids: expected shape"),
    (lambda w, x, tw, ids: (w, x, tw[:, :1], ids), ValueError, "topk_weights: expected shape"),
    (lambda w, x, tw, ids: (w, x, tw, ids + 10), ValueError, r"topk_ids: expected ids in \[-1, 4\)"),
    (lambda w, x, tw, ids: (w, x, tw, ids - 5), ValueError, "topk_ids: expected ids"),  # all <= -2
    (lambda w, x, tw, ids: ("weights", x, tw, ids), TypeError, "weights: expected an ExpertWeights"),
    (lambda w, x, tw, ids: (w, x, tw, ids.to(torch.int16)), TypeError, "topk_ids: expected dtype"),
])
def test_bad_arguments(layer, mutate, exc, match):
    w, x, tw, ids = mutate(*layer)
    with pytest.raises(exc, match=match):
        fused_moe(x, w, tw, ids)


def test_bad_keywords(layer):
    w, x, tw, ids = layer
    with pytest.raises(ValueError, match="path: expected one of"):
        fused_moe(x, w, tw, ids, path="fastest")
    with pytest.raises(ValueError, match="expert_offset"):
        fused_moe(x, w, tw, ids, expert_offset=-1)
    with pytest.raises(ValueError, match="expert_offset: the local window"):
        fused_moe(x, w, tw, ids, expert_offset=2, num_experts=5)
    with pytest.raises(ValueError, match="num_local_experts"):
        fused_moe(x, w, tw, ids, num_local_experts=5)
    with pytest.raises(ValueError, match="num_local_experts"):
        fused_moe(x, w, tw, ids, expert_offset=2, num_local_experts=3)
    with pytest.raises(ValueError, match="out: expected shape"):
        fused_moe(x, w, tw, ids, out=torch.empty(1, 64, dtype=x.dtype, device=x.device))
    with pytest.raises(TypeError, match="out: expected dtype"):
        fused_moe(x, w, tw, ids, out=torch.empty_like(x, dtype=torch.float32))
    with pytest.raises(ValueError, match="shared_output: expected shape"):
        fused_moe(x, w, tw, ids, shared_output=torch.empty(3, 5, device=x.device))
    with pytest.raises(TypeError, match="check_ids: expected a bool"):
        fused_moe(x, w, tw, ids, check_ids="no")  # a non-empty string would have read as True
    with pytest.raises(TypeError, match="config: path 'grouped'"):
        from fusedmoe.policy import RouteDirectConfig, Tile
        fused_moe(x, w, tw, ids, path="grouped", config=RouteDirectConfig(Tile(8, 64), Tile(8, 64)))


def test_weights_validation(device):
    w13 = torch.randn(2, 64, 32, device=device)
    w2 = torch.randn(2, 32, 32, device=device)
    with pytest.raises(ValueError, match="format: expected one of"):
        ExpertWeights.from_dense(w13, w2, "int3")
    with pytest.raises(ValueError, match="w2: expected shape"):
        ExpertWeights.from_dense(w13, torch.randn(2, 32, 31, device=device), "fp16")
    with pytest.raises(ValueError, match="w13: expected shape"):
        ExpertWeights.from_dense(torch.randn(2, 63, 32, device=device), w2, "fp16")
    q = ExpertWeights.from_dense(w13, w2, "fp8_block")
    with pytest.raises(ValueError, match="w13_scale: format 'fp8_block' needs"):
        ExpertWeights.from_quantized("fp8_block", q.w13, q.w2, None, q.w2_scale)
    with pytest.raises(ValueError, match="w2_scale: expected shape"):
        ExpertWeights.from_quantized("fp8_block", q.w13, q.w2, q.w13_scale, q.w2_scale[:, :0])
    with pytest.raises(TypeError, match="w13: expected dtype"):
        ExpertWeights.from_quantized("fp8_tensor", q.w13.float(), q.w2, q.w13_scale, q.w2_scale)
    with pytest.raises(ValueError, match="takes no scales"):
        ExpertWeights.from_quantized("fp16", w13.half(), w2.half(), torch.ones(2, device=device), None)
    for fmt in ("fp16", "fp8_tensor", "fp8_block"):  # an empty expert, before any quantisation
        with pytest.raises(ValueError, match="w13: expected no zero-sized"):
            ExpertWeights.from_dense(w13[:, :0], w2[:, :, :0], fmt)
    with pytest.raises(ValueError, match="w2_bias: expected a 2-D"):
        ExpertWeights.from_dense(w13, w2, "fp16", w2_bias=torch.zeros(32, device=device))
    # non-finite weights or scales would quantise or scale every code of their block wrong
    for fmt, bad in (("fp8_tensor", float("nan")), ("fp8_block", float("inf")), ("w4a8", float("-inf"))):
        with pytest.raises(ValueError, match=f"w2: expected finite weights to quantise into '{fmt}'"):
            ExpertWeights.from_dense(w13, w2.index_fill(2, torch.tensor([3], device=device), bad), fmt)
    assert ExpertWeights.from_dense(w13, w2 * float("nan"), "fp16").w2.isnan().all()  # plain: kept as given
    with pytest.raises(ValueError, match="w13_scale: expected finite scales"):
        ExpertWeights.from_quantized("fp8_block", q.w13, q.w2, q.w13_scale / 0, q.w2_scale)


def test_weight_value_checks_need_data():
    # The value checks (finite weights and scales, the plain range) read values on the host; fake
    # and meta tensors have none (tracing, FakeTensorMode): they are built on shapes alone
    from torch._subclasses.fake_tensor import FakeTensorMode

    for mode, device in ((FakeTensorMode(), "cpu"), (torch.no_grad(), "meta")):
        with mode:
            w13, w2 = torch.randn(2, 64, 32, device=device), torch.randn(2, 32, 32, device=device)
            for fmt in ("bf16", "fp8_tensor", "fp8_block", "w4a8"):
                assert ExpertWeights.from_dense(w13, w2, fmt).format == fmt
            q = ExpertWeights.from_dense(w13, w2, "fp8_block")
            assert ExpertWeights.from_quantized("fp8_block", q.w13, q.w2, q.w13_scale, q.w2_scale).format == "fp8_block"


def test_weights_constructor_checked(device):
    # ExpertWeights built by its constructor (not from_dense / from_quantized) is checked too:
    # a bad one never reaches a kernel (out-of-bounds reads, a crash, or a silent wrong answer).
    good = ExpertWeights.from_dense(torch.randn(1, 64, 32, device=device), torch.randn(1, 32, 32, device=device),
                                    "w4a8")
    with pytest.raises(ValueError, match="w2: expected shape"):
        ExpertWeights("w4a8", good.w13, good.w2[:0], good.w13_scale, good.w2_scale)
    with pytest.raises(ValueError, match="w13_scale: format 'w4a8' needs"):
        ExpertWeights("w4a8", good.w13, good.w2, None, good.w2_scale)
    with pytest.raises(ValueError, match="format: expected one of"):
        ExpertWeights("int3", good.w13, good.w2)
    plain = ExpertWeights.from_dense(torch.randn(2, 64, 32, device=device), torch.randn(2, 32, 32, device=device),
                                     "fp16")
    with pytest.raises(ValueError, match="w13: expected a contiguous"):
        ExpertWeights("fp16", plain.w13.transpose(1, 2).contiguous().transpose(1, 2), plain.w2)
    with pytest.raises(ValueError, match="w13_bias: expected shape"):
        ExpertWeights("fp16", plain.w13, plain.w2, w13_bias=torch.zeros(1, 3, device=device))


@pytest.mark.parametrize("bad_ids,exc,match", [
    (lambda ids: ids.float(), TypeError, "topk_ids: expected dtype"),
    (lambda ids: ids.short(), TypeError, "topk_ids: expected dtype"),
    (lambda ids: ids > 0, TypeError, "topk_ids: expected dtype"),
    (lambda ids: ids.tolist(), TypeError, "topk_ids: expected a torch.Tensor"),
    (lambda ids: ids[0], ValueError, "topk_ids: expected a 2-D"),
])
def test_expert_map_checks_ids_first(layer, bad_ids, exc, match):
    w, x, tw, ids = layer
    emap = torch.tensor([0, 1, 2, 3, -1, -1], device=x.device)
    with pytest.raises(exc, match=match):
        fused_moe(x, w, tw, bad_ids(ids), expert_map=emap)


def test_out_rows_must_not_overlap(layer):
    w, x, tw, ids = layer
    shared_row = torch.empty(1, x.shape[1], dtype=x.dtype, device=x.device).expand(x.shape[0], -1)
    with pytest.raises(ValueError, match="out: expected rows that do not overlap"):
        fused_moe(x, w, tw, ids, out=shared_row)
    one = torch.empty(1, x.shape[1], dtype=x.dtype, device=x.device).expand(1, -1)  # a single row: fine
    fused_moe(x[:1], w, tw[:1], ids[:1], out=one)


@pytest.mark.parametrize("block_m", [24, 48, 2048, 8])
def test_grouped_config_block_m_checked(layer, block_m):
    import dataclasses

    from fusedmoe import policy
    w, x, tw, ids = layer
    cfg = dataclasses.replace(policy.grouped_config(x.shape[0], ids.shape[1], w.num_experts, w.hidden_size,
                                                    w.intermediate_size, w.format), block_m=block_m)
    assert not policy.legal("grouped", cfg, w.format)
    with pytest.raises(ValueError, match="config: .* is not a legal 'grouped' config"):
        fused_moe(x, w, tw, ids, path="grouped", config=cfg)


def test_global_expert_ids_beyond_the_plan_limit(device):
    # Expert parallelism over a huge global id space: the plan limits local experts, not
    # global ids, and int32 ids meet a global count beyond int32 without wrapping.
    w = ExpertWeights.from_dense(torch.randn(4, 64, 32, device=device), torch.randn(4, 32, 32, device=device), "fp16")
    x = torch.randn(5, 32, device=device).half()
    ids = torch.randint(0, 4, (5, 2), device=device, dtype=torch.int32)
    tw = torch.rand(5, 2, device=device)
    for path in ("grouped", "route_direct"):
        got = fused_moe(x, w, tw, (ids + 70000).long(), expert_offset=70000, path=path)
        assert torch.equal(got, fused_moe(x, w, tw, ids, path=path))
    for path in ("grouped", "route_direct"):
        plain = fused_moe(x, w, tw, ids, path=path)
        assert torch.equal(fused_moe(x, w, tw, ids, num_experts=2 ** 31, path=path), plain)
        with pytest.raises(ValueError, match="topk_ids: expected ids in"):
            fused_moe(x, w, tw, ids - 5, num_experts=2 ** 31, path=path)  # every id below -1


def test_mixed_plain_dtypes_rejected(layer):
    w, x, tw, ids = layer
    other = torch.float16 if x.dtype == torch.bfloat16 else torch.bfloat16
    with pytest.raises(TypeError, match="x: expected dtype"):
        fused_moe(x.to(other), w, tw, ids)


@pytest.mark.parametrize("ids_dtype", [torch.int32, torch.int64])
def test_local_window_past_int32(device, ids_dtype):
    # The kernels never sum the window's end (offset + E_local), so windows that straddle 2^31
    # or lie wholly above it hold the right routes on both paths (the plan: test_plan.py); one
    # that ends past 2^63 - 1 is refused, naming expert_offset.
    from fusedmoe.plan import build_plan
    from fusedmoe.reference import moe_reference, rel_l2

    w = ExpertWeights.from_dense(torch.randn(4, 64, 32, device=device) * 0.1,
                                 torch.randn(4, 32, 32, device=device) * 0.1, "fp16")
    x = torch.randn(3, 32, device=device).half()
    tw = torch.rand(3, 2, device=device)
    top = 2 ** 31 - 1
    offsets = [top - 2, top - 4] + ([2 ** 31 + 5, 2 ** 40] if ids_dtype == torch.int64 else [])
    for offset in offsets:
        hi = min(offset + 6, top) if ids_dtype == torch.int32 else offset + 6
        ids = torch.randint(offset - 2, hi, (3, 2), device=device).to(ids_dtype)
        ids[0, 0] = offset + 1  # at least one held route
        ref = moe_reference(x, w, tw, ids, expert_offset=offset)
        for path in ("grouped", "route_direct"):
            got = fused_moe(x, w, tw, ids, expert_offset=offset, num_experts=offset + 8, path=path)
            assert rel_l2(got, ref) < 2e-3, (offset, path)
    with pytest.raises(ValueError, match="expert_offset: the local window"):
        fused_moe(x, w, tw, torch.zeros(3, 2, device=device, dtype=ids_dtype), expert_offset=2 ** 63 - 3)
    with pytest.raises(ValueError, match="num_experts: expected an int <="):
        build_plan(torch.zeros(3, 2, device=device, dtype=ids_dtype), 2 ** 64, 16)


def test_swiglu_activation_named(device):
    from fusedmoe.epilogue import swiglu, swiglu_quant

    gate_up = torch.randn(3, 32, device=device)
    for fn in (swiglu, swiglu_quant):
        with pytest.raises(ValueError, match="activation: expected one of"):
            fn(gate_up, activation="relu")


@pytest.mark.parametrize("warps", [6, 64])
def test_config_warps_power_of_two_up_to_32(layer, warps):
    import dataclasses

    from fusedmoe import policy
    w, x, tw, ids = layer
    m, k = ids.shape
    for path, cfg in (("route_direct", policy.route_direct_config(m, k, w.num_experts, w.hidden_size,
                                                                  w.intermediate_size, w.format, 132)),
                      ("grouped", policy.grouped_config(m, k, w.num_experts, w.hidden_size, w.intermediate_size,
                                                        w.format))):
        bad = dataclasses.replace(cfg, gate_up=dataclasses.replace(cfg.gate_up, num_warps=warps))
        assert not policy.legal(path, bad, w.format)
        with pytest.raises(ValueError, match="config: .* is not a legal"):
            fused_moe(x, w, tw, ids, path=path, config=bad)


def test_expert_parallel_names_bad_weights(device, tmp_path):
    import torch.distributed as dist

    from fusedmoe.distributed import expert_parallel_moe
    if dist.is_initialized():
        pytest.skip("a process group is already set up")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'pg'}", rank=0, world_size=1)
    try:
        w = ExpertWeights.from_dense(torch.randn(4, 64, 32), torch.randn(4, 32, 32), "fp16")
        x = torch.randn(3, 32).half()
        with pytest.raises(TypeError, match="weights: expected an ExpertWeights"):
            expert_parallel_moe(x, (w.w13, w.w2), torch.rand(3, 2), torch.zeros(3, 2, dtype=torch.int32),
                                num_experts=4)
    finally:
        dist.destroy_process_group()


def test_more_local_experts_than_a_plan_holds(device):
    # 65537 local experts: "auto" runs route-direct (no plan) and matches the reference; the
    # grouped path, whose plan holds at most 65536, is refused naming path
    from fusedmoe.plan import MAX_EXPERTS
    from fusedmoe.reference import moe_reference, rel_l2

    e = MAX_EXPERTS + 1
    w = ExpertWeights.from_dense(torch.randn(e, 32, 16, device=device) * 0.1,
                                 torch.randn(e, 16, 16, device=device) * 0.1, "fp16")
    x = torch.randn(2, 16, device=device).half()
    tw = torch.rand(2, 2, device=device)
    ids = torch.tensor([[0, e - 1], [5, MAX_EXPERTS - 7]], device=device)
    got = fused_moe(x, w, tw, ids)
    assert rel_l2(got, moe_reference(x, w, tw, ids)) < 2e-3
    with pytest.raises(ValueError, match="path: 'grouped' plans at most"):
        fused_moe(x, w, tw, ids, path="grouped")


def test_weights_beyond_fp16_and_negative_windows_named():
    w13, w2 = torch.randn(2, 8, 16), torch.randn(2, 16, 4)
    with pytest.raises(ValueError, match="w2: magnitudes up to 7e\\+04 exceed fp16's largest"):
        ExpertWeights.from_dense(w13, w2 * 0 + 7e4, "fp16")
    assert ExpertWeights.from_dense(w13, w2 * 0 + 7e4, "bf16").w2.isfinite().all()
    w = ExpertWeights.from_dense(w13, w2, "fp16")
    with pytest.raises(ValueError, match="expert_offset: expected an int >= 0"):
        w.local_window(-1, 1)
    with pytest.raises(TypeError, match="num_local_experts: expected an int"):
        w.local_window(0, 1.0)
