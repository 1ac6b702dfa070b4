"""Where the recount plan launch spends its time (thirty-seventh session probe, throw-away).

    python benchmarks/results/H200/2026-12-06-s37/plan_stage_probe.py --out DIR

A copy of ``_plan_recount_kernel`` cut after stage STAGE (each cut keeps what it computed
alive by storing it):
  0  the launch alone (grid as the recount's, one store)
  1  + every program loads all R ids
  2  + counts them (tl.histogram, or atomics in the program's scratch rows)
  3  + prefix sums, the chunk's ranks, the scatter of its routes
  4  + segment padding and the dead tails (the whole kernel)
each graph-timed as ``fusedmoe.bench.plan`` times the plan (50 calls in a graph, median of 20
replays), beside the library's own launch at several chunks and warps.  Writes plan_stages.json/md.

    python .../plan_stage_probe.py --dot --out DIR

counts instead by one-hot products on the tensor cores (``_count_by_dot``: [HI, KC] x [KC, LO]
over blocks of KC routes), stages 2 and 4, each whole plan checked equal to the reference, beside
the library's histogram count and auto.  Writes plan_dot.json.  (The kernel here is as at call 2:
the library's recount kernel has since loaded its chunk's ids first where it counts by atomics.)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import triton
import triton.language as tl

from fusedmoe import _plan_kernels as K
from fusedmoe.bench.harness import graph_us
from fusedmoe.bench.plan import _ids
from fusedmoe.plan import _build, _width, max_blocks, max_padded_routes, reference_plan


@triton.jit
def _one_hot_operands(key, HI: tl.constexpr, LO: tl.constexpr, LOG_LO: tl.constexpr):
    """a [HI, KC] = (key >> LOG_LO == row), b [KC, LO] = (key & (LO - 1) == column), fp16 0/1;
    key -1 (a route not held) matches no row of a."""
    a = ((key >> LOG_LO)[None, :] == tl.arange(0, HI)[:, None]).to(tl.float16)
    b = ((key & (LO - 1))[:, None] == tl.arange(0, LO)[None, :]).to(tl.float16)
    return a, b


@triton.jit
def _keys(ids_ptr, r, num_routes, top_k, stride_t, stride_j, expert_lo, num_local):
    held, local = K._load_ids(ids_ptr, r, r < num_routes, top_k, stride_t, stride_j, expert_lo, num_local)
    return tl.where(held, local, -1)


@triton.jit
def _count_by_dot(ids_ptr, num_routes, top_k, stride_t, stride_j, expert_lo, num_local, lo,
                  HI: tl.constexpr, LO: tl.constexpr, LOG_LO: tl.constexpr, KC: tl.constexpr):
    """(counts, before) [HI * LO] int32: held routes per local expert, all and those below route lo,
    as sums of one-hot [HI, KC] x [KC, LO] products over blocks of KC routes (tensor cores, fp32
    sums, exact); the next block's ids are loaded while this one's product runs."""
    kk = tl.arange(0, KC)
    lo_al = lo // KC * KC
    a, b = _one_hot_operands(_keys(ids_ptr, lo_al + kk, lo, top_k, stride_t, stride_j, expert_lo, num_local),
                             HI, LO, LOG_LO)
    part = tl.dot(a, b)
    acc = tl.zeros([HI, LO], dtype=tl.float32)
    before = tl.zeros([HI, LO], dtype=tl.float32)
    nxt = _keys(ids_ptr, kk, num_routes, top_k, stride_t, stride_j, expert_lo, num_local)
    for k0 in range(0, num_routes, KC):
        cur = nxt
        nxt = _keys(ids_ptr, k0 + KC + kk, num_routes, top_k, stride_t, stride_j, expert_lo, num_local)
        before = tl.where(k0 == lo_al, acc, before)
        a, b = _one_hot_operands(cur, HI, LO, LOG_LO)
        acc = tl.dot(a, b, acc)
    return tl.reshape(acc, [HI * LO]).to(tl.int32), tl.reshape(before + part, [HI * LO]).to(tl.int32)


@triton.jit
def _stage_kernel(
    ids_ptr, stride_t, stride_j, top_k, num_routes, expert_lo, num_local,
    sorted_ptr, num_padded_cap, block_expert_ptr, num_blocks_cap, num_blocks_ptr, counts_ptr, scratch_ptr,
    BLOCK_M: tl.constexpr, R_PAD: tl.constexpr, CHUNK: tl.constexpr, E_BINS: tl.constexpr,
    PAD_TILE: tl.constexpr, FILL: tl.constexpr, COUNT_IN_MEMORY: tl.constexpr, STAGE: tl.constexpr,
    DOT: tl.constexpr = False, HI: tl.constexpr = 16, LO: tl.constexpr = 16, LOG_LO: tl.constexpr = 4,
    KC: tl.constexpr = 128,
):
    c = tl.program_id(0)
    progs = tl.num_programs(0)
    lo = c * CHUNK
    if STAGE == 0:
        tl.store(num_blocks_ptr, c, mask=c == 0)
    else:
        if DOT:  # E_BINS = HI * LO
            counts, before = _count_by_dot(ids_ptr, num_routes, top_k, stride_t, stride_j, expert_lo, num_local,
                                           lo, HI, LO, LOG_LO, KC)
        r = tl.arange(0, R_PAD)
        held, local = K._load_ids(ids_ptr, r, r < num_routes, top_k, stride_t, stride_j, expert_lo, num_local)
        if STAGE == 1:
            tl.store(num_blocks_ptr + c, tl.sum(tl.where(held, local, 0), 0))
        else:
            if DOT:
                pass
            elif COUNT_IN_MEMORY:
                counts, before = K._count_in_memory(scratch_ptr + c * (2 * E_BINS), local, held, r < lo, E_BINS)
            else:
                counts = tl.histogram(local, E_BINS, mask=held)
                before = tl.histogram(local, E_BINS, mask=held & (r < lo))
            e = tl.arange(0, E_BINS)
            if STAGE == 2:
                tl.store(counts_ptr + c * E_BINS + e, counts + before)
            else:
                padded = (counts + (BLOCK_M - 1)) // BLOCK_M * BLOCK_M
                pstart = tl.cumsum(padded, 0) - padded
                total = tl.sum(padded, 0)
                tl.store(counts_ptr + e, counts, mask=(e < num_local) & (c == 0))
                tl.store(num_blocks_ptr, total // BLOCK_M, mask=c == 0)
                i = tl.arange(0, CHUNK)
                rc = lo + i
                held_c, local_c = K._load_ids(ids_ptr, rc, rc < num_routes, top_k, stride_t, stride_j, expert_lo,
                                              num_local)
                key = tl.where(held_c, local_c, -1)
                rank = tl.sum(((key[:, None] == key[None, :]) & (i[None, :] < i[:, None])).to(tl.int32), axis=1)
                dest = tl.gather(pstart + before, local_c, 0) + rank
                tl.store(sorted_ptr + dest, rc, mask=held_c)
                tl.store(block_expert_ptr + dest // BLOCK_M, local_c, mask=held_c)
                if STAGE >= 4:
                    end = tl.gather(pstart + counts, local_c, 0)
                    pad = tl.where(held_c & (dest + 1 == end), (end + (BLOCK_M - 1)) // BLOCK_M * BLOCK_M - end, 0)
                    jj = tl.arange(0, PAD_TILE)
                    for j0 in tl.static_range(0, BLOCK_M - 1, PAD_TILE):
                        j = j0 + jj
                        tl.store(sorted_ptr + dest[:, None] + 1 + j[None, :], -1, mask=j[None, :] < pad[:, None])
                    share = tl.cdiv(num_padded_cap - total, progs)
                    K._fill_minus_one(sorted_ptr, total + c * share,
                                      tl.minimum(total + (c + 1) * share, num_padded_cap), FILL)
                    live_blocks = total // BLOCK_M
                    share = tl.cdiv(num_blocks_cap - live_blocks, progs)
                    K._fill_minus_one(block_expert_ptr, live_blocks + c * share,
                                      tl.minimum(live_blocks + (c + 1) * share, num_blocks_cap), FILL)


def dot_split(experts):
    """(HI, LO, LOG_LO) of the one-hot product for ``experts`` bins: LO = 2^ceil(b/2), HI = the
    rest, both at least 16 (tl.dot's smallest sides)."""
    b = max(_width(experts).bit_length() - 1, 4)
    log_lo = max(4, (b + 1) // 2)
    return max(16, (1 << b) >> log_lo), 1 << log_lo, log_lo


def stage_fn(ids, experts, block_m, stage, in_memory, chunk=32, warps=4, dot=False, kc=128, buffers=None):
    routes = ids.numel()
    r_pad, e_bins = _width(routes), _width(experts)
    hi, lo, log_lo = dot_split(experts)
    if dot:
        e_bins = hi * lo
    grid = -(-routes // chunk)
    dev = ids.device
    padded, blocks = max_padded_routes(routes, experts, block_m), max_blocks(routes, experts, block_m)
    sorted_routes = torch.empty(padded, dtype=torch.int32, device=dev)
    block_expert = torch.empty(blocks, dtype=torch.int32, device=dev)
    num_blocks = torch.empty(max(grid, 1), dtype=torch.int32, device=dev)
    counts = torch.empty(grid * e_bins, dtype=torch.int32, device=dev)
    scratch = torch.empty(grid * 2 * e_bins, dtype=torch.int32, device=dev)
    flat = ids.view(-1, 1)
    if buffers is not None:
        buffers.update(sorted_routes=sorted_routes, block_expert=block_expert, num_blocks=num_blocks, counts=counts)

    def fn():
        _stage_kernel[(grid,)](flat, 1, 1, 1, routes, 0, experts, sorted_routes, padded, block_expert, blocks,
                               num_blocks, counts, scratch, BLOCK_M=block_m, R_PAD=r_pad, CHUNK=chunk,
                               E_BINS=e_bins, PAD_TILE=min(block_m, 64), FILL=1024, COUNT_IN_MEMORY=in_memory,
                               STAGE=stage, DOT=dot, HI=hi, LO=lo, LOG_LO=log_lo, KC=kc, num_warps=warps)
    return fn


SHAPES = [(1024, 64), (2048, 64), (1024, 256), (1024, 512), (2048, 128), (2048, 512), (512, 64), (2048, 256),
          (64, 512), (8, 8)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shape", type=int, default=None, help="one of SHAPES (by index), else all")
    ap.add_argument("--compile-only", action="store_true", help="run each variant once, time nothing")
    ap.add_argument("--dot", action="store_true", help="time the count by one-hot products instead (stages 2, 4)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    rows = []

    def rec(**row):
        rows.append(row)
        print(json.dumps(row), flush=True)

    timed = (lambda fn: fn() and None) if args.compile_only else graph_us
    for routes, experts in SHAPES if args.shape is None else [SHAPES[args.shape]]:
        ids = _ids(routes, experts, 8)
        if args.dot:
            ref = reference_plan(ids, experts, 16)
            for kc, warps in [(128, 4), (256, 4), (128, 8), (256, 8), (64, 4)]:
                for stage in (2, 4):
                    buf = {}
                    fn = stage_fn(ids, experts, 16, stage, False, warps=warps, dot=True, kc=kc, buffers=buf)
                    us = timed(fn)
                    equal = None
                    if stage == 4:
                        fn()
                        equal = (int(buf["num_blocks"][0]) == int(ref.num_blocks)
                                 and torch.equal(buf["counts"][:experts], ref.expert_counts)
                                 and torch.equal(buf["sorted_routes"], ref.sorted_routes)
                                 and torch.equal(buf["block_expert"], ref.block_expert))
                    rec(routes=routes, experts=experts, kind="dot", kc=kc, warps=warps, stage=stage, us=us, equal=equal)
            for warps in (4, 8):
                rec(routes=routes, experts=experts, kind="hist", warps=warps,
                    us=timed(lambda: _build(ids, experts, 16, path="recount", warps=warps, count_in_memory=False)))
            rec(routes=routes, experts=experts, kind="auto", us=timed(lambda: _build(ids, experts, 16)))
            continue
        for mem in (False, True):
            for stage in range(5):
                rec(routes=routes, experts=experts, kind="stage", in_memory=mem, stage=stage,
                    us=timed(stage_fn(ids, experts, 16, stage, mem)))
        for chunk in (32, 64, 128):
            for warps in (4, 8):
                for mem in (False, True):
                    rec(routes=routes, experts=experts, kind="library", in_memory=mem, chunk=chunk, warps=warps,
                        us=timed(lambda: _build(ids, experts, 16, path="recount", chunk=chunk, warps=warps,
                                                   count_in_memory=mem)))
        rec(routes=routes, experts=experts, kind="auto", us=timed(lambda: _build(ids, experts, 16)))
    if args.compile_only:
        return 0
    if args.dot:
        (args.out / "plan_dot.json").write_text(json.dumps(dict(device=torch.cuda.get_device_name(),
                                                                torch=torch.__version__, triton=triton.__version__,
                                                                rows=rows), indent=1))
        return 0
    (args.out / "plan_stages.json").write_text(json.dumps(dict(device=torch.cuda.get_device_name(),
                                                               torch=torch.__version__, triton=triton.__version__,
                                                               rows=rows), indent=1))
    lines = ["| routes | experts | count | stage 0 | 1 | 2 | 3 | 4 |", "|---|---|---|---|---|---|---|---|"]
    for (r, e) in sorted({(x["routes"], x["experts"]) for x in rows}):
        for mem in (False, True):
            st = [x["us"] for x in rows if x["kind"] == "stage" and x["routes"] == r and x["experts"] == e
                  and x["in_memory"] == mem]
            lines.append(f"| {r} | {e} | {'atomic' if mem else 'hist'} | " + " | ".join(f"{u:.2f}" for u in st) + " |")
    (args.out / "plan_stages.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
