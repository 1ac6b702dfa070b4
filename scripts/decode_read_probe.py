"""Probe: how near the floor can route-direct's launch structure get with the math taken out?

For decode cases (PEERS shapes, bf16 and fp8_tensor, M 1/2/8) it times, the bench's way (20
calls in a CUDA graph, weight copies and routings rotated, median of replays), five things that
read the same expert weight bytes:

- ``ours``: fused_moe on the route-direct path with the config auto serves;
- ``read2``: that config's two launches (gate/up grid and tiles, then down grid and tiles, PDL
  as configured) with each program xor-reducing its tile's 32-bit words instead of multiplying
  (the GEMV tile shapes also where the config's gate/up is the tensor-core form);
- ``read1``: the same programs in one launch, no dependency between the two halves;
- ``ticket``: one launch with the dependency (programs take tickets, gate/up items first; down
  items load their first tile, then spin until their token's gate/up items are counted done);
- ``stream``: one launch streaming the same number of bytes from one contiguous buffer (the
  best of a few block sizes): the single-launch ceiling for that many bytes.

ours / read2 is what the math costs; read2 / read1 what the launch boundary costs; ticket /
read2 what an in-kernel dependency costs against PDL; read1 / stream what the scattered row
tiles cost.  Thirteenth session (results README): median % of the floor over 30 cases ours 78,
read2 77, read1 78, ticket 68, stream 99.  Prints a markdown table; JSON to --out.

    python scripts/decode_read_probe.py --out R/read_probe.json     # needs a CUDA GPU
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from functools import partial
from pathlib import Path

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fusedmoe import policy, shapes  # noqa: E402
from fusedmoe._runtime import device_name, num_sms  # noqa: E402
from fusedmoe.bench import harness  # noqa: E402
from fusedmoe.weights import ExpertWeights  # noqa: E402


@triton.jit
def _read_gate_up(w_ptr, ids_ptr, sink_ptr, pid, WORDS_H, I, R, stride_we, stride_wn,
                  SPLIT_K: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_W: tl.constexpr):
    """route_gate_up_kernel's program ``pid`` (route r, tile nt, split s) reading its
    [2*BLOCK_N, K range] weight words (w viewed as int32 [E, 2I, WORDS_H]) and xor-reducing them (a sum the compiler cannot drop)."""
    r = pid % R
    rest = pid // R
    nt = rest // SPLIT_K
    s = rest % SPLIT_K
    j = tl.arange(0, 2 * BLOCK_N)
    n = nt * BLOCK_N + j % BLOCK_N
    rows = ((j // BLOCK_N) * I + n).to(tl.int64)
    e = tl.load(ids_ptr + r).to(tl.int64)
    k_per = tl.cdiv(tl.cdiv(WORDS_H, SPLIT_K), BLOCK_W) * BLOCK_W
    k_lo = s * k_per
    k_hi = tl.minimum(WORDS_H, k_lo + k_per)
    acc = tl.zeros([2 * BLOCK_N], dtype=tl.int32)
    base = w_ptr + e * stride_we + rows[:, None] * stride_wn
    for k0 in range(k_lo, k_hi, BLOCK_W):
        kk = k0 + tl.arange(0, BLOCK_W)
        acc ^= tl.xor_sum(tl.load(base + kk[None, :], mask=(n < I)[:, None] & (kk < k_hi)[None, :], other=0), axis=1)
    tl.store(sink_ptr + pid, tl.xor_sum(acc, axis=0))


@triton.jit
def _read_down(w_ptr, ids_ptr, sink_ptr, pid, H, WORDS_I, R, stride_we, stride_wn, TOPK: tl.constexpr,
               BLOCK_N: tl.constexpr, BLOCK_W: tl.constexpr, TILES: tl.constexpr, PDL: tl.constexpr,
               flag_ptr=None, target=0, SPIN: tl.constexpr = False):
    """route_down_kernel's program ``pid`` (token t, TILES tiles of BLOCK_N rows of H) reading its
    routes' [KP, BLOCK_N, I] weight words per tile (w viewed as int32 [E, H, WORDS_I]) and
    xor-reducing them (a sum the compiler cannot drop); with PDL the first step's loads are issued before the wait, as there."""
    KP: tl.constexpr = triton.next_power_of_2(TOPK)
    t = pid % (R // TOPK)
    t0 = (pid // (R // TOPK)) * TILES
    jj = tl.arange(0, KP)
    e = tl.load(ids_ptr + t * TOPK + jj, mask=jj < TOPK, other=0).to(tl.int64)
    held = jj < TOPK
    steps = tl.cdiv(WORDS_I, BLOCK_W)
    acc = tl.zeros([KP, BLOCK_N], dtype=tl.int32)
    for it in range(0, TILES * steps):
        n = (t0 + it // steps) * BLOCK_N + tl.arange(0, BLOCK_N)
        kk = (it % steps) * BLOCK_W + tl.arange(0, BLOCK_W)
        ptrs = w_ptr + e[:, None, None] * stride_we + n[None, :, None].to(tl.int64) * stride_wn + kk[None, None, :]
        ok = held[:, None, None] & (n < H)[None, :, None] & (kk < WORDS_I)[None, None, :]
        w = tl.load(ptrs, mask=ok, other=0)
        if PDL:
            if it == 0:
                gdc_wait()
        if SPIN:
            if it == 0:
                while tl.atomic_add(flag_ptr + t, 0, sem="acquire") < target:
                    pass
        acc ^= tl.xor_sum(w, axis=2)
    tl.store(sink_ptr + pid, tl.xor_sum(tl.xor_sum(acc, axis=1), axis=0))


@triton.jit
def read_gate_up_kernel(w_ptr, ids_ptr, sink_ptr, WORDS_H, I, R, stride_we, stride_wn,
                        SPLIT_K: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_W: tl.constexpr, PDL: tl.constexpr):
    if PDL:
        gdc_wait()
        gdc_launch_dependents()
    _read_gate_up(w_ptr, ids_ptr, sink_ptr, tl.program_id(0), WORDS_H, I, R, stride_we, stride_wn,
                  SPLIT_K, BLOCK_N, BLOCK_W)


@triton.jit
def read_down_kernel(w_ptr, ids_ptr, sink_ptr, H, WORDS_I, R, stride_we, stride_wn, TOPK: tl.constexpr,
                     BLOCK_N: tl.constexpr, BLOCK_W: tl.constexpr, TILES: tl.constexpr, PDL: tl.constexpr):
    _read_down(w_ptr, ids_ptr, sink_ptr + 65536, tl.program_id(0), H, WORDS_I, R, stride_we, stride_wn, TOPK,
               BLOCK_N, BLOCK_W, TILES, PDL)


@triton.jit
def read_both_kernel(w13_ptr, w2_ptr, ids_ptr, sink_ptr, G_GU, WORDS_H, WORDS_I, H, I, R,
                     stride_ge, stride_gn, stride_de, stride_dn, TOPK: tl.constexpr,
                     SPLIT_K: tl.constexpr, GU_N: tl.constexpr, GU_W: tl.constexpr,
                     DN_N: tl.constexpr, DN_W: tl.constexpr, TILES: tl.constexpr):
    """Both kernels' programs in one grid: the first G_GU programs gate/up's, the rest down's."""
    pid = tl.program_id(0)
    if pid < G_GU:
        _read_gate_up(w13_ptr, ids_ptr, sink_ptr, pid, WORDS_H, I, R, stride_ge, stride_gn, SPLIT_K, GU_N, GU_W)
    else:
        _read_down(w2_ptr, ids_ptr, sink_ptr + 65536, pid - G_GU, H, WORDS_I, R, stride_de, stride_dn, TOPK,
                   DN_N, DN_W, TILES, False)


@triton.jit
def read_ticket_kernel(w13_ptr, w2_ptr, ids_ptr, sink_ptr, sync_ptr, G_GU, G_DN, PER_TOKEN, WORDS_H, WORDS_I, H, I, R,
                       stride_ge, stride_gn, stride_de, stride_dn, TOPK: tl.constexpr,
                       SPLIT_K: tl.constexpr, GU_N: tl.constexpr, GU_W: tl.constexpr,
                       DN_N: tl.constexpr, DN_W: tl.constexpr, TILES: tl.constexpr):
    """read_both_kernel with the dependency a one-launch layer needs: each program takes a
    ticket (sync[0]); tickets < G_GU read gate/up items then count them done for their token
    (sync[2 + t]); the rest read their first down tile, spin until their token's PER_TOKEN
    gate/up items are done, then read on.  Every gate/up ticket is handed out before any down
    one, so the programs that spin wait only on programs already running.  The last down
    program zeroes sync for the next call (sync[1] counts finished down programs)."""
    ticket = tl.atomic_add(sync_ptr, 1)
    if ticket < G_GU:
        _read_gate_up(w13_ptr, ids_ptr, sink_ptr, ticket, WORDS_H, I, R, stride_ge, stride_gn, SPLIT_K, GU_N, GU_W)
        tl.debug_barrier()
        tl.atomic_add(sync_ptr + 2 + (ticket % R) // TOPK, 1, sem="release")
    else:
        _read_down(w2_ptr, ids_ptr, sink_ptr + 65536, ticket - G_GU, H, WORDS_I, R, stride_de, stride_dn, TOPK,
                   DN_N, DN_W, TILES, False, sync_ptr + 2, PER_TOKEN, True)
        if tl.atomic_add(sync_ptr + 1, 1, sem="acq_rel") == G_DN - 1:
            j = tl.arange(0, 32)
            tl.store(sync_ptr + j, tl.zeros([32], dtype=tl.int32), mask=j < 2 + R // TOPK)


@triton.jit
def stream_kernel(src_ptr, sink_ptr, words, BLOCK_W: tl.constexpr, STEPS: tl.constexpr):
    """sink[pid] = xor of src words [pid*STEPS*BLOCK_W, (pid+1)*STEPS*BLOCK_W) (int32)."""
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK_W], dtype=tl.int32)
    for i in range(STEPS):
        o = (pid * STEPS + i).to(tl.int64) * BLOCK_W + tl.arange(0, BLOCK_W)
        acc ^= tl.load(src_ptr + o, mask=o < words, other=0)
    tl.store(sink_ptr + pid, tl.xor_sum(acc, axis=0))


STREAM_TILES = ((2048, 1, 4), (4096, 1, 8), (2048, 4, 4), (8192, 1, 8), (1024, 8, 4))


def _words(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.int32)


def read_calls(w: ExpertWeights, cfg: policy.RouteDirectConfig, m: int, k: int, ids: torch.Tensor,
               sink: torch.Tensor, one_launch, sync_buf: torch.Tensor | None = None):
    """The read2 (two launches), read1 (one_launch True: one) or ticket (one_launch "ticket")
    call for routing ids on weights w; ticket counts in sync_buf (int32, zeros, >= 2 + m)."""
    w13, w2 = _words(w.w13), _words(w.w2)
    per_word = 4 // w.w13.element_size()
    gu, dn = cfg.gate_up, cfg.down
    r = m * k
    inter, hidden = w.intermediate_size, w.hidden_size
    gw, dw = max(1, gu.block_k // per_word), max(1, dn.block_k // per_word)
    tiles = 1 if dn.swap_ab else cfg.down_tiles
    g_gu = r * triton.cdiv(inter, gu.block_n) * gu.split_k
    g_dn = m * triton.cdiv(triton.cdiv(hidden, dn.block_n), tiles)
    gu_args = (w13, ids, sink, w13.shape[2], inter, r, w13.stride(0), w13.stride(1))
    dn_args = (w2, ids, sink, hidden, w2.shape[2], r, w2.stride(0), w2.stride(1))
    pdl = dict(launch_pdl=True) if cfg.pdl else {}

    def two():
        read_gate_up_kernel[(g_gu,)](*gu_args, SPLIT_K=gu.split_k, BLOCK_N=gu.block_n, BLOCK_W=gw, PDL=cfg.pdl,
                                     num_warps=gu.num_warps, **pdl)
        read_down_kernel[(g_dn,)](*dn_args, TOPK=k, BLOCK_N=dn.block_n, BLOCK_W=dw, TILES=tiles, PDL=cfg.pdl,
                                  num_warps=dn.num_warps, **pdl)

    sync = sync_buf[:2 + m] if sync_buf is not None else None

    def ticket():
        read_ticket_kernel[(g_gu + g_dn,)](w13, w2, ids, sink, sync, g_gu, g_dn, k * triton.cdiv(inter, gu.block_n)
                                           * gu.split_k, w13.shape[2], w2.shape[2], hidden, inter, r,
                                           w13.stride(0), w13.stride(1), w2.stride(0), w2.stride(1), TOPK=k,
                                           SPLIT_K=gu.split_k, GU_N=gu.block_n, GU_W=gw, DN_N=dn.block_n, DN_W=dw,
                                           TILES=tiles, num_warps=max(gu.num_warps, dn.num_warps))

    if one_launch == "ticket":
        return ticket

    def one():
        read_both_kernel[(g_gu + g_dn,)](w13, w2, ids, sink, g_gu, w13.shape[2], w2.shape[2], hidden, inter, r,
                                         w13.stride(0), w13.stride(1), w2.stride(0), w2.stride(1), TOPK=k,
                                         SPLIT_K=gu.split_k, GU_N=gu.block_n, GU_W=gw, DN_N=dn.block_n, DN_W=dw,
                                         TILES=tiles, num_warps=max(gu.num_warps, dn.num_warps))

    return one if one_launch else two


def case(shape, fmt: str, m: int, dev, s: harness.Settings, bw: float, target: float) -> dict:
    inp = harness.case_inputs(shape, fmt, m, s, dev, bw, target)
    w0 = inp.copies[0]
    cfg = policy.select_config("route_direct", m, shape.top_k, w0.num_experts, w0.hidden_size,
                               w0.intermediate_size, fmt, device_name(dev), num_sms(dev))
    sink = torch.zeros(1 << 20, dtype=torch.int32, device=dev)
    out = {"shape": shape.name, "format": fmt, "M": m, "floor_us": inp.floor["floor_us"],
           "bytes": inp.floor["bytes"], "config": repr(cfg)}
    fn, _, _, _ = harness._runner("route_direct", fmt, m, shape, w0, dev)
    calls = [partial(fn, inp.x, inp.copies[i % len(inp.copies)], tw, ids) for i, (tw, ids) in enumerate(inp.routings)]
    out["ours"] = harness._time_cuda(calls, s, True)[0]
    sync = torch.zeros(64, dtype=torch.int32, device=dev)
    for name, one in (("read2", False), ("read1", True), ("ticket", "ticket")):
        calls = [read_calls(inp.copies[i % len(inp.copies)], cfg, m, shape.top_k, ids, sink, one, sync)
                 for i, (_, ids) in enumerate(inp.routings)]
        out[name] = harness._time_cuda(calls, s, True)[0]
    nbytes = int(inp.floor["bytes"])
    words = nbytes // 4
    n_win = max(2, math.ceil(target / nbytes) + 1)
    buf = torch.zeros(words * n_win, dtype=torch.int32, device=dev)
    best = None
    for bw_, steps, warps in STREAM_TILES:
        grid = (triton.cdiv(words, bw_ * steps),)
        calls = [partial(lambda o, g=grid, b=bw_, st=steps, nw=warps: stream_kernel[g](
            buf[o:o + words], sink, words, BLOCK_W=b, STEPS=st, num_warps=nw), (i % n_win) * words)
            for i in range(len(inp.routings))]
        t = harness._time_cuda(calls, s, True)[0]
        if best is None or t < best[0]:
            best = (t, f"{bw_}x{steps} w{warps}")
    out["stream"], out["stream_tile"] = best
    del buf, inp
    torch.cuda.empty_cache()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="qwen3_30b_a3b,deepseek_v3_tp8,hunyuan_tp8,gpt_oss_120b_tp4,mixtral_8x7b_tp2")
    ap.add_argument("--formats", default="fp8_tensor,bf16")
    ap.add_argument("--tokens", default="1,2,8")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    dev = torch.device("cuda")
    s = harness.Settings.for_device(dev, routing="softmax", replays=10)
    bw = harness.measure_copy_bandwidth(dev)
    target = max(harness.STREAM_BYTES, 3 * torch.cuda.get_device_properties(dev).L2_cache_size)
    rows = []
    print("| shape | format | M | floor us | ours | read2 | read1 | ticket | stream | ours % floor | read2 % | read1 % | "
          "ticket % | stream % |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    for name in a.shapes.split(","):
        shape = shapes.get_shape(name)
        for fmt in a.formats.split(","):
            for m in map(int, a.tokens.split(",")):
                r = case(shape, fmt, m, dev, s, bw, target)
                rows.append(r)
                f = r["floor_us"]
                print(f"| {name} | {fmt} | {m} | {f:.1f} | {r['ours']:.1f} | {r['read2']:.1f} | {r['read1']:.1f} | "
                      f"{r['ticket']:.1f} | {r['stream']:.1f} | {100 * f / r['ours']:.0f} | {100 * f / r['read2']:.0f} | "
                      f"{100 * f / r['read1']:.0f} | {100 * f / r['ticket']:.0f} | {100 * f / r['stream']:.0f} |",
                      flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps(dict(bandwidth=bw, rows=rows), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
