"""Path and tile choice from shape facts only (M, top_k, E, H, I, format, SM count).

Configs are frozen dataclasses.  Tuned tables (``fusedmoe/configs/<device>/*.json``, written
by ``fusedmoe tune``) override the built-in heuristics where one matches; the heuristics are
the fallback and always give a config every GPU can run.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import triton

from .plan import MAX_EXPERTS, is_block_m
from .weights import A8_FORMATS, FP8_FORMATS

CONFIG_DIR = Path(__file__).parent / "configs"


@dataclass(frozen=True)
class Tile:
    """One GEMM launch: rows of N per program, K step, warps, pipeline depth, K splits, and
    swap_ab: weights on the MMA's M side, routes on N (grouped path: for BLOCK_M < 64;
    route-direct gate/up: the tensor-core form, which also streams a shared expert once;
    route-direct down, FP8 weights: the token's k expert tiles stacked into one MMA).
    The route-direct GEMV forms (swap_ab False) pipeline their K loop alone to num_stages (1:
    plain loads, the heuristic's choice; more: each step's tiles copied to shared memory by
    cp.async num_stages - 1 steps ahead).  On the H200 the deeper loops paid in 2 of the 60
    PEERS decode cases, by 2-4% (eighteenth session; ``tune.CONFIRM_MIN_GAIN``).  (A prefetch
    of the next K step into registers, tried 2026-11-30, sixth session, was slower in 43 of 44
    GEMV gate/up cases, 1.007-3.3x, and in the down kernel: the registers it needs cost more
    occupancy than the loads it overlaps.)
    max_registers (0: the compiler's choice) caps the registers per thread (PTX ``.maxnreg``),
    so that more CTAs fit on an SM where the register file, not shared memory, limits them:
    65536 / (threads x registers) CTAs.  Above the cap the compiler spills to local memory."""

    block_n: int
    block_k: int
    num_warps: int = 4
    num_stages: int = 3
    split_k: int = 1
    swap_ab: bool = False
    max_registers: int = 0

    def register_cap(self) -> dict:
        """The Triton launch option of max_registers: {"maxnreg": cap}, or {} uncapped."""
        return {"maxnreg": self.max_registers} if self.max_registers else {}


@dataclass(frozen=True)
class GroupedConfig:
    """Grouped path: routes per block, the two GEMMs' tiles, and group_m: how many blocks the
    programs walk together per weight tile (L2 reuse when an expert has several blocks).
    fp8_promote_k (FP8 weights; 32, 64 or 128, at most each tile's BLOCK_K): the FP8 MMA sums
    are added into the fp32 accumulator every fp8_promote_k columns.  Fewer promotions run
    faster and round more; ``grouped_promote_k`` picks it from M.  0 never promotes (the
    tensor core's own accumulation, about 14 significant bits, as vLLM's FP8 kernel runs): an
    opt-in only, never picked by the policy.  Promotion matters only where a K step's sum
    goes on unscaled (fp8_tensor's gate/up): steps with their own scales start a fresh sum.
    Not a tuner move (its accuracy gate is 1%).
    gluon (fp8_tensor, sm_90): run the two GEMMs as the Gluon kernels of
    ``paths/_grouped_gluon_kernels.py`` (TMA weights, async wgmma) with these tiles
    (``gluon_grouped_config``); elsewhere, and for layers they do not cover
    (``grouped.uses_gluon``), the Triton kernels run ``gluon_fallback``.  A tuner move; the
    heuristic takes the (128, 128) set only where the Gluon kernels run (GLUON_HEURISTIC_RULES).
    On the H200 the one-warpgroup set (BLOCK_M 64) ran 1.03-1.10x the Triton tables' time on the
    PEERS shapes (tenth session); with the warp-specialised set (128, twelfth) 11 fp8_tensor
    entries at M >= 512 run Gluon, 7 of them that set.
    tail_m (0, or 16 / 32 / 64 below block_m; the Triton kernels): a block holding at most
    tail_m routes (an expert's last block) runs a tile of tail_m rows, so its MMA is not padded
    to block_m rows.  At BLOCK_M 128 with 128 routes per expert on average (Mixtral M=512) the
    padded rows are 46% of the routed ones, 23% with tail tiles of 64.  A tuner move."""

    block_m: int
    gate_up: Tile
    down: Tile
    group_m: int = 1
    fp8_promote_k: int = 32
    gluon: bool = False
    tail_m: int = 0

    def __post_init__(self):
        object.__setattr__(self, "json", config_json(self))


@dataclass(frozen=True)
class RouteDirectConfig:
    """Route-direct path: gate_up.block_n rows of I per program (x2: gate and up), split_k
    splits of H; down.block_n rows of H per program, looping over the token's routes.
    pdl: launch both kernels with programmatic dependent launch where the GPU has it (sm_90+),
    so that the down grid starts and loads its first weights while gate/up finishes.
    down_tiles: tiles of H each GEMV down program computes in turn (its token's routing read
    once, fewer programs); 1 for the tensor-core down.  A tuner move: on the H200 it won in 9
    of 60 decode cases by more than 2% (DeepSeek-V3 TP8 M=2..4, Hunyuan, GPT-OSS bf16) and
    lost in most others, most at M=1 where fewer programs cannot fill the GPU (sixth session).
    fp16_products (FP8 weights, the GEMV forms of either kernel): multiply in packed fp16, each
    16 activation columns under a power-of-two scale, 8 products per lane summed in fp16, then
    fp32 (``_route_direct_kernels._chunk_dots_fp16``): 18-29% fewer instructions in the K loops
    (compiled for sm_90), where the FP8 GEMV issues an instruction in 62% of cycles (Nsight
    Compute, Hunyuan TP8 M=8).  Timed against the same tiles in one tuner run over the 40 FP8
    PEERS decode cases (thirteenth session): 0.976x the time (geomean; M=2 0.948, M=4 0.962,
    M=1 1.006), faster in 27; 29 table entries take it.  Its rounding moves the output's rel-L2
    against float64 from 0.164% to 0.180-0.186% (Qwen3-30B and Hunyuan, M 1..512).  A tuner move.
    With PDL a GEMV down program loads its first K step's weight tile before it waits for
    gate/up (more steps held through the wait were a tuner move from the thirty-first to the
    thirty-fourth session, taken by no entry: docs/path-measurements.md).
    down_gluon: run the GEMV down as the Gluon kernel of ``paths/_route_direct_gluon_kernels.py``
    (the same tile, its activations loaded in the weights' layout, no shared-memory round per
    K step) where it runs (``route_direct.uses_gluon_down``: sm_90, I a multiple of 16 bytes of
    weights); elsewhere the Triton kernel runs the same tile.  One K split of gate/up, 16-bit
    or FP8 weights, one H tile per program, the K loop unpipelined; its products are fp32
    (fp16_products then applies to gate/up alone).  A tuner move.
    block_scale_rows (fp8_block, the GEMV forms, tiles of at most 128 rows): each K step reads one
    block-scale row per 128 weight rows (gate/up: one for its gate rows, one for its up rows; down:
    one per route), issued first so that its latency runs under the weights'.  False: a scale per
    weight row, loaded after the step's products (its latency paid in every step), the form the
    fp8_block table entries up to the fiftieth session were tuned with; it takes fewer registers
    on their tiles (compiled for sm_90: Qwen3-30B M=1's 8 x 512 gate/up, 8 warps, 40 against 48).
    Timed route_direct forced (H100, 2026-12-07-s51 call 1): True took 0.95-0.98x the time of
    False on two untuned layers (heuristic tiles, M 12-14; fp8_tensor's kernels run 0.90-0.95x),
    but up to 1.18x on the tuned entries (GPT-OSS TP4 M=2 21.7 -> 25.5 us, Qwen3-30B M=1 16.8 ->
    19.4: 768 gate/up programs, 6 an SM at 40 registers fit one wave, 5 at 48 do not), so those
    entries keep False.  Under register caps at the per-row form's counts (no spills in 11 of the
    decode entries), True ran 0.966-1.015x their time (call 3): Hunyuan TP8 M=1, 4 and 8 take it,
    being more than 2% faster.  A tuner move."""

    gate_up: Tile
    down: Tile
    pdl: bool = False
    down_tiles: int = 1
    fp16_products: bool = False
    down_gluon: bool = False
    block_scale_rows: bool = True

    def __post_init__(self):
        object.__setattr__(self, "json", config_json(self))


# The Gluon kernels' tile sets, by BLOCK_M:
# - 64: one warpgroup (4 warps), a ring of 4 slots of 24 KB, so two CTAs fit per SM (144-151
#   registers, compiled for sm_90), one hiding the other's waits.  (BLOCK_M 128 in one CTA of 8
#   warps ran 1.02-1.43x the time of 64 in every probe case: tenth session.)
# - 128: warp-specialised (a producer warp for the TMA loads and two consumer warpgroups of 64
#   rows, one CTA per SM; ``_grouped_gluon_kernels``), its down tile 256 columns wide (as two
#   sub-tiles of 128).  In the probe (twelfth session, down us against the best other kernel):
#   Mixtral TP2 M=2048 / 8192 247 / 822 against 322 / 1206, GPT-OSS TP4 337 against 391 at
#   M=8192, Qwen3-30B 388 against 408 (128 columns: 965, 394, 465); its gate/up (64 columns
#   each of gate and up) 2143 against 2558 at Mixtral M=8192, slower at short K (GPT-OSS).
#   Six ring slots instead of four: no faster.
GLUON_STAGES = 4
# The Gluon tile sets, as (BLOCK_M, gate/up columns): the one-warpgroup set, and the
# warp-specialised one with gate/up tiles of 64 columns (fp32 SwiGLU output, requantised by a
# launch of its own) or of 128, one quantisation group, quantised in its epilogue.  On an H100
# (forty-first session, the layer's graph time, 128 against 64 columns): Mixtral TP2 fp8_tensor
# M=512 411 -> 396 us and M=2048 1014 -> 921 (I = 7168: the fp32 round trip and its launch,
# 28 and 70 us, gone), but Qwen3-30B M=512 362 -> 385 and DeepSeek-V3 TP8 M=512 836 -> 851
# (I = 768 / 256: gate/up 209 -> 272 and 445 -> 493 us, its partials waited for one at a time):
# the tables choose.
GLUON_SETS = ((64, 64), (128, 64), (128, 128))
# Where the heuristic takes the (128, 128) set for fp8_tensor (grouped_config's ``gluon``: where the
# Gluon kernels run): (least I, least routes per expert).  The forty-second session timed the set
# against the served configs at the table shapes (graph us, H200): faster at DeepSeek-V3 M=2048 /
# 8192 (0.88 / 0.93x; I 2048, 64 / 256 routes an expert), GPT-OSS-120B (0.96 / 0.84; I 2880),
# Qwen3-235B M=2048 (0.89; I 1536, 128), Mixtral-8x7B M=512 (0.90; I 14336, 128), Qwen3-30B M=8192
# (0.88; I 768, 512), GPT-OSS TP4 M=8192 (0.93, H100; I 720, 256); slower where I is 192 or 256
# (1.20-1.23x), at Qwen3-30B M=2048 (1.05; I 768, 128); even at Qwen3-235B TP4 M=8192 (0.99;
# I 384, 512).  The first rule was then checked on five shapes in no table (forty-third session,
# H100, against this heuristic's Triton tiles, M 512 / 2048 / 8192): DBRX TP4 (I 2688) 0.88 / 0.76
# / 0.72x, Mixtral-8x22B TP4 (I 4096) 0.91 / 0.73 / 0.71, Phi-3.5-MoE (I 6400) 0.94 / 0.78 / 0.68,
# Qwen2-57B-A14B (I 2560) 0.94 / 0.76 / 0.73, all at 64+ routes an expert; Qwen1.5-MoE-A2.7B
# (I 1408) 1.31 / 1.02 / 0.82 at 34 / 137 / 546 routes an expert, the last in the second rule.
GLUON_HEURISTIC_RULES = ((1536, 64), (512, 256))


def gluon_grouped_config(group_m: int = 1, block_m: int = 64, gate_n: int = 64) -> GroupedConfig:
    """The Gluon kernels' tile set (block_m, gate_n) of GLUON_SETS: K steps of 128 (promoted
    every 128), a ring of GLUON_STAGES slots, gate/up tiles of gate_n columns each of gate and
    up; at BLOCK_M 64, 4 MMA warps and down tiles of 128 columns; at 128, 8 (two consumer
    warpgroups) and down tiles of 256.  Where Gluon does not run, the Triton kernels run
    ``gluon_fallback``."""
    if (block_m, gate_n) not in GLUON_SETS:
        raise ValueError(f"block_m, gate_n: expected one of {GLUON_SETS} (the Gluon tile sets), "
                         f"got {(block_m, gate_n)!r}")
    warps, down_n = (4, 128) if block_m == 64 else (8, 256)
    return GroupedConfig(block_m, Tile(gate_n, 128, warps, GLUON_STAGES), Tile(down_n, 128, warps, GLUON_STAGES),
                         group_m, 128, gluon=True)


def gluon_config_like(cfg: GroupedConfig, block_m: int, gate_n: int = 64) -> GroupedConfig:
    """The Gluon tile set (block_m, gate_n) that walks as many rows per weight tile as ``cfg``
    does (its GROUP_M scaled by the BLOCK_M ratio, at least 1): what the probes and
    ``bench.kernels`` set beside a served config."""
    return gluon_grouped_config(max(1, cfg.group_m * cfg.block_m // block_m), block_m, gate_n)


def gluon_fallback(cfg: GroupedConfig) -> GroupedConfig:
    """What the Triton kernels run for a Gluon config where the Gluon kernels do not
    (``grouped.uses_gluon``; fp8_block borrowing an fp8_tensor entry): its tiles with gluon
    off, but at BLOCK_M 128 a down tile of 128 columns and a gate/up tile of 64, since there
    the Triton down at 256 x 128 with 8 warps holds a 128 x 256 fp32 accumulator and spills
    (255 registers, 184 LDL/STL), and the FP8 gate/up at 128 x 128 spills too (128 columns of
    down and 64 of gate/up: no spills, ``scripts/compile_check.py``)."""
    if not cfg.gluon:
        return cfg
    if cfg.block_m == 128:
        cfg = dataclasses.replace(cfg, gate_up=dataclasses.replace(cfg.gate_up, block_n=64),
                                  down=dataclasses.replace(cfg.down, block_n=128))
    return dataclasses.replace(cfg, gluon=False)


def even_rows_per_expert(num_routes: int, num_experts: int) -> float:
    """Routes per expert when they spread evenly over min(E, routes) experts: the block rules'
    estimate (``routes_per_active_expert`` is the expected count under uniform routing)."""
    return num_routes / max(1, min(num_experts, num_routes))


def grouped_block_m(num_routes: int, num_experts: int, spread: float = 0.0) -> int:
    """BLOCK_M from the expected routed rows per active expert (seed 003): the smallest legal
    tile (16..128) that holds them plus ``spread`` standard deviations of a Poisson count
    (sqrt of the mean), so padding stays small and tiles stay full."""
    rows_per_expert = even_rows_per_expert(num_routes, num_experts)
    rows_per_expert += spread * rows_per_expert ** 0.5
    for bm in (16, 32, 64):
        if rows_per_expert <= bm:
            return bm
    return 128


# w4a8's grouped GEMMs decode each FP4 weight tile once per block of rows, so an expert whose
# rows spill into a second block pays the decoding twice.  Its BLOCK_M holds the mean rows per
# expert plus one standard deviation (2026-12-04-s28/call3, the tuner over BLOCK_M and the
# register caps): at 16 rows per expert (DeepSeek-V3 TP8 and GPT-OSS-120B TP4, M=512) BLOCK_M 32
# ran 0.87-0.89x the time of 16 (781.0 -> 692.4, 550.7 -> 479.5 us), where about 43% of the
# experts overflow 16; at 21 and 32 rows (Hunyuan TP8, Qwen3-30B) the old pick won or tied.
# BLOCK_M 128 lost everywhere it was timed (1.6-6.4x, M 512..8192): the cap stays at 64.
W4A8_BLOCK_M_SPREAD = 1.0


# FP8 promotion interval of the grouped path, measured on the H200 (2026-11-30, fifth session;
# benchmarks/results/H200/2026-11-30-s5: promote.log and accuracy.md, 5 PEERS shapes x
# fp8_tensor/fp8_block).  rel-L2 against the float64 reference, largest over the cases:
#   every 32 columns: <= 0.41% at every M;  every 64: <= 0.45% at every M (1..4096);
#   every 128: <= 0.42% at M >= 512, but 0.49% at M=64 and 0.60-0.71% at M 1 and 8, where a
#   case averages over few rows (its expected error is the same at every M: ~0.4%).
# Time, 128 against 32 (Qwen3, DeepSeek-V3 TP8, Mixtral TP2): 1-17% faster at M=512, 5-21% at
# 2048, 17-25% at 8192 (Qwen3 fp8_tensor 8192: 1780 -> 1367 us; DeepSeek-V3 TP8 2840 -> 2118);
# 64 against 32: 0-12%.
# So: every 128 columns from M = 512, where the cases stay <= 0.42%; every 64 below.
GROUPED_PROMOTE_128_MIN_TOKENS = 512


def grouped_promote_k(m: int, gate_up: Tile, down: Tile, fmt: str = "fp8_tensor") -> int:
    """FP8 promotion interval for M tokens: 128 from GROUPED_PROMOTE_128_MIN_TOKENS, else 64,
    never above either tile's BLOCK_K (32 below 64).  Weights of 16 bits take 32 at every M:
    the kernels ignore it there, and one value compiles one kernel."""
    if fmt not in A8_FORMATS:
        return 32
    want = 128 if m >= GROUPED_PROMOTE_128_MIN_TOKENS else 64
    return min(want, gate_up.block_k, down.block_k) if min(gate_up.block_k, down.block_k) >= 32 else 32


def fit_registers(cfg: GroupedConfig, fmt: str) -> GroupedConfig:
    """``cfg`` with 8 warps on an fp8_block gate/up tile of 64 columns, BLOCK_M 64 and 4 warps
    that promotes its sums within a K step (0 < fp8_promote_k < BLOCK_K): it spills there (255
    registers, 3 LDL/STL; every 128 columns: 183; fp8_tensor: 182-186; with 8 warps 152, one
    CTA per SM; compiled for sm_90, scripts/compile_check.py).  A table entry tuned at one M
    can serve M/2 with the rule's shorter interval; the tuner times candidates after this too."""
    gu = cfg.gate_up
    if (fmt == "fp8_block" and gu.block_n < 128 and cfg.block_m == 64 and not gu.swap_ab and gu.num_warps < 8
            and 0 < cfg.fp8_promote_k < gu.block_k):
        return dataclasses.replace(cfg, gate_up=dataclasses.replace(gu, num_warps=8))
    return cfg


def w4a8_register_caps(cfg: GroupedConfig) -> GroupedConfig:
    """``cfg`` with each GEMM tile capped (Tile.max_registers) so that one CTA more fits per SM:
    8 warps at 128 registers (two CTAs), 4 warps at 168 (three), a 4-warp down at BLOCK_M 16
    at 128 (four).  Decoding FP4 to e4m3 in registers holds the w4a8 tiles at 146-191 registers
    (compiled for sm_90: the 8-warp tiles at 147, one CTA per SM; the 4-warp 64-column gate/up at
    191 and the swapped BLOCK_M-16 down at 146; capped: 0, 26 and 21 spill instructions).  Measured on
    the H200 (twenty-fourth session, ``benchmarks/results/H200/2026-12-03-s24/``): the tuner's
    register-cap descent from the uncapped tiles, over the five PEERS shapes at M 128/512/2048,
    found these caps in 14 of 15 cases (Mixtral TP2 M=128: its gate/up at 128, 1.6% better); with
    them the bench read 0.73-0.93x the uncapped time in all 15 (DeepSeek-V3 TP8 M=2048 1687.0 ->
    1256.2 us), and on the held-out shapes (DeepSeek-V2-Lite, OLMoE, Llama-4-Scout TP8 at M
    128/512/2048) 0.78-0.88x in 8 of 9; Llama-4-Scout TP8 M=128 (16 experts, top-1) 1.06x, 134.5
    against 127.4 us."""
    def capped(tile: Tile, four_ctas: bool) -> Tile:
        return dataclasses.replace(tile, max_registers=128 if tile.num_warps >= 8 or four_ctas else 168)
    return dataclasses.replace(cfg, gate_up=capped(cfg.gate_up, False), down=capped(cfg.down, cfg.block_m <= 16))


# Tail tiles of the heuristic (GroupedConfig.tail_m): an expert's last block of at most 32 routes
# runs a swapped 32-row tile, where BLOCK_M >= 64 and that is expected to save at least
# TAIL_MIN_SAVING of the MMA rows (``tail_saving``).  Measured on the H200 (twenty-second session,
# tuner descents over the PEERS shapes at M 128..2048, single CUDA-graph timings): tails won
# 3-9% where about half the experts end on a short block (Mixtral TP2 M=512 and Qwen3-30B M=2048
# at 128 rows per expert and BLOCK_M 128: bf16 557.6 -> 515.5 and 504.3 -> 473.1 us; Qwen3-30B
# M=512, DeepSeek-V3 TP8 and GPT-OSS TP4 M=2048 at 32 or 64 rows per expert and BLOCK_M 64:
# fp8_block 231.8 -> 224.0, 757.1 -> 738.5, 451.8 -> 438.2) and cost 1-4% where none do
# (Hunyuan TP8 M=2048: 85 rows per expert at BLOCK_M 128, bf16 395.8 -> 402.8).  fp8_tensor
# (its gate/up sums unscaled, one scale per row at the end) lost with a tail of 32 in 4 of 6
# cases (Qwen3-30B M=2048 409.6 -> 422.2, GPT-OSS TP4 M=2048 384.4 -> 392.5): the heuristic gives
# it none; its table entries take one where the tuner measured a gain.
GROUPED_TAIL_M = 32
TAIL_MIN_SAVING = 0.05


def tail_saving(rows_per_expert: float, block_m: int, tail_m: int) -> float:
    """Expected share of the MMA rows (about rows_per_expert + block_m / 2 per expert) that tail
    tiles save: (block_m - tail_m) rows for each expert whose last block holds 1..tail_m routes,
    for a count per expert ~ Normal(rows_per_expert, rows_per_expert) (Poisson-like routing)."""
    sd = max(math.sqrt(rows_per_expert), 1e-9)

    def below(x: float) -> float:
        return 0.5 * (1 + math.erf((x - rows_per_expert) / (sd * math.sqrt(2))))

    if sd > 4 * block_m:  # the count modulo block_m is then uniform to within 1e-6
        share = tail_m / block_m
    else:  # the blocks within 6 sd of the mean (at most 49 of them)
        lo, top = int(max(rows_per_expert - 6 * sd, 0)) // block_m, int(rows_per_expert + 6 * sd) // block_m + 1
        share = sum(below(j * block_m + tail_m + 0.5) - below(j * block_m + 0.5) for j in range(lo, top + 1))
    return share * (block_m - tail_m) / (rows_per_expert + block_m / 2)


def grouped_config(m: int, top_k: int, num_experts: int, hidden: int, inter: int, fmt: str,
                   gluon: bool = False, held_share: float = 1.0) -> GroupedConfig:
    """Heuristic tiles of the grouped path; with ``gluon`` (the Gluon kernels run here:
    ``grouped.gluon_runs``) the (128, 128) Gluon set where GLUON_HEURISTIC_RULES say, counting
    held_share of the M * top_k routes (an expert-parallel rank's local / global experts).

    Read off the sm_90 compile report (scripts/compile_check.py): wgmma needs 64 rows per
    warpgroup, so BLOCK_M 16/32 swap A and B (weights on the M side) or they fall back to
    mma.sync.  The Triton FP8 BLOCK_M stays at 64: at 128 the gate/up tile spilled 163 LDL/STL
    with one 256-wide accumulator; with separate gate and up accumulators it spills 9-12, which
    `fusedmoe tune` may accept once it is measured faster."""
    if gluon and fmt == "fp8_tensor" and takes_gluon_set(m * top_k * held_share, num_experts, inter):
        return gluon_config_like(grouped_config(m, top_k, num_experts, hidden, inter, fmt), 128, 128)
    bm = grouped_block_m(m * top_k, num_experts, W4A8_BLOCK_M_SPREAD if fmt == "w4a8" else 0.0)
    swap = bm < 64
    warps = 4 if swap else 8
    if fmt in A8_FORMATS:  # FP8 MMA (w4a8: the FP4 weights decoded to e4m3 per K step)
        # BLOCK_K = 128: one scale per step.  Gate/up tiles of 64 columns at BLOCK_M 32 and 64:
        # two CTAs per SM, the SwiGLU output requantised by a launch of its own
        # (grouped.splits_quantisation).  In the eighth session's tuner logs, pairs of configs
        # that differ only in the gate/up width (64 against 128 columns, fp8_tensor, the whole
        # layer timed): BLOCK_M 64 median 0.92x (0.70-1.13, 81 of 105 faster; Qwen3-235B TP8
        # M=8192 1059 against 1210 us), BLOCK_M 32 0.95x (0.86-1.03, 15 of 17), BLOCK_M 16
        # 0.98x (0.71-1.06, 26 of 41).  At BLOCK_M 16 the fused 128-column tile stays: it
        # holds a whole 128-group of the SwiGLU output, so its FP8 requantisation is fused
        # into the epilogue (one launch fewer), and it takes 8 warps even with swap-AB:
        # promoting the FP8 sums to fp32 (grouped_promote_k) costs a third accumulator
        # (at BLOCK_M 32 with 4 warps it spilled 15 LDL/STL; with 8 it holds in 203 registers).
        # Where the 64-column tile needs 8 warps (fit_registers: fp8_block at BLOCK_M 64 promoted
        # every 64 columns, M < 512) it fits one CTA per SM: there the fused tile stays too.
        bm = min(bm, 64)
        down = Tile(128, 128, warps, 3, swap_ab=swap)
        fused = GroupedConfig(bm, Tile(128, 128, 8, 3, swap_ab=swap), down, grouped_group_m(m * top_k, num_experts, bm),
                              grouped_promote_k(m, Tile(128, 128), down, fmt), tail_m=_heuristic_tail(m * top_k, num_experts, bm, fmt))
        narrow = dataclasses.replace(fused, gate_up=Tile(64, 128, 4, 3, swap_ab=swap))
        cfg = narrow if bm >= 32 and fit_registers(narrow, fmt) == narrow else fused
        return w4a8_register_caps(cfg) if fmt == "w4a8" else cfg
    gate_up, down = Tile(64, 64, warps, 3, swap_ab=swap), Tile(128, 64, warps, 3, swap_ab=swap)
    return GroupedConfig(bm, gate_up, down, grouped_group_m(m * top_k, num_experts, bm),
                         grouped_promote_k(m, gate_up, down, fmt), tail_m=_heuristic_tail(m * top_k, num_experts, bm, fmt))


def takes_gluon_set(num_routes: float, num_experts: int, inter: int) -> bool:
    """Whether the heuristic serves fp8_tensor by the (128, 128) Gluon set: I and the routes per
    expert at or past one of GLUON_HEURISTIC_RULES."""
    rows_per_expert = even_rows_per_expert(num_routes, num_experts)
    return any(inter >= i_min and rows_per_expert >= rows_min for i_min, rows_min in GLUON_HEURISTIC_RULES)


def _heuristic_tail(num_routes: int, num_experts: int, block_m: int, fmt: str) -> int:
    """GROUPED_TAIL_M where BLOCK_M >= 64, the format is not fp8_tensor and the tail tiles are
    expected to save at least TAIL_MIN_SAVING of the MMA rows, else 0."""
    rows_per_expert = even_rows_per_expert(num_routes, num_experts)
    wanted = block_m >= 64 and fmt != "fp8_tensor"
    return GROUPED_TAIL_M if wanted and tail_saving(rows_per_expert, block_m, GROUPED_TAIL_M) >= TAIL_MIN_SAVING else 0


def grouped_group_m(num_routes: int, num_experts: int, block_m: int) -> int:
    """Blocks walked together per weight tile: 8 once experts expect >= 2 blocks each, else 1.

    With one block after another (group 1) and an expert larger than L2, each block of that
    expert streams the expert's weights from HBM again: Mixtral TP2 at M=8192 (16 blocks of
    128 per expert, 117 MB of gate/up weights per expert) reads ~15 GB, ~3.5 ms at 4.3 TB/s,
    against 2.4 ms of bf16 MMA.  Walking 8 blocks per tile reads them ~2 GB.  Expected, not
    yet measured (2026-11-30): the tuner's group_m moves check it."""
    rows_per_expert = even_rows_per_expert(num_routes, num_experts)
    return 8 if rows_per_expert >= 2 * block_m else 1


DOWN_TILE_ELEMENTS = 16384
FP8_GEMV_TILE_ELEMENTS = 4096     # rows x columns of each of gate and up per FP8 GEMV program and K step
FP8_GEMV_WARPS = 4
FP8_GATE_UP_PROGRAMS_PER_SM = 3.5
BF16_GATE_UP_PROGRAMS_PER_SM = 3.5
DOWN_PROGRAMS_PER_SM = 1.5


def route_direct_config(m: int, top_k: int, num_experts: int, hidden: int, inter: int, fmt: str,
                        num_sms: int) -> RouteDirectConfig:
    """Heuristic tiles of the route-direct path, read off the H200 tuner logs of six shapes
    (Qwen3-30B-A3B, DeepSeek-V3 TP8, Hunyuan TP8, GPT-OSS TP4, Qwen3-235B-A22B TP4/TP8; M 1..8;
    2026-11-30 sessions 5, 6 and 8; ``benchmarks/results/H200/README.md``, eighth session):

    - gate/up, the GEMV form for FP8 weights at every M (the tensor-core form took 1.15-2.35x
      its time in all 40 FP8 cases) and for 16-bit weights at M <= 2 (1.02-1.29x in all 8:
      20.6 against 15.9 us at Qwen3-235B TP8 M=1); the tensor-core form for 16-bit weights
      above M=2 (0.93-1.08x at M=4..8; it streams an expert shared by several tokens once).
      GEMV rows per program: the most of 8 that still gives about 3.5 programs per SM, down
      to 4 (FP8) / 2 (16-bit).  FP8 programs of 4 warps with K steps of 4096 columns x rows of
      each of gate and up (8 x 512, 4 x 1024); 16-bit ones of 8 warps with 512 columns (2048 at
      2 rows); at most the row.  FP8, over the tuner's gate/up moves on each of 40 cases'
      base configs (fourteenth session, 2026-12-01-s14/tune_candidates.jsonl): 1.021x the
      best gate/up's time (geomean, at most 1.14x), where the 8-warp rule before it (16 x 512
      ... 4 x 2048, 2.5 programs per SM) took 1.047x (at most 1.36x); 16-bit tiles of 4 warps
      gained nothing there (1.034-1.039x against 1.033x over 10 cases).  A K split only where
      even the narrowest tile leaves SMs idle: its fp32 partials and second pass cost more
      than the idle SMs (Qwen3-235B TP8 fp8 M=1, 8 warps: 4 x 512 split 2 took 17.0 us,
      unsplit 13.1, 4 x 2048 10.8, on the same down tile).
    - down: [next_pow2(k), dn, bk] tiles up to 16K elements, 4 warps; dn 16 rows of H shrunk
      to keep 1.5 programs per SM (at M=1 with fp8_tensor weights dn 4 took 1.03-1.22x the
      time of the best dn 8-16 tile, six shapes).
    - pdl for FP8 weights: on the same tiles it was 3-16% faster in all 16 FP8 cases the
      fifth session's tuner tried both ways (Qwen3, DeepSeek-V3 TP8, M 1..8; 2026-11-30-s5/
      tune_candidates.jsonl); with bf16 it won 2 of 6 (-5..+10%), so the tables decide.

    The eighth session's rule (8-warp FP8 gate/up) against the tuned best, over the 53 logged
    cases: about 1.08x its time (geomean), at most 1.29x; the rule it replaced about 1.18x and
    1.95x (the config's own time where the log has it, else the best plus its gate/up's and
    down's separate penalties).  On two shapes no rule was read from (DeepSeek-V2-Lite and
    Llama-4-Scout TP8, ``benchmarks/heldout/``;
    2026-11-30-s8/tune_heldout.jsonl): 1.05-1.15x in 6 cases, and 16-bit M <= 2 at 35.1 /
    56.7 us where every candidate with the old gate/up tile took >= 38.0 / 64.5."""
    routes = max(1, m * top_k)
    fp8 = fmt in A8_FORMATS  # weights of 8 bits or fewer: GEMV forms (w4a8 takes FP8's tiles, untuned)
    if fp8 or m <= 2:
        bn, narrowest, per_sm = (8, 4, FP8_GATE_UP_PROGRAMS_PER_SM) if fp8 else (8, 2, BF16_GATE_UP_PROGRAMS_PER_SM)
        while bn > narrowest and routes * triton.cdiv(inter, bn) < per_sm * num_sms:
            bn //= 2
        split = 1
        while split < 4 and routes * triton.cdiv(inter, bn) * split < num_sms and hidden // (split * 2) >= 1024:
            split *= 2
        step = FP8_GEMV_TILE_ELEMENTS // bn if fp8 else (512 if bn >= 4 else 2048)
        bk = max(128, min(step, triton.next_power_of_2(triton.cdiv(hidden, split))))
        # each split covers whole K steps: halve the step while the splits would overshoot H by
        # a step or more (H 6144 in 4 splits of 2048-column steps: 2048 x 3 and an empty fourth)
        while bk > 128 and split * triton.cdiv(triton.cdiv(hidden, split), bk) * bk - hidden >= bk:
            bk //= 2
        gate_up = Tile(bn, bk, FP8_GEMV_WARPS if fp8 else 8, 1, split)
    else:
        split = 2 if routes * triton.cdiv(inter, 32) < num_sms and hidden >= 1024 else 1
        gate_up = Tile(32, 128, 4, 3, split, swap_ab=True)
    kp = triton.next_power_of_2(top_k)
    dn = 16
    while dn > 4 and (max(1, m) * triton.cdiv(hidden, dn) < DOWN_PROGRAMS_PER_SM * num_sms
                      or kp * dn * 128 > DOWN_TILE_ELEMENTS):
        dn //= 2
    dn_bk = max(128, min(DOWN_TILE_ELEMENTS // (kp * dn), triton.next_power_of_2(inter)))
    return RouteDirectConfig(gate_up, Tile(dn, dn_bk, 4, 1), pdl=fp8)


def active_experts(m: int, top_k: int, num_experts: int) -> float:
    """Expected distinct experts hit when M tokens (at least 1) each pick top_k of E uniformly."""
    return num_experts * (1.0 - (1.0 - min(top_k, num_experts) / num_experts) ** max(1, m))


def routes_per_active_expert(m: int, top_k: int, num_experts: int) -> float:
    """Expected routes per distinct expert hit when M tokens each pick top_k of E uniformly."""
    return max(1, m) * top_k / max(active_experts(m, top_k, num_experts), 1e-9)


# Dispatch between route-direct and grouped, measured on the H200 (2026-11-30, fusedmoe bench
# forcing each path at M = 1..16 on the five PEERS shapes x bf16/fp8_tensor/fp8_block, tuned
# route-direct tables; benchmarks/results/H200/2026-11-30-s2/decode).  Route-direct saves the
# plan and two launches (12-40 us at M=1, where grouped took 1.2-3x longer); what it loses as
# routes share experts depends on the gate/up form:
# - 16-bit weights (tensor-core form, shared experts streamed once): it won up to Mixtral M=4
#   (1.46 routes per active expert: 222 vs 242 us) and lost 5% at Mixtral M=8 (2.2: 323 vs
#   308 us, the one decode case slower than vLLM with route-direct; re-measured in the third
#   session, 2026-11-30-s3), so the limit sits between, at 2.0; at M=16 it was 1-8% faster on
#   DeepSeek-V3 and GPT-OSS (1.28), 5% slower on Hunyuan (1.33).
# - FP8 weights (mostly the GEMV form, one stream per route): up to M=8 it wins to 1.46
#   routes per active expert (Mixtral M=4 with the fourth session's tables, 2026-11-30-s4:
#   137-146 vs 151-155 us grouped; the third session's tables lost there, 155-165 vs
#   147-149) and loses at Mixtral M=8 (2.2: 233-246 vs 180-183 us): the limit sits at 1.6.
#   At M=16, with the per-format FP8 tables of the third session (2026-11-30-s3/decode), it
#   won at 1.26 on GPT-OSS (107-111 vs 117-121 us) and DeepSeek-V3 fp8_tensor (153 vs 159),
#   tied at 1.35 on Hunyuan (80-82 vs 82-84) and lost at 1.55 on Qwen3 (139-151 vs 117): the
#   limit sits at 1.4.
#   DeepSeek-V3 fp8_block M=16 (1.26) loses 7% by it (172 vs 160 us).
# - fp8_block at M <= 8 (its GEMV form also loads a block scale per 128 columns) had a limit
#   of its own, 1.4, from Mixtral M=4 (1.46), where grouped won in the sixth session (140.3 vs
#   150.6 us, 2026-11-30-s6/decode).  With the fourteenth session's GEMV tiles and fp16 products
#   route-direct wins there (133.9 vs 142.9 us; 2026-12-01-s15/dispatch_fp8_block), and on the
#   three top-1 layers at M=16 (1.55: 85.3 vs 93.2 and 23.2 vs 32.3 us, and the held-out
#   Llama-4-Scout TP8 57.3 vs 63.1), while E=8 Mixtral-sized experts at M=8 (1.52) lose 2%
#   (293.7 vs 287.5): fp8_block takes fp8_tensor's limits.
# - FP8 at 8 < M <= 16 on a large layer: DeepSeek-V3 (untouched by TP, 44 MB per FP8 expert)
#   fp8_tensor M=16 (1.26) ran route-direct at 1201-1543 us against grouped's 1054 (99.8% of
#   the floor), where M=8 (1.11) still went route-direct's way, 624.9 against 670.3
#   (2026-11-30-s7/deepseek_v3_m8_32).  There grouped's fixed costs (~10 us) are under 1%
#   of the layer and route-direct's re-streamed experts are not: above ROUTE_DIRECT_MAX_BYTES
#   of active weights, M > 8 goes to grouped.  The PEERS slices above that won route-direct at
#   M=16 (GPT-OSS TP4, DeepSeek-V3 TP8) held 0.32-0.56 GB of active FP8 weights (Hunyuan TP8,
#   0.22 GB, tied); DeepSeek-V3 M=16 holds 4.5 GB.  The bound sits between, near the geometric
#   mean (no layer between them has been measured).
# - Top-1 layers at 8 < M <= 16 take the M <= 8 sharing limits (the FP8 byte bound above still
#   applies): what costs route-direct is routes, and they have no more than 16, as a top-2
#   layer at M=8 (2026-12-01/top1, three top-1 layers that are not held out, both paths forced): at 1.55 routes per active expert, M=16,
#   route-direct ran 23.4 / 34.3 us against grouped's 32.7 / 38.7 (E=16, H 2048, I 768,
#   fp8_tensor / bf16) and tied at E=16, H 4096, I 2048 (85.5 / 133.6 against 84.1 / 135.8);
#   at M=32 (2.29) grouped won both by 8-43%.  The held-out Llama-4-Scout TP8 (2026-11-30-s9/
#   heldout) agrees: route-direct 1.05-1.16x faster at M=16, where the 8 < M <= 16 limits had
#   sent it to grouped.  One top-1 case loses by the M <= 8 limit: E=8 with Mixtral-sized
#   experts at M=8 (1.52), fp8_tensor, route-direct 296.6 against 266.7 us (bf16 tied).  Not
#   measured: that layer in bf16 at M = 9..13 (1.61-1.97, under the 2.0 limit), between the
#   tie at 1.52 and grouped 9% faster at 2.27.
ROUTE_DIRECT_MAX_TOKENS = 16
# routes per active expert: (M <= 8 or at most SMALL_LIMIT_MAX_ROUTES routes, other 8 < M <= 16)
ROUTE_DIRECT_MAX_SHARING = {"16bit": (2.0, 1.3), "fp8": (1.6, 1.4)}
SMALL_LIMIT_MAX_ROUTES = 16  # top-1 layers up to M=16
ROUTE_DIRECT_MAX_BYTES = 1.5e9  # FP8 active weight bytes at M > 8
# w4a8 (FP4 weights) has limits of its own (2026-12-04-s28/call1: both paths forced, M 1..64, on
# the five PEERS shapes and the three top-1 layers; the three held-out shapes checked the rule).
# Its grouped GEMMs decode FP4 in the MMA loop and run at 1.7-2.5x FP8's time, with 50-140 us at
# M=1, while its GEMV route-direct costs what FP8's does at half the bytes; so route-direct wins far
# past FP8's limits: Mixtral TP2 M=8 (2.22 routes per active expert) 257.8 against 375.0 us,
# Qwen3-30B M=16 (1.55) 118.5 against 169.7, DeepSeek-V3 TP8 M=64 (2.30) 494.2 against 529.6.
# Where it starts to lose depends on the shape, between 2.3 and 4 routes per active expert
# (Qwen3-30B M=32 at 2.29: 228.9 against 216.9; Mixtral M=16 at 4.04: 489.6 against 398.8).  With the limit at 2.4 up to M=64 the picks took
# 1.010x the faster path's time (geomean of 80; at most 1.59x, a small top-1 layer at M=48..64
# where route-direct still wins) in sample and 1.007x on the 30 held-out cases, where FP8's
# limits took 1.129x / 1.078x (at most 2.73x).  The FP8 byte bound above still applies at M > 8.
W4A8_ROUTE_DIRECT_MAX_TOKENS = 64
W4A8_ROUTE_DIRECT_MAX_SHARING = 2.4
# FP8 layers of small experts (e4m3 weights of at most FP8_SMALL_EXPERT_BYTES an expert, 3 * H * I)
# keep route-direct to FP8_SMALL_EXPERT_MAX_SHARING routes per active expert up to
# FP8_SMALL_EXPERT_MAX_TOKENS (forty-ninth session, 2026-12-07-s49: both paths forced, an H100 on the
# H200 tables).  The GEMV streams each route's expert, but an expert of a few MB that the next token's
# route reads again is still in L2, so sharing costs these layers less than the limits above assume.
# Read from the PEERS shapes at M 1..512 (call 1): route-direct ran 0.89-0.95x grouped's time at
# 1.55-1.79 routes per active expert, M 16..32, where those limits sent the calls to grouped (Qwen3-30B
# M=16, 4.7 MB experts: 138.2 against 147.6 us; DeepSeek-V3 TP8 M=32, 5.5 MB: 309.0 against 338.6;
# GPT-OSS TP4 M=32, 6.2 MB: 184.2 against 205.8; Hunyuan TP8 M=32, 2.4 MB, 1.79: 137.0 against 149.9;
# fp8_block alike), and lost from 2.29 (Qwen3-30B M=32: 1.23-1.31x).  A first limit of 2.0 was then
# run on the held-out shapes, the top-1 layers, Qwen3-235B TP4 and the PEERS shapes at M=24 (call 2):
# it lost at 1.88-1.90 (DeepSeek-V2-Lite M=16, 8.7 MB: 1.10-1.21x; Qwen3-30B M=24: 1.05-1.13x; OLMoE
# M=12 fp8_block 1.04x), so the limit sits at 1.8, between Hunyuan's win at 1.79 and those losses.
# Over the 281 cases of calls 1-3 (bf16 included; call 3 ran this rule) the picks take 1.0020x the
# faster path's time (geomean; at most 1.10x), the limits above alone 1.0116x with 32 cases past 5%
# (at most 1.16x).  The 4 still past 5%: a small top-1 layer (E=16, 4.7 MB) at M=24, 1.90, where
# route-direct won by 6-10% with 24 routes (2026-12-07-s49/dispatch.md; the few-routes limit below
# takes them).  Larger experts keep the limits above: a top-1 layer of 25 MB experts won at 1.55
# (M=16) and tied at 1.90; Mixtral TP2's 88 MB experts lost at 2.22 (M=8, 1.04-1.08x); the bound
# sits between the largest small-expert layer measured (9.8 MB, call 6) and 25 MB.
# With few routes the bound is higher: grouped's fixed costs (plan, quantisation, requantisation and
# combine launches) weigh more on a small layer, and fewer routes read an expert again.  Call 6 ran
# three layers no rule had been read from (16 experts top-2, 32 top-4, 32 top-8; 4.7-9.8 MB): the
# limit of 1.8 cut their cases past 5% from 10 to 4, and those 4 were route-direct wins at 1.82-1.88
# with 48 routes or fewer (0.84-0.95x grouped's time), as was the small top-1 layer above at 1.90
# with 24 routes; with 64 routes at 2.22 route-direct lost or tied (1.00-1.07x), with 96 routes at
# 1.88-1.89 it lost (OLMoE M=12 fp8_block 1.06x, DeepSeek-V2-Lite M=16).  So up to 64 routes
# (between 48 and 96) the limit was 2.0 (between 1.90 and 2.22).  Over the 247 distinct cases of
# calls 1-6 the rule then picked within 1.0007x of the faster path (geomean; at most 1.036x, none
# past 5%); the 1.8 limit alone 1.0035x with 6 past 5%.
# Out of that sample (fiftieth session, 2026-12-07-s50/oos_dispatch.md: four more layers of 2.9-9.8 MB
# experts, 16-80 routes, 1.6-2.1 routes per active expert) the rule took 1.016x, 6 of 34 cases past
# 5%, and the formats parted: fp8_tensor's route-direct won past the limits (0.92x grouped's time at
# 2.04-2.12 with 22-34 routes, 0.93-0.96x at 1.86-1.99 with 72-80 routes), fp8_block's, whose GEMV
# also applies a scale per 128 columns, ran 3-11% slower than fp8_tensor's where grouped ran alike,
# and lost on one layer (24 experts top-3) from 1.79.  So the few-routes limits are per format
# (FP8_SMALL_EXPERT_FEW: routes at most, routes per active expert at most): fp8_tensor to 2.2 with up
# to 80 routes (it tied at 2.22 with 64 routes, s49 call 6), fp8_block as before.  Over the 147
# fp8_tensor cases of both sessions (in sample now) its picks take 1.0008x the faster path (at most
# 1.035x, none past 5%), where 64 routes at 2.0 took 1.0026x with 3 past 5%.  Then on three more
# fp8_tensor layers out of that sample (s50 call 3; 3.1-11.8 MB, 26-84 routes, 1.97-2.34) they took
# 1.0001x in all 11 cases (at most 1.001x), the s49 rule 1.028x with 3 past 5%: route-direct won to
# 2.15-2.17 (0.93-0.98x) and lost or tied from 2.22 (1.00-1.05x).  fp8_block's limit was re-checked
# once its GEMVs read one block-scale row per K step (s51 call 3, the seven layers, 28 cases): it took
# 1.0079x the faster path (1 past 5%), fp8_tensor's limit 1.0131x (2 past 5%), so it stays.
FP8_SMALL_EXPERT_BYTES = 12e6
FP8_SMALL_EXPERT_MAX_SHARING = 1.8
FP8_SMALL_EXPERT_MAX_TOKENS = 32
FP8_SMALL_EXPERT_FEW = {"fp8_tensor": (80, 2.2), "fp8_block": (64, 2.0)}


def device_dir_name(device_name: str) -> str:
    """Folder of a device's tables: 'NVIDIA H200' -> 'NVIDIA_H200'."""
    return re.sub(r"[^A-Za-z0-9]+", "_", device_name).strip("_")


@functools.lru_cache(maxsize=None)
def load_table(device_name: str, path: str) -> tuple[dict, ...]:
    """Entries of ``configs/<device>/<path>.json`` (empty when there is none)."""
    f = CONFIG_DIR / device_dir_name(device_name) / f"{path}.json"
    return tuple(json.loads(f.read_text())["entries"]) if f.is_file() else ()


def config_json(cfg: GroupedConfig | RouteDirectConfig) -> str:
    """A config's path and fields as JSON (``config_from_json`` reads it back).  Each config
    keeps its own as ``cfg.json``, made at construction: under torch.compile fused_moe hands it
    to its op as a string, which an attribute read gives the tracer (it cannot trace json)."""
    path = "grouped" if isinstance(cfg, GroupedConfig) else "route_direct"
    return json.dumps({"path": path, **dataclasses.asdict(cfg)})


def config_from_json(text: str) -> GroupedConfig | RouteDirectConfig:
    fields = json.loads(text)
    return config_from_dict(fields.pop("path"), fields)


def config_from_dict(path: str, d: dict) -> GroupedConfig | RouteDirectConfig:
    """A config of ``path`` from its fields (a table entry's 'config', or ``dataclasses.asdict``)."""
    if path == "grouped":
        return GroupedConfig(d["block_m"], Tile(**d["gate_up"]), Tile(**d["down"]), d.get("group_m", 1),
                             d.get("fp8_promote_k", 32), d.get("gluon", False), d.get("tail_m", 0))
    return RouteDirectConfig(Tile(**d["gate_up"]), Tile(**d["down"]), d.get("pdl", False), d.get("down_tiles", 1),
                             d.get("fp16_products", False), d.get("down_gluon", False), d.get("block_scale_rows", True))


def legal(path: str, cfg: GroupedConfig | RouteDirectConfig, fmt: str) -> bool:
    """Whether the kernels accept ``cfg`` for weights of format ``fmt``."""
    tiles = (cfg.gate_up, cfg.down)
    # powers of two; Triton's warps too, at most 32 (1024 threads) a program
    pow2 = all(t.block_n >= 1 and t.block_n & (t.block_n - 1) == 0 and t.block_k >= 1 and t.block_k & (t.block_k - 1) == 0
               and 1 <= t.num_warps <= 32 and t.num_warps & (t.num_warps - 1) == 0 and t.num_stages >= 1
               and t.split_k >= 1 for t in tiles)
    # a register cap (.maxnreg): none (0), or 24..255 in steps of 8
    caps_ok = all(t.max_registers == 0 or (24 <= t.max_registers <= 255 and t.max_registers % 8 == 0) for t in tiles)
    if path == "grouped":
        # FP8: one scale per K step (BLOCK_K divides 128), and an e4m3 MMA needs K >= 32; gate/up
        # tiles of 128 hold one SwiGLU output group (fused requantisation), of 64 or 32 part of
        # one (a requantisation launch of its own, grouped.splits_quantisation); 32 only
        # unswapped, since swapped its 32 weight rows on the MMA's M side have no wgmma
        gu = cfg.gate_up
        scaled_ok = fmt not in A8_FORMATS or ((gu.block_n in (64, 128) or gu.block_n == 32 and not gu.swap_ab)
                                              and all(128 % t.block_k == 0 and t.block_k >= 32 for t in tiles))
        promote_ok = cfg.fp8_promote_k == 0 or cfg.fp8_promote_k in (32, 64, 128) and (
            fmt not in A8_FORMATS or all(t.block_k >= cfg.fp8_promote_k for t in tiles))
        # the Gluon kernels: fp8_tensor, exactly one of their tile sets (gluon_grouped_config)
        gluon_set = (cfg.block_m, gu.block_n)
        gluon_ok = not cfg.gluon or (fmt == "fp8_tensor" and gluon_set in GLUON_SETS
                                     and cfg == gluon_grouped_config(cfg.group_m, *gluon_set))
        # tail tiles: fewer rows than BLOCK_M, swapped below 64 (FP8: then 64 or 128 gate/up columns)
        tail_ok = cfg.tail_m == 0 or (cfg.tail_m in (16, 32, 64) and cfg.tail_m < cfg.block_m and not cfg.gluon
                                      and (cfg.tail_m >= 64 or fmt not in A8_FORMATS or gu.block_n in (64, 128)))
        return (pow2 and caps_ok and scaled_ok and promote_ok and gluon_ok and tail_ok and is_block_m(cfg.block_m)
                and cfg.block_m >= 16
                and all(t.block_k >= 16 and t.block_n >= 16 for t in tiles)
                and all(t.split_k == 1 for t in tiles) and cfg.group_m >= 1)
    gu, dn = cfg.gate_up, cfg.down
    gu_ok = not gu.swap_ab or (gu.block_n >= 8 and gu.block_k >= 16 and (fmt != "fp8_block" or gu.block_k == 128))
    # the tensor-core down runs FP8 weights only, its stacked tile needs >= 16 rows
    dn_ok = not dn.swap_ab or (fmt in FP8_FORMATS and dn.block_n >= 16 and dn.block_k >= 16
                               and (fmt != "fp8_block" or dn.block_k == 128))
    tiles_ok = cfg.down_tiles >= 1 and (cfg.down_tiles == 1 or not dn.swap_ab)
    # fp16 products: FP8 weights, at least one GEMV form, its K steps whole 16-column chunks
    fp16_ok = not cfg.fp16_products or (fmt in FP8_FORMATS and not (gu.swap_ab and dn.swap_ab)
                                        and all(t.swap_ab or t.block_k >= 16 for t in tiles))
    # FP4 weights (w4a8): the GEMV forms only, K steps of whole 32-column exponent groups
    fp4_ok = fmt != "w4a8" or (not gu.swap_ab and not dn.swap_ab and all(t.block_k >= 32 for t in tiles))
    # the Gluon down: the GEMV form's tile of 16-bit or FP8 weights, one gate/up K split, one H
    # tile a program, no pipeline or register cap, K steps of whole 16-byte groups
    gluon_ok = not cfg.down_gluon or (fmt in ("bf16", "fp16", "fp8_tensor", "fp8_block") and not dn.swap_ab
                                      and gu.split_k == 1 and cfg.down_tiles == 1 and dn.num_stages == 1
                                      and dn.max_registers == 0 and dn.block_k >= 16)
    # fp8_block: K steps of whole 128-column scale groups; with block_scale_rows a GEMV tile's rows
    # in one 128-row scale block
    block_ok = fmt != "fp8_block" or all(
        t.block_k % 128 == 0 and (t.swap_ab or t.block_n <= 128 or not cfg.block_scale_rows) for t in tiles)
    return (pow2 and caps_ok and block_ok and dn.split_k == 1
            and gu_ok and dn_ok and tiles_ok and fp16_ok and fp4_ok and gluon_ok)


# A table entry serves token counts within this factor of the M it was tuned at; beyond, the
# heuristic.  Measured (2026-11-30, fifth session): with the nearest entry at any distance,
# grouped bf16 entries tuned at M = 16..64 ran Qwen3 M=8192 in 4473 us against the heuristic's
# 1599 (vLLM 1666), DeepSeek-V3 TP8 6205 against 2547: the tile for 1-4 rows per expert.
TABLE_MAX_TOKEN_RATIO = 2.0

# A table entry measured for one format also serves formats that stream the same bytes.
_TABLE_FORMATS = {"bf16": ("bf16", "fp16"), "fp16": ("fp16", "bf16"), "fp8_tensor": ("fp8_tensor", "fp8_block"),
                  "fp8_block": ("fp8_block", "fp8_tensor"), "w4a8": ("w4a8",)}


def tuned_config(path: str, device_name: str, m: int, top_k: int, num_experts: int, hidden: int, inter: int,
                 fmt: str) -> GroupedConfig | RouteDirectConfig | None:
    """The table entry for this shape and format (or a same-width format) nearest in token
    count (log scale, within TABLE_MAX_TOKEN_RATIO), as ``served_config`` serves it at this M;
    None when the device has no matching legal entry."""
    def distance(e):
        return abs(math.log2(e["tokens"]) - math.log2(max(1, m)))

    for f in _TABLE_FORMATS[fmt]:
        cands = [e for e in load_table(device_name, path)
                 if (e["num_experts"], e["top_k"], e["hidden"], e["inter"], e["format"]) ==
                 (num_experts, top_k, hidden, inter, f) and distance(e) <= math.log2(TABLE_MAX_TOKEN_RATIO) + 1e-9]
        cands.sort(key=distance)
        for e in cands:
            cfg = served_config(path, e["config"], m, fmt)
            if legal(path, cfg, fmt):
                return cfg
    return None


def served_config(path: str, entry_config: dict, m: int, fmt: str) -> GroupedConfig | RouteDirectConfig:
    """The config a table entry's ``config`` serves at M tokens in format ``fmt`` (the policy
    and the tuner, which compares it with its best, both read entries through this): a
    grouped entry promotes its FP8 sums at most every ``grouped_promote_k`` columns at this M
    (an entry tuned at M=512 may serve M=256; one written without the field takes the rule),
    with ``fit_registers``, and an fp8_tensor entry that runs the Gluon kernels serves another
    format (fp8_block borrows fp8_tensor's entries) as ``gluon_fallback`` on the Triton kernels
    where the Gluon kernels could serve this M (promotion every 128 columns), else nothing; an
    fp8_block route-direct entry's tensor-core tiles take K steps of 128 (one block scale per
    step)."""
    cfg = config_from_dict(path, entry_config)
    if path == "grouped":
        rule = grouped_promote_k(m, cfg.gate_up, cfg.down, fmt)
        if fmt != "fp8_tensor" and rule >= 128:  # below, a Gluon entry serves nothing (legal() refuses it)
            cfg = gluon_fallback(cfg)
        return fit_registers(dataclasses.replace(cfg, fp8_promote_k=min(entry_config.get("fp8_promote_k", rule), rule)),
                             fmt)
    if fmt == "fp8_block":
        gate_up, down = (dataclasses.replace(t, block_k=128) if t.swap_ab else t for t in (cfg.gate_up, cfg.down))
        cfg = dataclasses.replace(cfg, gate_up=gate_up, down=down)  # keeps pdl
    return cfg


@functools.lru_cache(maxsize=4096)
def select_config(path: str, m: int, top_k: int, num_experts: int, hidden: int, inter: int, fmt: str,
                  device_name: str, num_sms: int, gluon: bool = False,
                  held_share: float = 1.0) -> GroupedConfig | RouteDirectConfig:
    """Tiles for a call: the device's tuned table where it has this shape, else the heuristic
    (``gluon``: the Gluon kernels run here; ``held_share``: the share of routes held here;
    ``grouped_config``)."""
    cfg = tuned_config(path, device_name, m, top_k, num_experts, hidden, inter, fmt)
    if cfg is not None:
        return cfg
    if path == "grouped":
        return grouped_config(m, top_k, num_experts, hidden, inter, fmt, gluon, held_share)
    return route_direct_config(m, top_k, num_experts, hidden, inter, fmt, num_sms)


@functools.lru_cache(maxsize=4096)
def choose_path(m: int, top_k: int, num_experts: int, hidden: int, inter: int, fmt: str, num_sms: int) -> str:
    """The path the dispatcher runs for these shape facts."""
    if num_experts > MAX_EXPERTS:  # the grouped path's plan holds at most MAX_EXPERTS local experts
        return "route_direct"
    w4 = fmt == "w4a8"
    small_fp8 = fmt in FP8_FORMATS and 3 * hidden * inter <= FP8_SMALL_EXPERT_BYTES
    max_tokens = W4A8_ROUTE_DIRECT_MAX_TOKENS if w4 else (
        FP8_SMALL_EXPERT_MAX_TOKENS if small_fp8 else ROUTE_DIRECT_MAX_TOKENS)
    if m > max_tokens:
        return "grouped"
    active_bytes = active_experts(m, top_k, num_experts) * 3 * hidden * inter * (0.5 if w4 else 1)
    if m > 8 and fmt in A8_FORMATS and active_bytes > ROUTE_DIRECT_MAX_BYTES:
        return "grouped"
    small_m, large_m = ROUTE_DIRECT_MAX_SHARING["fp8" if fmt in A8_FORMATS else "16bit"]
    if w4:
        limit = W4A8_ROUTE_DIRECT_MAX_SHARING
    elif small_fp8:
        few_routes, few_limit = FP8_SMALL_EXPERT_FEW[fmt]
        limit = few_limit if m * top_k <= few_routes else FP8_SMALL_EXPERT_MAX_SHARING
    else:
        limit = small_m if m <= 8 or m * top_k <= SMALL_LIMIT_MAX_ROUTES else large_m
    return "route_direct" if routes_per_active_expert(m, top_k, num_experts) <= limit else "grouped"
