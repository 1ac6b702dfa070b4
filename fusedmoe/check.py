"""``fusedmoe check``: the GPU check of a machine.  Accuracy at real model shapes, CUDA-graph
replay with changed inputs, and the small cases that ``compute-sanitizer`` runs; writes a
markdown + JSON report per step.

    fusedmoe check accuracy --out DIR    # PEERS shapes x M x formats x paths against float64
    fusedmoe check graphs --out DIR      # capture, replay with new inputs, bitwise vs eager
    fusedmoe check sanitize              # small ragged cases, every path/format (run under memcheck)
    fusedmoe check unseen --out DIR      # model shapes no table or rule was read from, and odd ones

scripts/gpu_check.sh runs all of it, the test suite and the benchmarks in one call.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import torch

from . import policy
from .api import PATHS, choose_path, fused_moe, path_quantizes_activations
from .plan import _build
from .reference import cosine, moe_reference, rel_l2
from .routing import route
from .shapes import PEER_SHAPES, get_shape
from .weights import A8_FORMATS, FORMATS, FP8_FORMATS, ExpertWeights

DEV = torch.device("cuda")
# Bounds against the reference that replays the path's activation quantisation (the test suite's).
# A path that quantises activations feeds the FP8 MMA, which sums each K step with less than fp32
# precision; the ~2e-4 that moves the SwiGLU output flips ~0.2% of its e4m3 requantisation against
# the float64 replay: 0.3-0.6% at the layer's output (2026-11-30-s2/accuracy.md; 5.5-6.0e-3 at
# Qwen3-30B M=1 and GPT-OSS TP4 M=8 fp8_block grouped, 2026-12-07-s51 call 2).
MAX_REL_L2, W8A8_MAX_REL_L2, MIN_COSINE = 5e-3, 1e-2, 0.99995


def within_bounds(rel: float, cos: float, quantized: bool) -> bool:
    """Whether an output's rel-L2 and cosine against its reference pass (NaN fails)."""
    return rel <= (W8A8_MAX_REL_L2 if quantized else MAX_REL_L2) and cos >= MIN_COSINE


def dense_weights(e, h, i, gen):
    """randn * 0.02 with per-expert, per-row and per-column spread (as PEERS-H200.md)."""
    def one(n, k):
        w = torch.randn(e, n, k, device=DEV, generator=gen) * 0.02
        w *= 0.5 + torch.rand(e, 1, 1, device=DEV, generator=gen)
        w *= 0.75 + 0.5 * torch.rand(e, n, 1, device=DEV, generator=gen)
        return w * (0.75 + 0.5 * torch.rand(e, 1, k, device=DEV, generator=gen))
    return one(2 * i, h), one(h, i)


def layer_inputs(shape, m, gen, dtype=torch.bfloat16):
    logits = torch.randn(m, shape.num_experts, device=DEV, generator=gen)
    bias = torch.randn(shape.num_experts, device=DEV, generator=gen) * 0.1 if shape.scoring == "sigmoid" else None
    tw, ids = route(logits, shape.top_k, scoring=shape.scoring, renormalize=shape.renormalize,
                    n_groups=shape.n_groups, topk_groups=shape.topk_groups, bias=bias,
                    routed_scaling=shape.routed_scaling)
    return torch.randn(m, shape.hidden_size, device=DEV, generator=gen).to(dtype), tw, ids


def _other_gate_width(path: str, base: policy.GroupedConfig) -> tuple[str, policy.GroupedConfig]:
    """The grouped FP8 variant with the other gate/up width than the heuristic's ``base`` (not
    the dispatched table entry): 64 columns (the SwiGLU output requantised by a launch of its
    own) where it fuses 128, else 128 (fused, 8 warps)."""
    width = 128 if base.gate_up.block_n == 64 else 64
    warps = 8 if width == 128 else base.gate_up.num_warps
    return (f"{path}_gate{width}",
            dataclasses.replace(base, gate_up=dataclasses.replace(base.gate_up, block_n=width, num_warps=warps)))


def _tail_variant(path: str, base: policy.GroupedConfig) -> tuple[str, policy.GroupedConfig]:
    """The grouped variant with blocks of 64 routes whose last block of an expert, at most 32
    routes, runs a swapped 32-row tile (``GroupedConfig.tail_m``), from the heuristic's tiles."""
    unswapped = {f: dataclasses.replace(getattr(base, f), swap_ab=False) for f in ("gate_up", "down")}
    return f"{path}_tail32", dataclasses.replace(base, block_m=64, tail_m=32, **unswapped)


# The Gluon grouped variant runs from here: its sums are promoted every 128 columns, within the
# accuracy bound from M=512 (policy.GROUPED_PROMOTE_128_MIN_TOKENS); graphs (bitwise replay)
# run it at M=300 too.
GLUON_MIN_TOKENS = 256


def variants(path: str, m: int, shape, fmt: str) -> list[tuple[str, object]]:
    """(label, config) runs of a path: its dispatched config (None), for route-direct also the
    tensor-core forms (gate/up, and down with FP8 weights; the tuned tables may pick them),
    each launched with and without PDL, 4 H tiles per GEMV down program (PDL) and the heuristic's
    GEMV loops pipelined 3 deep (PDL; for 16-bit weights above M=2 its gate/up is a tensor-core
    form, whose pipeline depth is num_stages anyway); for grouped
    FP8 also K steps of 64, the MMA sums promoted every 32 columns (the most accurate interval)
    and every 64 where the rule (policy.grouped_promote_k) picks 128, and the other gate/up
    width (64 columns with the SwiGLU output requantised by a launch of its own, or 128 fused),
    for every format tail tiles (``_tail_variant``), for FP8 an 8-warp gate/up capped at 128
    registers (``Tile.max_registers``: spills), and for fp8_tensor from GLUON_MIN_TOKENS the Gluon kernels; the grouped variants change the
    heuristic's tiles, not a table entry's.  Route-direct also runs the Gluon down
    (``RouteDirectConfig.down_gluon``) where the format takes it."""
    if path != "route_direct":
        if fmt not in A8_FORMATS:
            base = policy.grouped_config(m, shape.top_k, shape.num_local_experts, shape.hidden_size,
                                         shape.intermediate_size, fmt)
            return [(path, None), _tail_variant(path, base)]
        # FP8 x FP8 MMA sums in reduced precision until each K step's partial is rescaled in
        # fp32: K steps of 64 instead of 128 halve that run (accuracy vs cost, issue 2).
        base = policy.grouped_config(m, shape.top_k, shape.num_local_experts, shape.hidden_size,
                                     shape.intermediate_size, fmt)
        k64 = dataclasses.replace(base, gate_up=dataclasses.replace(base.gate_up, block_k=64),
                                  down=dataclasses.replace(base.down, block_k=64),
                                  fp8_promote_k=min(base.fp8_promote_k, 64))
        capped = dataclasses.replace(base, gate_up=dataclasses.replace(base.gate_up, num_warps=8, max_registers=128))
        runs = [(path, None), (path + "_k64", k64), (path + "_promote32", dataclasses.replace(base, fp8_promote_k=32)),
                _other_gate_width(path, base), _tail_variant(path, base), (path + "_gate_up_cap128", capped)]
        if base.fp8_promote_k > 64:
            runs.append((path + "_promote64", dataclasses.replace(base, fp8_promote_k=64)))
        if fmt == "fp8_tensor" and m >= GLUON_MIN_TOKENS:  # it promotes every 128 (the rule's from M=512)
            runs += [(path + "_gluon", policy.gluon_grouped_config(base.group_m)),
                     (path + "_gluon_ws", policy.gluon_grouped_config(base.group_m, 128)),
                     (path + "_gluon_ws_q", policy.gluon_grouped_config(base.group_m, 128, 128))]
        return [(label, cfg if cfg is None else policy.fit_registers(cfg, fmt)) for label, cfg in runs]
    sms = torch.cuda.get_device_properties(DEV).multi_processor_count
    base = policy.route_direct_config(m, shape.top_k, shape.num_local_experts, shape.hidden_size,
                                      shape.intermediate_size, fmt, sms)
    down = policy.Tile(16, 128, 4, 3, swap_ab=True) if fmt in FP8_FORMATS else base.down  # FP8: tensor-core down too
    mma = policy.RouteDirectConfig(policy.Tile(32, 128, 4, 3, 2, swap_ab=True), down)
    runs = [(path, None), (path + "_nopdl", dataclasses.replace(base, pdl=False)),
            (path + "_pdl", dataclasses.replace(base, pdl=True)),
            (path + "_tiles4", dataclasses.replace(base, down_tiles=4, pdl=True)),  # the heuristic's down is GEMV
            (path + "_stages3", dataclasses.replace(base, pdl=True, gate_up=dataclasses.replace(base.gate_up, num_stages=3),
                                                    down=dataclasses.replace(base.down, num_stages=3)))]
    if policy.legal(path, mma, fmt):  # no tensor-core form for FP4 weights
        runs[1:1] = [(path + "_mma", mma), (path + "_mma_pdl", dataclasses.replace(mma, pdl=True))]
    if fmt in FP8_FORMATS and not base.gate_up.swap_ab:
        runs.append((path + "_fp16", dataclasses.replace(base, fp16_products=True)))
    # the Gluon down (sm_90, I a multiple of 16 bytes of weights; elsewhere the Triton down), on
    # the heuristic's tiles with one gate/up K split and one H tile a program
    gluon = dataclasses.replace(base, pdl=True, down_gluon=True, down_tiles=1,
                                gate_up=dataclasses.replace(base.gate_up, split_k=1),
                                down=dataclasses.replace(base.down, num_stages=1, max_registers=0))
    if policy.legal(path, gluon, fmt):
        runs.append((path + "_gluon_down", gluon))
    return runs


def accuracy(out_dir: Path, tokens=(1, 8, 64, 512, 4096), shapes=PEER_SHAPES, formats=FORMATS) -> list[dict]:
    rows = []
    gen = torch.Generator(device=DEV).manual_seed(1)
    for name in shapes:
        shape = get_shape(name)
        w13, w2 = dense_weights(shape.num_experts, shape.hidden_size, shape.intermediate_size, gen)
        unquant = ExpertWeights.from_dense(w13, w2, "bf16")
        for fmt in formats:
            weights = ExpertWeights.from_dense(w13, w2, fmt)
            dt = torch.float16 if fmt == "fp16" else torch.bfloat16
            for m in tokens:
                x, tw, ids = layer_inputs(shape, m, gen, dt)
                auto = choose_path(m, shape.top_k, weights)
                paths = [p for p in PATHS if p == auto or m <= 512]
                ref_plain = moe_reference(x, unquant, tw, ids)
                refs = {}  # one replaying reference per activation-quantisation mode, shared by the runs
                for path, (label, cfg) in ((p, v) for p in paths for v in variants(p, m, shape, fmt)):
                    out = torch.full_like(x, float("nan"))
                    fused_moe(x, weights, tw, ids, path=path, out=out, config=cfg)
                    quantized = path_quantizes_activations(path, fmt)
                    if quantized not in refs:
                        refs[quantized] = moe_reference(x, weights, tw, ids, quantize_activations=quantized)
                    ref_q = refs[quantized]
                    row = dict(shape=name, format=fmt, M=m, path=label, auto=path == auto and cfg is None,
                               rel_l2=rel_l2(out, ref_q), cosine=cosine(out, ref_q),
                               rel_l2_unquantized=rel_l2(out, ref_plain), nan=bool(torch.isnan(out).any()))
                    # FP8: within 8% of the bf16 layer; w4a8 has no such bound (E2M1's one mantissa
                    # bit alone moves each matrix by ~12%), its figure is reported
                    row["ok"] = (not row["nan"] and within_bounds(row["rel_l2"], row["cosine"], quantized)
                                 and (fmt not in FP8_FORMATS or row["rel_l2_unquantized"] <= 0.08))
                    rows.append(row)
                    print(f"{name:18s} {fmt:10s} M={m:5d} {label:17s} relL2={row['rel_l2']:.2e} "
                          f"cos={row['cosine']:.6f} vs-unquant={row['rel_l2_unquantized']:.2e} "
                          f"{'ok' if row['ok'] else 'FAIL'}", flush=True)
        del w13, w2
        torch.cuda.empty_cache()
    _write(out_dir, "accuracy", rows, ["shape", "format", "M", "path", "auto", "rel_l2", "cosine",
                                       "rel_l2_unquantized", "ok"])
    return rows


GRAPH_FORMATS = ("bf16", "fp8_tensor", "fp8_block", "w4a8")


def replays_match_eager(run, out: torch.Tensor, refresh, eager, replays: int) -> bool:
    """Whether a CUDA graph of ``run()`` (one layer call writing ``out``), replayed ``replays``
    times after ``refresh()`` has written fresh inputs in place, writes ``out`` bitwise equal to
    an eager call (``eager()``) on the same inputs each time; ``out`` is NaN-filled first."""
    run()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        run()
    equal = True
    for _ in range(replays):
        refresh()
        out.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        equal &= torch.equal(out, eager())
    return bool(equal)


def graphs(out_dir: Path, formats=GRAPH_FORMATS) -> list[dict]:
    """Capture the op once per (shape, format, path), replay with fresh inputs, compare bitwise to eager."""
    rows = []
    gen = torch.Generator(device=DEV).manual_seed(2)
    for name, m in (("qwen3_30b_a3b", 1), ("qwen3_30b_a3b", 8), ("deepseek_v3_tp8", 64), ("gpt_oss_120b_tp4", 300)):
        shape = get_shape(name)
        w13, w2 = dense_weights(shape.num_experts, shape.hidden_size, shape.intermediate_size, gen)
        for fmt in formats:
            weights = ExpertWeights.from_dense(w13, w2, fmt)
            for path, (label, cfg) in ((p, v) for p in PATHS for v in variants(p, m, shape, fmt)):
                x, tw, ids = layer_inputs(shape, m, gen)
                shared = torch.randn_like(x)
                out = torch.empty_like(x)

                def refresh():
                    nx, ntw, nids = layer_inputs(shape, m, gen)
                    x.copy_(nx), tw.copy_(ntw), ids.copy_(nids), shared.normal_(generator=gen)

                equal = replays_match_eager(
                    lambda: fused_moe(x, weights, tw, ids, path=path, out=out, shared_output=shared, config=cfg),
                    out, refresh, lambda: fused_moe(x, weights, tw, ids, path=path, shared_output=shared, config=cfg), 3)
                rows.append(dict(shape=name, M=m, format=fmt, path=label, bitwise_equal=equal))
                print(f"graph {name} M={m} {fmt} {label}: {'bitwise equal' if equal else 'DIFFERENT'}", flush=True)
    _write(out_dir, "graphs", rows, ["shape", "M", "format", "path", "bitwise_equal"])
    return rows


def sanitize(formats=GRAPH_FORMATS) -> None:
    """Small ragged cases on every path and format: run under compute-sanitizer memcheck."""
    gen = torch.Generator(device=DEV).manual_seed(3)
    for e, k, h, i, m, offset, n_global in ((5, 3, 200, 136, 7, 2, 12), (33, 4, 72, 40, 3, 0, 33),
                                            (4, 2, 256, 384, 40, 0, 4), (6, 2, 272, 144, 300, 1, 9),
                                            (64, 1, 48, 48, 3, 0, 64)):
        w13, w2 = dense_weights(e, h, i, gen)
        for fmt in formats:
            weights = ExpertWeights.from_dense(w13, w2, fmt)
            x = torch.randn(m, h, device=DEV, generator=gen).to(torch.bfloat16)
            ids = torch.randint(-1, n_global, (m, k), device=DEV, generator=gen, dtype=torch.int32)
            tw = torch.rand(m, k, device=DEV, generator=gen)
            for path in PATHS:
                runs = [cfg for _, cfg in variants(path, m, get_shape("qwen3_30b_a3b"), fmt)]
                if path == "grouped" and fmt == "fp8_tensor":  # the Gluon kernels where H, I % 16 == 0
                    runs += [policy.gluon_grouped_config(group, *gluon_set)
                             for group in (8, 1) for gluon_set in policy.GLUON_SETS]
                configs = list(dict.fromkeys(runs))  # each config once (variants may hold a Gluon one)
                for cfg in configs:
                    fused_moe(x, weights, tw, ids, path=path, expert_offset=offset, num_experts=n_global,
                              shared_output=torch.randn_like(x), config=cfg)
                torch.cuda.synchronize()
                print(f"sanitize E={e} k={k} H={h} I={i} M={m} {fmt} {path}: {len(configs)} configs", flush=True)
    # every blocked plan kernel forced, over an expert window, with ids outside it and past E
    ids = torch.randint(-3, 40, (150, 5), device=DEV, generator=gen, dtype=torch.int32)
    kernels = [("single", {}), ("recount", dict(count_in_memory=False)), ("recount", dict(count_in_memory=True)),
               ("tiled", {}), ("parallel", {})]
    for path, extra in kernels:
        for block_m in (1, 16, 128):
            _build(ids, 33, block_m, path=path, expert_offset=2, num_local_experts=20, **extra)
            _build(ids.t(), 33, block_m, path=path, **extra)  # strided ids
    torch.cuda.synchronize()
    print("sanitize cases done")


# (name, E, top_k, H, I, activation): MoE layers that are not presets (I per tensor-parallel rank)
# and odd synthetic ones (H, I not multiples of 16, E past 256, top-5 of 5); no tuned table entry
# and no heuristic rule was read from any of them.
UNSEEN_SHAPES = (
    ("qwen1.5_moe_a2.7b", 60, 4, 2048, 1408, "silu"),
    ("qwen2_57b_a14b_tp4", 64, 8, 3584, 640, "silu"),
    ("phi3.5_moe_tp2", 16, 2, 4096, 3200, "silu"),
    ("dbrx_tp8", 16, 4, 6144, 1344, "silu"),
    ("llama4_maverick_tp8", 128, 1, 5120, 1024, "silu"),
    ("gpt_oss_20b", 32, 4, 2880, 2880, "swiglu_oai"),
    ("odd_e37_k3", 37, 3, 1000, 344, "silu"),
    ("odd_e300_k8", 300, 8, 768, 200, "gelu_tanh"),
    ("odd_e2_k1", 2, 1, 2056, 1000, "silu"),
    ("odd_e5_k5", 5, 5, 520, 1032, "silu"),
)


def unseen(out_dir: Path, tokens=(1, 7, 24, 64, 333), formats=GRAPH_FORMATS, shapes=UNSEEN_SHAPES) -> list[dict]:
    """The layer on ``shapes``: per (shape, format, M) auto and both paths forced against the
    float64 reference (``accuracy``'s bounds), on a NaN-poisoned ``out``, with ``shared_output``,
    a dropped route (-1) and, for every third shape, an expert window (this rank holds experts
    [E/4, E/4 + E/2) of E; the ids span all of them); GPT-OSS's activation with biases.  Per
    (shape, format) one CUDA graph of auto at M=7, replayed on fresh inputs, bitwise against
    eager.  A ValueError (a shape a format cannot take) is recorded as refused."""
    rows = []
    gen = torch.Generator(device=DEV).manual_seed(4)

    def record(row):
        rows.append(row)
        print(" ".join(f"{k}={v:.7g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)

    for n, (name, e, k, h, i, act) in enumerate(shapes):
        w13, w2 = dense_weights(e, h, i, gen)
        biases = [torch.randn(e, n_rows, device=DEV, generator=gen) * 0.02 for n_rows in (2 * i, h)] \
            if act == "swiglu_oai" else [None, None]
        lo, held = (e // 4, e // 2) if n % 3 == 1 and e >= 4 else (0, e)
        layer = dict(expert_offset=lo, num_experts=e, activation=act)  # this rank's window, the activation
        for fmt in formats:
            try:
                weights = ExpertWeights.from_dense(w13[lo:lo + held], w2[lo:lo + held], fmt,
                                                   w13_bias=None if biases[0] is None else biases[0][lo:lo + held],
                                                   w2_bias=None if biases[1] is None else biases[1][lo:lo + held])
            except ValueError as ex:
                record(dict(shape=name, format=fmt, M=0, path="-", refused=str(ex)[:200]))
                continue
            dt = torch.float16 if fmt == "fp16" else torch.bfloat16
            for m in tokens:
                tw, ids = route(torch.randn(m, e, device=DEV, generator=gen), k)
                ids[0, 0] = -1
                x = torch.randn(m, h, device=DEV, generator=gen).to(dt)
                shared = torch.randn(m, h, device=DEV, generator=gen).to(dt)
                auto = choose_path(m, k, weights)
                refs = {}
                for path in ("auto",) + PATHS:
                    out = torch.full_like(x, float("nan"))
                    try:
                        fused_moe(x, weights, tw, ids, shared_output=shared, out=out, path=path, **layer)
                    except ValueError as ex:
                        record(dict(shape=name, format=fmt, M=m, path=path, refused=str(ex)[:200]))
                        continue
                    quantized = path_quantizes_activations(auto if path == "auto" else path, fmt)
                    if quantized not in refs:
                        refs[quantized] = moe_reference(x, weights, tw, ids, expert_offset=lo, shared_output=shared,
                                                        quantize_activations=quantized, activation=act)
                    err, cos = rel_l2(out, refs[quantized]), cosine(out, refs[quantized])
                    nan = bool(torch.isnan(out).any())
                    record(dict(shape=name, format=fmt, M=m, path=path if path != "auto" else f"auto ({auto})",
                                window=lo > 0, rel_l2=err, cosine=cos, ok=not nan and within_bounds(err, cos, quantized)))
            m = 7
            x = torch.randn(m, h, device=DEV, generator=gen).to(dt)
            tw, ids = route(torch.randn(m, e, device=DEV, generator=gen), k)
            out = torch.empty_like(x)

            def refresh():
                ntw, nids = route(torch.randn(m, e, device=DEV, generator=gen), k)
                x.normal_(generator=gen), tw.copy_(ntw), ids.copy_(nids)

            equal = replays_match_eager(lambda: fused_moe(x, weights, tw, ids, out=out, check_ids=False, **layer),
                                        out, refresh, lambda: fused_moe(x, weights, tw, ids, **layer), 2)
            record(dict(shape=name, format=fmt, M=m, path="auto, CUDA graph", window=lo > 0, ok=bool(equal)))
        del w13, w2
        torch.cuda.empty_cache()
    for r in rows:
        r.setdefault("refused", "")
        for c in ("window", "rel_l2", "cosine", "ok"):
            r.setdefault(c, "")
    _write(out_dir, "unseen", rows, ["shape", "format", "M", "path", "window", "rel_l2", "cosine", "ok", "refused"])
    return rows


def _write(out_dir: Path, name: str, rows: list[dict], cols: list[str]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    meta = dict(date=time.strftime("%Y-%m-%d"), torch=torch.__version__, triton=__import__("triton").__version__,
                gpu=torch.cuda.get_device_name(), command=" ".join(sys.argv))
    (out_dir / f"{name}.json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=1))
    fmt = lambda v: f"{v:.3e}" if isinstance(v, float) and v < 0.5 else (f"{v:.6f}" if isinstance(v, float) else str(v))  # noqa: E731
    lines = [f"# {name} ({meta['gpu']}, {meta['date']}, torch {meta['torch']}, Triton {meta['triton']})", "",
             f"Command: `{meta['command']}`", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r[c]) for c in cols) + " |" for r in rows]
    (out_dir / f"{name}.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="fusedmoe check", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=["accuracy", "graphs", "sanitize", "unseen"])
    ap.add_argument("--out", type=Path, default=Path("out/check"))
    ap.add_argument("--shapes", default=",".join(PEER_SHAPES), help="accuracy: comma-separated shapes")
    ap.add_argument("--formats", help=f"comma-separated, of {', '.join(FORMATS)} (default: accuracy all of them, "
                                      f"graphs, sanitize and unseen {', '.join(GRAPH_FORMATS)})")
    args = ap.parse_args(argv)
    formats = tuple(args.formats.split(",")) if args.formats else None
    for f in formats or ():
        if f not in FORMATS:
            ap.error(f"--formats: expected a comma-separated list of {', '.join(FORMATS)}, got {f!r}")
    if not torch.cuda.is_available():
        print("fusedmoe check: needs a CUDA GPU (the CPU checks are the test suite: python -m pytest tests)")
        return 2
    if args.step == "accuracy":
        shapes = [get_shape(n).name for n in args.shapes.split(",")]
        return 0 if all(r["ok"] for r in accuracy(args.out, shapes=shapes, formats=formats or FORMATS)) else 1
    if args.step == "graphs":
        return 0 if all(r["bitwise_equal"] for r in graphs(args.out, formats or GRAPH_FORMATS)) else 1
    if args.step == "unseen":
        return 0 if all(r["ok"] is not False for r in unseen(args.out, formats=formats or GRAPH_FORMATS)) else 1
    sanitize(formats or GRAPH_FORMATS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
