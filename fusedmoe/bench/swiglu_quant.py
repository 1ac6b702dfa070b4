"""SwiGLU fused with FP8 group quantisation against the two separate kernels (issue 4, item 3).

    python -m fusedmoe.bench.swiglu_quant [--inter 256] [--top-k 8] [--tokens 1,4,16,32] [--out DIR]

For each M: gate_up [M*k, 2I] bf16 -> (e4m3 [M*k, I], scales [M*k, I/128]); checks that the
fused kernel equals swiglu (fp32) + quantize_rows bit for bit, and times both in CUDA graphs
(median of replays of 50 captured calls).  Writes swiglu_quant.md / .json with --out.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from ..epilogue import quantize_rows, swiglu, swiglu_quant
from .harness import graph_us


def run(inter: int, top_k: int, tokens: list[int]) -> list[dict]:
    rows = []
    for m in tokens:
        gu = torch.randn(m * top_k, 2 * inter, device="cuda").to(torch.bfloat16) * 3
        q, s = swiglu_quant(gu)
        q_sep, s_sep = quantize_rows(swiglu(gu, torch.float32))
        equal = torch.equal(s, s_sep) and torch.equal(q.view(torch.uint8), q_sep.view(torch.uint8))
        fused = graph_us(lambda: swiglu_quant(gu))
        separate = graph_us(lambda: quantize_rows(swiglu(gu, torch.float32)))
        rows.append(dict(M=m, rows=m * top_k, inter=inter, fused_us=fused, separate_us=separate,
                         reduction_pct=100 * (1 - fused / separate), bitwise_equal=equal))
        print(f"M={m:3d}: fused {fused:6.2f} us  separate {separate:6.2f} us  "
              f"-{rows[-1]['reduction_pct']:.0f}%  bitwise equal: {equal}", flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inter", type=int, default=256, help="I per expert (DeepSeek-V3 TP8: 256)")
    ap.add_argument("--top-k", type=int, default=8)
    ap.add_argument("--tokens", default="1,4,16,32")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("swiglu_quant bench: needs a CUDA GPU")
        return 2
    rows = run(args.inter, args.top_k, [int(t) for t in args.tokens.split(",")])
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "swiglu_quant.json").write_text(json.dumps(dict(device=torch.cuda.get_device_name(),
                                                                    torch=torch.__version__, rows=rows), indent=1))
        md = ["| M | rows | fused us | separate us | reduction | bitwise equal |", "|---|---|---|---|---|---|"]
        md += [f"| {r['M']} | {r['rows']} | {r['fused_us']:.2f} | {r['separate_us']:.2f} | {r['reduction_pct']:.0f}% | "
               f"{r['bitwise_equal']} |" for r in rows]
        (args.out / "swiglu_quant.md").write_text("\n".join(md) + "\n")
    return 0 if all(r["bitwise_equal"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
