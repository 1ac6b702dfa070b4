"""Throw-away (27th session): a decode step's routing + MoE layer with the routing kernel
launched with PDL and without, graph-timed the bench's way (20 calls, weight copies rotated
past L2, each call on its own logits; the router matmul is outside the graph).  Rounds in
turn: plain, PDL, PDL, plain.  Writes routing_pdl_ab.json / .md into the folder given.

    python benchmarks/results/H200/2026-12-04-s27/routing_pdl_ab.py OUT_DIR
"""
import json
import math
import sys
from pathlib import Path

import torch

import fusedmoe.routing as routing_mod
from fusedmoe.api import fused_moe
from fusedmoe.bench.harness import copies_needed, graph_us, random_weights
from fusedmoe.shapes import PRESETS
from fusedmoe.weights import ExpertWeights

out_dir = Path(sys.argv[1])
out_dir.mkdir(parents=True, exist_ok=True)
dev = torch.device("cuda")
plain_launch = lambda device: {}  # noqa: E731
pdl_launch = routing_mod.pdl_launch
rows = []
for name in ("qwen3_30b_a3b", "deepseek_v3_tp8", "hunyuan_tp8", "gpt_oss_120b_tp4"):
    shape = PRESETS[name]
    for fmt in ("bf16", "fp8_tensor"):
        dense = random_weights(shape, dev, seed=0)
        w0 = ExpertWeights.from_dense(*dense, fmt)
        del dense
        per_call = 8 * 3 * shape.hidden_size * shape.intermediate_size * (2 if fmt == "bf16" else 1)
        n = min(8, copies_needed(per_call, 200e6))
        copies = [w0] + [ExpertWeights.from_dense(*random_weights(shape, dev, seed=c), fmt) for c in range(1, n)]
        for m in (1, 2, 8):
            x = torch.randn(m, shape.hidden_size, device=dev, dtype=torch.bfloat16)
            logits = [torch.randn(m, shape.num_experts, device=dev) for _ in range(20)]

            def calls():
                for i in range(20):
                    tw, ids = routing_mod.route(logits[i], shape.top_k, renormalize=True)
                    fused_moe(x, copies[i % n], tw, ids, check_ids=False)

            t = {}
            for form in ("plain", "pdl", "pdl", "plain"):
                routing_mod.pdl_launch = plain_launch if form == "plain" else pdl_launch
                t.setdefault(form, []).append(graph_us(calls, calls=1, replays=10) / 20)
            routing_mod.pdl_launch = pdl_launch
            r = dict(shape=name, format=fmt, tokens=m, plain_us=t["plain"], pdl_us=t["pdl"],
                     ratio=math.sqrt(t["pdl"][0] * t["pdl"][1] / (t["plain"][0] * t["plain"][1])))
            rows.append(r)
            print(r, flush=True)
        del copies, w0
        torch.cuda.empty_cache()
g = math.exp(sum(math.log(r["ratio"]) for r in rows) / len(rows))
lines = ["| shape | format | M | plain us | PDL us | PDL / plain |", "|---|---|---|---|---|---|"]
lines += [f"| {r['shape']} | {r['format']} | {r['tokens']} | {r['plain_us'][0]:.2f}, {r['plain_us'][1]:.2f} | "
          f"{r['pdl_us'][0]:.2f}, {r['pdl_us'][1]:.2f} | {r['ratio']:.3f} |" for r in rows]
lines += ["", f"{len(rows)} cases: geomean PDL / plain {g:.4f}, {sum(r['ratio'] < 1 for r in rows)} faster"]
(out_dir / "routing_pdl_ab.md").write_text("\n".join(lines) + "\n")
(out_dir / "routing_pdl_ab.json").write_text(json.dumps(rows, indent=1) + "\n")
print("\n".join(lines[-1:]))
