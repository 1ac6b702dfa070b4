"""Float64 reference of the MoE layer and of each stage: the oracle of every test and benchmark.

    out[t] = shared[t] + sum_j w[t,j] * W2_e @ (SiLU(G_e @ x[t]) * (U_e @ x[t])),  e = ids[t,j]

Weights are dequantised to float64.  With ``quantize_activations=True`` the reference replays
the activation quantisation of the FP8-MMA kernels that use it (x to e4m3 per row for
fp8_tensor, per row per 128-wide group for fp8_block and w4a8; the SwiGLU output per row per
128-wide group), so
that a test measures the kernel and not the format.
Routes whose id is -1, or outside the local window [expert_offset, expert_offset + num_local),
contribute nothing.
"""

from __future__ import annotations

import torch

from . import quant
from .quant import fake_quantize_rows_grouped, x_group
from .weights import ExpertWeights


def held_routes(topk_ids: torch.Tensor, expert_offset: int, num_local_experts: int) -> torch.Tensor:
    """Local expert id of every route, [M, k] int64, -1 where the route is not held here."""
    local = topk_ids.to(torch.int64) - expert_offset
    held = (topk_ids >= 0) & (local >= 0) & (local < num_local_experts)
    return torch.where(held, local, torch.full_like(local, -1))


OAI_ALPHA, OAI_LIMIT = 1.702, 7.0  # GPT-OSS's clamped SwiGLU


def glu(gate_up: torch.Tensor, activation: str = "silu") -> torch.Tensor:
    """[R, 2I] -> [R, I]: act(gate) * up, in the input's precision.

    silu: SiLU(gate) * up.  gelu_tanh: GELU (tanh approximation)(gate) * up.  swiglu_oai
    (GPT-OSS): gate clamped above at 7, up to [-7, 7], gate * sigmoid(1.702 gate) * (up + 1)."""
    inter = gate_up.shape[-1] // 2
    gate, up = gate_up[..., :inter], gate_up[..., inter:]
    if activation == "silu":
        return gate * torch.sigmoid(gate) * up
    if activation == "gelu_tanh":
        return torch.nn.functional.gelu(gate, approximate="tanh") * up
    if activation == "swiglu_oai":
        gate = gate.clamp(max=OAI_LIMIT)
        return gate * torch.sigmoid(OAI_ALPHA * gate) * (up.clamp(-OAI_LIMIT, OAI_LIMIT) + 1)
    raise ValueError(f"activation: expected one of ['silu', 'gelu_tanh', 'swiglu_oai'], got {activation!r}")


def _expert_acts(x: torch.Tensor, weights: ExpertWeights, topk_ids: torch.Tensor, expert_offset: int,
                 quantize_activations: bool, activation: str):
    """Per held local expert e: (route indices [n] into the flattened [M*k] routes, SwiGLU output
    [n, I] float64 before any quantisation, W2_e [H, I] float64)."""
    local = held_routes(topk_ids, expert_offset, weights.num_experts).reshape(-1)
    xs = x.to(torch.float64)
    if quantize_activations:  # x per row (fp8_tensor) or per 128 columns
        xs = fake_quantize_rows_grouped(x.to(torch.float32), x_group(weights.format, weights.hidden_size))
    tokens = torch.arange(local.numel(), device=x.device) // topk_ids.shape[1]
    for e in torch.unique(local[local >= 0]).tolist():
        rows = (local == e).nonzero().squeeze(1)
        w13, w2 = weights.dequantize(slice(e, e + 1))
        gate_up = xs[tokens[rows]] @ w13[0].T
        if weights.w13_bias is not None:
            gate_up = gate_up + weights.w13_bias[e].to(torch.float64)
        yield e, rows, glu(gate_up, activation), w2[0]


def expert_outputs(x: torch.Tensor, weights: ExpertWeights, topk_ids: torch.Tensor, *,
                   expert_offset: int = 0, quantize_activations: bool = False,
                   activation: str = "silu") -> torch.Tensor:
    """Per-route expert output y [M, k, H] float64 (zeros for routes not held), before weighting.
    Global ids [expert_offset, expert_offset + E) are held, E = weights.num_experts.  With
    ``quantize_activations`` x and the SwiGLU output (per row per 128 columns) are replayed in e4m3."""
    m, k = topk_ids.shape
    y = torch.zeros(m * k, weights.hidden_size, dtype=torch.float64, device=x.device)
    for e, rows, act, w2 in _expert_acts(x, weights, topk_ids, expert_offset, quantize_activations, activation):
        if quantize_activations:
            act = fake_quantize_rows_grouped(act.to(torch.float32))
        y[rows] = act @ w2.T
        if weights.w2_bias is not None:
            y[rows] += weights.w2_bias[e].to(torch.float64)
    return y.view(m, k, weights.hidden_size)


def requantisation_slack(x: torch.Tensor, weights: ExpertWeights, topk_weights: torch.Tensor,
                         topk_ids: torch.Tensor, *, expert_offset: int = 0, num_local_experts: int | None = None,
                         activation: str = "silu", rel: float = 2.0 ** -9) -> torch.Tensor:
    """[M] float64: per token, the largest move one requantisation flip makes to
    ``moe_reference(quantize_activations=True)``: over the token's routes and the SwiGLU
    output elements within ``rel`` of an e4m3 rounding midpoint (``quant.e4m3_flip_steps``),
    the max of |w| * step * the norm of W2's column.  A kernel whose sums differ from the
    float64 ones by ~2e-4 (the H200's FP8 MMA) rounds a few such elements the other way; a flip
    moves its element by 1/16 to 1/8 of its value, much of a token where one element dominates
    it.  Experts as ``moe_reference`` holds them."""
    weights = weights.local_window(expert_offset, num_local_experts)
    m, k = topk_ids.shape
    per_route = torch.zeros(m * k, dtype=torch.float64, device=x.device)
    for _, rows, act, w2 in _expert_acts(x, weights, topk_ids, expert_offset, True, activation):
        per_route[rows] = (quant.e4m3_flip_steps(act, rel=rel) * w2.norm(dim=0)).amax(dim=1)
    return (per_route.view(m, k) * topk_weights.to(torch.float64).abs()).amax(dim=1)


def combine(y: torch.Tensor, topk_weights: torch.Tensor, shared_output: torch.Tensor | None = None) -> torch.Tensor:
    """out[t] = sum_j w[t,j] * y[t,j] (+ shared[t]); y [M, k, H] -> [M, H] float64."""
    out = (y * topk_weights.to(torch.float64)[:, :, None]).sum(dim=1)
    if shared_output is not None:
        out = out + shared_output.to(torch.float64)
    return out


def moe_reference(x: torch.Tensor, weights: ExpertWeights, topk_weights: torch.Tensor, topk_ids: torch.Tensor, *,
                  expert_offset: int = 0, num_local_experts: int | None = None,
                  shared_output: torch.Tensor | None = None, quantize_activations: bool = False,
                  activation: str = "silu") -> torch.Tensor:
    """The whole layer in float64: x [M, H] -> [M, H].  Global ids [expert_offset,
    expert_offset + E_local) are held; ``weights`` hold those experts, or every expert with
    ``num_local_experts`` selecting the window (``ExpertWeights.local_window``)."""
    weights = weights.local_window(expert_offset, num_local_experts)
    y = expert_outputs(x, weights, topk_ids, expert_offset=expert_offset,
                       quantize_activations=quantize_activations and weights.is_a8, activation=activation)
    return combine(y, topk_weights, shared_output)


def rel_l2(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| in float64 (NaN anywhere gives NaN)."""
    out, ref = out.to(torch.float64), ref.to(torch.float64)
    den = ref.norm().item()
    return (out - ref).norm().item() / den if den > 0 else (out - ref).norm().item()


def cosine(out: torch.Tensor, ref: torch.Tensor) -> float:
    """Cosine similarity of the flattened tensors in float64 (1.0 for two zero tensors)."""
    a, b = out.to(torch.float64).flatten(), ref.to(torch.float64).flatten()
    den = (a.norm() * b.norm()).item()
    return (a @ b).item() / den if den > 0 else float(a.norm().item() == b.norm().item())
