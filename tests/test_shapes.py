"""Model shapes: presets' numbers, TP/EP, and the HF config.json parser on real-style files."""

import json

import pytest

from fusedmoe.shapes import PEER_SHAPES, PRESETS, MoEShape, get_shape, shape_from_hf_config


def _facts(s: MoEShape):
    return (s.num_experts, s.top_k, s.hidden_size, s.intermediate_size)


# (E, k, H, I per rank) from the public HF configs; the five of PEERS-H200.md must match it exactly.
EXPECTED = {
    "qwen3_30b_a3b": (128, 8, 2048, 768),
    "qwen3_235b_a22b": (128, 8, 4096, 1536),
    "qwen3_235b_a22b_tp4": (128, 8, 4096, 384),
    "qwen3_235b_a22b_tp8": (128, 8, 4096, 192),
    "deepseek_v3": (256, 8, 7168, 2048),
    "deepseek_v3_tp8": (256, 8, 7168, 256),
    "mixtral_8x7b": (8, 2, 4096, 14336),
    "mixtral_8x7b_tp2": (8, 2, 4096, 7168),
    "gpt_oss_120b": (128, 4, 2880, 2880),
    "gpt_oss_120b_tp4": (128, 4, 2880, 720),
    "hunyuan_tp8": (192, 8, 4096, 192),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_preset_numbers(name):
    assert _facts(PRESETS[name]) == EXPECTED[name]
    assert get_shape(name) is PRESETS[name]


def test_peer_shapes_are_the_five_of_the_peers_file():
    assert PEER_SHAPES == ("qwen3_30b_a3b", "deepseek_v3_tp8", "mixtral_8x7b_tp2", "hunyuan_tp8", "gpt_oss_120b_tp4")
    assert [_facts(PRESETS[n]) for n in PEER_SHAPES] == [
        (128, 8, 2048, 768), (256, 8, 7168, 256), (8, 2, 4096, 7168), (192, 8, 4096, 192), (128, 4, 2880, 720)]


def test_routing_facts_of_presets():
    ds = PRESETS["deepseek_v3_tp8"]
    assert (ds.scoring, ds.renormalize, ds.n_groups, ds.topk_groups, ds.routed_scaling) == ("sigmoid", True, 8, 4, 2.5)
    q = PRESETS["qwen3_30b_a3b"]
    assert (q.scoring, q.renormalize, q.n_groups, q.routed_scaling) == ("softmax", True, 1, 1.0)


def test_with_tp_divides_intermediate():
    s = PRESETS["mixtral_8x7b"].with_tp(4)
    assert (s.intermediate_size, s.tp, s.name) == (3584, 4, "mixtral_8x7b_tp4")
    with pytest.raises(ValueError, match="tp"):
        PRESETS["gpt_oss_120b"].with_tp(7)  # 2880 is not a multiple of 7
    with pytest.raises(ValueError, match="tp"):
        PRESETS["gpt_oss_120b"].with_tp(0)


def test_with_ep_keeps_global_routing():
    s = PRESETS["deepseek_v3_tp8"].with_ep(8)
    assert (s.num_experts, s.num_local_experts, s.ep) == (256, 32, 8)
    assert s.with_ep(2).num_local_experts == 16  # EP composes
    with pytest.raises(ValueError, match="ep"):
        PRESETS["hunyuan_tp8"].with_ep(5)  # 192 experts do not split over 5 ranks


@pytest.mark.parametrize("kw, arg", [
    (dict(top_k=9, num_experts=8), "top_k"),          # more picks than experts
    (dict(scoring="tanh"), "scoring"),
    (dict(n_groups=3), "n_groups"),                   # 8 experts do not split into 3 groups
    (dict(n_groups=2, topk_groups=3), "topk_groups"),
    (dict(hidden_size=0), "hidden_size"),
    (dict(routed_scaling=-1.0), "routed_scaling"),
    (dict(activation="relu"), "activation"),
])
def test_shape_validation_names_the_argument(kw, arg):
    base = dict(name="t", num_experts=8, top_k=2, hidden_size=64, intermediate_size=32)
    with pytest.raises((ValueError, TypeError), match=arg):
        MoEShape(**{**base, **kw})


def _write(tmp_path, cfg, name="config.json"):
    p = tmp_path / name
    p.write_text(json.dumps(cfg))
    return p


QWEN3_MOE = {  # trimmed Qwen/Qwen3-30B-A3B config.json
    "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_act": "silu",
    "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128,
    "num_experts_per_tok": 8, "norm_topk_prob": True, "num_hidden_layers": 48, "decoder_sparse_step": 1,
    "torch_dtype": "bfloat16", "_name_or_path": "Qwen/Qwen3-30B-A3B",
}
DEEPSEEK_V3 = {  # trimmed deepseek-ai/DeepSeek-V3 config.json
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 7168,
    "intermediate_size": 18432, "moe_intermediate_size": 2048, "n_routed_experts": 256, "n_shared_experts": 1,
    "num_experts_per_tok": 8, "n_group": 8, "topk_group": 4, "topk_method": "noaux_tc", "scoring_func": "sigmoid",
    "norm_topk_prob": True, "routed_scaling_factor": 2.5, "first_k_dense_replace": 3,
}
MIXTRAL = {  # trimmed mistralai/Mixtral-8x7B-v0.1 config.json: no norm_topk_prob (it renormalises)
    "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 4096,
    "intermediate_size": 14336, "num_local_experts": 8, "num_experts_per_tok": 2, "hidden_act": "silu",
}


def test_qwen3_moe_config_file(tmp_path):
    s = shape_from_hf_config(_write(tmp_path, QWEN3_MOE))
    # moe_intermediate_size wins over the dense intermediate_size
    assert _facts(s) == (128, 8, 2048, 768)
    assert (s.scoring, s.renormalize, s.name) == ("softmax", True, "qwen3_30b_a3b")


def test_deepseek_v3_config_directory(tmp_path):
    _write(tmp_path, DEEPSEEK_V3)
    s = shape_from_hf_config(tmp_path)  # a directory holding config.json
    assert _facts(s) == (256, 8, 7168, 2048)
    assert (s.scoring, s.n_groups, s.topk_groups, s.routed_scaling, s.renormalize) == ("sigmoid", 8, 4, 2.5, True)
    assert _facts(s.with_tp(8)) == _facts(PRESETS["deepseek_v3_tp8"])
    assert get_shape(str(tmp_path)).num_experts == 256


def test_mixtral_config_defaults_to_renormalise(tmp_path):
    s = shape_from_hf_config(_write(tmp_path, MIXTRAL))
    assert _facts(s) == (8, 2, 4096, 14336) and s.renormalize and s.scoring == "softmax"
    assert s.name == "mixtral"


def test_nested_text_config():
    # Multimodal wrappers (Llama-4 style) keep the language model's keys under text_config.
    cfg = {"model_type": "llama4", "vision_config": {"hidden_size": 1408},
           "text_config": {"hidden_size": 5120, "intermediate_size": 8192, "num_local_experts": 16,
                           "num_experts_per_tok": 1, "model_type": "llama4_text"}}
    s = shape_from_hf_config(cfg, name="llama4_scout")
    assert _facts(s) == (16, 1, 5120, 8192) and s.name == "llama4_scout"


def test_gpt_oss_config_marks_its_activation():
    cfg = {"model_type": "gpt_oss", "hidden_size": 2880, "intermediate_size": 2880, "num_local_experts": 128,
           "num_experts_per_tok": 4, "experts_per_token": 4, "swiglu_limit": 7.0}
    s = shape_from_hf_config(cfg)
    assert _facts(s) == (128, 4, 2880, 2880) and s.activation == "swiglu_oai"
    # transformers 5.17's GptOssConfig has no swiglu_limit: the model type says it
    no_limit = {k: v for k, v in cfg.items() if k != "swiglu_limit"}
    assert shape_from_hf_config(no_limit).activation == "swiglu_oai"


def test_config_objects_with_to_dict():
    # transformers' PretrainedConfig (and anything with to_dict()) is read as its dict
    class Config:
        def to_dict(self):
            return dict(MIXTRAL)

    assert _facts(shape_from_hf_config(Config())) == (8, 2, 4096, 14336)

    class Broken:
        def to_dict(self):
            return [1]

    with pytest.raises(TypeError, match="to_dict"):
        shape_from_hf_config(Broken())


def test_per_layer_lists():
    cfg = {**MIXTRAL, "num_experts_per_tok": [2, 2, 2]}
    assert shape_from_hf_config(cfg).top_k == 2
    with pytest.raises(ValueError, match="num_experts_per_tok"):
        shape_from_hf_config({**MIXTRAL, "num_experts_per_tok": [2, 4]})


@pytest.mark.parametrize("drop, words", [
    ("num_local_experts", "routed experts"),
    ("num_experts_per_tok", "experts per token"),
    ("hidden_size", "hidden size"),
    ("intermediate_size", "intermediate size"),
])
def test_missing_key_is_a_clear_error(tmp_path, drop, words):
    cfg = {k: v for k, v in MIXTRAL.items() if k != drop}
    with pytest.raises(ValueError, match=words) as e:
        shape_from_hf_config(_write(tmp_path, cfg))
    assert "config.json" in str(e.value)  # names the file


def test_bad_inputs(tmp_path):
    with pytest.raises(FileNotFoundError, match="path_or_dict"):
        shape_from_hf_config(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="JSON"):
        shape_from_hf_config(bad)
    with pytest.raises(TypeError, match="path_or_dict"):
        shape_from_hf_config(42)
    with pytest.raises(ValueError, match="hidden_size"):
        shape_from_hf_config({**MIXTRAL, "hidden_size": "4096"})
    with pytest.raises(ValueError, match="preset"):
        get_shape("no_such_model")


HELDOUT = {  # benchmarks/heldout/: shapes no tuned table or heuristic rule was read from
    "deepseek_v2_lite.json": (64, 6, 2048, 1408),
    "llama4_scout_tp8.json": (16, 1, 5120, 1024),
    "olmoe_1b_7b.json": (64, 8, 2048, 1024),
}


@pytest.mark.parametrize("name", sorted(HELDOUT))
def test_heldout_config_files(name):
    from pathlib import Path

    path = Path(__file__).parent.parent / "benchmarks" / "heldout" / name
    assert _facts(get_shape(str(path))) == HELDOUT[name]
