"""Graph-timed grouped FP8 calls with the MMA sums promoted to fp32 every 32, 64 and 128
columns (``GroupedConfig.fp8_promote_k``), each against the float64 reference, so that the
speed and the accuracy of fewer promotions are read side by side.

    python scripts/promote_probe.py [--shape qwen3_30b_a3b,deepseek_v3_tp8] [--formats fp8_tensor,fp8_block]
                                    [--tokens 512,2048,8192] [--out DIR]

Each case starts from the config fused_moe would run (tuned table or heuristic).  The bar
for a default is rel-L2 <= 0.5% in every case of ``fusedmoe check accuracy`` (its
grouped_promote64/128 variants); this script adds the time.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import torch

from fusedmoe import policy
from fusedmoe._runtime import device_name, num_sms
from fusedmoe.api import fused_moe
from fusedmoe.bench import harness
from fusedmoe.reference import moe_reference, rel_l2
from fusedmoe.shapes import get_shape
from fusedmoe.tune import _case_timer
from fusedmoe.weights import ExpertWeights


def accuracy(shape, fmt: str, m: int, configs: dict, dev: torch.device) -> dict[int, float]:
    """rel-L2 of each config's output against the replaying float64 reference (one routing)."""
    w13, w2 = harness.random_weights(shape, dev)
    w = ExpertWeights.from_dense(w13, w2, fmt)
    del w13, w2
    gen = torch.Generator(device=dev).manual_seed(m + 1)
    tw, ids = harness.random_routing(shape, m, gen, "softmax")
    x = torch.randn(m, shape.hidden_size, device=dev, generator=gen).to(torch.bfloat16)
    ref = moe_reference(x, w, tw, ids, quantize_activations=True)
    return {k: rel_l2(fused_moe(x, w, tw, ids, path="grouped", config=c, num_experts=shape.num_experts), ref)
            for k, c in configs.items()}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="qwen3_30b_a3b,deepseek_v3_tp8,mixtral_8x7b_tp2")
    ap.add_argument("--formats", default="fp8_tensor,fp8_block")
    ap.add_argument("--tokens", default="512,2048,8192")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    dev = torch.device("cuda")
    rows = []
    for name in args.shape.split(","):
        shape = get_shape(name)
        for fmt in args.formats.split(","):
            for m in map(int, args.tokens.split(",")):
                base = policy.select_config("grouped", m, shape.top_k, shape.num_local_experts, shape.hidden_size,
                                            shape.intermediate_size, fmt, device_name(dev), num_sms(dev))
                configs = {k: dataclasses.replace(base, fp8_promote_k=k) for k in (32, 64, 128)
                           if policy.legal("grouped", dataclasses.replace(base, fp8_promote_k=k), fmt)}
                errors = accuracy(shape, fmt, m, configs, dev)
                timer = _case_timer(shape, fmt, "grouped", m, dev)
                for k, cfg in configs.items():
                    us = round(timer(cfg), 1)
                    rows.append(dict(shape=name, format=fmt, m=m, promote_k=k, us=us, rel_l2=errors[k]))
                    print(f"{name} {fmt} M={m} promote {k:3d}: {us:9.1f} us, rel-L2 {errors[k] * 100:.3f}%",
                          flush=True)
                del timer
                torch.cuda.empty_cache()
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "promote_probe.json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
