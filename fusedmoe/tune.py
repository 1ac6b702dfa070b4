"""``fusedmoe tune``: search tile configs on this GPU and write the tables the policy loads.

    fusedmoe tune (--shape NAME[,NAME..]|peers | --config config.json) [--tp N] [--ep N]
                  [--formats bf16,fp8_tensor] [--tokens 1,2,4,8,...] [--paths route_direct,grouped]
                  [--budget-min 20] [--force] [--out-dir fusedmoe/configs] [--log candidates.jsonl]
                  [--moves FIELD,..] [--sweeps 1]

For each (shape, format, path, token count): coordinate descent from the policy's heuristic
over the candidate tiles of each GEMM (and BLOCK_M for the grouped path), every candidate
timed in a CUDA graph with weights and routings rotated past L2, and the best kept only if it
stays faster than the start, by more than 2%, when the two are timed again in turn (``confirm``);
grouped FP8 also moves BLOCK_M
and a 64-column gate/up at once (each alone can be slower); ``--sweeps 2`` repeats the descent
from its best while a sweep moves, compiling what the first sweep's precompile did not cover
within the budget.  Entries are written to
``<out-dir>/<device>/<path>.json`` after every case, so an interrupted run resumes where it
stopped (existing entries are skipped unless --force).  Candidates are compiled first in
parallel processes.  fp8_block reuses fp8 entries and fp16 bf16 ones when it has none.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import itertools
import json
import math
import multiprocessing as mp
import statistics
import time
from pathlib import Path
from typing import Callable, Iterator

import torch

from . import policy
from ._runtime import device_name, num_sms
from .weights import A8_FORMATS, FORMATS, FP8_FORMATS
from .paths.grouped import gluon_runs_on


# Every candidate is checked against the float64 reference (first routing) before it is timed;
# the loosest bound of the GPU tests (w8a8 grouped paths).
MAX_REL_L2 = 0.01


# FP8 GEMV gate/up tiles of 4 warps with K steps of 2048-4096 columns, each under its own
# register cap (6-8 programs an SM; no spills for sm_90), which the route-direct tile moves (4-warp
# steps of 512-1024) and the caps, moved one at a time, do not reach.  From the PEERS FP8
# entries at M 1, 2, 4, 8 (fifty-second and fifty-third sessions, H100): four of 40 moved,
# 0.944-0.977x the time (Hunyuan TP8 fp8_block M=1 at 2 x 2048 and M=8 at 2 x 4096 capped at 80,
# Qwen3-30B fp8_tensor M=2 and 4 at 4 x 2048 capped at 80).
# 8-warp tiles holding a program's rows of a 4096-wide H in one step (4 x 4096 at 80
# registers, 3 programs an SM) were tried with them and lost in all 20 (Hunyuan TP8
# fp8_tensor M=1 10.71 -> 11.30 us): a single DRAM round trip a program does not pay.
GATE_UP_WIDE = tuple(policy.Tile(bn, bk, 4, 1, 1, max_registers=cap) for bn, bk, cap in (
    (2, 4096, 80), (4, 2048, 80), (2, 2048, 0)))


def candidates(path: str, fmt: str) -> Iterator[tuple[str, object]]:
    """(field, value) moves of the coordinate descent: 'gate_up'/'down' tiles, 'block_m',
    'group_m', grouped 'tail_m' and 'gate_up_registers' / 'down_registers' (a tile's
    max_registers), route-direct 'pdl', 'down_tiles', 'gate_up_stages' /
    'down_stages' (a tile's num_stages), 'register_caps' (both tiles' max_registers at once),
    'down_gluon', (FP8) 'gate_up_wide' (a GEMV gate/up tile and its register cap:
    ``GATE_UP_WIDE``), 'fp16_products' and (fp8_block) 'block_scale_rows', grouped FP8 'block_m+gate_up' (both at
    once: value (BLOCK_M, gate/up tile)), grouped fp8_tensor 'gluon' (value: a Gluon tile set of
    ``policy.GLUON_SETS``, or False: off)."""
    fp8 = fmt in FP8_FORMATS  # e4m3 weights (route-direct's tensor-core down, fp16 products)
    if path == "route_direct":
        # PDL first: the tiles are then tuned with the launch mode they will run under, and the
        # candidate log's first two entries of a case are the start config without and with it
        for pdl in (False, True):
            yield "pdl", pdl
        for bn, bk, split in itertools.product((4, 8, 16), (512, 1024, 2048), (1, 2, 4)):  # GEMV form
            yield "gate_up", policy.Tile(bn, bk, 8, 1, split)
        # Narrow rows, the whole of a 4096-wide H in one load (one DRAM round trip at M=1;
        # 64-100 registers on sm_90, no spills)
        for bn, bk, split in itertools.product((2, 4), (2048, 4096), (1, 2)):
            if (bn, bk) != (4, 2048):
                yield "gate_up", policy.Tile(bn, bk, 8, 1, split)
        # Four warps (FP8 steps of 8 KB at 8 x 512 and 4 x 1024): the one-launch stream of a
        # layer's bytes ran best with 8 KB programs of 4 warps at M=1 (read probe, thirteenth
        # session); 33 of the 48 entries that moved in the fourteenth session's re-tune took one
        for bn, bk, split in itertools.product((2, 4, 8), (512, 1024), (1, 2)):
            yield "gate_up", policy.Tile(bn, bk, 4, 1, split)
        if fp8:
            for tile in GATE_UP_WIDE:
                yield "gate_up_wide", tile
        for bn, bk, split in itertools.product((16, 32, 64), (128, 256), (1, 2, 4)):  # tensor-core form
            if bn * bk <= 8192:  # FP8 at 64 x 256 spills (scripts/compile_check.py)
                yield "gate_up", policy.Tile(bn, bk, 4, 3, split, swap_ab=True)
        for dn, bk, warps in itertools.product((4, 8, 16), (64, 128, 256, 512), (4, 8)):
            yield "down", policy.Tile(dn, bk, warps, 1)
        if fp8:  # tensor-core down
            for dn, bk in itertools.product((16, 32), (64, 128)):
                yield "down", policy.Tile(dn, bk, 4, 3, swap_ab=True)
        for tiles in (1, 2, 4, 8):
            yield "down_tiles", tiles
        if fp8:
            for half in (False, True):
                yield "fp16_products", half
        if fmt == "fp8_block":
            for rows in (False, True):
                yield "block_scale_rows", rows
        if fmt != "w4a8":  # the Gluon down (policy.RouteDirectConfig.down_gluon)
            for gluon_down in (False, True):
                yield "down_gluon", gluon_down
        # pipeline depth of each kernel's K loop (the GEMV forms: cp.async copies to shared memory)
        for field in ("gate_up_stages", "down_stages"):
            for stages in (1, 2, 3, 4):
                yield field, stages
        # Register caps of both kernels at once (value: gate/up cap, down cap; 0 uncapped).
        # Under PDL the down grid's programs are placed while gate/up's still run, but only where
        # an SM's register file has room beside them, and only then do their first weight loads
        # overlap the gate/up stream.  Compiled for sm_90, Hunyuan TP8 fp8_tensor M=1's tiles
        # take 70 (gate/up, 8 warps) and 101 (down, 8 warps) registers: three gate/up programs
        # leave no room for a down one; at 56 and 80 (no spills) one fits beside them.
        for caps in itertools.product((0, 48, 56, 64, 80), (0, 64, 80, 96, 128)):
            if caps != (0, 0):
                yield "register_caps", caps
        return
    # Grouped tiles swap A and B exactly when BLOCK_M < 64 (``apply`` sets it): below 64 rows
    # the unswapped tile has no wgmma, above it the swap gains nothing (scripts/compile_check.py).
    for bm in (16, 32, 64, 128):
        yield "block_m", bm
    for group in (1, 4, 16):
        yield "group_m", group
    for tail in (0, 16, 32, 64):  # an expert's last block on a tile of fewer rows (apply drops one >= BLOCK_M)
        yield "tail_m", tail
    # FP8 64: requantised by a launch of its own.  FP8 gate/up tiles of 32 columns (legal
    # unswapped) are not tried: in the ninth session's A/B (Mixtral, Qwen3-30B and GPT-OSS TP4
    # fp8_tensor, M = 2048 / 8192) every one, at BLOCK_M 64 and 128, was slower than the entry
    # (each case's best 32-column candidate 1.02-1.18x its time); 16-bit ones won 3 of 19 cases
    fp8 = fmt in A8_FORMATS  # grouped: an FP8 MMA (w4a8's FP4 weights decoded to e4m3)
    gate_n = (64, 128) if fp8 else (32, 64, 128)
    ks = (64, 128)
    for bn, bk, warps, stages in itertools.product(gate_n, ks, (4, 8), (3, 4)):
        yield "gate_up", policy.Tile(bn, bk, warps, stages)
    for bn, bk, warps, stages in itertools.product((64, 128, 256), ks, (4, 8), (3, 4)):
        yield "down", policy.Tile(bn, bk, warps, stages)
    if fp8:
        # BLOCK_M and the 64-column gate/up in one move: at Qwen3-30B M=512 (eighth session)
        # each alone was slower than the start's 245.2 us (BLOCK_M 64: 266.7 in the tuner; 64
        # columns at BLOCK_M 16: 247.7) and both together faster (219.7 in promote_probe), which
        # one-field descent cannot reach
        for bm, warps, stages in itertools.product((32, 64), (4, 8), (3, 4)):
            yield "block_m+gate_up", (bm, policy.Tile(64, 128, warps, stages))
    if fmt == "fp8_tensor":  # the Gluon kernels (one of their tile sets), or not
        for value in (False, *policy.GLUON_SETS):
            yield "gluon", value
    # a register cap per tile (Tile.max_registers): 80 fits three CTAs of 8 warps on an SM, 128 two
    # of 8 or four of 4, 168 three of 4 (where shared memory allows as many).  Compiled for sm_90,
    # 8-warp FP8 tiles at 101-120 registers drop to 80 with 0-38 spill instructions, 4-warp ones
    # at 204-255 to 168 with 20-68 (twenty-fourth session)
    for field in ("gate_up_registers", "down_registers"):
        for cap in (0, 80, 128, 168):
            yield field, cap


# Moves of one Tile field of one GEMM: '<gate_up|down>_<suffix>' sets that tile's field.
TILE_FIELD_MOVES = {"stages": "num_stages", "registers": "max_registers"}


def apply(cfg, field: str, value, promote_k: int | None = None):
    """``cfg`` with one field replaced, or BLOCK_M and gate/up for 'block_m+gate_up', or the
    Gluon kernels' tile set ``value`` for 'gluon' (False: ``policy.gluon_fallback``) (grouped
    tiles swap A and B exactly below 64 rows, and
    promote FP8 sums at most every BLOCK_K columns: every min(promote_k, BLOCK_K) columns when
    ``promote_k`` (descent's interval: the rule's at the case's M, ``promote_rule``) is given, so
    a move back to a longer K step restores it; tail_m 0 at or above BLOCK_M and with the Gluon
    kernels; a route-direct tensor-core down takes
    down_tiles 1; with both kernels tensor-core forms, fp16_products False)."""
    tile, _, part = field.rpartition("_")
    if field == "gate_up_wide":  # a gate/up tile with its own register cap
        cfg = dataclasses.replace(cfg, gate_up=value)
    elif part in TILE_FIELD_MOVES and tile in ("gate_up", "down"):  # one field of one tile
        tile_cfg = dataclasses.replace(getattr(cfg, tile), **{TILE_FIELD_MOVES[part]: value})
        cfg = dataclasses.replace(cfg, **{tile: tile_cfg})
    elif field == "register_caps":  # route-direct: (gate/up cap, down cap)
        cfg = dataclasses.replace(cfg, gate_up=dataclasses.replace(cfg.gate_up, max_registers=value[0]),
                                  down=dataclasses.replace(cfg.down, max_registers=value[1]))
    elif field == "block_m+gate_up":
        cfg = dataclasses.replace(cfg, block_m=value[0], gate_up=value[1])
    elif field == "gluon":  # value: a Gluon tile set (BLOCK_M, gate/up columns), or False: what Triton runs of them
        cfg = policy.gluon_grouped_config(cfg.group_m, *value) if value else policy.gluon_fallback(cfg)
    else:
        cfg = dataclasses.replace(cfg, **{field: value})
    if isinstance(cfg, policy.RouteDirectConfig):
        cfg = dataclasses.replace(cfg, down_tiles=1) if cfg.down.swap_ab else cfg
        both_mma = cfg.gate_up.swap_ab and cfg.down.swap_ab
        return dataclasses.replace(cfg, fp16_products=False) if both_mma else cfg
    if isinstance(cfg, policy.GroupedConfig):
        cfg = dataclasses.replace(cfg, **{f: dataclasses.replace(getattr(cfg, f), swap_ab=cfg.block_m < 64)
                                          for f in ("gate_up", "down")})
        if cfg.tail_m >= cfg.block_m or cfg.gluon:
            cfg = dataclasses.replace(cfg, tail_m=0)
        step = min(cfg.gate_up.block_k, cfg.down.block_k)
        if step >= 32:
            want = cfg.fp8_promote_k if promote_k is None else promote_k
            cfg = dataclasses.replace(cfg, fp8_promote_k=min(want, step))
    return cfg


def descend(start, moves: list[tuple[str, object]], fmt: str, path: str, time_us: Callable[[object], float],
            deadline: float, record: Callable[[object, float | None, str | None], None] | None = None,
            sweeps: int = 1, promote_k: int | None = None) -> tuple[object, float, float]:
    """Coordinate descent: for each field in turn, try every move from the best so far; up to
    ``sweeps`` sweeps, another only while the last one moved (a field that pays only after
    another has moved, such as BLOCK_M after a narrower gate/up tile, is reached by the
    second).  Each config is timed once.  Returns (best config, its time, the start's time);
    illegal or failing candidates are skipped.  ``record(config, us or None, error or None)``
    sees every timed candidate, the start first.  ``promote_k``: the grouped FP8 promotion
    interval moves take (at most their K step; default the start's; ``run`` passes the rule's at
    the case's M, so that a start clamped by a short K step does not bar longer ones, nor the
    Gluon kernels, which promote every 128)."""
    record = record or (lambda cfg, us, err: None)
    if promote_k is None:
        promote_k = getattr(start, "fp8_promote_k", None)
    best, t_best = start, time_us(start)
    t_start = t_best
    record(start, t_start, None)
    seen = {start}
    for _ in range(sweeps):
        sweep_start = best
        for field in dict.fromkeys(f for f, _ in moves):
            base = best
            for f, v in moves:
                if f != field or time.monotonic() > deadline:
                    continue
                cfg = apply(base, f, v, promote_k)
                if path == "grouped":  # time what the policy would serve
                    cfg = policy.fit_registers(cfg, fmt)
                if cfg in seen or not policy.legal(path, cfg, fmt):
                    continue
                seen.add(cfg)
                try:
                    t = time_us(cfg)
                except Exception as e:  # a config the compiler or the GPU rejects is not a candidate
                    record(cfg, None, f"{type(e).__name__}: {str(e)[:200]}")
                    continue
                record(cfg, t, None)
                if t < t_best:
                    best, t_best = cfg, t
        if best == sweep_start or time.monotonic() > deadline:
            break
    return best, t_best, t_start


# The descent's best replaces the start only if it stays faster when the two are timed again,
# alternately, CONFIRM_ROUNDS times each (medians), by more than CONFIRM_MIN_GAIN.  On the H200
# one config's single timings varied by 5-10% within a case: entries whose descent had found
# 3.2-10.5% less time ran at 1.014x the old entries' time in the bench (geomean of 14), whose
# figures repeat within 1%; with the confirmation 25 of 27 moves were rejected, and the 2 kept
# held in the bench (eighteenth session, ``benchmarks/results/H200/2026-12-02-s18/``).
CONFIRM_ROUNDS = 3
CONFIRM_MIN_GAIN = 0.02


def confirm(start, best, t_best: float, t_start: float, time_us: Callable[[object], float],
            rounds: int = CONFIRM_ROUNDS, min_gain: float = CONFIRM_MIN_GAIN,
            record: Callable[[object, float], None] | None = None) -> tuple[object, float, float]:
    """``descend``'s (best, t_best, t_start) confirmed: (kept config, its median time, the
    start's median time), ``start`` and ``best`` timed alternately ``rounds`` times each
    (``record(config, us)`` sees each timing); ``best`` is kept only if its median is below the
    start's by more than ``min_gain`` (a fraction).  With ``best == start`` nothing is timed and
    the descent's times are returned."""
    if best == start:
        return start, t_best, t_start
    t_start, t_best = [], []
    for _ in range(rounds):
        for cfg, times in ((start, t_start), (best, t_best)):
            times.append(time_us(cfg))
            if record is not None:
                record(cfg, times[-1])
    m_start, m_best = statistics.median(t_start), statistics.median(t_best)
    return (best, m_best, m_start) if m_best < m_start * (1 - min_gain) else (start, m_start, m_start)


def _case_timer(shape, fmt: str, path: str, m: int, device: torch.device,
                errors: dict | None = None) -> Callable[[object], float]:
    """A function timing fused_moe(config=...) on this case (graph-timed, weights rotated).
    Each config's rel-L2 against the reference is checked first, and kept in ``errors``."""
    from .api import fused_moe
    from .bench import harness
    from .weights import ExpertWeights

    w13, w2 = harness.random_weights(shape, device)
    w0 = ExpertWeights.from_dense(w13, w2, fmt)
    del w13, w2
    active = harness.expected_active_experts(shape, m) * w0.expert_nbytes
    copies = [w0] + [w0.clone() for _ in range(min(16, harness.copies_needed(active, 200e6)) - 1)]
    gen = torch.Generator(device=device).manual_seed(m)
    routings = [harness.random_routing(shape, m, gen, "softmax") for _ in copies]
    x = torch.randn(m, shape.hidden_size, device=device, generator=gen).to(torch.bfloat16)
    out = torch.empty_like(x)
    settings = harness.Settings.for_device(device, replays=10, eager_replays=1, warmup=1)
    slow = harness.Settings.for_device(device, replays=SLOW_REPLAYS, eager_replays=1, warmup=1)

    from .api import path_quantizes_activations
    from .reference import moe_reference, rel_l2

    ref = moe_reference(x, copies[0], routings[0][0], routings[0][1],
                        quantize_activations=path_quantizes_activations(path, fmt))

    sizing = {}

    def time_us(cfg) -> float:
        with compiler_dumps_muted():  # the first call compiles
            got = fused_moe(x, copies[0], routings[0][0], routings[0][1], path=path, config=cfg, check_ids=False,
                            num_experts=shape.num_experts)
        err = rel_l2(got, ref)
        if errors is not None:
            errors[cfg] = err
        if not err <= MAX_REL_L2:  # a config must compute the layer before it is timed
            raise RuntimeError(f"config {cfg}: rel-L2 {err:.2e} against the reference")
        calls = [lambda w=w, r=r: fused_moe(x, w, r[0], r[1], path=path, out=out, config=cfg, check_ids=False,
                                            num_experts=shape.num_experts)
                 for w, r in zip(copies, routings)]
        first = not sizing
        if first:  # the case's first config (the start) sizes every candidate's graph
            once_us = harness._time_events(calls[0], 1, 1)  # warm: compiled and checked above
            sizing.update(n=calls_per_graph(once_us, len(calls)), slow=once_us > SLOW_CALL_US)
        graph = [calls[i % len(calls)] for i in range(sizing["n"])]
        timing = slow if sizing["slow"] else settings
        if first:
            # A case's first graph timing reads high: the start's descent time was 5-15% above its
            # confirmation runs in 11 of 20 confirmed cases (H100, thirty-fourth session), where
            # every other candidate's agreed with its own within 1%.  That timing is dropped.
            harness._time_cuda(graph, timing, True)
        graph_us, _, _ = harness._time_cuda(graph, timing, True)
        if graph_us is None:
            raise RuntimeError("graph capture failed")
        return graph_us

    return time_us


# A case's candidates are timed in graphs of 20 calls, as the bench and PEERS-H200.md time them,
# or of what fits GRAPH_US (a whole number of rotations of the weight copies while one fits),
# sized once from the start config's call, replayed 10 times, or SLOW_REPLAYS times for calls over
# SLOW_CALL_US.  Shorter graphs read long calls fast, likely the clocks (a short burst ends before
# they settle to the power limit): Mixtral TP2 fp8_tensor M=8192 at 3667 us in 4 ms graphs where
# 20-call graphs read 3976-3986 (eleventh session), and the warp-specialised entry at 2981 us in
# 18 ms graphs where the bench's 70 ms graphs read 3475 (twelfth).  A DeepSeek-V3 bf16 call at
# M=8192 takes about 20 ms: 20 of them x 12 sweeps were 5 s per candidate; at most 100 ms of
# calls, 3 replays, are 0.4 s.
GRAPH_US = 100000.0
SLOW_CALL_US = 1000.0
SLOW_REPLAYS = 3


def calls_per_graph(once_us: float, copies: int) -> int:
    """Calls captured per timing graph for a call of ``once_us`` with ``copies`` weight copies:
    at most 20 and what fits GRAPH_US, in a whole number of rotations (each copy as often, and a
    replay never starts on the copy the last one ended with) while one rotation fits in 5 x
    GRAPH_US."""
    fit = max(1, min(20, int(GRAPH_US // max(once_us, 1.0))))
    if once_us * copies > 5 * GRAPH_US:
        return fit
    return copies * max(1, fit // copies)


def compile_cases(cases, path: str) -> list[tuple]:
    """(shape, format, path, M) to precompile for the (shape, format, M) cases: per shape and
    format the smallest M, and for grouped FP8 also the smallest M that takes the other
    promotion interval (a kernel constexpr, so another kernel)."""
    first_m = {}
    for s, f, m in cases:
        family = policy.grouped_promote_k(m, policy.Tile(128, 128), policy.Tile(128, 128), f) if path == "grouped" else 0
        first_m[s, f, family] = min(m, first_m.get((s, f, family), m))
    return [(s, f, path, m) for (s, f, _), m in first_m.items()]


def _moves(path: str, fmt: str, fields: set[str] | None) -> list[tuple[str, object]]:
    """The candidate moves of the fields a run tunes (``fields`` None: every field)."""
    return [(f, v) for f, v in candidates(path, fmt) if fields is None or f in fields]


MAX_COMBINATIONS = 64


def promote_rule(path: str, m: int, fmt: str) -> int | None:
    """The grouped FP8 promotion interval the policy's rule takes at M (None off grouped)."""
    return policy.grouped_promote_k(m, policy.Tile(128, 128), policy.Tile(128, 128), fmt) if path == "grouped" else None


def _configs_to_compile(base, path: str, fmt: str, fields: set[str] | None, promote_k: int | None = None) -> list:
    """Configs the first sweep of a tuning run from ``base`` times: each move applied to base;
    for a restricted run (``fields``) with at most MAX_COMBINATIONS, every combination of its
    moves, which descent can reach (more, e.g. the tile fields: each move alone).  Later
    sweeps (``--sweeps``) compile what they reach beyond these on the run's clock."""
    moves = _moves(path, fmt, fields)
    per_field = [[mv for mv in moves if mv[0] == f] for f in dict.fromkeys(f for f, _ in moves)]
    if fields is None or math.prod(len(p) for p in per_field) > MAX_COMBINATIONS:
        return [apply(base, f, v, promote_k) for f, v in moves]
    out = []
    for combo in itertools.product(*per_field):
        cfg = base
        for f, v in combo:
            cfg = apply(cfg, f, v, promote_k)
        out.append(cfg)
    return list(dict.fromkeys(out))


@contextlib.contextmanager
def compiler_dumps_muted():
    """Python-level stdout swallowed while a candidate compiles: Triton prints the whole PTX of a
    tile ptxas fails on (a register cap below the tile's need: 'Internal Triton PTX codegen
    error') before it raises, and those dumps buried the tuner's progress lines (twenty-fourth
    session); the candidate's error is still recorded, exceptions pass through."""
    with contextlib.redirect_stdout(io.StringIO()):
        yield


def _precompile(job) -> None:
    """Compile every ``stride``-th candidate of a case, from ``first``, by running each once
    (in a worker process)."""
    shape, fmt, path, m, first, stride, fields = job
    from .api import fused_moe
    from .weights import ExpertWeights

    dev = torch.device("cuda")
    # A few experts compile the same kernels in a fraction of the memory: E is a run-time
    # argument, which the JIT specialises only on == 1 and on divisibility by 16 (a
    # different class compiles a different kernel, which the tuning run would then rebuild).
    e, h, i, k = shape.num_local_experts, shape.hidden_size, shape.intermediate_size, shape.top_k
    if e > 16:
        e = 16 if e % 16 == 0 else 17
    w = ExpertWeights.from_dense(torch.randn(e, 2 * i, h, device=dev) * 0.02, torch.randn(e, h, i, device=dev) * 0.02,
                                 fmt)
    x = torch.randn(m, h, device=dev).bfloat16()
    ids = torch.randint(0, e, (m, k), device=dev, dtype=torch.int32)
    tw = torch.rand(m, k, device=dev)
    # the tiles the tuning run starts from are those of the real shape (its table entry)
    base = policy.select_config(path, m, k, shape.num_local_experts, h, i, fmt, device_name(dev), num_sms(dev),
                                gluon_runs_on(fmt, h, i, dev))
    for cfg in _configs_to_compile(base, path, fmt, fields, promote_rule(path, m, fmt))[first::stride]:
        if policy.legal(path, cfg, fmt):
            try:
                with compiler_dumps_muted():
                    fused_moe(x, w, tw, ids, path=path, config=cfg, check_ids=False)
            except Exception:
                pass
    torch.cuda.synchronize()


def _precompile_workers(cases, device: torch.device, most: int = 12) -> int:
    """Compile workers that fit in the free GPU memory: each builds its case's experts (at most
    17) dense in fp32, plus temporaries and converted copies (14.6 GB measured for Mixtral FP8)."""
    def need(shape) -> float:
        e = min(shape.num_local_experts, 17)
        return 5 * e * 3 * shape.hidden_size * shape.intermediate_size * 4 + 1.5e9  # + the CUDA context

    free, _ = torch.cuda.mem_get_info(device)
    return max(1, min(most, int(0.8 * free // max(need(c[0]) for c in cases))))


def _table_path(out_dir: Path, dev_name: str, path: str) -> Path:
    return out_dir / policy.device_dir_name(dev_name) / f"{path}.json"


def _entry_key(e: dict) -> tuple:
    return (e["num_experts"], e["top_k"], e["hidden"], e["inter"], e["format"], e["tokens"])


def run(shapes, formats, tokens, paths, budget_s: float, out_dir: Path, force: bool = False,
        log: Path | None = None, fields: set[str] | None = None, sweeps: int = 1) -> int:
    """Tune every case within ``budget_s`` seconds; returns the number of entries written.
    ``log``: every timed candidate appended as a JSON line (case, config, us or error).
    ``fields``: only the moves of these fields (an A/B of a few options from the table's
    entry or the heuristic); None: all of them.  ``sweeps``: of the descent, per case."""
    from .bench.report import Progress

    dev = torch.device("cuda")
    dev_name = device_name(dev)
    deadline = time.monotonic() + budget_s
    written = 0
    for path in paths:
        table_file = _table_path(out_dir, dev_name, path)
        doc = json.loads(table_file.read_text()) if table_file.is_file() else dict(
            path=path, device=dev_name, triton=__import__("triton").__version__, torch=torch.__version__,
            source="fusedmoe tune", entries=[])
        done = {_entry_key(e) for e in doc["entries"]}
        cases = [(s, f, m) for s in shapes for f in formats for m in tokens
                 if force or (s.num_local_experts, s.top_k, s.hidden_size, s.intermediate_size, f, m) not in done]
        # a restricted A/B starts from each case's own entry: every case compiles its own kernels
        cases_to_compile = compile_cases(cases, path) if fields is None else [(s, f, path, m) for s, f, m in cases]
        if cases_to_compile:
            workers = _precompile_workers(cases_to_compile, dev)
            stride = max(1, workers // len(cases_to_compile))  # split a case's candidates when cases are few
            jobs = [(*c, first, stride, fields) for c in cases_to_compile for first in range(stride)]
            with mp.get_context("spawn").Pool(min(workers, len(jobs))) as pool:
                pool.map(_precompile, jobs)
        progress = Progress(len(cases))
        for shape, fmt, m in cases:
            if time.monotonic() > deadline:
                print(f"time budget spent: {len(cases) - progress.done} cases of {path} left for a resumed run")
                break
            timer = _case_timer(shape, fmt, path, m, dev)
            start = policy.select_config(path, m, shape.top_k, shape.num_local_experts, shape.hidden_size,
                                         shape.intermediate_size, fmt, dev_name, num_sms(dev),
                                         gluon_runs_on(fmt, shape.hidden_size, shape.intermediate_size, dev))
            case = dict(path=path, shape=shape.name, format=fmt, tokens=m)

            def record(cfg, us, err, case=case, phase="descent"):
                if log is not None:
                    with open(log, "a") as f:
                        f.write(json.dumps(dict(case, config=_as_dict(cfg), us=us, error=err, phase=phase)) + "\n")

            best, t_best, t_start = descend(start, _moves(path, fmt, fields), fmt, path, timer, deadline, record,
                                            sweeps, promote_rule(path, m, fmt))
            best, t_best, t_start = confirm(start, best, t_best, t_start, timer,
                                            record=lambda cfg, us, record=record: record(cfg, us, None, phase="confirm"))
            key = (shape.num_local_experts, shape.top_k, shape.hidden_size, shape.intermediate_size, fmt, m)
            doc["entries"] = updated_entries(doc["entries"], key, path, best, t_best, t_start)
            table_file.parent.mkdir(parents=True, exist_ok=True)
            table_file.write_text(json.dumps(doc, indent=1) + "\n")
            written += 1
            progress.step(f"{path} {shape.name} {fmt} M={m}: {t_start:.1f} -> {t_best:.1f} us")
    policy.load_table.cache_clear()
    policy.select_config.cache_clear()
    return written


def updated_entries(entries: list[dict], key: tuple, path: str, best, t_best: float, t_start: float) -> list[dict]:
    """The table's entries with the case ``key`` (E, top_k, H, I, format, M) set to ``best``.
    An entry that already holds ``best`` is kept whole (its fields and figures from the run
    that found it): a restricted A/B that moved nothing leaves the table as it was."""
    num_experts, top_k, hidden, inter, fmt, m = key
    old = [e for e in entries if _entry_key(e) == key]
    if old and policy.served_config(path, old[-1]["config"], m, fmt) == best:
        return entries
    return [e for e in entries if _entry_key(e) != key] + [dict(
        num_experts=num_experts, top_k=top_k, hidden=hidden, inter=inter, format=fmt, tokens=m,
        config=_as_dict(best), us=round(t_best, 2), start_us=round(t_start, 2))]


def _as_dict(cfg) -> dict:
    from dataclasses import asdict

    return asdict(cfg)


def main(argv: list[str]) -> int:
    from .cli import _add_shape_args, _choices, _ints, _shapes

    ap = argparse.ArgumentParser(prog="fusedmoe tune", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_shape_args(ap)
    ap.add_argument("--formats", default="bf16,fp8_tensor")
    ap.add_argument("--tokens", default="1,2,4,8,16,32,64,128,512,2048,8192")
    ap.add_argument("--paths", default="route_direct,grouped")
    ap.add_argument("--budget-min", type=float, default=20.0, help="stop after this many minutes (resumable)")
    ap.add_argument("--force", action="store_true", help="re-tune cases that already have an entry")
    ap.add_argument("--out-dir", type=Path, default=policy.CONFIG_DIR)
    ap.add_argument("--log", type=Path, help="append every timed candidate to this JSON-lines file")
    ap.add_argument("--moves", help="comma-separated fields to move (e.g. down_tiles); default all")
    ap.add_argument("--sweeps", type=int, default=1,
                    help="coordinate-descent sweeps per case (another only while the last one moved)")
    args = ap.parse_args(argv)
    if args.sweeps < 1:
        ap.error(f"--sweeps: expected an int >= 1, got {args.sweeps}")
    fields = set(args.moves.split(",")) if args.moves else None
    known = {f for p in ("route_direct", "grouped") for fmt in FORMATS for f, _ in candidates(p, fmt)}
    if fields is not None and not fields <= known:
        ap.error(f"--moves: unknown field(s) {sorted(fields - known)}; expected some of {sorted(known)}")
    if not torch.cuda.is_available():
        print("fusedmoe tune: needs a CUDA GPU (it times kernels); nothing to do on this machine")
        return 2
    n = run(_shapes(args), _choices("--formats", args.formats, FORMATS),
            _ints("--tokens", args.tokens), _choices("--paths", args.paths, ("route_direct", "grouped")),
            args.budget_min * 60, args.out_dir, args.force, args.log, fields, args.sweeps)
    print(f"{n} table entries written under {args.out_dir}")
    return 0
