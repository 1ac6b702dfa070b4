"""fusedmoe as an experts implementation of Hugging Face transformers (>= 5).

transformers 5 computes a MoE model's experts through a registry of "experts implementations"
(``transformers.integrations.moe``): an implementation is a function ``(experts_module,
hidden_states [T, H], top_k_index [T, k], top_k_weights [T, k]) -> [T, H]``, chosen per model
with ``experts_implementation=``.  :func:`register` adds this library's op to it::

    from fusedmoe.integrations.transformers import register
    register()                                    # "fusedmoe": the experts' own format
    register("fusedmoe_fp8", format="fp8_block")  # 16-bit experts quantised once, at first call
    model = AutoModelForCausalLM.from_pretrained(name, experts_implementation="fusedmoe")
    model.set_experts_implementation("fusedmoe_fp8")   # or switch a loaded model

What it reads (the attributes ``use_experts_implementation`` sets on every experts class):

* ``gate_up_proj`` [E, 2I, H] gate rows then up rows (Mixtral, Qwen3-MoE, DeepSeek-V3, ...), or
  [E, H, 2I] with gate and up interleaved (``is_transposed``, ``is_concatenated=False``: GPT-OSS);
  ``down_proj`` [E, H, I] ([E, I, H] transposed); biases ``gate_up_proj_bias`` / ``down_proj_bias``.
* 16-bit parameters are wrapped as they are where the layout allows (no copy), otherwise copied
  once into fusedmoe's layout; float32 ones become bf16 (the kernels' activations are 16-bit: the
  layer then runs in bf16 and its output is cast back).
* ``FP8Experts`` (transformers' fine-grained FP8 checkpoints): e4m3 weights with
  ``*_scale_inv`` per 128 x 128 block (``fp8_block``; I a multiple of 128, so that no scale
  block spans gate and up rows) or one per expert (``fp8_tensor``; where gate and up carry a
  scale each, the half with the smaller one is requantised to the larger).  Activations are
  what fusedmoe's paths make of them (dynamic scales, or none on route-direct); static
  activation scales of a checkpoint are not read.
* the activation: the module's ``act_fn`` (SiLU, or GELU with the tanh approximation) after the
  default gate, or GPT-OSS's clamped SwiGLU (alpha 1.702, limit 7).  Anything else (a
  non-gated expert, a post-expert norm, soft-capped gates, FP4 experts) raises
  ``NotImplementedError`` naming what is missing.

The converted :class:`ExpertWeights` is kept for the module (outside it) and rebuilt when a
parameter is replaced or changed in place (its storage, shape or version counter).  It lives
beside the module's own parameters, so a copy (GPT-OSS's layout, a quantising ``format``) holds the
experts twice in memory.  The ids are the model router's and are not range-checked (that would
be a host sync per layer): an id outside the module's experts contributes nothing, as the ids
of other ranks' experts under transformers' expert parallelism do.  The op has no backward:
this is for inference (``torch.no_grad``).
"""

from __future__ import annotations

import weakref

import torch

from .._validate import check_choice
from ..api import PATHS, fused_moe
from ..reference import OAI_ALPHA, OAI_LIMIT
from ..weights import FORMATS, ExpertWeights

__all__ = ["expert_weights", "experts_forward", "register"]

# Names of transformers' activation modules (transformers.activations) and torch's, by the
# gate activation of fusedmoe that computes the same function.
_SILU = {"SiLU", "SiLUActivation"}
_GELU_TANH = {"GELUTanh", "PytorchGELUTanh", "NewGELUActivation", "FastGELUActivation"}
_FP8_BLOCK = 128
# The tensors an experts module is converted from (expert_weights rebuilds when one changes).
_PARAM_NAMES = ("gate_up_proj", "down_proj", "gate_up_proj_bias", "down_proj_bias", "gate_up_proj_scale_inv",
                "down_proj_scale_inv")
# module -> (key, its tensors, ExpertWeights, activation).  Beside the module, not in it: a deepcopy,
# pickle or torch.save of the module does not carry the converted copy.  The entry holds the
# tensors it was made from, so their storage (and data_ptr, in the key) cannot be reused by others.
_CONVERTED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def register(name: str = "fusedmoe", *, format: str | None = None, path: str = "auto") -> str:
    """Register :func:`experts_forward` (with ``format`` and ``path``) under ``name`` in
    transformers' experts implementations, bf16/fp16 and FP8 experts alike; returns ``name``.

    ``format`` None computes in the experts' own format; "bf16", "fp16", "fp8_tensor",
    "fp8_block" or "w4a8" quantises 16- or 32-bit experts into it once (``from_dense``)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name: expected a non-empty string, got {name!r}")
    if format is not None and format not in FORMATS:
        raise ValueError(f"format: expected None or one of {list(FORMATS)}, got {format!r}")
    check_choice("path", path, ("auto",) + tuple(PATHS))
    interfaces = _interfaces()

    def forward(module, hidden_states, top_k_index, top_k_weights):
        return experts_forward(module, hidden_states, top_k_index, top_k_weights, format=format, path=path)

    forward.__name__ = forward.__qualname__ = f"fusedmoe_experts_forward_{name}"
    for interface in interfaces:
        interface.register(name, forward)
    return name


def experts_forward(module: torch.nn.Module, hidden_states: torch.Tensor, top_k_index: torch.Tensor,
                    top_k_weights: torch.Tensor, *, format: str | None = None, path: str = "auto") -> torch.Tensor:
    """The experts' output [T, H] for hidden_states [T, H] routed to top_k_index [T, k] with
    top_k_weights [T, k], computed by :func:`fusedmoe.fused_moe` (dtype of hidden_states)."""
    weights, activation = expert_weights(module, format)
    x = hidden_states
    if weights.format in ("bf16", "fp16"):  # activations in the weights' dtype
        x = x.to(weights.w13.dtype)
    elif x.dtype not in (torch.bfloat16, torch.float16):
        x = x.to(torch.bfloat16)
    # the ids come from the model's router (expert parallelism: ids of other ranks' experts past
    # the local ones, which contribute nothing): no id check, so no host sync in the layer
    out = fused_moe(x, weights, top_k_weights, top_k_index, activation=activation, path=path, check_ids=False)
    return out.to(hidden_states.dtype)


def expert_weights(module: torch.nn.Module, format: str | None = None) -> tuple[ExpertWeights, str]:
    """(the module's experts as :class:`ExpertWeights`, fusedmoe's name of their activation),
    built at the first call and kept for the module until one of its parameters changes.  While
    torch.compile traces, the kept weights are taken as they are (their storage cannot be
    compared there); without any, the conversion is traced into the graph."""
    cached = _CONVERTED.get(module)
    if torch.compiler.is_compiling():
        if cached is not None and cached[0][0] == format:
            return cached[2], cached[3]
        return _convert(module, format), _activation(module)
    tensors = tuple(_tensor_attr(module, n) for n in _PARAM_NAMES)
    key = (format,) + tuple(None if t is None else (t.data_ptr(), t._version, t.shape) for t in tensors)
    if cached is not None and cached[0] == key and all(a is b for a, b in zip(cached[1], tensors)):
        return cached[2], cached[3]
    activation = _activation(module)
    weights = _convert(module, format)
    _CONVERTED[module] = (key, tensors, weights, activation)
    return weights, activation


def _tensor_attr(module: torch.nn.Module, name: str) -> torch.Tensor | None:
    """The module's parameter, buffer or tensor attribute ``name`` (None if absent), without
    nn.Module's slower attribute lookup: this runs at every call of every layer."""
    for table in (module._parameters, module._buffers, module.__dict__):
        if name in table:
            return table[name]
    return None


def _interfaces() -> list:
    """transformers' experts-implementation registries (16-bit and FP8 experts)."""
    try:
        from transformers.integrations import moe
    except ImportError as e:
        raise ImportError("fusedmoe.integrations.transformers needs transformers >= 5 (its experts "
                          "implementations, transformers.integrations.moe): pip install 'transformers>=5'") from e
    interfaces = [moe.ExpertsInterface]
    try:
        from transformers.integrations import finegrained_fp8
        interfaces += [type(finegrained_fp8.ALL_FP8_EXPERTS_FUNCTIONS)]
    except (ImportError, AttributeError):
        pass
    return interfaces


def _activation(module: torch.nn.Module) -> str:
    """fusedmoe's activation equal to what the module applies between its projections."""
    name = type(module).__name__
    if not getattr(module, "has_gate", True) or getattr(module, "gate_up_proj", None) is None:
        raise NotImplementedError(f"{name}: fusedmoe computes gated experts (gate_up_proj); this module has none")
    if getattr(module, "has_post_expert_norm", False):
        raise NotImplementedError(f"{name}: a norm after each expert (has_post_expert_norm) is not supported")
    for attr in ("gate_softcap", "up_softcap"):
        if getattr(module, attr, None) is not None:
            raise NotImplementedError(f"{name}: soft-capped gates ({attr}) are not supported")
    alpha = getattr(module, "alpha", None)
    if alpha is None:
        alpha = getattr(module, "swiglu_alpha", None)  # FP8Experts' name
    limit = getattr(module, "limit", None)
    if alpha is not None:  # GPT-OSS's clamped SwiGLU
        if abs(float(alpha) - OAI_ALPHA) > 1e-6 or limit is None or abs(float(limit) - OAI_LIMIT) > 1e-6:
            raise NotImplementedError(f"{name}: the clamped SwiGLU runs with alpha {OAI_ALPHA} and limit "
                                      f"{OAI_LIMIT}, got alpha {alpha} and limit {limit}")
        return "swiglu_oai"
    if limit is not None:
        raise NotImplementedError(f"{name}: clamped gates (limit {limit}) without swiglu_alpha are not supported")
    from transformers.integrations import moe
    gate = getattr(type(module), "_apply_gate", moe._default_apply_gate)
    if gate is not moe._default_apply_gate and name != "FP8Experts":  # FP8Experts' own gate: act_fn(gate) * up here
        raise NotImplementedError(f"{name}: its own _apply_gate is not one fusedmoe knows (SwiGLU, GELU-tanh "
                                  "gated, GPT-OSS's clamped SwiGLU)")
    act_fn = getattr(module, "act_fn", None)
    act = type(act_fn).__name__
    if act in _SILU:
        return "silu"
    if act in _GELU_TANH or (isinstance(act_fn, torch.nn.GELU) and act_fn.approximate == "tanh"):
        return "gelu_tanh"
    raise NotImplementedError(f"{name}: act_fn {act} is not one of fusedmoe's gate activations "
                              f"(SiLU, GELU with the tanh approximation)")


def _convert(module: torch.nn.Module, format: str | None) -> ExpertWeights:
    """The module's parameters in fusedmoe's layout and ``format`` (None: their own)."""
    name = type(module).__name__
    transposed = bool(getattr(module, "is_transposed", False))
    interleaved = not getattr(module, "is_concatenated", True)
    w13, w2 = module.gate_up_proj.detach(), module.down_proj.detach()
    if transposed:  # [E, H, 2I] and [E, I, H]: fusedmoe reads rows of K
        w13, w2 = w13.transpose(1, 2), w2.transpose(1, 2)
    bias13, bias2 = (None if b is None else b.detach() for b in
                     (getattr(module, "gate_up_proj_bias", None), getattr(module, "down_proj_bias", None)))
    if w13.dtype == torch.float8_e4m3fn:
        if transposed:  # its scale blocks would be laid out along the other axis
            raise NotImplementedError(f"{name}: transposed FP8 experts (is_transposed) are not supported")
        weights = _from_fp8(module, w13, w2, bias13, bias2, interleaved)
        if format is not None and format != weights.format:
            raise ValueError(f"format: {name}'s experts are {weights.format} already; pass None or "
                             f"{weights.format!r}, got {format!r}")
        return weights
    if w13.dtype not in (torch.bfloat16, torch.float16, torch.float32):
        raise NotImplementedError(f"{name}: gate_up_proj of dtype {w13.dtype} is not supported "
                                  "(bf16, fp16, fp32 or FP8Experts' e4m3)")
    if format is None:
        format = "fp16" if w13.dtype == torch.float16 else "bf16"
    return ExpertWeights.from_dense(w13, w2, format, w13_bias=bias13, w2_bias=bias2, gate_up_interleaved=interleaved)


def _from_fp8(module, w13, w2, bias13, bias2, interleaved) -> ExpertWeights:
    """FP8Experts' e4m3 weights and ``*_scale_inv`` as fp8_block (128 x 128) or fp8_tensor."""
    name = type(module).__name__
    s13, s2 = module.gate_up_proj_scale_inv.detach().float(), module.down_proj_scale_inv.detach().float()
    inter = w13.shape[1] // 2
    block = getattr(module, "block_size", None)
    if block is None:  # one scale per expert and matrix (gate_up: one per half, made one below)
        w13, s13 = _one_scale_per_expert(name, "gate_up_proj", w13, s13)
        w2, s2 = _one_scale_per_expert(name, "down_proj", w2, s2)
        return ExpertWeights.from_quantized("fp8_tensor", w13.contiguous(), w2.contiguous(), s13, s2,
                                            w13_bias=bias13, w2_bias=bias2, gate_up_interleaved=interleaved)
    if tuple(block) != (_FP8_BLOCK, _FP8_BLOCK):
        raise NotImplementedError(f"{name}: block_size {tuple(block)} is not supported (128 x 128)")
    if inter % _FP8_BLOCK:
        raise NotImplementedError(f"{name}: intermediate size {inter} is not a multiple of 128, so a scale block "
                                  "spans gate and up rows; fusedmoe's fp8_block scales each half apart")
    return ExpertWeights.from_quantized("fp8_block", w13.contiguous(), w2.contiguous(), s13.contiguous(),
                                        s2.contiguous(), w13_bias=bias13, w2_bias=bias2,
                                        gate_up_interleaved=interleaved)


def _one_scale_per_expert(name: str, what: str, w: torch.Tensor, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(w, s [E]) for e4m3 w [E, N, K] with scales s [E, n, 1] over n equal row blocks (n 1 or 2:
    FP8Experts keeps one per half of gate_up).  Unequal halves are requantised to the larger
    scale (the other half loses the low bits its smaller scale kept; equal halves: no change)."""
    num_experts, n = w.shape[0], s[0].numel()
    s = s.reshape(num_experts, n)
    if n == 1:
        return w, s[:, 0].contiguous()
    if n != 2 or w.shape[1] % 2:
        raise NotImplementedError(f"{name}: {what} scales of shape {(num_experts, n)} without a block_size are not "
                                  "supported (one per expert, or one per half of gate_up)")
    top = s.amax(dim=1)
    if torch.equal(s[:, 0], s[:, 1]):
        return w, top.contiguous()
    ratio = (s / top[:, None])[:, :, None, None]  # <= 1: the requantised codes stay within e4m3's range
    halves = w.float().unflatten(1, (2, w.shape[1] // 2)) * ratio
    return halves.flatten(1, 2).to(w.dtype), top.contiguous()
