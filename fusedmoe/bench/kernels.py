"""Where one fused_moe call spends its GPU time: each kernel's device time (torch.profiler),
against the layer's HBM floor and the graph-timed call.

    python -m fusedmoe.bench.kernels [--shape peers] [--formats bf16,fp8_tensor,fp8_block]
                                     [--tokens 1,8] [--path auto|...|grouped_gluon[_ws[_q]]|torch_grouped_mm] [--calls 20]
                                     [--pdl] [--out DIR]

For each case: weight copies rotated so that >= 200 MB of other weights stream between two
uses of a copy (as ``fusedmoe bench``), one call per copy to compile, then ``--calls`` eager
calls under the profiler, launched without PDL (``_pdl.plain_launches``; under PDL a kernel
launched early counts its wait for the previous grid as its own time; ``--pdl`` keeps it).
Reported per kernel: mean device microseconds per call.  Beside them: their sum, the
graph-timed call as served, PDL included (``harness.graph_us``: what launches and gaps add) and
the floor (active experts' bytes / measured copy bandwidth).  Writes kernels.md / .json with
--out.  ``grouped_gluon`` / ``grouped_gluon_ws`` / ``grouped_gluon_ws_q``: the grouped path with
the Gluon GEMMs, the one-warpgroup or the warp-specialised set with gate/up tiles of 64 or 128
columns (fp8_tensor on sm_90, ``policy.GLUON_SETS``, walking as many rows per weight tile as the
served config's group_m does).
"""

from __future__ import annotations

import argparse
import contextlib
import json
from collections import defaultdict
from pathlib import Path

import torch

from .. import policy
from .._pdl import plain_launches
from .._runtime import device_name, num_sms
from ..api import fused_moe
from ..shapes import PEER_SHAPES, get_shape
from ..weights import ExpertWeights
from . import harness
from .floor import floor_us, moved_bytes
from .peers import PEERS, get_peer


def kernel_times(calls: list, repeats: int) -> dict[str, float]:
    """Mean device microseconds per call of each kernel that ``calls`` (run round-robin,
    ``repeats`` in all) launch, from torch.profiler's CUDA activity."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(repeats):
            calls[i % len(calls)]()
        torch.cuda.synchronize()
    totals: dict[str, float] = defaultdict(float)
    for evt in prof.events():
        if evt.device_type == torch.autograd.DeviceType.CUDA:
            totals[evt.name] += evt.device_time_total
    return {name: us / repeats for name, us in sorted(totals.items(), key=lambda kv: -kv[1])}


def run(shape_names: list[str], formats: list[str], tokens: list[int], path: str, repeats: int,
        pdl: bool = False) -> list[dict]:
    dev = torch.device("cuda")
    bandwidth = harness.measure_copy_bandwidth(dev)
    rows = []
    for name in shape_names:
        shape = get_shape(name)
        w13, w2 = harness.random_weights(shape, dev)
        for fmt in formats:
            w0 = ExpertWeights.from_dense(w13, w2, fmt)
            for m in tokens:
                active = harness.expected_active_experts(shape, m)
                n_copies = min(16, harness.copies_needed(active * w0.expert_nbytes, 200e6))
                copies = [w0] + [w0.clone() for _ in range(n_copies - 1)]
                gen = torch.Generator(device=dev).manual_seed(m)
                routings = [harness.random_routing(shape, m, gen, "softmax") for _ in copies]
                x = torch.randn(m, shape.hidden_size, device=dev, generator=gen).to(torch.bfloat16)
                out = torch.empty_like(x)
                if path in PEERS:
                    peer = get_peer(path)
                    calls = [lambda w=w, r=r: peer(x, w, r[0], r[1], 0, shape.num_experts) for w, r in zip(copies, routings)]
                else:
                    kw = dict(path=path, out=out, check_ids=False, num_experts=shape.num_experts)
                    if path in GLUON_PATHS:
                        kw.update(path="grouped", config=_gluon_config(shape, fmt, m, dev, GLUON_PATHS[path]))
                    calls = [lambda w=w, r=r: fused_moe(x, w, r[0], r[1], **kw) for w, r in zip(copies, routings)]
                with contextlib.nullcontext() if pdl else plain_launches():
                    for c in calls:
                        c()
                    per_kernel = kernel_times(calls, repeats)
                for c in calls:  # the launches as served, for the graph
                    c()
                graph = harness.graph_us(lambda: [c() for c in calls], calls=max(1, 20 // len(calls))) / len(calls)
                floor = floor_us(moved_bytes(active, w0.expert_nbytes, m, shape.hidden_size), bandwidth)
                rows.append(dict(shape=name, format=fmt, tokens=m, path=path, pdl_profiled=pdl, kernels=per_kernel,
                                 kernel_sum_us=sum(per_kernel.values()), graph_us=graph, floor_us=floor))
                print(f"{name} {fmt} M={m}: graph {graph:.1f} us, kernels {rows[-1]['kernel_sum_us']:.1f} us, "
                      f"floor {floor:.1f} us | " + ", ".join(f"{k[:40]} {v:.1f}" for k, v in per_kernel.items()),
                      flush=True)
                del copies
            del w0
        del w13, w2
        torch.cuda.empty_cache()
    return rows


# --path: the Gluon tile set (BLOCK_M, gate/up columns)
GLUON_PATHS = {"grouped_gluon": (64, 64), "grouped_gluon_ws": (128, 64), "grouped_gluon_ws_q": (128, 128)}


def _gluon_config(shape, fmt: str, m: int, dev: torch.device, gluon_set: tuple) -> policy.GroupedConfig:
    """The Gluon GEMMs' config of ``gluon_set`` (BLOCK_M, gate/up columns), its group_m walking
    as many rows per weight tile as the grouped config served at this case."""
    facts = (m, shape.top_k, shape.num_local_experts, shape.hidden_size, shape.intermediate_size, fmt)
    return policy.gluon_config_like(policy.select_config("grouped", *facts, device_name(dev), num_sms(dev)),
                                    *gluon_set)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="peers", help="preset names, comma-separated, or 'peers'")
    ap.add_argument("--formats", default="bf16,fp8_tensor,fp8_block")
    ap.add_argument("--tokens", default="1,8")
    ap.add_argument("--path", default="auto",
                    help="auto, route_direct, grouped, grouped_gluon, grouped_gluon_ws[_q], or a peer (torch_grouped_mm)")
    ap.add_argument("--calls", type=int, default=20, help="profiled calls per case")
    ap.add_argument("--pdl", action="store_true", help="profile the launches as served, PDL included (each "
                    "early-launched kernel's time then includes its wait for the previous grid)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("bench.kernels: needs a CUDA GPU (it reads kernel times from the profiler)")
        return 2
    names = [n for s in args.shape.split(",") for n in (PEER_SHAPES if s == "peers" else [s])]
    rows = run(names, args.formats.split(","), [int(t) for t in args.tokens.split(",")], args.path, args.calls,
               args.pdl)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        meta = dict(device=torch.cuda.get_device_name(), torch=torch.__version__,
                    triton=__import__("triton").__version__)
        (args.out / "kernels.json").write_text(json.dumps(dict(meta, rows=rows), indent=1))
        md = [f"Per-kernel device time of one call ({meta['device']}, torch {meta['torch']}, Triton {meta['triton']})",
              "", "| shape | format | M | floor us | graph us | kernels us | per kernel (us) |", "|---|---|---|---|---|---|---|"]
        md += [f"| {r['shape']} | {r['format']} | {r['tokens']} | {r['floor_us']:.1f} | {r['graph_us']:.1f} | "
               f"{r['kernel_sum_us']:.1f} | " + "; ".join(f"{k} {v:.1f}" for k, v in r["kernels"].items()) + " |"
               for r in rows]
        (args.out / "kernels.md").write_text("\n".join(md) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
