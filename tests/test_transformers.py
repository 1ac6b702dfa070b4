"""fusedmoe as a transformers (>= 5) experts implementation, against the models' own experts in float64."""

import copy
import warnings

import pytest
import torch
from conftest import ACT_DTYPE, DEVICE

pytest.importorskip("transformers", minversion="5.0")
from transformers import DeepseekV3Config, GptOssConfig, MixtralConfig, Qwen3MoeConfig  # noqa: E402
from transformers.integrations.finegrained_fp8 import FP8Experts  # noqa: E402
from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3Experts  # noqa: E402
from transformers.models.gpt_oss.modeling_gpt_oss import GptOssExperts  # noqa: E402
from transformers.models.mixtral.modeling_mixtral import MixtralExperts  # noqa: E402
from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeExperts  # noqa: E402

from fusedmoe import ExpertWeights, fused_moe  # noqa: E402
from fusedmoe.integrations.transformers import _CONVERTED, expert_weights, experts_forward, register  # noqa: E402
from fusedmoe.reference import cosine, moe_reference, rel_l2  # noqa: E402

# The op against the float64 run of the module's own forward: one fp16/bf16 rounding of x,
# the weights and the output, as in tests/test_fused_moe.py.
MAX_REL_L2, MIN_COSINE = 5e-3, 0.99995

# (experts class, config) of each layout transformers has, at sizes no tile divides.
ARCHES = {
    # gate rows then up rows, [E, 2I, H]; softmax top-2 over 5 experts
    "mixtral": (MixtralExperts, lambda: MixtralConfig(hidden_size=72, intermediate_size=40, num_local_experts=5,
                                                      num_experts_per_tok=2)),
    # Qwen3-MoE: moe_intermediate_size, num_experts; top-3
    "qwen3_moe": (Qwen3MoeExperts, lambda: Qwen3MoeConfig(hidden_size=64, moe_intermediate_size=24, num_experts=6,
                                                          num_experts_per_tok=3)),
    # DeepSeek-V3: n_routed_experts, top-4 of 7
    "deepseek_v3": (DeepseekV3Experts, lambda: DeepseekV3Config(hidden_size=48, moe_intermediate_size=32,
                                                                n_routed_experts=7, num_experts_per_tok=4)),
    # GPT-OSS: [E, H, 2I] transposed with gate and up interleaved, biases, clamped SwiGLU
    "gpt_oss": (GptOssExperts, lambda: GptOssConfig(hidden_size=64, intermediate_size=40, num_local_experts=4,
                                                    num_experts_per_tok=2)),
}


def make_experts(arch, dtype=ACT_DTYPE, implementation="eager"):
    cls, config = ARCHES[arch]
    config = config()
    config._experts_implementation = implementation
    module = cls(config)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * 0.1)
    return module.to(DEVICE, dtype).eval(), config


def route(module, tokens, top_k):
    """Distinct experts per token and softmax weights."""
    ids = torch.rand(tokens, module.num_experts, device=DEVICE).argsort(dim=1)[:, :top_k]
    return ids, torch.softmax(torch.randn(tokens, top_k, device=DEVICE), dim=-1)


def eager_float64(module, x, ids, weights):
    """The module's own forward, every tensor in float64."""
    exact = copy.deepcopy(module).double()
    exact.config = copy.copy(module.config)
    exact.config._experts_implementation = "eager"
    with torch.no_grad():
        return exact(x.double(), ids, weights.double())


def check_close(got, want, max_rel_l2=MAX_REL_L2, min_cosine=MIN_COSINE):
    assert not torch.isnan(got).any()
    assert rel_l2(got, want) <= max_rel_l2, f"rel-L2 {rel_l2(got, want):.3e}"
    assert cosine(got, want) >= min_cosine, f"cosine {cosine(got, want):.6f}"


@pytest.mark.parametrize("arch", list(ARCHES))
@pytest.mark.parametrize("tokens", [1, 9])  # decode (route-direct) and more routes than experts
def test_registered_implementation_matches_the_models_experts(arch, tokens):
    name = register()
    module, config = make_experts(arch, implementation=name)
    ids, weights = route(module, tokens, config.num_experts_per_tok)
    x = torch.randn(tokens, config.hidden_size, device=DEVICE).to(ACT_DTYPE)
    with torch.no_grad():
        got = module(x, ids, weights)
    assert got.dtype == x.dtype and got.shape == x.shape and module in _CONVERTED  # ours ran
    check_close(got, eager_float64(module, x, ids, weights))


def test_quantising_registration_is_from_dense():
    # register(format=...) computes what fused_moe computes on ExpertWeights.from_dense of the
    # module's weights (gate rows first, GPT-OSS's interleaving undone)
    name = register("fusedmoe_test_fp8_block", format="fp8_block")
    for arch in ("qwen3_moe", "gpt_oss"):
        module, config = make_experts(arch, implementation=name)
        ids, weights = route(module, 4, config.num_experts_per_tok)
        x = torch.randn(4, config.hidden_size, device=DEVICE).to(ACT_DTYPE)
        with torch.no_grad():
            got = module(x, ids, weights)
        w13, w2 = module.gate_up_proj.detach(), module.down_proj.detach()
        extra = {}
        if arch == "gpt_oss":
            w13, w2 = w13.transpose(1, 2), w2.transpose(1, 2)
            extra = dict(w13_bias=module.gate_up_proj_bias.detach(), w2_bias=module.down_proj_bias.detach(),
                         gate_up_interleaved=True)
        direct = ExpertWeights.from_dense(w13, w2, "fp8_block", **extra)
        want = fused_moe(x, direct, weights, ids, activation="swiglu_oai" if arch == "gpt_oss" else "silu")
        assert torch.equal(got, want)
        # and against the model's own experts, within what e4m3 weights move a layer of 4 tokens (randn
        # weights: median 6%, 9% in 50 draws); a layout error (gate and up swapped, the
        # interleaving missed) moves it by ~100%
        check_close(got, eager_float64(module, x, ids, weights), max_rel_l2=0.15, min_cosine=0.98)


def fp8_checkpoint(block_size, hidden=256, inter=128, experts=3):
    """An FP8Experts module holding fusedmoe's quantisation of random dense weights."""
    config = MixtralConfig(hidden_size=hidden, intermediate_size=inter, num_local_experts=experts,
                           num_experts_per_tok=2)
    module = FP8Experts(config, block_size=block_size).to(DEVICE)
    dense = ExpertWeights.from_dense(torch.randn(experts, 2 * inter, hidden, device=DEVICE) * 0.1,
                                     torch.randn(experts, hidden, inter, device=DEVICE) * 0.1,
                                     "fp8_block" if block_size else "fp8_tensor")
    s13 = dense.w13_scale if block_size else dense.w13_scale[:, None, None].expand(experts, 2, 1)
    s2 = dense.w2_scale if block_size else dense.w2_scale[:, None, None]
    with torch.no_grad():
        for param, value in ((module.gate_up_proj, dense.w13), (module.down_proj, dense.w2),
                             (module.gate_up_proj_scale_inv, s13), (module.down_proj_scale_inv, s2)):
            param.copy_(value)
    return module, dense


@pytest.mark.parametrize("block_size", [(128, 128), None])
def test_fp8_experts_are_read_as_they_are(block_size):
    # transformers' fine-grained FP8 experts: e4m3 weights and their scale_inv, taken bitwise
    module, dense = fp8_checkpoint(block_size)
    weights, activation = expert_weights(module)
    assert weights.format == dense.format and activation == "silu"
    for a, b in ((weights.w13, dense.w13), (weights.w2, dense.w2)):
        assert torch.equal(a.view(torch.uint8), b.view(torch.uint8))
    assert torch.equal(weights.w13_scale, dense.w13_scale) and torch.equal(weights.w2_scale, dense.w2_scale)
    ids, tw = route(module, 3, 2)
    x = torch.randn(3, 256, device=DEVICE).to(ACT_DTYPE)
    assert torch.equal(experts_forward(module, x, ids, tw), fused_moe(x, dense, tw, ids))


def test_fp8_experts_with_power_of_two_scales():
    # scale_fmt "ue8m0" (DeepSeek-V3.1-style checkpoints): E8M0 scales, read as the fp32 powers of two they are
    config = MixtralConfig(hidden_size=256, intermediate_size=128, num_local_experts=2, num_experts_per_tok=2)
    module = FP8Experts(config, block_size=(128, 128), scale_fmt="ue8m0").to(DEVICE)
    with torch.no_grad():
        for w in (module.gate_up_proj, module.down_proj):
            w.copy_((torch.randn(w.shape, device=DEVICE) * 100).clamp(-448, 448).to(torch.float8_e4m3fn))
        for s in (module.gate_up_proj_scale_inv, module.down_proj_scale_inv):
            s.copy_(torch.exp2(torch.randint(-12, -4, s.shape, device=DEVICE).float()).to(s.dtype))
    weights, _ = expert_weights(module)
    assert weights.format == "fp8_block" and weights.w13_scale.dtype == torch.float32
    assert torch.equal(weights.w13_scale, module.gate_up_proj_scale_inv.float())
    ids, tw = route(module, 2, 2)
    x = torch.randn(2, 256, device=DEVICE).to(ACT_DTYPE)
    got = experts_forward(module, x, ids, tw, path="route_direct")  # activations as they are
    check_close(got, moe_reference(x, weights, tw, ids))


def test_fp8_experts_with_a_scale_per_half_are_requantised_to_the_larger():
    # FP8Experts without a block size keeps a scale for gate and one for up; fusedmoe's
    # fp8_tensor has one: the half with the smaller scale is requantised to the larger
    module, dense = fp8_checkpoint(None)
    with torch.no_grad():
        module.gate_up_proj_scale_inv[:, 1] *= 0.7
    weights, _ = expert_weights(module)
    assert torch.equal(weights.w13_scale, dense.w13_scale)
    assert torch.equal(weights.w13[:, :128].view(torch.uint8), dense.w13[:, :128].view(torch.uint8))
    halves = module.gate_up_proj.float() * module.gate_up_proj_scale_inv.float().repeat_interleave(128, dim=1)
    got = weights.w13.float() * weights.w13_scale[:, None, None]
    assert rel_l2(got[:, 128:], halves[:, 128:]) < 0.04  # one e4m3 rounding of the up half
    ids, tw = route(module, 3, 2)
    x = torch.randn(3, 256, device=DEVICE).to(ACT_DTYPE)
    want = moe_reference(x, ExpertWeights("fp16", halves.half(), dense.dequantize()[1].half()), tw, ids)
    check_close(experts_forward(module, x, ids, tw), want, max_rel_l2=0.08, min_cosine=0.99)


def test_fp8_blocks_across_gate_and_up_are_refused():
    # I = 192: the checkpoint's second 128-row block of gate_up holds gate and up rows
    module = FP8Experts(MixtralConfig(hidden_size=128, intermediate_size=192, num_local_experts=2), block_size=(128, 128))
    with pytest.raises(NotImplementedError, match="multiple of 128"):
        expert_weights(module)
    with pytest.raises(ValueError, match="format"):
        expert_weights(fp8_checkpoint((128, 128))[0], "fp8_tensor")
    module = fp8_checkpoint((128, 128))[0]
    module.is_transposed = True
    with pytest.raises(NotImplementedError, match="transposed FP8"):
        expert_weights(module)


def test_weights_are_kept_until_a_parameter_changes():
    module, config = make_experts("mixtral")
    first, _ = expert_weights(module)
    assert expert_weights(module)[0] is first
    assert copy.deepcopy(module) not in _CONVERTED  # kept beside the module: a copy does not carry it
    assert first.w13.data_ptr() == module.gate_up_proj.data_ptr()  # 16-bit, same layout: wrapped, no copy
    ids, tw = route(module, 2, 2)
    x = torch.randn(2, config.hidden_size, device=DEVICE).to(ACT_DTYPE)
    before = experts_forward(module, x, ids, tw)
    with torch.no_grad():
        module.down_proj.mul_(2)  # in place: the version counter moves
    assert expert_weights(module)[0] is not first
    torch.testing.assert_close(experts_forward(module, x, ids, tw), 2 * before, rtol=2e-3, atol=1e-4)
    module.down_proj = torch.nn.Parameter(module.down_proj.detach() / 2)  # replaced
    torch.testing.assert_close(experts_forward(module, x, ids, tw), before, rtol=2e-3, atol=1e-4)


def test_compiled_model_experts_run_the_op():
    # torch.compile of the experts module (as a compiled model compiles it): one graph through the
    # registered implementation, bitwise the eager call
    module, config = make_experts("gpt_oss", implementation=register())
    ids, tw = route(module, 3, 2)
    x = torch.randn(3, config.hidden_size, device=DEVICE).to(ACT_DTYPE)
    with torch.no_grad():
        eager = module(x, ids, tw)
        for warm in (True, False):  # weights converted by an eager call first, or traced
            if not warm:
                del _CONVERTED[module]
                torch._dynamo.reset()
            compiled = torch.compile(module, backend="aot_eager", fullgraph=True)
            assert torch.equal(compiled(x, ids, tw), eager)


def test_expert_parallel_sentinels_contribute_nothing():
    # Under transformers' expert parallelism ids of experts held elsewhere arrive as ids past the
    # local ones: they add nothing, as -1 ids do
    module, config = make_experts("qwen3_moe")
    module._is_expert_parallel = True
    ids, tw = route(module, 5, 3)
    x = torch.randn(5, config.hidden_size, device=DEVICE).to(ACT_DTYPE)
    away = torch.rand(ids.shape, device=DEVICE) < 0.4
    sentinel = torch.where(away, module.num_experts + torch.randint(0, 3, ids.shape, device=DEVICE), ids)
    dropped = torch.where(away, -1, ids)
    assert torch.equal(experts_forward(module, x, sentinel, tw), experts_forward(module, x, dropped, tw))


def test_float32_experts_run_in_bf16():
    module, config = make_experts("deepseek_v3", dtype=torch.float32)
    ids, tw = route(module, 3, 4)
    x = torch.randn(3, config.hidden_size, device=DEVICE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the interpreter's bf16 stand-in warns
        got = experts_forward(module, x, ids, tw)
    assert got.dtype == torch.float32 and expert_weights(module)[0].format == "bf16"
    check_close(got, eager_float64(module, x, ids, tw), max_rel_l2=2e-2, min_cosine=0.9995)


def test_a_whole_model_runs_on_the_registered_implementation():
    from transformers import MixtralForCausalLM

    config = MixtralConfig(vocab_size=96, hidden_size=64, intermediate_size=40, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2)
    model = MixtralForCausalLM(config).to(DEVICE, ACT_DTYPE).eval()
    tokens = torch.randint(0, 96, (2, 5), device=DEVICE)
    exact = copy.deepcopy(model).double()
    exact.set_experts_implementation("eager")
    model.set_experts_implementation(register())
    with torch.no_grad():
        got, want = model(tokens).logits, exact(tokens).logits
    experts = [m for m in model.modules() if isinstance(m, MixtralExperts)]
    assert len(experts) == 2 and all(m in _CONVERTED for m in experts)  # ours ran
    check_close(got, want, max_rel_l2=2e-2, min_cosine=0.9995)  # attention and norms in fp16 too


def test_shape_from_a_transformers_config():
    from fusedmoe.shapes import shape_from_hf_config

    shape = shape_from_hf_config(ARCHES["qwen3_moe"][1]())
    assert (shape.num_experts, shape.top_k, shape.hidden_size, shape.intermediate_size) == (6, 3, 64, 24)
    assert shape.activation == "silu" and shape_from_hf_config(ARCHES["gpt_oss"][1]()).activation == "swiglu_oai"


def test_what_fusedmoe_does_not_compute_is_named():
    module, _ = make_experts("mixtral")
    module.act_fn = torch.nn.ReLU()
    with pytest.raises(NotImplementedError, match="act_fn ReLU"):
        expert_weights(module)
    module, _ = make_experts("mixtral")
    module.has_gate = False
    with pytest.raises(NotImplementedError, match="gated"):
        expert_weights(module)
    module, _ = make_experts("gpt_oss")
    module.limit = 5.0
    with pytest.raises(NotImplementedError, match="limit"):
        expert_weights(module)
    module, _ = make_experts("mixtral", dtype=torch.float64)
    with pytest.raises(NotImplementedError, match="float64"):
        expert_weights(module)
    with pytest.raises(ValueError, match="format"):
        register("fusedmoe_bad", format="int4")
    with pytest.raises(ValueError, match="name"):
        register("")
    with pytest.raises(ValueError, match="path: expected one of"):
        register("fusedmoe_bad", path="fastest")


def test_bench_times_each_implementation(tmp_path):
    # python -m fusedmoe.bench.transformers on a config file: a row per (M, implementation),
    # each within bf16's rounding of the float64 layer, written as markdown and JSON
    import json

    from fusedmoe.bench import transformers as bench

    config = tmp_path / "config.json"
    config.write_text(json.dumps(dict(model_type="mixtral", hidden_size=64, intermediate_size=40, num_local_experts=6,
                                      num_experts_per_tok=2, hidden_act="silu")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the interpreter's bf16 stand-in warns
        assert bench.main(["--shape", str(config), "--tokens", "1,5", "--impls", "grouped_mm,fusedmoe",
                           "--out", str(tmp_path / "out")]) == 0
    rows = json.loads((tmp_path / "out" / "transformers.json").read_text())["rows"]
    assert [(r["M"], r["impl"]) for r in rows] == [(1, "grouped_mm"), (1, "fusedmoe"), (5, "grouped_mm"),
                                                   (5, "fusedmoe")]
    assert all(r["us"] > 0 and r["rel_l2"] < 1e-2 for r in rows)
    # the rotated weight copies (GPU) run the implementation set for the row: they share the config
    base = bench.experts_module(bench.get_shape(str(config)), DEVICE)
    copies = bench.weight_copies(base, 3)
    base.config._experts_implementation = "fusedmoe_own"
    assert all(c.config._experts_implementation == "fusedmoe_own" for c in copies)
    assert len({c.gate_up_proj.data_ptr() for c in copies}) == 3
    assert "| fusedmoe speedup |" in (tmp_path / "out" / "transformers.md").read_text()
