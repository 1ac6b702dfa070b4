"""Graph-timed grouped calls with variants of the served config: FP8 MMA sums promoted to fp32
every 32, 64 and 128 columns or never (``GroupedConfig.fp8_promote_k`` 0), other BLOCK_M,
gate/up BLOCK_N or pipeline depths, each with its rel-L2 against the float64 reference (the
tuner's case timer checks and keeps it), so that speed and accuracy are read side by side.

    python scripts/promote_probe.py [--shape qwen3_30b_a3b,deepseek_v3_tp8] [--formats fp8_tensor,fp8_block]
                                    [--tokens 512,2048,8192] [--variants 32,64,128,0/128] [--out DIR]

Each case starts from the config fused_moe would run (tuned table or heuristic), timed first;
a variant "P" sets the promotion interval P, "P/B" also BLOCK_M B (0: never promote, which lets
an FP8 gate/up tile of 128 rows hold its accumulators without spilling), "P/B/N" also the
gate/up BLOCK_N N ("128//64": the entry's BLOCK_M, gate/up tiles of 64 with their own
requantisation), "P/B/N/S" also num_stages S of both tiles; an empty field keeps the served
value ("///5": 5 stages).  Variants the kernels do not take (``policy.legal``: a Gluon
config's tiles are fixed) are skipped.  The bar for a default is rel-L2 <= 0.5% in every case
of ``fusedmoe check accuracy`` (its grouped_promote32/64 variants beside the rule's choice);
this script adds the time.  Sixteenth session: 5 stages, or 6 in the down, at Mixtral TP2
M=128 (32 rows per expert) took 1.036-1.072x the served 4 stages' time (results README).
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
from fusedmoe.shapes import get_shape
from fusedmoe.tune import _case_timer, apply


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="qwen3_30b_a3b,deepseek_v3_tp8,mixtral_8x7b_tp2")
    ap.add_argument("--formats", default="fp8_tensor,fp8_block")
    ap.add_argument("--tokens", default="512,2048,8192")
    ap.add_argument("--variants", default="32,64,128",
                    help="promotion intervals, 'P/B' with BLOCK_M B, 'P/B/N' also gate/up BLOCK_N N")
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
                configs = [base]
                for v in args.variants.split(","):
                    promote, bm, gate_n, stages = (v.split("/") + ["", "", ""])[:4]
                    cfg = dataclasses.replace(base, fp8_promote_k=int(promote)) if promote else base
                    cfg = apply(cfg, "block_m", int(bm)) if bm else cfg
                    cfg = apply(cfg, "gate_up", dataclasses.replace(cfg.gate_up, block_n=int(gate_n))) if gate_n else cfg
                    if stages:
                        cfg = dataclasses.replace(cfg, gate_up=dataclasses.replace(cfg.gate_up, num_stages=int(stages)),
                                                  down=dataclasses.replace(cfg.down, num_stages=int(stages)))
                    if cfg not in configs:
                        configs.append(cfg)
                errors: dict = {}
                timer = _case_timer(shape, fmt, "grouped", m, dev, errors)
                for cfg in filter(lambda c: policy.legal("grouped", c, fmt), configs):
                    try:
                        us = round(timer(cfg), 1)
                    except RuntimeError as e:  # over the tuner's 1% bound (or no graph): reported, not timed
                        print(f"  {e}", flush=True)
                        us = None
                    rows.append(dict(shape=name, format=fmt, m=m, served=cfg == base, promote_k=cfg.fp8_promote_k,
                                     block_m=cfg.block_m, gate_up_n=cfg.gate_up.block_n,
                                     stages=[cfg.gate_up.num_stages, cfg.down.num_stages], us=us, rel_l2=errors.get(cfg)))
                    err = f"{errors[cfg] * 100:.3f}%" if cfg in errors else "-"
                    print(f"{name} {fmt} M={m}{' (served)' if cfg == base else ''} promote {cfg.fp8_promote_k:3d} "
                          f"BLOCK_M {cfg.block_m:3d} gate/up {cfg.gate_up.block_n} stages "
                          f"{cfg.gate_up.num_stages}/{cfg.down.num_stages}: {us} us, rel-L2 {err}", flush=True)
                del timer
                torch.cuda.empty_cache()
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "promote_probe.json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
