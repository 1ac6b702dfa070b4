"""fused_moe(): validate, choose a path, run it.

    out[t] = shared[t] + sum_j topk_weights[t,j] * Down_e(act(Gate_e x[t]) * Up_e x[t]),  e = topk_ids[t,j]

(act = SiLU by default; per-expert biases, when the weights carry them, are added to Gate/Up
and Down.)  Paths (each computes the same function; ``path=`` forces one):
    "route_direct"  decode: no plan, a GEMV per route, down + combine per token (2 launches).
    "grouped"       routes sorted into expert blocks, tensor-core GEMMs over the plan (4-8 launches).
The op is registered as ``fusedmoe::fused_moe`` for torch.compile.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Optional

import torch
from torch._subclasses.fake_tensor import is_fake

from . import policy
from ._runtime import device_name, interpreting, num_sms, runs_triton
from ._validate import FLOAT_ACTIVATION_DTYPES, ID_DTYPES, INT64_MAX, check_choice, check_int, check_tensor
from .epilogue import ACTIVATIONS
from .plan import MAX_EXPERTS
from .paths import grouped, route_direct
from .reference import moe_reference
from .weights import ExpertWeights

PATHS = ("route_direct", "grouped")
_QUANTIZES = {"route_direct": route_direct.QUANTIZES_ACTIVATIONS, "grouped": grouped.QUANTIZES_ACTIVATIONS}
_PLAIN = {"bf16": torch.bfloat16, "fp16": torch.float16}


def path_quantizes_activations(path: str, fmt: str) -> bool:
    """Whether ``path`` quantises x and the SwiGLU output to FP8 for weights of format ``fmt``
    (pass it to :func:`fusedmoe.reference.moe_reference` as ``quantize_activations``)."""
    check_choice("path", path, PATHS)
    return _QUANTIZES[path][fmt]


def choose_path(m: int, top_k: int, weights: ExpertWeights, device: torch.device | None = None) -> str:
    """The path "auto" runs for M tokens with top_k routes each on ``weights``."""
    dev = device if device is not None else weights.device
    return policy.choose_path(m, top_k, weights.num_experts, weights.hidden_size, weights.intermediate_size,
                              weights.format, num_sms(dev))


def describe_dispatch(m: int, top_k: int, weights: ExpertWeights, device: torch.device | None = None,
                      activation: str = "silu", num_experts: int | None = None) -> str:
    """One line: the path "auto" takes, its tiles, where they come from, and its kernel launches,
    as ``fused_moe`` serves them for this activation and ``num_experts`` global experts (default:
    the weights' own, no expert parallelism)."""
    dev = device if device is not None else weights.device
    path = choose_path(m, top_k, weights, dev)
    tuned = policy.tuned_config(path, device_name(dev), m, top_k, weights.num_experts, weights.hidden_size,
                                weights.intermediate_size, weights.format)
    cfg = _served_config(path, m, top_k, weights, dev, activation, num_experts or weights.num_experts)
    launches = (route_direct.KERNEL_LAUNCHES if path == "route_direct" else grouped.kernel_launches(
        m, top_k, weights, cfg, gluon=grouped.uses_gluon(weights, cfg, dev, activation)))
    tiles = ", ".join(f"{f.name}={getattr(cfg, f.name)}" for f in dataclasses.fields(cfg)
                      if not isinstance(getattr(cfg, f.name), policy.Tile))
    for name in ("gate_up", "down"):
        t = getattr(cfg, name)
        tiles += (", " if tiles else "") + f"{name}=n{t.block_n}/k{t.block_k}/w{t.num_warps}/s{t.num_stages}" + \
            (f"/split{t.split_k}" if t.split_k > 1 else "") + ("/swapAB" if t.swap_ab else "")
    return f"{path}: {tiles} ({'tuned table' if tuned else 'heuristic'}; {launches} launches)"


def _check_inputs(x, weights, topk_weights, topk_ids, expert_offset, num_local_experts, num_experts,
                  shared_output, out, path, activation):
    if not isinstance(weights, ExpertWeights):
        raise TypeError(f"weights: expected an ExpertWeights, got {type(weights).__name__}")
    dev = weights.device
    e_local, hidden = weights.num_experts, weights.hidden_size
    x_dtypes = (_PLAIN[weights.format],) if weights.format in _PLAIN else FLOAT_ACTIVATION_DTYPES
    check_tensor("x", x, dtypes=x_dtypes, ndim=2, device=dev)
    m = x.shape[0]
    check_tensor("x", x, shape=(m, hidden))
    if x.stride(1) != 1:
        raise ValueError(f"x: expected rows with unit column stride, got strides {x.stride()}")
    check_tensor("topk_ids", topk_ids, dtypes=ID_DTYPES, ndim=2, device=dev)
    k = topk_ids.shape[1]
    check_tensor("topk_ids", topk_ids, shape=(m, k))
    if k < 1:
        raise ValueError(f"topk_ids: expected at least one route per token, got shape {list(topk_ids.shape)}")
    check_tensor("topk_weights", topk_weights, dtypes=(torch.float32, torch.bfloat16, torch.float16),
                 shape=(m, k), device=dev)
    check_int("expert_offset", expert_offset, lo=0)
    if num_local_experts is not None:
        check_int("num_local_experts", num_local_experts)
    # Weights of the local experts (global count defaults to offset + E_local), or of every
    # expert with a window selected by num_local_experts (global count defaults to E).
    default_global = e_local if num_local_experts not in (None, e_local) else expert_offset + e_local
    weights = weights.local_window(expert_offset, num_local_experts)
    e_local = weights.num_experts
    n_global = default_global if num_experts is None else check_int("num_experts", num_experts, lo=1, hi=INT64_MAX)
    if expert_offset + e_local > INT64_MAX:  # kernels take the offset as an int64 scalar
        raise ValueError(f"expert_offset: the local window [{expert_offset}, {expert_offset + e_local}) must end "
                         f"at most at {INT64_MAX} (expert ids are int32 or int64)")
    if expert_offset + e_local > n_global:
        raise ValueError(f"expert_offset: the local window [{expert_offset}, {expert_offset + e_local}) must lie "
                         f"inside [0, num_experts={n_global})")
    if shared_output is not None:
        check_tensor("shared_output", shared_output, dtypes=(torch.float32, torch.bfloat16, torch.float16),
                     shape=(m, hidden), device=dev)
        if shared_output.stride(1) != 1:
            raise ValueError(f"shared_output: expected unit column stride, got strides {shared_output.stride()}")
    if out is not None:
        check_tensor("out", out, dtypes=(x.dtype,), shape=(m, hidden), device=dev)
        if out.stride(1) != 1:
            raise ValueError(f"out: expected unit column stride, got strides {out.stride()}")
        if m > 1 and out.stride(0) < hidden:  # an expanded view: rows would share memory
            raise ValueError(f"out: expected rows that do not overlap (row stride >= {hidden}), got strides "
                             f"{out.stride()}")
    check_choice("path", path, ("auto",) + PATHS)
    if path == "grouped" and e_local > MAX_EXPERTS:
        raise ValueError(f"path: 'grouped' plans at most {MAX_EXPERTS} local experts, got {e_local}; "
                         "use 'route_direct' or 'auto'")
    check_choice("activation", activation, tuple(ACTIVATIONS))
    return weights, n_global


@torch.library.custom_op("fusedmoe::fused_moe", mutates_args=())
def _fused_moe_op(x: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, w13_scale: Optional[torch.Tensor],
                  w2_scale: Optional[torch.Tensor], w13_bias: Optional[torch.Tensor], w2_bias: Optional[torch.Tensor],
                  fmt: str, topk_weights: torch.Tensor, topk_ids: torch.Tensor, expert_offset: int, num_experts: int,
                  shared_output: Optional[torch.Tensor], path: str, activation: str,
                  config: Optional[str]) -> torch.Tensor:
    """The layer as a torch op (flat arguments; ``config`` as ``policy.config_json`` writes it), so that
    torch.compile treats it as one opaque node."""
    weights = ExpertWeights(fmt, w13, w2, w13_scale, w2_scale, w13_bias, w2_bias)
    return _run(x, weights, topk_weights, topk_ids, expert_offset, num_experts, shared_output, None, path,
                None if config is None else policy.config_from_json(config), activation)


@_fused_moe_op.register_fake
def _(x, w13, w2, w13_scale, w2_scale, w13_bias, w2_bias, fmt, topk_weights, topk_ids, expert_offset, num_experts,
      shared_output, path, activation, config):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _config_json(config: policy.GroupedConfig | policy.RouteDirectConfig | None) -> str | None:
    """A config as the op's string argument (``policy.config_json``, kept by the config)."""
    if config is None:
        return None
    if not isinstance(config, (policy.GroupedConfig, policy.RouteDirectConfig)):
        raise TypeError(f"config: expected a GroupedConfig or RouteDirectConfig, got {type(config).__name__}")
    return config.json


def _detached(t: torch.Tensor | None) -> torch.Tensor | None:
    """``t`` without autograd history (itself when it has none)."""
    return t.detach() if t is not None and t.requires_grad else t


def _apply_expert_map(expert_map, topk_ids, weights, expert_offset, num_local_experts, num_experts, check_ids):
    """Global ids -> local ids through ``expert_map`` (-1 for ids not held or out of range)."""
    if expert_offset != 0 or num_local_experts is not None:
        raise ValueError("expert_map: give either expert_map or expert_offset/num_local_experts, not both")
    check_tensor("topk_ids", topk_ids, dtypes=ID_DTYPES, ndim=2)  # read here, before _check_inputs
    check_tensor("expert_map", expert_map, dtypes=ID_DTYPES, ndim=1, device=topk_ids.device)
    n_global = expert_map.numel()
    if num_experts is not None and num_experts != n_global:
        raise ValueError(f"num_experts: expected {n_global} (the length of expert_map), got {num_experts}")
    if check_ids:
        _check_id_range("expert_map", expert_map, weights.num_experts)
        _check_id_range("topk_ids", topk_ids, n_global)
    inside = (topk_ids >= 0) & (topk_ids < n_global)
    local = expert_map[topk_ids.clamp(0, max(n_global - 1, 0))] if n_global else torch.full_like(topk_ids, -1)
    return torch.where(inside, local, torch.full_like(local, -1)), weights.num_experts


def _capturing(t: torch.Tensor) -> bool:
    return t.is_cuda and torch.cuda.is_current_stream_capturing()


def _shapes_only(t: torch.Tensor) -> bool:
    """A tensor with no data: fake (torch.compile, make_fx, FakeTensorMode) or on the meta device."""
    return t.device.type == "meta" or is_fake(t)


def _check_id_range(name: str, ids: torch.Tensor, end: int) -> None:
    """Raise unless every id lies in [-1, end): one host sync, so skipped while capturing a
    CUDA graph, compiling or tracing (the kernels mask such ids; they are never an illegal access)."""
    if torch.compiler.is_compiling() or not ids.numel() or _capturing(ids) or _shapes_only(ids):
        return
    lo, hi = torch.stack(torch.aminmax(ids)).tolist()  # two small launches and the sync
    if lo < -1 or hi >= end:
        bad = (ids < -1) | (ids.to(torch.int64) >= end)
        raise ValueError(f"{name}: expected ids in [-1, {end}), got values {ids[bad].unique()[:8].tolist()}")


def fused_moe(x: torch.Tensor, weights: ExpertWeights, topk_weights: torch.Tensor, topk_ids: torch.Tensor, *,
              expert_offset: int = 0, num_local_experts: int | None = None, num_experts: int | None = None,
              shared_output: torch.Tensor | None = None, out: torch.Tensor | None = None, path: str = "auto",
              config: policy.GroupedConfig | policy.RouteDirectConfig | None = None,
              check_ids: bool = True, expert_map: torch.Tensor | None = None,
              activation: str = "silu") -> torch.Tensor:
    """One MoE layer: x [M, H] -> out [M, H] (``out`` written in place and returned when given).

    weights hold this rank's experts: global ids [expert_offset, expert_offset + E_local) are
    computed, every other id (and -1) contributes nothing.  ``num_experts`` is the global
    count (default expert_offset + E_local); ids must lie in [-1, num_experts).  ``check_ids``
    verifies that range with one host synchronisation; it is skipped during CUDA-graph capture,
    under torch.compile and for fake or meta tensors (the kernels mask ids outside the window,
    so a bad id there contributes nothing and is never an illegal access).
    ``config`` overrides the policy's tiles for the chosen path (for tuning and benchmarks).

    ``activation``: the gate's activation, "silu" (SwiGLU), "gelu_tanh" or "swiglu_oai"
    (GPT-OSS: clamped, alpha 1.702, (up + 1)); biases come with the weights.

    ``expert_map`` [E_global] int32/int64 (instead of a contiguous window): local expert of
    each global id, -1 where not held.  The ids are remapped by a few small torch ops first;
    a contiguous window (expert_offset) costs nothing.
    """
    if not isinstance(check_ids, bool):
        raise TypeError(f"check_ids: expected a bool, got {type(check_ids).__name__}")
    if expert_map is not None:
        topk_ids, num_experts = _apply_expert_map(expert_map, topk_ids, weights, expert_offset, num_local_experts,
                                                  num_experts, check_ids)
    weights, n_global = _check_inputs(x, weights, topk_weights, topk_ids, expert_offset, num_local_experts,
                                      num_experts, shared_output, out, path, activation)
    m, k = topk_ids.shape
    if check_ids:
        _check_id_range("topk_ids", topk_ids, n_global)
    if torch.compiler.is_compiling() or _shapes_only(x):
        # one opaque op (its fake kernel for tensors without data); its inputs detached, since
        # the output carries no gradient (as in eager)
        w = [_detached(t) for t in (weights.w13, weights.w2, weights.w13_scale, weights.w2_scale, weights.w13_bias,
                                    weights.w2_bias)]
        res = _fused_moe_op(_detached(x), *w, weights.format, _detached(topk_weights), topk_ids, expert_offset,
                            n_global, _detached(shared_output), path, activation, _config_json(config))
        return res if out is None else _detached(out).copy_(res)
    return _run(x, weights, topk_weights, topk_ids, expert_offset, n_global, shared_output, out, path, config,
                activation)


def _served_config(path: str, m: int, top_k: int, weights: ExpertWeights, device: torch.device, activation: str,
                   num_experts: int) -> policy.GroupedConfig | policy.RouteDirectConfig:
    """The tiles ``path`` runs with no config given: the device's tuned table, else the heuristic,
    for this activation and the share of ``num_experts`` global experts the weights hold (the Gluon
    kernels' checks only where the heuristic may take them: a grouped call)."""
    gluon = path == "grouped" and grouped.gluon_runs(weights, device, activation)
    return policy.select_config(path, m, top_k, weights.num_experts, weights.hidden_size, weights.intermediate_size,
                                weights.format, device_name(device), num_sms(device), gluon,
                                held_share=weights.num_experts / max(num_experts, 1))


def _interpreter_bf16(x: torch.Tensor, weights: ExpertWeights) -> bool:
    """True (with a warning) for bf16 weights in Triton's interpreter, whose bf16 arithmetic is
    wrong (triton-lang/triton#11584: rel-L2 1e11 and worse here): the torch reference runs instead."""
    if not (weights.format == "bf16" and interpreting() and x.device.type == "cpu"):
        return False
    warnings.warn("fused_moe: Triton's interpreter computes bf16 wrongly; bf16 weights run the torch reference "
                  "there (fp16 runs the kernels)", RuntimeWarning, stacklevel=3)
    return True


def _run(x, weights, topk_weights, topk_ids, expert_offset, n_global, shared_output, out, path, config, activation):
    """fused_moe after validation: choose the path and tiles, run into ``out``."""
    m, k = topk_ids.shape
    chosen = choose_path(m, k, weights, x.device) if path == "auto" else path
    want = policy.RouteDirectConfig if chosen == "route_direct" else policy.GroupedConfig
    if config is not None:
        if not isinstance(config, want):
            raise TypeError(f"config: path {chosen!r} takes a {want.__name__}, got {type(config).__name__}")
        if not policy.legal(chosen, config, weights.format):
            raise ValueError(f"config: {config} is not a legal {chosen!r} config for format {weights.format!r}")
    if out is None:
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
    if m == 0:
        return out
    if not runs_triton(x) or _interpreter_bf16(x, weights):
        ref = moe_reference(x, weights, topk_weights, topk_ids, expert_offset=expert_offset,
                            shared_output=shared_output, activation=activation,
                            quantize_activations=path_quantizes_activations(chosen, weights.format))
        return out.copy_(ref)
    # int64 ids (torch.topk's) and bf16/fp16 weights are read as they are: no conversion
    # launch, no extra graph node.
    topk_ids = topk_ids.contiguous()
    topk_weights = topk_weights.contiguous()
    cfg = config if config is not None else _served_config(chosen, m, k, weights, x.device, activation, n_global)
    if chosen == "route_direct":
        return route_direct.route_direct_moe(x, weights, topk_weights, topk_ids, out, shared_output,
                                             expert_offset, cfg, activation)
    return grouped.grouped_moe(x, weights, topk_weights, topk_ids, out, shared_output, expert_offset, n_global, cfg,
                               activation)
