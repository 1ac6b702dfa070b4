"""Thirty-sixth session: the layer on model shapes no table or rule was read from, and on odd
synthetic ones, on the GPU.  Per (shape, format, M): auto and both paths forced, each against the
float64 reference (the bounds of ``fusedmoe check accuracy``), on a NaN-poisoned ``out``, with
``shared_output`` and, for one shape in three, an expert window (this rank holds a middle slice of
the experts; the ids span all of them and -1).  Per (shape, format) one CUDA graph of auto at M=7
replayed on fresh inputs, bitwise against eager.  A shape a format cannot take must be refused
with a ValueError naming the argument; that is recorded, not failed.

    python benchmarks/results/H200/2026-12-06-s36/unseen_shapes.py OUT_DIR [--limit-s S]
"""

import json
import sys
import time
from pathlib import Path

import torch

from fusedmoe.api import choose_path, fused_moe, path_quantizes_activations
from fusedmoe.check import DEV, dense_weights
from fusedmoe.reference import cosine, moe_reference, rel_l2
from fusedmoe.routing import route
from fusedmoe.weights import ExpertWeights

# (name, E, top_k, H, I, activation): model layers not among the presets (I per TP rank), then odd ones
SHAPES = [
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
]
FORMATS = ("bf16", "fp8_tensor", "fp8_block", "w4a8")
TOKENS = (1, 7, 64, 333)


def main() -> int:
    out_dir = Path(sys.argv[1])
    limit = float(sys.argv[sys.argv.index("--limit-s") + 1]) if "--limit-s" in sys.argv else 1e9
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    gen = torch.Generator(device=DEV).manual_seed(36)
    rows = []
    log = open(out_dir / "unseen_shapes.log", "w")

    def record(row):
        rows.append(row)
        print(json.dumps(row), file=log, flush=True)
        if not row.get("ok", True):
            print("FAIL", json.dumps(row), flush=True)

    for si, (name, e, k, h, i, act) in enumerate(SHAPES):
        w13, w2 = dense_weights(e, h, i, gen)
        bias = act == "swiglu_oai"
        b13 = torch.randn(e, 2 * i, device=DEV, generator=gen) * 0.02 if bias else None
        b2 = torch.randn(e, h, device=DEV, generator=gen) * 0.02 if bias else None
        window = si % 3 == 1 and e >= 4  # this rank holds experts [lo, lo + n) of e
        lo, n = (e // 4, e // 2) if window else (0, e)
        for fmt in FORMATS:
            if time.time() - t0 > limit:
                break
            try:
                weights = ExpertWeights.from_dense(w13[lo:lo + n], w2[lo:lo + n], fmt,
                                                   w13_bias=None if b13 is None else b13[lo:lo + n],
                                                   w2_bias=None if b2 is None else b2[lo:lo + n])
            except ValueError as ex:
                record(dict(shape=name, format=fmt, refused=str(ex)[:200]))
                continue
            for m in TOKENS:
                logits = torch.randn(m, e, device=DEV, generator=gen)
                tw, ids = route(logits, k)
                ids[0, 0] = -1  # a dropped route
                x = torch.randn(m, h, device=DEV, generator=gen).to(torch.bfloat16)
                shared = torch.randn(m, h, device=DEV, generator=gen).to(torch.bfloat16)
                auto = choose_path(m, k, weights)
                refs = {}
                for path in ("auto", "route_direct", "grouped"):
                    real = auto if path == "auto" else path
                    out = torch.full_like(x, float("nan"))
                    try:
                        fused_moe(x, weights, tw, ids, expert_offset=lo, num_experts=e, shared_output=shared,
                                  out=out, path=path, activation=act)
                    except ValueError as ex:
                        record(dict(shape=name, format=fmt, M=m, path=path, refused=str(ex)[:200]))
                        continue
                    q = path_quantizes_activations(real, fmt)
                    if q not in refs:
                        refs[q] = moe_reference(x, weights, tw, ids, expert_offset=lo, shared_output=shared,
                                                quantize_activations=q, activation=act)
                    r, c = rel_l2(out, refs[q]), cosine(out, refs[q])
                    nan = bool(torch.isnan(out).any())
                    record(dict(shape=name, format=fmt, M=m, path=path, ran=real, window=window, rel_l2=r, cosine=c,
                                nan=nan, ok=not nan and r <= 5e-3 and c >= 0.99995))
            # one graph of auto at M=7, replayed on fresh inputs
            m = 7
            x = torch.randn(m, h, device=DEV, generator=gen).to(torch.bfloat16)
            tw, ids = route(torch.randn(m, e, device=DEV, generator=gen), k)
            out = torch.empty_like(x)
            run = lambda: fused_moe(x, weights, tw, ids, expert_offset=lo, num_experts=e, out=out,  # noqa: E731
                                    activation=act, check_ids=False)
            run()
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                run()
            equal = True
            for _ in range(2):
                ntw, nids = route(torch.randn(m, e, device=DEV, generator=gen), k)
                x.normal_(generator=gen), tw.copy_(ntw), ids.copy_(nids)
                out.fill_(float("nan"))
                g.replay()
                torch.cuda.synchronize()
                equal &= torch.equal(out, fused_moe(x, weights, tw, ids, expert_offset=lo, num_experts=e,
                                                    activation=act))
            record(dict(shape=name, format=fmt, M=m, path="auto_graph", ok=bool(equal)))
        del w13, w2
        torch.cuda.empty_cache()
    (out_dir / "unseen_shapes.json").write_text(json.dumps(dict(
        meta=dict(date=time.strftime("%Y-%m-%d"), gpu=torch.cuda.get_device_name(), torch=torch.__version__,
                  triton=__import__("triton").__version__, command=" ".join(sys.argv), seconds=time.time() - t0),
        rows=rows), indent=1))
    checked = [r for r in rows if "ok" in r]
    bad = [r for r in checked if not r["ok"]]
    print(f"{len(checked)} checked, {len(bad)} failed, {sum('refused' in r for r in rows)} refused, "
          f"{time.time() - t0:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
