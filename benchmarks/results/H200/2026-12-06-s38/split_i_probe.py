"""A split-I decode layer against the route-direct path (thirty-eighth session probe, throw-away).

    python benchmarks/results/H200/2026-12-06-s38/split_i_probe.py --out DIR [--compile-only]

Route-direct runs gate/up, then down: the down grid cannot stream its weights (a third of the
layer's bytes) before every gate/up program has finished, and each of the two kernels ramps up
and drains on its own (fourth session, qwen3 fp8_tensor M=1: gate/up 9.0 us for a 5.9 us floor,
down 5.8 for 3.0).  Here program (route r, slice s of I) computes its slice of act(gate) * up
over all of H and at once multiplies it by the down columns of that slice: no program waits for
another, and every weight byte streams in one grid.  Each program writes a partial [H] (fp32);
a second launch (PDL) sums the k * I/BI partials of each token in a fixed order into ``out``.

Cases: bf16 and fp8_tensor (w8a16) weights, M 1, 2, 4, on Qwen3-30B, DeepSeek-V3 TP8, Hunyuan
TP8 and GPT-OSS TP4 shapes; several (BI, BK, BH, warps) tiles.  Each timed as ``fusedmoe bench``
times the layer (calls in one CUDA graph, each on its own routing and on a weight copy rotated
so that the weights come from HBM), beside ``fused_moe(path="auto")`` on the same inputs, and
checked against it (rel-L2).  Writes split_i.json / split_i.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import torch
import triton
import triton.language as tl

from fusedmoe import ExpertWeights, fused_moe
from fusedmoe._pdl import pdl_enter, pdl_launch_dependents, pdl_wait

SHAPES = {  # name: (E, top_k, H, I)
    "qwen3_30b_a3b": (128, 8, 2048, 768),
    "deepseek_v3_tp8": (256, 8, 7168, 256),
    "hunyuan_tp8": (192, 8, 4096, 192),
    "gpt_oss_120b_tp4": (128, 4, 2880, 720),
}
TILES = [(16, 512, 256, 4), (16, 512, 256, 8), (32, 256, 256, 4), (32, 512, 128, 4), (32, 512, 256, 8), (64, 256, 128, 4)]


@triton.jit
def _split_i_kernel(x_ptr, w13_ptr, w13s_ptr, w2_ptr, w2s_ptr, ids_ptr, tw_ptr, part_ptr, H, I, NS,
                    TOP_K: tl.constexpr, BI: tl.constexpr, BK: tl.constexpr, BH: tl.constexpr,
                    FP8: tl.constexpr, PDL: tl.constexpr):
    """part[r, s, :] = w2[e][:, slice s] @ (tw[r] * silu(gate_s . x_t) * (up_s . x_t))."""
    r = tl.program_id(0)
    s = tl.program_id(1)
    pdl_enter(PDL)
    t = r // TOP_K
    e = tl.load(ids_ptr + r).to(tl.int64)
    rows = s * BI + tl.arange(0, BI)
    rm = rows < I
    kk = tl.arange(0, BK)
    w13 = w13_ptr + e * (2 * I) * H
    g = tl.zeros([BI], tl.float32)
    u = tl.zeros([BI], tl.float32)
    for k0 in range(0, H, BK):
        k = k0 + kk
        km = k < H
        xv = tl.load(x_ptr + t * H + k, mask=km, other=0.0).to(tl.float32)
        m = rm[:, None] & km[None, :]
        wg = tl.load(w13 + rows[:, None] * H + k[None, :], mask=m, other=0.0).to(tl.float32)
        wu = tl.load(w13 + (I + rows)[:, None] * H + k[None, :], mask=m, other=0.0).to(tl.float32)
        g += tl.sum(wg * xv[None, :], axis=1)
        u += tl.sum(wu * xv[None, :], axis=1)
    if FP8:
        sc = tl.load(w13s_ptr + e)
        g *= sc
        u *= sc
    a = g / (1.0 + tl.exp(-g)) * u * tl.load(tw_ptr + r)
    if FP8:
        a *= tl.load(w2s_ptr + e)
    w2 = w2_ptr + e * H * I
    hh = tl.arange(0, BH)
    for h0 in range(0, H, BH):
        h = h0 + hh
        hm = h < H
        w = tl.load(w2 + h[:, None] * I + rows[None, :], mask=hm[:, None] & rm[None, :], other=0.0).to(tl.float32)
        tl.store(part_ptr + (r * NS + s) * H + h, tl.sum(w * a[None, :], axis=1), mask=hm)


@triton.jit
def _reduce_kernel(part_ptr, out_ptr, H, NPART, P_PAD: tl.constexpr, BH: tl.constexpr, PDL: tl.constexpr):
    """out[t, h] = sum_p part[t, p, h] (bf16), p = route-major then slice: a fixed order."""
    t = tl.program_id(0)
    h = tl.program_id(1) * BH + tl.arange(0, BH)
    p = tl.arange(0, P_PAD)
    if PDL:
        pdl_wait()
        pdl_launch_dependents()
    v = tl.load(part_ptr + (t * NPART + p[:, None]) * H + h[None, :], mask=(p[:, None] < NPART) & (h[None, :] < H),
                other=0.0)
    tl.store(out_ptr + t * H + h, tl.sum(v, axis=0).to(tl.bfloat16), mask=h < H)


def split_i(x, w: ExpertWeights, tw, ids, part, out, tile):
    bi, bk, bh, warps = tile
    m, k = ids.shape
    e_, i2, hsz = w.w13.shape
    isz = i2 // 2
    ns = triton.cdiv(isz, bi)
    fp8 = w.w13_scale is not None
    scales = (w.w13_scale, w.w2_scale) if fp8 else (tw, tw)
    _split_i_kernel[(m * k, ns)](x, w.w13, scales[0], w.w2, scales[1], ids, tw, part, hsz, isz, ns,
                                 TOP_K=k, BI=bi, BK=bk, BH=bh, FP8=fp8, PDL=True, num_warps=warps, launch_pdl=True)
    npart = k * ns
    p_pad = triton.next_power_of_2(npart)
    bh2 = max(16, min(256, 8192 // p_pad))
    _reduce_kernel[(m, triton.cdiv(hsz, bh2))](part, out, hsz, npart, P_PAD=p_pad, BH=bh2, PDL=True, num_warps=4,
                                               launch_pdl=True)
    return out


def _graph_us(calls, replays=10):
    for c in calls:
        c()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for c in calls:
            c()
    g.replay()
    torch.cuda.synchronize()
    times = []
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(replays):
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / len(calls))
    return statistics.median(times)


def run_case(name, fmt, m, tiles, n_calls=40, target_bytes=150e6):
    e, k, hsz, isz = SHAPES[name]
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(0)
    w13 = torch.randn(e, 2 * isz, hsz, device=dev, generator=gen) * 0.02
    w2 = torch.randn(e, hsz, isz, device=dev, generator=gen) * 0.02
    w0 = ExpertWeights.from_dense(w13, w2, fmt)
    del w13, w2
    # copies rotated so that >= target_bytes of other weights stream between two uses of one
    copies = max(1, min(8, -(-int(target_bytes) // (k * w0.expert_nbytes)) + 1))
    ws = [w0] + [w0.clone() for _ in range(copies - 1)]
    xs = [torch.randn(m, hsz, device=dev, generator=gen).to(torch.bfloat16) for _ in range(n_calls)]
    idss = [torch.rand(m, e, device=dev, generator=gen).argsort(1)[:, :k].to(torch.int32).contiguous()
            for _ in range(n_calls)]
    tws = [torch.softmax(torch.randn(m, k, device=dev, generator=gen), 1) for _ in range(n_calls)]
    outs = [torch.empty(m, hsz, device=dev, dtype=torch.bfloat16) for _ in range(n_calls)]
    rows = []
    ref = [fused_moe(xs[i], ws[i % copies], tws[i], idss[i], check_ids=False) for i in range(n_calls)]
    base = _graph_us([lambda i=i: fused_moe(xs[i], ws[i % copies], tws[i], idss[i], out=outs[i], check_ids=False)
                      for i in range(n_calls)])
    rows.append(dict(shape=name, format=fmt, M=m, impl="auto", tile=None, us=base, rel_l2=0.0))
    for tile in tiles:
        ns = triton.cdiv(isz, tile[0])
        parts = [torch.empty(m * k * ns, hsz, device=dev) for _ in range(2)]
        calls = [lambda i=i: split_i(xs[i], ws[i % copies], tws[i], idss[i], parts[i % 2], outs[i], tile)
                 for i in range(n_calls)]
        us = _graph_us(calls)
        for c in calls:
            c()
        err = max(float((outs[i].float() - ref[i].float()).norm() / ref[i].float().norm()) for i in range(n_calls))
        rows.append(dict(shape=name, format=fmt, M=m, impl="split_i", tile=list(tile), us=us, rel_l2=err))
    best = min(rows[1:], key=lambda r: r["us"])
    print(f"{name} {fmt} M={m}: auto {base:.2f} us, split-I best {best['us']:.2f} us {best['tile']} "
          f"({base / best['us']:.3f}x), rel-L2 <= {max(r['rel_l2'] for r in rows):.1e}", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--formats", default="fp8_tensor,bf16")
    ap.add_argument("--tokens", default="1,2,4")
    ap.add_argument("--compile-only", action="store_true", help="one call per case and tile (fills the cache)")
    a = ap.parse_args()
    rows = []
    for name in a.shapes.split(","):
        for fmt in a.formats.split(","):
            for m in (int(v) for v in a.tokens.split(",")):
                rows += run_case(name, fmt, m, TILES, n_calls=2 if a.compile_only else 40)
    a.out.mkdir(parents=True, exist_ok=True)
    meta = dict(device=torch.cuda.get_device_name(), torch=torch.__version__, triton=triton.__version__)
    (a.out / "split_i.json").write_text(json.dumps(dict(meta, rows=rows), indent=1))
    md = [f"Split-I decode probe ({meta['device']}, torch {meta['torch']}, Triton {meta['triton']}); graph us", "",
          "| shape | format | M | auto us | split-I best us | tile (BI, BK, BH, warps) | auto / split-I | worst rel-L2 |",
          "|---|---|---|---|---|---|---|---|"]
    for key in dict.fromkeys((r["shape"], r["format"], r["M"]) for r in rows):
        rs = [r for r in rows if (r["shape"], r["format"], r["M"]) == key]
        best = min(rs[1:], key=lambda r: r["us"])
        md.append(f"| {key[0]} | {key[1]} | {key[2]} | {rs[0]['us']:.2f} | {best['us']:.2f} | {best['tile']} | "
                  f"{rs[0]['us'] / best['us']:.3f} | {max(r['rel_l2'] for r in rs):.1e} |")
    (a.out / "split_i.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
