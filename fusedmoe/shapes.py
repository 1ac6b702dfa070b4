"""MoE layer shapes of real models, from their public Hugging Face ``config.json``.

A :class:`MoEShape` holds what the layer's cost depends on: E experts, top_k, hidden H,
per-expert intermediate I (after tensor parallelism), and the router's scoring.  Tensor
parallelism splits I (``with_tp``); expert parallelism keeps E/ep experts on this rank while
routing still runs over all E (``with_ep``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass
from typing import Any, Mapping

SCORINGS = ("softmax", "sigmoid")
ACTIVATIONS = ("silu", "gelu", "gelu_tanh", "swiglu_oai")


def _positive(name: str, v: object) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{name}: expected an int, got {type(v).__name__}")
    if v < 1:
        raise ValueError(f"{name}: expected an int >= 1, got {v}")


@dataclass(frozen=True)
class MoEShape:
    """One MoE layer as a kernel sees it.

    ``intermediate_size`` is per expert on this rank (already divided by ``tp``);
    ``num_experts`` is the global E that routing picks from; this rank holds
    ``num_local_experts = num_experts // ep`` of them (the first ones: expert offset 0).
    """

    name: str
    num_experts: int
    top_k: int
    hidden_size: int
    intermediate_size: int
    scoring: str = "softmax"
    renormalize: bool = True
    n_groups: int = 1
    topk_groups: int = 1
    routed_scaling: float = 1.0
    activation: str = "silu"
    tp: int = 1
    ep: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name: expected a non-empty string, got {self.name!r}")
        for field in ("num_experts", "top_k", "hidden_size", "intermediate_size", "n_groups", "topk_groups", "tp",
                      "ep"):
            _positive(field, getattr(self, field))
        if self.top_k > self.num_experts:
            raise ValueError(f"top_k: expected <= num_experts ({self.num_experts}), got {self.top_k}")
        if self.scoring not in SCORINGS:
            raise ValueError(f"scoring: expected one of {list(SCORINGS)}, got {self.scoring!r}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation: expected one of {list(ACTIVATIONS)}, got {self.activation!r}")
        if self.num_experts % self.n_groups:
            raise ValueError(f"n_groups: expected a divisor of num_experts ({self.num_experts}), got {self.n_groups}")
        if self.topk_groups > self.n_groups:
            raise ValueError(f"topk_groups: expected <= n_groups ({self.n_groups}), got {self.topk_groups}")
        if self.top_k > self.topk_groups * (self.num_experts // self.n_groups):
            raise ValueError(f"top_k: {self.top_k} exceeds the experts in the kept groups "
                             f"({self.topk_groups} x {self.num_experts // self.n_groups})")
        if self.num_experts % self.ep:
            raise ValueError(f"ep: expected a divisor of num_experts ({self.num_experts}), got {self.ep}")
        if not isinstance(self.routed_scaling, (int, float)) or not math.isfinite(self.routed_scaling) \
                or self.routed_scaling <= 0:
            raise ValueError(f"routed_scaling: expected a finite float > 0, got {self.routed_scaling!r}")

    @property
    def num_local_experts(self) -> int:
        """Experts held on this rank: num_experts // ep."""
        return self.num_experts // self.ep

    def with_tp(self, n: int) -> "MoEShape":
        """The shape one of ``n`` tensor-parallel ranks sees: I divided by n (must divide)."""
        _positive("tp", n)
        if self.intermediate_size % n:
            raise ValueError(f"tp: {n} does not divide intermediate_size {self.intermediate_size} of {self.name!r}")
        return dataclasses.replace(self, name=f"{self.name}_tp{n}", intermediate_size=self.intermediate_size // n,
                                   tp=self.tp * n)

    def with_ep(self, n: int) -> "MoEShape":
        """The shape one of ``n`` expert-parallel ranks sees: E/n local experts, routing over all E."""
        _positive("ep", n)
        if self.num_experts % (self.ep * n):
            raise ValueError(f"ep: {self.ep * n} ranks do not divide num_experts {self.num_experts} of {self.name!r}")
        return dataclasses.replace(self, name=f"{self.name}_ep{n}", ep=self.ep * n)

    def describe(self) -> str:
        """One line: E, k, H, I, scoring and parallelism."""
        s = f"{self.name}: E={self.num_experts} k={self.top_k} H={self.hidden_size} I={self.intermediate_size}"
        s += f" {self.scoring}" + (" renorm" if self.renormalize else "")
        if self.n_groups > 1:
            s += f" groups {self.topk_groups}/{self.n_groups}"
        if self.routed_scaling != 1.0:
            s += f" scale {self.routed_scaling:g}"
        if self.ep > 1:
            s += f" ep={self.ep} (local E={self.num_local_experts})"
        return s


def _presets() -> dict[str, MoEShape]:
    qwen3_30b = MoEShape("qwen3_30b_a3b", 128, 8, 2048, 768)
    qwen3_235b = MoEShape("qwen3_235b_a22b", 128, 8, 4096, 1536)
    deepseek_v3 = MoEShape("deepseek_v3", 256, 8, 7168, 2048, scoring="sigmoid", n_groups=8, topk_groups=4,
                           routed_scaling=2.5)
    mixtral = MoEShape("mixtral_8x7b", 8, 2, 4096, 14336)
    # GPT-OSS's experts use a clamped SwiGLU with biases; the peers (PEERS-H200.md) were timed
    # with the plain SiLU-gated layer of the same sizes, which moves the same bytes.
    gpt_oss = MoEShape("gpt_oss_120b", 128, 4, 2880, 2880)
    # A Hunyuan-style layer as one TP8 rank sees it (E=192, k=8, H=4096, I=192).
    hunyuan_tp8 = MoEShape("hunyuan_tp8", 192, 8, 4096, 192, tp=8)
    shapes = [qwen3_30b, qwen3_235b, qwen3_235b.with_tp(4), qwen3_235b.with_tp(8), deepseek_v3,
              deepseek_v3.with_tp(8), mixtral, mixtral.with_tp(2), gpt_oss, gpt_oss.with_tp(4), hunyuan_tp8]
    return {s.name: s for s in shapes}


PRESETS: dict[str, MoEShape] = _presets()

# The five shapes of PEERS-H200.md, in its order.
PEER_SHAPES = ("qwen3_30b_a3b", "deepseek_v3_tp8", "mixtral_8x7b_tp2", "hunyuan_tp8", "gpt_oss_120b_tp4")

_CONTAINERS = ("text_config", "language_config", "llm_config")
_EXPERT_KEYS = ("num_experts", "n_routed_experts", "num_local_experts")
_TOPK_KEYS = ("num_experts_per_tok", "experts_per_token", "moe_topk")
_INTER_KEYS = ("moe_intermediate_size", "intermediate_size")


def _one_value(key: str, v: Any) -> Any:
    """Configs of some models give per-layer lists; accept one only when all entries agree."""
    if isinstance(v, (list, tuple)):
        if not v or any(x != v[0] for x in v):
            raise ValueError(f"config key {key!r}: differs across layers ({v!r}); write one value into the config")
        return v[0]
    return v


def _first(cfg: Mapping[str, Any], keys: tuple[str, ...], what: str, source: str) -> int:
    for key in keys:
        v = cfg.get(key)
        if v is not None:
            v = _one_value(key, v)
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValueError(f"config key {key!r} ({what}) in {source}: expected an int, got {v!r}")
            return v
    raise ValueError(f"{source}: no {what} found; expected one of the keys {list(keys)}")


def _moe_section(cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    if any(k in cfg for k in _EXPERT_KEYS):
        return cfg
    for key in _CONTAINERS:
        sub = cfg.get(key)
        if isinstance(sub, Mapping) and any(k in sub for k in _EXPERT_KEYS):
            return sub
    return cfg


def shape_from_hf_config(path_or_dict: str | os.PathLike | Mapping[str, Any], name: str | None = None) -> MoEShape:
    """MoEShape from a HF ``config.json`` (a file, a directory holding one, the parsed dict, or a
    config object with ``to_dict()``, as transformers' ``PretrainedConfig``).

    Keys read: experts (num_experts / n_routed_experts / num_local_experts), top_k
    (num_experts_per_tok), hidden_size, I (moe_intermediate_size, else intermediate_size),
    scoring_func, norm_topk_prob (default True: softmax then renormalise, as Mixtral does),
    n_group, topk_group, routed_scaling_factor; a nested ``text_config`` is searched too.
    """
    if isinstance(path_or_dict, Mapping):
        cfg, source = path_or_dict, "config dict"
    elif callable(getattr(path_or_dict, "to_dict", None)):
        cfg, source = path_or_dict.to_dict(), type(path_or_dict).__name__
        if not isinstance(cfg, Mapping):
            raise TypeError(f"path_or_dict: {source}.to_dict() gave a {type(cfg).__name__}, expected a dict")
    elif isinstance(path_or_dict, (str, os.PathLike)):
        path = os.fspath(path_or_dict)
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        if not os.path.isfile(path):
            raise FileNotFoundError(f"path_or_dict: no config file at {path!r}")
        with open(path, encoding="utf-8") as f:
            try:
                cfg = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError(f"path_or_dict: {path!r} is not valid JSON ({e})") from None
        source = path
        if not isinstance(cfg, Mapping):
            raise ValueError(f"path_or_dict: {path!r} holds a JSON {type(cfg).__name__}, expected an object")
    else:
        raise TypeError(f"path_or_dict: expected a path, a dict or a config with to_dict(), "
                        f"got {type(path_or_dict).__name__}")

    sec = _moe_section(cfg)
    experts = _first(sec, _EXPERT_KEYS, "number of routed experts", source)
    top_k = _first(sec, _TOPK_KEYS, "experts per token", source)
    hidden = _first(sec, ("hidden_size",), "hidden size", source)
    inter = _first(sec, _INTER_KEYS, "expert intermediate size", source)
    scoring = sec.get("scoring_func") or "softmax"
    renorm = sec.get("norm_topk_prob")
    act = str(sec.get("hidden_act", ""))
    # GPT-OSS's clamped SwiGLU: its config.json has swiglu_limit; some transformers config objects omit it
    if "swiglu_limit" in sec or sec.get("model_type", cfg.get("model_type")) == "gpt_oss":
        activation = "swiglu_oai"
    elif act in ("gelu_pytorch_tanh", "gelu_new", "gelu_fast"):
        activation = "gelu_tanh"
    else:
        activation = "gelu" if act.startswith("gelu") else "silu"
    if name is None:
        name = str(cfg.get("_name_or_path") or sec.get("model_type") or cfg.get("model_type") or "custom")
        name = name.rstrip("/").split("/")[-1].lower().replace("-", "_").replace(".", "_") or "custom"
    return MoEShape(
        name=name,
        num_experts=experts,
        top_k=top_k,
        hidden_size=hidden,
        intermediate_size=inter,
        scoring=scoring,
        renormalize=True if renorm is None else bool(renorm),
        n_groups=int(sec.get("n_group") or 1),
        topk_groups=int(sec.get("topk_group") or 1),
        routed_scaling=float(sec.get("routed_scaling_factor") or 1.0),
        activation=activation,
    )


def get_shape(name_or_path: str | os.PathLike) -> MoEShape:
    """A preset by name (see ``PRESETS``), else a HF config file or directory."""
    key = os.fspath(name_or_path)
    if key in PRESETS:
        return PRESETS[key]
    if os.path.exists(key):
        return shape_from_hf_config(key)
    raise ValueError(f"name_or_path: {key!r} is neither a preset ({', '.join(PRESETS)}) nor an existing config path")
