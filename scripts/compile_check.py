"""Compile the layer's kernels for sm_90 (H100/H200) on any machine, no GPU needed, and read
their SASS: wgmma (HGMMA bf16/fp16, QGMMA fp8) where the GEMMs should use it, registers,
and local-memory spills.  Catches what the interpreter cannot (GPU-only compile errors).

    python scripts/compile_check.py [--json OUT.json]

Exits 1 if a kernel fails to compile, spills, or a tensor-core GEMM shows no wgmma.
Must run without TRITON_INTERPRET (the kernels must be real @triton.jit functions).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from fusedmoe._epilogue_kernels import _combine_kernel, _quantize_rows_kernel, _quantize_whole_rows_kernel, _swiglu_kernel
from fusedmoe._routing_kernels import _route_kernel
from fusedmoe._plan_kernels import (_plan_recount_kernel, _plan_single_kernel, _plan_tile_count_kernel,
                                    _plan_tile_scatter_kernel)
from fusedmoe.paths._grouped_kernels import gather_plan_rows_kernel, grouped_down_kernel, grouped_gate_up_kernel
from fusedmoe.paths._grouped_gluon_kernels import K_STEP, tile_layout
from fusedmoe.paths._route_direct_gluon_kernels import route_down_gluon_kernel
from fusedmoe.paths._route_direct_kernels import (route_down_kernel, route_down_mma_kernel, route_gate_up_kernel,
                                                  route_gate_up_mma_kernel)
from fusedmoe.paths.grouped import gluon_kernels
from fusedmoe.policy import GLUON_SETS, gluon_grouped_config

TARGET = GPUTarget("cuda", 90, 32)
CUOBJDUMP = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"

# (name, kernel, pointer dtypes by argument name (others *fp32), constexprs, num_warps, needs wgmma)
FP8 = "*fp8e4nv"
PLAN = dict(routes_ptr="*i32", block_expert_ptr="*i32", num_blocks_ptr="*i32")
GATE_UP_BF16 = dict(x_ptr="*bf16", w_ptr="*bf16", act_ptr="*bf16", **PLAN)
GATE_UP_FP8 = dict(x_ptr=FP8, w_ptr=FP8, act_ptr=FP8, **PLAN)
DOWN_BF16 = dict(act_ptr="*bf16", w_ptr="*bf16", y_ptr="*bf16", **PLAN)
DOWN_FP8 = dict(act_ptr=FP8, w_ptr=FP8, y_ptr="*bf16", **PLAN)
ROUTE_GATE_UP_BF16 = dict(x_ptr="*bf16", w_ptr="*bf16", ids_ptr="*i32")
ROUTE_GATE_UP_FP8 = dict(x_ptr="*bf16", w_ptr=FP8, ids_ptr="*i32")
ROUTE_DOWN_BF16 = dict(w_ptr="*bf16", ids_ptr="*i32", shared_ptr="*bf16", out_ptr="*bf16")
ROUTE_DOWN_FP8 = dict(w_ptr=FP8, ids_ptr="*i32", shared_ptr="*bf16", out_ptr="*bf16")
# w4a8: packed FP4 codes and E8M0 exponents, both bytes
W4 = dict(w_ptr="*u8", ws_ptr="*u8")
GATE_UP_W4 = dict(GATE_UP_FP8, **W4)
DOWN_W4 = dict(DOWN_FP8, **W4)
ROUTE_GATE_UP_W4 = dict(ROUTE_GATE_UP_BF16, **W4)
ROUTE_DOWN_W4 = dict(ROUTE_DOWN_BF16, **W4)


def grouped(bm, bn, bk, swap, fp8, w_scale, **extra):
    """Constexprs of a grouped GEMM (gate/up takes QUANT_OUT and ACTIVATION in ``extra``), with
    PDL as every grouped launch on sm_90."""
    return dict(A_SCALED=fp8, W_SCALE=w_scale, SWAP_AB=swap, HAS_BIAS=False, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                GROUP_M=extra.pop("GROUP_M", 1), PDL=True, **extra)


def route_gate_up(w_scale, split, act, bias, bn, bk, **extra):
    return dict(W_SCALE=w_scale, SPLIT_K=split, ACTIVATION=act, HAS_BIAS=bias, BLOCK_N=bn, BLOCK_K=bk, **extra)


def route_down(topk, w_scale, split, shared, act, bias, bn, bk, **extra):
    return dict(TOPK=topk, W_SCALE=w_scale, SPLIT_K=split, HAS_SHARED=shared, ACTIVATION=act, HAS_BIAS=bias,
                BLOCK_N=bn, BLOCK_K=bk, **extra)


def gate_up_narrow(fmt, bn, bm, warps, promote):
    """A case of the grouped gate/up with BLOCK_N ``bn`` < 128 and an fp32 SwiGLU output
    (swap-AB below BLOCK_M 64); fp8_tensor with row-scaled x, fp8_block with block scales."""
    fp8, w_scale = (2, 1) if fmt == "fp8_tensor" else (True, 2)
    return (f"grouped_gate_up {fmt} {bn} wide M{bm} {warps} warps promote{promote}, fp32 out", grouped_gate_up_kernel,
            dict(GATE_UP_FP8, act_ptr="*fp32"),
            grouped(bm, bn, 128, bm < 64, fp8, w_scale, QUANT_OUT=False, ACTIVATION=0, PROMOTE_K=promote), warps, True)


CASES = [
    ("grouped_gate_up bf16", grouped_gate_up_kernel, GATE_UP_BF16,
     grouped(64, 64, 64, False, False, 0, QUANT_OUT=False, ACTIVATION=0), 8, True),
    ("grouped_gate_up bf16 swap-AB M16", grouped_gate_up_kernel, GATE_UP_BF16,
     grouped(16, 64, 64, True, False, 0, QUANT_OUT=False, ACTIVATION=0), 4, True),
    ("grouped_gate_up fp8_block", grouped_gate_up_kernel, GATE_UP_FP8,
     grouped(64, 128, 128, False, True, 2, QUANT_OUT=True, ACTIVATION=0), 8, True),
    ("grouped_gate_up fp8_block swap-AB M32", grouped_gate_up_kernel, GATE_UP_FP8,
     grouped(32, 128, 128, True, True, 2, QUANT_OUT=True, ACTIVATION=0), 8, True),
    ("grouped_gate_up fp8_tensor row-scaled x", grouped_gate_up_kernel, GATE_UP_FP8,
     grouped(64, 128, 128, False, 2, 1, QUANT_OUT=True, ACTIVATION=0), 8, True),
    ("grouped_gate_up fp8_tensor row-scaled x swap-AB M32", grouped_gate_up_kernel, GATE_UP_FP8,
     grouped(32, 128, 128, True, 2, 1, QUANT_OUT=True, ACTIVATION=0), 8, True),
    ("grouped_gate_up fp8_tensor row-scaled x promote64", grouped_gate_up_kernel, GATE_UP_FP8,
     grouped(64, 128, 128, False, 2, 1, QUANT_OUT=True, ACTIVATION=0, PROMOTE_K=64), 8, True),
    ("grouped_gate_up fp8_block promote128", grouped_gate_up_kernel, GATE_UP_FP8,
     grouped(64, 128, 128, False, True, 2, QUANT_OUT=True, ACTIVATION=0, PROMOTE_K=128), 8, True),
    ("grouped_gate_up fp8_tensor row-scaled x promote128", grouped_gate_up_kernel, GATE_UP_FP8,
     grouped(64, 128, 128, False, 2, 1, QUANT_OUT=True, ACTIVATION=0, PROMOTE_K=128), 8, True),
    ("grouped_gate_up fp8_tensor row-scaled x never promote", grouped_gate_up_kernel, GATE_UP_FP8,
     grouped(64, 128, 128, False, 2, 1, QUANT_OUT=True, ACTIVATION=0, PROMOTE_K=0), 8, True),
    ("grouped_gate_up fp8_tensor row-scaled x never promote M128", grouped_gate_up_kernel, GATE_UP_FP8,
     grouped(128, 128, 128, False, 2, 1, QUANT_OUT=True, ACTIVATION=0, PROMOTE_K=0), 8, True),
    # gate/up tiles of 64 columns (SwiGLU out in fp32, requantised by a launch of its own):
    # the heuristic's take 4 warps, but fp8_block promoted every 64 columns at BLOCK_M 64 takes 8
    # (with 4 it spills, 255 registers and 3 LDL/STL: policy.fit_registers); at BLOCK_M 128 with 8
    # warps promoted every 128: the warp-specialised Gluon set's gate/up on the Triton kernels
    # (policy.gluon_fallback)
    *[gate_up_narrow(fmt, 64, bm, warps, promote) for fmt, bm, warps, promote in (
        ("fp8_tensor", 64, 8, 128), ("fp8_tensor", 64, 4, 128), ("fp8_tensor", 64, 4, 64), ("fp8_tensor", 32, 4, 128),
        ("fp8_block", 64, 8, 128), ("fp8_block", 64, 4, 128), ("fp8_block", 64, 8, 64), ("fp8_block", 128, 8, 64),
        ("fp8_tensor", 128, 8, 128), ("fp8_block", 128, 8, 128), ("fp8_block", 32, 4, 64), ("fp8_block", 32, 4, 32))],
    # 32 columns at BLOCK_M 128 (a legal config, no longer a tuner move: slower in every case
    # timed in the ninth session): three CTAs per SM with 4 warps
    *[gate_up_narrow(fmt, 32, 128, 4, promote) for fmt, promote in (("fp8_tensor", 128), ("fp8_block", 128),
                                                                    ("fp8_block", 64))],
    # tail tiles (GroupedConfig.tail_m): both tiles in one kernel, on wgmma, sharing one set of
    # shared-memory buffers (the same bytes as without a tail), no more registers
    ("grouped_gate_up bf16 M128 tail 64", grouped_gate_up_kernel, GATE_UP_BF16,
     grouped(128, 128, 64, False, False, 0, QUANT_OUT=False, ACTIVATION=0, TAIL_M=64, GROUP_M=4), 8, True),
    ("grouped_gate_up fp8_block M128 tail 32 (swapped)", grouped_gate_up_kernel, GATE_UP_FP8,
     grouped(128, 64, 128, False, True, 2, QUANT_OUT=False, ACTIVATION=0, TAIL_M=32, PROMOTE_K=128), 8, True),
    ("grouped_down bf16 M128 tail 64", grouped_down_kernel, DOWN_BF16,
     grouped(128, 128, 64, False, False, 0, TAIL_M=64, GROUP_M=4), 8, True),
    ("grouped_down fp8_tensor M128 tail 32 (swapped)", grouped_down_kernel, DOWN_FP8,
     grouped(128, 128, 128, False, True, 1, TAIL_M=32, PROMOTE_K=128), 8, True),
    ("grouped_down bf16 group8", grouped_down_kernel, DOWN_BF16, grouped(64, 128, 64, False, False, 0, GROUP_M=8), 8,
     True),
    ("grouped_down bf16 swap-AB M16", grouped_down_kernel, DOWN_BF16, grouped(16, 128, 64, True, False, 0), 4, True),
    ("grouped_down fp8_tensor", grouped_down_kernel, DOWN_FP8, grouped(64, 128, 128, False, True, 1), 8, True),
    ("grouped_down fp8_tensor promote128", grouped_down_kernel, DOWN_FP8,
     grouped(64, 128, 128, False, True, 1, PROMOTE_K=128), 8, True),
    ("grouped_down fp8_tensor swap-AB M16", grouped_down_kernel, DOWN_FP8, grouped(16, 128, 128, True, True, 1), 4,
     True),
    # fp16 activations: the route outputs in fp32 (one may exceed fp16's range where the weighted sum does not)
    ("grouped_down fp8_tensor fp32 y", grouped_down_kernel, dict(DOWN_FP8, y_ptr="*fp32"),
     grouped(64, 128, 128, False, True, 1, PROMOTE_K=128), 8, True),
    ("grouped_down w4a8 swap-AB M16 fp32 y", grouped_down_kernel, dict(DOWN_W4, y_ptr="*fp32"),
     grouped(16, 128, 128, True, True, 3), 4, True),
    # the warp-specialised Gluon set's tiles on the Triton kernels (policy.gluon_fallback: down at 128
    # columns; at the Gluon set's 256 the Triton down spills, 255 registers and 184 LDL/STL).  Its
    # entries sit at M >= 2048 and serve M >= 1024, where the sums are promoted every 128 columns
    # (at 64, fp8_block spills here: 34 LDL/STL)
    ("grouped_down fp8_tensor M128 promote128 (Gluon fallback)", grouped_down_kernel, DOWN_FP8,
     grouped(128, 128, 128, False, True, 1, PROMOTE_K=128), 8, True),
    ("grouped_down fp8_block M128 promote128 (Gluon fallback)", grouped_down_kernel, DOWN_FP8,
     grouped(128, 128, 128, False, True, 2, PROMOTE_K=128), 8, True),
    # w4a8: FP4 weights decoded to e4m3 per K step, on the FP8 tensor cores (the heuristic's tiles:
    # 128 fused columns swapped at BLOCK_M 16, 64 columns with an fp32 SwiGLU output at 32 and 64)
    ("grouped_gate_up w4a8 swap-AB M16", grouped_gate_up_kernel, GATE_UP_W4,
     grouped(16, 128, 128, True, True, 3, QUANT_OUT=True, ACTIVATION=0, PROMOTE_K=64), 8, True),
    ("grouped_gate_up w4a8 64 wide M64 fp32 out", grouped_gate_up_kernel, dict(GATE_UP_W4, act_ptr="*fp32"),
     grouped(64, 64, 128, False, True, 3, QUANT_OUT=False, ACTIVATION=0, PROMOTE_K=128), 4, True),
    ("grouped_down w4a8 M64", grouped_down_kernel, DOWN_W4, grouped(64, 128, 128, False, True, 3, PROMOTE_K=128), 8,
     True),
    ("grouped_down w4a8 swap-AB M16", grouped_down_kernel, DOWN_W4, grouped(16, 128, 128, True, True, 3), 4, True),
    ("route_gate_up w4a8 4 warps N8 K512 PDL", route_gate_up_kernel, ROUTE_GATE_UP_W4,
     route_gate_up(3, 1, 0, False, 8, 512, PDL=True), 4, False),
    ("route_gate_up w4a8 split2 oai+bias N4 K1024", route_gate_up_kernel, ROUTE_GATE_UP_W4,
     route_gate_up(3, 2, 2, True, 4, 1024), 4, False),
    ("route_down w4a8 k8 N16 K128 PDL", route_down_kernel, ROUTE_DOWN_W4,
     route_down(8, 3, 1, True, 0, False, 16, 128, PDL=True), 4, False),
    ("route_down w4a8 k4 N16 K256", route_down_kernel, ROUTE_DOWN_W4,
     route_down(4, 3, 1, False, 0, False, 16, 256), 4, False),
    ("route_gate_up bf16", route_gate_up_kernel, ROUTE_GATE_UP_BF16,
     route_gate_up(0, 1, 0, False, 8, 2048), 8, False),
    ("route_gate_up fp8_tensor N2 K4096", route_gate_up_kernel, ROUTE_GATE_UP_FP8,
     route_gate_up(1, 1, 0, False, 2, 4096), 8, False),
    ("route_gate_up fp8_block split2 oai+bias", route_gate_up_kernel, ROUTE_GATE_UP_FP8,
     route_gate_up(2, 2, 2, True, 8, 1024), 8, False),
    ("route_gate_up fp8_tensor fp16 products N2 K4096", route_gate_up_kernel, ROUTE_GATE_UP_FP8,
     route_gate_up(1, 1, 0, False, 2, 4096, FP16_PRODUCTS=True), 8, False),
    ("route_gate_up fp8_block fp16 products split2 N16", route_gate_up_kernel, ROUTE_GATE_UP_FP8,
     route_gate_up(2, 2, 0, False, 16, 512, FP16_PRODUCTS=True), 8, False),
    # the FP8 heuristic's 4-warp tiles (policy.FP8_GEMV_WARPS)
    ("route_gate_up fp8_tensor fp16 products 4 warps N8", route_gate_up_kernel, ROUTE_GATE_UP_FP8,
     route_gate_up(1, 1, 0, False, 8, 512, FP16_PRODUCTS=True), 4, False),
    ("route_gate_up fp8_block 4 warps N4 K1024", route_gate_up_kernel, ROUTE_GATE_UP_FP8,
     route_gate_up(2, 1, 0, False, 4, 1024), 4, False),
    ("route_gate_up_mma bf16 N32", route_gate_up_mma_kernel, ROUTE_GATE_UP_BF16,
     route_gate_up(0, 1, 0, False, 32, 256), 4, True),
    ("route_gate_up_mma fp8_block split2", route_gate_up_mma_kernel, ROUTE_GATE_UP_FP8,
     route_gate_up(2, 2, 0, True, 32, 128), 4, True),
    ("route_gate_up_mma fp8_tensor N64 K128", route_gate_up_mma_kernel, ROUTE_GATE_UP_FP8,
     route_gate_up(1, 1, 0, False, 64, 128), 4, True),
    ("route_gate_up_mma fp8_tensor N32 K256", route_gate_up_mma_kernel, ROUTE_GATE_UP_FP8,
     route_gate_up(1, 1, 0, False, 32, 256), 4, True),
    ("route_down bf16 k8", route_down_kernel, ROUTE_DOWN_BF16,
     route_down(8, 0, 1, True, 0, False, 16, 128), 8, False),
    ("route_down fp8_tensor k8 fp16 products", route_down_kernel, ROUTE_DOWN_FP8,
     route_down(8, 1, 1, False, 0, False, 16, 256, FP16_PRODUCTS=True), 8, False),
    ("route_down fp8_block k6 split2 fp16 products", route_down_kernel, ROUTE_DOWN_FP8,
     route_down(6, 2, 2, False, 0, False, 16, 128, FP16_PRODUCTS=True), 4, False),
    ("route_down fp8_block k6 split2 oai+bias", route_down_kernel, ROUTE_DOWN_FP8,
     route_down(6, 2, 2, False, 2, True, 16, 256), 8, False),
    ("route_down_mma fp8_block k8 N16", route_down_mma_kernel, ROUTE_DOWN_FP8,
     route_down(8, 2, 1, True, 0, False, 16, 128), 4, True),
    ("route_down_mma fp8_tensor k2 N32", route_down_mma_kernel, ROUTE_DOWN_FP8,
     route_down(2, 1, 1, False, 0, False, 32, 128), 4, True),
    # programmatic dependent launch (RouteDirectConfig.pdl): griddepcontrol in each kernel
    ("route_gate_up fp8_tensor PDL", route_gate_up_kernel, ROUTE_GATE_UP_FP8,
     route_gate_up(1, 1, 0, False, 16, 512, PDL=True), 8, False),
    ("route_gate_up_mma bf16 N32 PDL", route_gate_up_mma_kernel, ROUTE_GATE_UP_BF16,
     route_gate_up(0, 1, 0, False, 32, 256, PDL=True), 4, True),
    ("route_down fp8_tensor k8 PDL", route_down_kernel, ROUTE_DOWN_FP8,
     route_down(8, 1, 1, False, 0, False, 8, 256, PDL=True), 4, False),
    ("route_down_mma fp8_block k8 N16 PDL", route_down_mma_kernel, ROUTE_DOWN_FP8,
     route_down(8, 2, 1, True, 0, False, 16, 128, PDL=True), 4, True),
    # several H tiles per GEMV down program (RouteDirectConfig.down_tiles)
    ("route_down fp8_tensor k8 tiles4 K64 PDL", route_down_kernel, ROUTE_DOWN_FP8,
     route_down(8, 1, 1, False, 0, False, 16, 64, PDL=True, TILES=4), 4, False),
    ("route_down fp8_block k8 tiles2 N8 K256", route_down_kernel, ROUTE_DOWN_FP8,
     route_down(8, 2, 1, False, 0, False, 8, 256, TILES=2), 4, False),
    ("route_down bf16 k8 tiles4 PDL", route_down_kernel, ROUTE_DOWN_BF16,
     route_down(8, 0, 1, True, 0, False, 8, 128, PDL=True, TILES=4), 4, False),
    # the GEMV K loops software-pipelined (Tile.num_stages > 1): cp.async copies to shared memory
    ("route_gate_up fp8_block 4 warps N8 K1024 2 stages", route_gate_up_kernel, ROUTE_GATE_UP_FP8,
     route_gate_up(2, 1, 0, False, 8, 1024, FP16_PRODUCTS=True, STAGES=2), 4, False),
    ("route_gate_up bf16 N8 K512 3 stages PDL", route_gate_up_kernel, ROUTE_GATE_UP_BF16,
     route_gate_up(0, 1, 0, False, 8, 512, PDL=True, STAGES=3), 8, False),
    ("route_gate_up w4a8 N8 K512 3 stages", route_gate_up_kernel, ROUTE_GATE_UP_W4,
     route_gate_up(3, 1, 0, False, 8, 512, STAGES=3), 4, False),
    ("route_down fp8_tensor k8 N8 K256 3 stages PDL", route_down_kernel, ROUTE_DOWN_FP8,
     route_down(8, 1, 1, False, 0, False, 8, 256, PDL=True, STAGES=3), 4, False),
    # per-program timelines (fusedmoe._trace: %globaltimer, %smid), as scripts/decode_timeline.py builds them
    ("route_gate_up fp8_tensor PDL traced", route_gate_up_kernel, dict(ROUTE_GATE_UP_FP8, trace_ptr="*i64"),
     route_gate_up(1, 1, 0, False, 4, 2048, PDL=True, TRACE=True), 8, False),
    ("route_gate_up_mma bf16 N32 PDL traced", route_gate_up_mma_kernel, dict(ROUTE_GATE_UP_BF16, trace_ptr="*i64"),
     route_gate_up(0, 1, 0, False, 32, 256, PDL=True, TRACE=True), 4, True),
    ("route_down fp8_tensor k8 PDL traced", route_down_kernel, dict(ROUTE_DOWN_FP8, trace_ptr="*i64"),
     route_down(8, 1, 1, False, 0, False, 16, 256, PDL=True, TRACE=True), 8, False),
    ("route_down_mma fp8_block k8 N16 PDL traced", route_down_mma_kernel, dict(ROUTE_DOWN_FP8, trace_ptr="*i64"),
     route_down(8, 2, 1, True, 0, False, 16, 128, PDL=True, TRACE=True), 4, True),
    ("plan one program R2048 E512", _plan_single_kernel, dict(ids_ptr="*i32", sorted_ptr="*i32",
     block_expert_ptr="*i32", num_blocks_ptr="*i32", counts_ptr="*i32", off_ptr="*i32"),
     dict(BLOCK_M=16, R_PAD=2048, LOG_R=11, E_BINS=512, FILL=1024, PDL=True), 8, False),
    *[(f"plan recount R2048 E{e} chunk{chunk} {warps} warps{' histogram' * (not mem)}", _plan_recount_kernel, dict(
        ids_ptr="*i32", sorted_ptr="*i32", block_expert_ptr="*i32", num_blocks_ptr="*i32", counts_ptr="*i32",
        scratch_ptr="*i32"),
       dict(BLOCK_M=16, R_PAD=2048, CHUNK=chunk, E_BINS=e, PAD_TILE=16, FILL=1024, COUNT_IN_MEMORY=mem, PDL=True),
       warps, False)
      for e, chunk, warps, mem in ((512, 32, 8, True), (2048, 32, 8, True), (512, 64, 8, True), (512, 128, 4, True),
                                   (512, 32, 4, False), (64, 32, 8, False), (256, 32, 8, False))],
    *[(f"plan tiled count R{r} E_TILE{et}", _plan_tile_count_kernel, dict(ids_ptr="*i32", counts_ptr="*i32"),
       dict(E_TILE=et, R_PAD=r, PDL=True), 4, False) for r, et in ((2048, 2), (2048, 4), (1024, 8), (64, 1))],
    *[(f"plan tiled scatter R{r} E_TILE{et} E{e} block_m {bm}", _plan_tile_scatter_kernel, dict(
        ids_ptr="*i32", counts_ptr="*i32", sorted_ptr="*i32", block_expert_ptr="*i32", num_blocks_ptr="*i32"),
       dict(BLOCK_M=bm, E_TILE=et, R_PAD=r, E_PAD=e, PAD_TILE=min(bm, 64), B_TILE=64, FILL=1024, PDL=True), 4, False)
      for r, et, e, bm in ((2048, 2, 512, 16), (2048, 1, 256, 16), (16, 8, 2048, 16), (2048, 4, 2048, 128), (1024, 8, 2048, 128))],
    ("plan one program R256 E512 2 warps (auto's)", _plan_single_kernel, dict(ids_ptr="*i32", sorted_ptr="*i32",
     block_expert_ptr="*i32", num_blocks_ptr="*i32", counts_ptr="*i32", off_ptr="*i32"),
     dict(BLOCK_M=16, R_PAD=256, LOG_R=8, E_BINS=512, FILL=1024, PDL=True), 2, False),
    # routing, as routing.route launches it on sm_90 (four rows a program, a warp a row, PDL):
    # softmax top-8 of 128, and DeepSeek-V3's grouped sigmoid with bias (8 groups, 4 kept)
    *[(f"route {name}", _route_kernel, dict(logits_ptr="*fp32", bias_ptr="*fp32", weights_ptr="*fp32",
       ids_ptr="*i32", routed_scaling="fp32"),
       dict(E=e, TOP_K=k, SIGMOID=sig, HAS_BIAS=sig, RENORMALIZE=True, N_GROUPS=g, TOPK_GROUPS=tg, BLOCK_M=4,
            BLOCK_E=e, BLOCK_K=k, PDL=True), 4, False)
      for name, e, k, sig, g, tg in (("softmax top-8 of 128", 128, 8, False, 1, 1),
                                     ("grouped sigmoid top-8 of 256", 256, 8, True, 8, 4))],
    ("quantize_rows", _quantize_rows_kernel, dict(a_ptr="*bf16", q_ptr=FP8), dict(BLOCK_R=4, GROUP=128, PDL=True), 4,
     False),
    ("quantize_rows whole rows", _quantize_whole_rows_kernel, dict(a_ptr="*bf16", q_ptr=FP8),
     dict(BLOCK_R=1, BLOCK_C=2048, PDL=True), 8, False),
    ("swiglu_quant gelu", _swiglu_kernel, dict(out_ptr=FP8), dict(QUANT=True, ACTIVATION=1, BLOCK_R=4, GROUP=128), 4,
     False),
    ("combine", _combine_kernel, dict(y_ptr="*bf16", ids_ptr="*i32", shared_ptr="*bf16", out_ptr="*bf16"),
     dict(TOPK=8, TOPK_PAD=8, HAS_SHARED=True, BLOCK_H=1024, PDL=True), 4, False),
    ("combine top-6", _combine_kernel, dict(y_ptr="*bf16", ids_ptr="*i64", out_ptr="*bf16"),
     dict(TOPK=6, TOPK_PAD=8, HAS_SHARED=False, BLOCK_H=1024, PDL=True), 4, False),
    *[(f"gather_plan_rows (Gluon path's x) M{bm}", gather_plan_rows_kernel, dict(
        a_ptr=FP8, out_ptr=FP8, routes_ptr="*i32", num_blocks_ptr="*i32"), dict(BLOCK_M=bm, BLOCK_C=cols, PDL=True), 4,
       False)
      for bm, cols in ((64, 512), (128, 256))],  # grouped._GATHER_BYTES per step
]


# Integer arguments that are multiples of 16 at real model shapes: the JIT specialises those
# (and 16-byte aligned pointers) at run time, which enables vectorised loads; compile alike.
DIVISIBLE_BY_16 = {"H", "I", "hidden", "stride_x", "stride_we", "stride_wn", "stride_act", "stride_y", "stride_o",
                   "stride_s", "stride_a", "stride_q", "stride_gu", "stride_out", "cols"}


def compile_case(kernel, ptrs: dict, constexprs: dict, num_warps: int, num_stages: int = 3, **options):
    """``kernel`` (a Triton kernel, or a Gluon one that takes plain pointers) compiled for sm_90
    with these pointer types and constexprs (other options, e.g. maxnreg, go to triton.compile)."""
    from triton.experimental.gluon._runtime import GluonASTSource, GluonJITFunction

    params = inspect.signature(kernel.fn).parameters
    names = list(params)
    # constexprs with a default (PDL=False) keep it unless the case sets them, as a launch does;
    # so do pointers that default to None (trace_ptr) and that the case gives no type
    constexprs = {**{n: p.default for n, p in params.items()
                     if p.default is not inspect.Parameter.empty and "constexpr" in str(p.annotation)},
                  **{n: None for n, p in params.items() if p.default is None and n not in ptrs},
                  **constexprs}
    sig = {n: ("constexpr" if n in constexprs else ptrs.get(n, "*fp32" if n.endswith("_ptr") else "i32"))
           for n in names}
    attrs = {(i,): [["tt.divisibility", 16]] for i, n in enumerate(names)
             if n not in constexprs and (n.endswith("_ptr") or n in DIVISIBLE_BY_16)}
    source = GluonASTSource if isinstance(kernel, GluonJITFunction) else ASTSource
    src = source(kernel, sig, constexprs, attrs)
    return triton.compile(src, target=TARGET, options=dict(num_warps=num_warps, num_stages=num_stages, **options))


def sass_facts(cubin: bytes) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        sass = subprocess.run([str(CUOBJDUMP), "-sass", f.name], capture_output=True, text=True).stdout
        res = subprocess.run([str(CUOBJDUMP), "-res-usage", f.name], capture_output=True, text=True).stdout
    regs = re.search(r"REG:(\d+)", res)
    local = re.search(r"LOCAL:(\d+)", res)
    # griddepcontrol.wait / .launch_dependents (PDL) compile to ACQBULK / PREEXIT; a kernel that
    # waits for its predecessor must wait before it lets its dependents launch
    wait_at, launch_at = sass.find("ACQBULK"), sass.find("PREEXIT")
    waits = re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x[0-9a-f]+)", sass)  # wgmma waits, by depth allowed
    return dict(hgmma=sass.count("HGMMA"), qgmma=sass.count("QGMMA"), registers=int(regs.group(1)) if regs else None,
                wgmma_waits={w: waits.count(w) for w in sorted(set(waits))}, cp_async=sass.count("LDGSTS"),
                tma_loads=sass.count("UTMALDG"),
                local_bytes=int(local.group(1)) if local else None, spill_ops=len(re.findall(r"\b(?:LDL|STL)\b", sass)),
                pdl_wait=sass.count("ACQBULK"), pdl_launch=sass.count("PREEXIT"),
                instructions=len(re.findall(r"^\s+/\*[0-9a-f]{4,}\*/", sass, re.M)),
                pdl_wait_first=launch_at < 0 or 0 <= wait_at < launch_at)


# the Gluon route-direct down (RouteDirectConfig.down_gluon) at the PEERS tables' tiles:
# (name, pointer dtypes, constexprs, num_warps)
ROUTE_DOWN_GLUON = [
    ("DeepSeek-V3 TP8 fp8_block 16x128", ROUTE_DOWN_FP8, dict(TOPK=8, W_SCALE=2, BLOCK_N=16, BLOCK_K=128), 4),
    ("Hunyuan TP8 fp8_tensor 16x256", ROUTE_DOWN_FP8, dict(TOPK=8, W_SCALE=1, BLOCK_N=16, BLOCK_K=256), 8),
    ("Mixtral TP2 fp8_tensor 16x512", ROUTE_DOWN_FP8, dict(TOPK=2, W_SCALE=1, BLOCK_N=16, BLOCK_K=512), 8),
    ("GPT-OSS TP4 bf16 4x256 bias", ROUTE_DOWN_BF16, dict(TOPK=4, W_SCALE=0, BLOCK_N=4, BLOCK_K=256, HAS_BIAS=True), 8),
]


def compile_gluon(gemm: str, group_m: int = 1, block_m: int = 64, y_type: str = "*bf16", gate_n: int = 64):
    """A Gluon grouped GEMM ('gate_up' or 'down') compiled for sm_90 with the tiles of
    ``policy.gluon_grouped_config`` (block_m, gate_n) (128: the warp-specialised kernel), launched
    as ``grouped.gluon_kernels`` says (the down's route outputs of type ``y_type``: fp32 under fp16
    activations); returns (compiled kernel, ptxas's stdout+stderr on its
    PTX, where a serialised wgmma shows as warning C7514)."""
    from triton.experimental.gluon._runtime import GluonASTSource

    cfg = gluon_grouped_config(group_m, block_m, gate_n)
    tile = cfg.gate_up if gemm == "gate_up" else cfg.down
    gate_up_kernel, down_kernel, launch = gluon_kernels(cfg)

    def desc(rows):
        return f"tensordesc<fp8e4nv[{rows}, {K_STEP}],{tile_layout(rows)!r}>"
    common = {"w_desc": desc(tile.block_n), "ws_ptr": "*fp32"}
    if gemm == "down":
        kernel = down_kernel
        sig = {"a_desc": desc(block_m), "as_ptr": "*fp32", **common, "routes_ptr": "*i32", "block_expert_ptr": "*i32",
               "num_blocks_ptr": "*i32", "y_ptr": y_type, "H": "i32", "I": "i32", "stride_as": "i32",
               "stride_y": "i32"}
    else:
        kernel = gate_up_kernel
        if block_m == 128:  # warp-specialised: skips empty halves; at 128 columns quantises its output
            act = "*fp8e4nv" if gate_n == 128 else "*fp32"
            sig = {"x_desc": desc(block_m), "xs_ptr": "*fp32", **common, "routes_ptr": "*i32",
                   "block_expert_ptr": "*i32", "num_blocks_ptr": "*i32", "act_ptr": act, "acts_ptr": "*fp32",
                   "H": "i32", "I": "i32", "stride_act": "i32", "stride_acts": "i32"}
        else:
            sig = {"x_desc": desc(block_m), "xs_ptr": "*fp32", **common, "block_expert_ptr": "*i32",
                   "num_blocks_ptr": "*i32", "act_ptr": "*fp32", "H": "i32", "I": "i32", "stride_act": "i32"}
    sig.update(GROUP_M="constexpr", STAGES="constexpr", num_warps="constexpr", PDL="constexpr")
    names = list(sig)  # as the JIT specialises real shapes: pointers aligned, sizes multiples of 16
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in names
             if n.endswith("_ptr") or n in ("H", "I", "stride_y", "stride_act")}  # stride_as: cdiv(I, 128)
    constants = dict(GROUP_M=group_m, STAGES=tile.num_stages, num_warps=launch["num_warps"], PDL=True)
    src = GluonASTSource(kernel, sig, constants, attrs)
    compiled = triton.compile(src, target=TARGET, options=launch)
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "k.ptx").write_text(compiled.asm["ptx"])
        ptxas = subprocess.run([str(CUOBJDUMP.parent / "ptxas"), "-arch=sm_90a", f"{d}/k.ptx", "-o", f"{d}/k.cubin"],
                               capture_output=True, text=True)
    return compiled, ptxas.stdout + ptxas.stderr


def main() -> int:
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        print("compile_check: unset TRITON_INTERPRET (kernels must be compiled, not interpreted)")
        return 2
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    def check(name: str, facts_of, bad_of) -> dict:
        """One kernel's row: its facts (or the error that stopped it: every kernel is reported,
        not only the first failure) and whether they are as expected."""
        try:
            facts = facts_of()
            bad = bad_of(facts)
        except Exception as e:
            facts, bad = dict(error=f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"), True
        print(f"{'ok ' if not bad else 'BAD'} {name:34s} {facts}", flush=True)
        return dict(kernel=name, **facts, ok=not bad)

    rows = [check(name, lambda: sass_facts(compile_case(kernel, ptrs, constexprs, warps).asm["cubin"]),
                  lambda f: ((needs_wgmma and f["hgmma"] + f["qgmma"] == 0) or f["spill_ops"] > 0
                             or (constexprs.get("PDL", False) and f["pdl_wait"] == 0)
                             or (f["pdl_wait"] > 0 and not f["pdl_wait_first"])
                             or (constexprs.get("STAGES", 1) > 1 and f["cp_async"] == 0)))
            for name, kernel, ptrs, constexprs, warps, needs_wgmma in CASES]

    def gluon_facts(gemm: str, block_m: int, y_type: str = "*bf16", gate_n: int = 64) -> dict:
        compiled, ptxas = compile_gluon(gemm, group_m=8, block_m=block_m, y_type=y_type, gate_n=gate_n)
        return dict(sass_facts(compiled.asm["cubin"]), serialised="C7514" in ptxas,
                    shared_bytes=compiled.metadata.shared)
    # the Gluon grouped GEMMs (GroupedConfig.gluon), one-warpgroup (BLOCK_M 64) and
    # warp-specialised (128; gate/up of 64 or 128 columns), with PDL: QGMMA, no spills, wgmma not
    # serialised by ptxas, the wait first (the down also with fp32 route outputs, as under fp16
    # activations)
    gluon_cases = [("gate_up", "*bf16", bm, gate_n) for bm, gate_n in GLUON_SETS]
    gluon_cases += [("down", y_type, bm, 64) for y_type in ("*bf16", "*fp32")
                    for bm in sorted({bm for bm, _ in GLUON_SETS})]  # the down: one kernel per BLOCK_M
    rows += [check(f"gluon grouped_{gemm} block_m={bm}" + (f" gate_n={gate_n}" if gemm == "gate_up" else "")
                   + (" fp32 y" if y_type == "*fp32" else ""),
                   lambda: gluon_facts(gemm, bm, y_type, gate_n),
                   lambda f: f["qgmma"] == 0 or f["spill_ops"] > 0 or f["serialised"] or f["pdl_wait"] == 0
                   or not f["pdl_wait_first"])
             for gemm, y_type, bm, gate_n in gluon_cases]
    # the Gluon route-direct down with PDL and a shared output: no spills, no barrier in its K
    # loop (the activations are loaded in the weights' layout), the wait before anything else
    rows += [check(f"gluon route_down {name}",
                   lambda: sass_facts(compile_case(route_down_gluon_kernel, ptrs,
                                                   dict(dict(HAS_BIAS=False, HAS_SHARED=True, PDL=True), **cx),
                                                   warps, num_stages=1).asm["cubin"]),
                   lambda f: f["spill_ops"] > 0 or f["pdl_wait"] == 0 or not f["pdl_wait_first"])
             for name, ptrs, cx, warps in ROUTE_DOWN_GLUON]
    ok = all(r["ok"] for r in rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
