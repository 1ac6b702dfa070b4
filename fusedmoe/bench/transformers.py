"""A model's experts inside transformers (>= 5), timed with each experts implementation.

    python -m fusedmoe.bench.transformers [--shape qwen3_30b_a3b] [--tokens 1,8,64,512]
        [--impls grouped_mm,batched_mm,fusedmoe] [--format bf16] [--out DIR]

The shape's experts (ep 1) become a transformers experts module (``MixtralExperts`` for SiLU-
or GELU-gated shapes, ``GptOssExperts`` for GPT-OSS's clamped SwiGLU, with biases), random
bf16 weights, softmax top-k routing over them.  Each implementation is set on the module
(``config._experts_implementation``) and the module is called as a transformers model calls
it.  On a GPU: one call per weight copy (copies rotated so that >= 200 MB stream between two
uses of one copy) captured in a CUDA graph, median us per call over replays; eager time where
capture fails (the note says why).  On the CPU: wall-clock.  Accuracy: rel-L2 against the
float64 reference of the module's bf16 weights (so with a quantising ``--format`` it includes
the quantisation).  "fusedmoe" is this library's op (``fusedmoe.integrations.transformers.
register``, in ``--format``).  Writes transformers.md / .json with --out.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
from datetime import datetime, timezone
from pathlib import Path

import torch

from ..reference import moe_reference, rel_l2
from ..shapes import MoEShape, get_shape
from . import harness

DEFAULT_IMPLS = ("grouped_mm", "batched_mm", "fusedmoe")
_HIDDEN_ACT = {"silu": "silu", "gelu_tanh": "gelu_pytorch_tanh"}


def experts_module(shape: MoEShape, device: torch.device, seed: int = 0) -> torch.nn.Module:
    """The shape's local experts as a transformers experts module, random bf16 weights."""
    from transformers import GptOssConfig, MixtralConfig
    from transformers.models.gpt_oss.modeling_gpt_oss import GptOssExperts
    from transformers.models.mixtral.modeling_mixtral import MixtralExperts

    if shape.ep != 1:
        raise ValueError(f"shape: one rank's experts are timed here, expected ep 1, got {shape.ep}")
    facts = dict(hidden_size=shape.hidden_size, intermediate_size=shape.intermediate_size,
                 num_local_experts=shape.num_local_experts, num_experts_per_tok=shape.top_k)
    if shape.activation == "swiglu_oai":
        cls, config = GptOssExperts, GptOssConfig(**facts)
    elif shape.activation in _HIDDEN_ACT:
        cls, config = MixtralExperts, MixtralConfig(hidden_act=_HIDDEN_ACT[shape.activation], **facts)
    else:
        raise ValueError(f"shape: activation {shape.activation!r} has no transformers experts module here")
    gen = torch.Generator(device=device).manual_seed(seed)
    module = cls(config).to(device=device, dtype=torch.bfloat16).eval()
    with torch.no_grad():
        for p in module.parameters():
            std = 0.02 if p.dim() == 3 else 0.1  # weights, then biases
            p.copy_(torch.randn(p.shape, generator=gen, device=device) * std)
    return module


def weight_copies(base: torch.nn.Module, n: int) -> list[torch.nn.Module]:
    """``base`` and n - 1 copies of it with weights of their own and base's config object, so that
    the experts implementation set on it is every copy's (a deepcopy would copy the config too)."""
    modules = [base] + [copy.deepcopy(base) for _ in range(n - 1)]
    for module in modules[1:]:
        module.config = base.config
    return modules


def _reference(module: torch.nn.Module, x: torch.Tensor, tw: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """The float64 layer of the module's weights (fusedmoe.reference)."""
    from ..integrations.transformers import expert_weights

    weights, activation = expert_weights(module)  # bf16, the module's own values
    return moe_reference(x, weights, tw, ids, activation=activation)


def run(shape: MoEShape, tokens: list[int], impls: list[str], fmt: str | None, device: torch.device,
        settings: harness.Settings) -> list[dict]:
    """One row per (M, implementation): us per call (graph, else eager), eager us, rel-L2, note."""
    from ..integrations.transformers import register

    names = {impl: (register(f"fusedmoe_{fmt or 'own'}", format=fmt) if impl == "fusedmoe" else impl)
             for impl in impls}
    base = experts_module(shape, device, settings.seed)
    module_bytes = sum(p.numel() * p.element_size() for p in base.parameters())
    gen = torch.Generator(device=device).manual_seed(settings.seed + 1)
    rows = []
    for m in tokens:
        active = harness.expected_active_experts(shape, m) * module_bytes / shape.num_local_experts
        copies = min(harness.copies_needed(active, harness.STREAM_BYTES), settings.max_copies) \
            if device.type == "cuda" else 1
        if device.type == "cuda":
            fits = settings.memory_fraction * torch.cuda.mem_get_info(device)[0] / module_bytes
            copies = max(1, min(copies, math.floor(fits)))
        modules = weight_copies(base, copies)
        x = (torch.randn(m, shape.hidden_size, generator=gen, device=device) * 0.5).to(torch.bfloat16)
        tw, ids = harness.random_routing(shape, m, gen, "softmax")
        ids = ids.long()  # what transformers' routers give (torch.topk)
        ref = _reference(base, x, tw, ids)
        for impl in impls:
            base.config._experts_implementation = names[impl]  # the copies' too: one config
            with torch.no_grad():
                err = rel_l2(base(x, ids, tw), ref)
                calls = [lambda mod=mod: mod(x, ids, tw) for mod in modules]
                if device.type == "cuda":
                    us, eager_us, note = harness._time_cuda(calls, settings, True)
                else:
                    us, eager_us, note = None, harness._time_cpu(calls, settings), ""
            rows.append(dict(shape=shape.name, M=m, impl=impl, implementation=names[impl],
                             us=us if us is not None else eager_us, graph=us is not None, eager_us=eager_us,
                             rel_l2=err, copies=copies, note=note))
            print(f"{shape.name} M={m:5d} {impl:12s} {rows[-1]['us']:9.1f} us ({'graph' if us is not None else 'eager'}) "
                  f"eager {eager_us:9.1f} us  rel-L2 {err:.2e} {note}", flush=True)
        del modules
    return rows


def markdown(rows: list[dict]) -> str:
    """The rows as a table: us per call and speedup of fusedmoe over each other implementation."""
    ours = {(r["shape"], r["M"]): r["us"] for r in rows if r["impl"] == "fusedmoe"}
    lines = ["| shape | M | implementation | us/call | timed | eager us | fusedmoe speedup | rel-L2 | note |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        mine = ours.get((r["shape"], r["M"]))
        speedup = f"{r['us'] / mine:.2f}x" if mine and r["impl"] != "fusedmoe" else ""
        lines.append(f"| {r['shape']} | {r['M']} | {r['impl']} | {r['us']:.1f} | {'graph' if r['graph'] else 'eager'} | "
                     f"{r['eager_us']:.1f} | {speedup} | {r['rel_l2']:.2e} | {r['note']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="qwen3_30b_a3b", help="comma-separated presets or HF config paths")
    ap.add_argument("--tokens", default="1,8,64,512")
    ap.add_argument("--impls", default=",".join(DEFAULT_IMPLS),
                    help="transformers experts implementations (eager, grouped_mm, batched_mm, ...) and fusedmoe")
    ap.add_argument("--format", default=None, help="fusedmoe's format (default: the experts' own, bf16)")
    ap.add_argument("--replays", type=int)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    device = harness.default_device()
    settings = harness.Settings.for_device(device, replays=args.replays)
    shapes = [get_shape(s) for s in args.shape.split(",")]
    tokens = [int(t) for t in args.tokens.split(",")]
    impls = args.impls.split(",")
    rows = [r for shape in shapes for r in run(shape, tokens, impls, args.format, device, settings)]
    if args.out:
        import transformers

        args.out.mkdir(parents=True, exist_ok=True)
        meta = dict(date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    device=torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
                    torch=torch.__version__, transformers=transformers.__version__, format=args.format,
                    command="python -m fusedmoe.bench.transformers " + " ".join(sys.argv[1:] if argv is None else argv))
        (args.out / "transformers.json").write_text(json.dumps(dict(meta, rows=rows), indent=1) + "\n")
        (args.out / "transformers.md").write_text(
            f"{meta['device']}, torch {meta['torch']}, transformers {meta['transformers']}, {meta['date']}\n\n"
            + markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
