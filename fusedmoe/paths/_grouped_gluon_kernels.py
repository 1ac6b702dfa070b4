"""Gluon kernels of the grouped path's FP8 GEMMs (fp8_tensor), for sm_90.

Why: Triton's ``tl.dot`` promotes FP8 MMA sums by waiting for each K step's wgmma before its
fp32 add, and the grouped Triton kernels load through cp.async; they run the promoted FP8
GEMMs at 770-825 TFLOP/s on the H200 (Mixtral M=8192, eighth session).  Gluon, Triton's
explicit-layout dialect, gives async wgmma and TMA.  A dense probe
(``scripts/fp8_pingpong_probe.py``, ninth session) ran the same promoted product at 1032-1047
TFLOP/s with 64-row tiles and two CTAs per SM, where one CTA hides the other's waits (at
BLOCK_M 128 the registers fit one CTA per SM).

These kernels are that GEMM with the grouped path's contract:
- The plan's blocks (``sorted_routes``, ``block_expert``, ``num_blocks``) are the M tiles, as
  in ``_grouped_kernels``.  Programs past ``num_blocks`` exit.
- Their activations are in plan order (row p = b * BLOCK_M + i holds route sorted_routes[p],
  zeros on padding rows), so every operand tile comes by TMA: x's rows are gathered into plan
  order first (``gather_plan_rows_kernel``), gate/up writes its output in plan order, and down
  writes y in route order.  (The first form gathered A rows with cp.async inside the GEMM and
  ran gate/up at 636-682 TFLOP/s against the dense probe's 1032: tenth session.)
- Weight tiles come from W13 viewed as [E*2I, H] and W2 as [E*H, I].  Tiles that run past an
  expert's rows read the next expert's rows or TMA's zero fill; the stores mask them.
- One warpgroup (BLOCK_M 64, 4 warps; two CTAs per SM) and a ring of STAGES slots, each
  step's tiles arriving on the slot's mbarrier; a slot is refilled as soon as its step's
  wgmma is waited for, with no barrier of its own (the dense probe's loop).  Every K step of
  128 is its own wgmma into a fresh partial, waited for and added in fp32: MMA sums are
  promoted every 128 columns, as ``GroupedConfig.fp8_promote_k == 128``.
- gate/up: gate and up are two tiles of BLOCK_N columns, and up's wgmma runs under gate's add.
  x's row scale and the expert scale apply at the end, then SiLU(gate) * up is written in
  fp32 and requantised per 128 columns by ``quantize_rows``, as the fused epilogue would
  quantise it.  (In bf16 the round trip took 172 us less at Mixtral M=8192, but rounding
  before the requantisation moved the layer past the tuner's 1% rel-L2 gate against the
  reference in all 6 cases tried: tenth session.)
- down: each step's partial is scaled by the rows' activation scale for that step, loaded
  while the step's wgmma runs.

The interpreter cannot run Gluon: off sm_90 the launcher runs the Triton kernels instead
(``grouped.uses_gluon``).
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from .._epilogue_kernels import SILU, glu

K_STEP = 128                     # columns per K step: one promotion, one activation scale (down)
BLOCK_K = gl.constexpr(K_STEP)   # the same, for the kernels


def tile_layout(rows: int):
    """Shared-memory layout of a [rows, 128] e4m3 tile (its TMA descriptor's): A and weight tiles."""
    return gl.NVMMASharedLayout.get_default_for([rows, K_STEP], gl.float8e4nv)


def tile_desc(t, block_rows: int) -> TensorDescriptor:
    """TMA descriptor of a 2-D e4m3 tensor (unit column stride) read in [block_rows, 128] tiles."""
    return TensorDescriptor(t, list(t.shape), list(t.stride()), [block_rows, K_STEP], tile_layout(block_rows))


@gluon.constexpr_function
def _mma_layout(block_n, num_warps):
    """The wgmma accumulator of a [16 * num_warps, block_n] tile: one 16-row slice per warp."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, block_n, 32])


@gluon.jit
def _program_block(num_n, block_expert_ptr, num_blocks_ptr, GROUP_M: gl.constexpr):
    """This program's (block, N tile, local expert: -1 when the block is past num_blocks or
    holds no held route); GROUP_M blocks walk each weight tile together, as in the Triton
    kernels' ``_program_block``."""
    pid = gl.program_id(0)
    if GROUP_M == 1:
        b = pid // num_n
        nt = pid % num_n
    else:
        per_group = GROUP_M * num_n
        first = (pid // per_group) * GROUP_M
        size = gl.minimum(gl.num_programs(0) // num_n - first, GROUP_M)
        b = first + (pid % per_group) % size
        nt = (pid % per_group) // size
    e = gl.load(block_expert_ptr + b, mask=b < gl.load(num_blocks_ptr), other=-1)
    return b, nt, e


@gluon.jit
def _ring(a_desc, w_desc, a_row0, w_row0, u_row0, num_k, STAGES: gl.constexpr, TWO_W: gl.constexpr):
    """The ring of STAGES slots, its first STAGES steps' loads issued (``_load_step``): A tiles,
    weight tiles (and with TWO_W a second weight tile per step, else the first stands in), one
    initialised mbarrier per slot, on which the slot's TMA tiles arrive."""
    BLOCK_M: gl.constexpr = a_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = w_desc.block_type.shape[0]
    a_smem = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    w_smem = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BLOCK_N, BLOCK_K], w_desc.layout)
    if TWO_W:
        u_smem = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BLOCK_N, BLOCK_K], w_desc.layout)
    else:
        u_smem = w_smem
    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(bars.index(i), count=1)
    for i in gl.static_range(STAGES):
        _load_step(a_desc, a_smem, w_desc, w_smem, u_smem, bars, i, a_row0, w_row0, u_row0, num_k, STAGES, TWO_W)
    return a_smem, w_smem, u_smem, bars


@gluon.jit
def _drain(bars, STAGES: gl.constexpr):
    """After the last step: the slot barriers invalidated, once every warp is past its waits."""
    gl.thread_barrier()
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(bars.index(i))


@gluon.jit
def _load_step(a_desc, a_smem, w_desc, w_smem, u_smem, bars, step, a_row0, w_row0, u_row0, num_k,
               STAGES: gl.constexpr, TWO_W: gl.constexpr):
    """Issue step ``step``'s TMA loads into its ring slot, all on the slot's barrier: the A tile
    at row a_row0, the weight tile at row w_row0 (and with TWO_W the one at u_row0); nothing
    past the last step.  The kernels refill slot s with step k + STAGES right after waiting for
    step k's wgmma, with no barrier of their own: one warpgroup's wgmma is one collective
    operation, so when any of its warps has seen it complete, no warp still reads the slot.
    (Gluon's lowering puts a CTA-wide bar.sync before the expect and each TMA issue anyway.)"""
    s = step % STAGES
    if step < num_k:
        k0 = step * BLOCK_K
        if TWO_W:
            mbarrier.expect(bars.index(s), a_desc.block_type.nbytes + 2 * w_desc.block_type.nbytes)
        else:
            mbarrier.expect(bars.index(s), a_desc.block_type.nbytes + w_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(a_desc, [a_row0, k0], bars.index(s), a_smem.index(s))
        tma.async_copy_global_to_shared(w_desc, [w_row0, k0], bars.index(s), w_smem.index(s))
        if TWO_W:
            tma.async_copy_global_to_shared(w_desc, [u_row0, k0], bars.index(s), u_smem.index(s))


@gluon.jit
def gluon_grouped_down_kernel(a_desc, as_ptr, w_desc, ws_ptr, routes_ptr, block_expert_ptr, num_blocks_ptr, y_ptr,
                              H, I, stride_as, stride_y,
                              GROUP_M: gl.constexpr, STAGES: gl.constexpr, num_warps: gl.constexpr,
                              SCALE_AHEAD: gl.constexpr = 1):
    """y[r, n] = ws[e] * sum_k as[p, k // 128] * sum_{k' in step} a[p, k'] W2[e, n, k'] for the
    plan rows p of one block (route r = sorted_routes[p]) and n in one BLOCK_N tile of H
    (a [P, I] e4m3 in plan order as the descriptor's, as [P, cdiv(I, 128)] fp32, W2 [E, H, I]
    e4m3 as the descriptor's [E*H, I]; y [R, H] in its own dtype, in route order).
    SCALE_AHEAD (1 or 2): K steps ahead that each step's activation scales are loaded.  A row's
    scales share a cache line 8 steps long, so one step in 8 waits on L2 for them (Nsight
    Compute: 86% L1 hits, eleventh session); 2 gives the load two wgmmas' time."""
    gl.static_assert((SCALE_AHEAD == 1) | (SCALE_AHEAD == 2))
    BLOCK_M: gl.constexpr = a_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = w_desc.block_type.shape[0]
    gl.static_assert(w_desc.block_type.shape[1] == BLOCK_K)
    gl.static_assert(a_desc.block_type.shape[1] == BLOCK_K)
    gl.static_assert((num_warps == 4) & (BLOCK_M == 64))  # one warpgroup: see _load_step's refill
    b, nt, e = _program_block(gl.cdiv(H, BLOCK_N), block_expert_ptr, num_blocks_ptr, GROUP_M)
    if e < 0:
        return
    num_k = gl.cdiv(I, BLOCK_K)
    mma: gl.constexpr = _mma_layout(BLOCK_N, num_warps)
    p = b * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, mma))
    route = gl.load(routes_ptr + p)
    scale_row = as_ptr + p.to(gl.int64) * stride_as

    a_row0 = b * BLOCK_M
    w_row0 = e * H + nt * BLOCK_N
    a_smem, w_smem, _, bars = _ring(a_desc, w_desc, a_row0, w_row0, w_row0, num_k, STAGES, False)

    zero = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=mma)
    acc = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=mma)
    step_scale = gl.load(scale_row)
    if SCALE_AHEAD == 2:
        following_scale = gl.load(scale_row + 1, mask=1 < num_k, other=0.0)
    for k in range(num_k):
        slot = k % STAGES
        mbarrier.wait(bars.index(slot), phase=(k // STAGES) & 1)
        tok = warpgroup_mma(a_smem.index(slot), w_smem.index(slot).permute((1, 0)), zero, use_acc=False,
                            is_async=True)
        # lands under the wgmma (SCALE_AHEAD 1) or the next one too (2)
        ahead_scale = gl.load(scale_row + k + SCALE_AHEAD, mask=k + SCALE_AHEAD < num_k, other=0.0)
        part = warpgroup_mma_wait(num_outstanding=0, deps=(tok,))
        _load_step(a_desc, a_smem, w_desc, w_smem, w_smem, bars, k + STAGES, a_row0, w_row0, w_row0, num_k, STAGES,
                   False)
        acc += part * step_scale[:, None]
        if SCALE_AHEAD == 2:
            step_scale = following_scale
            following_scale = ahead_scale
        else:
            step_scale = ahead_scale
    _drain(bars, STAGES)

    acc = acc * gl.load(ws_ptr + e)
    n = nt * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, mma))
    gl.store(y_ptr + route.to(gl.int64)[:, None] * stride_y + n[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(route >= 0)[:, None] & (n < H)[None, :])


@gluon.jit
def gluon_grouped_gate_up_kernel(x_desc, xs_ptr, w_desc, ws_ptr, block_expert_ptr, num_blocks_ptr, act_ptr,
                                 H, I, stride_act,
                                 GROUP_M: gl.constexpr, STAGES: gl.constexpr, num_warps: gl.constexpr):
    """act[p, n] = SiLU(g) * u, g = s xp[p] . W13[e, n], u = s xp[p] . W13[e, I + n],
    s = xs[p] ws[e], for the plan rows p of one block and n in one BLOCK_N tile of I (xp [P, H]
    e4m3 in plan order as the descriptor's, one scale per row xs [P], 0 on padding rows;
    W13 [E, 2I, H] e4m3 as the descriptor's [E*2I, H]; act [P, I] fp32 in plan order, padding
    rows 0)."""
    BLOCK_M: gl.constexpr = x_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = w_desc.block_type.shape[0]
    gl.static_assert(w_desc.block_type.shape[1] == BLOCK_K)
    gl.static_assert(x_desc.block_type.shape[1] == BLOCK_K)
    gl.static_assert((num_warps == 4) & (BLOCK_M == 64))  # one warpgroup: see _load_step's refill
    b, nt, e = _program_block(gl.cdiv(I, BLOCK_N), block_expert_ptr, num_blocks_ptr, GROUP_M)
    if e < 0:
        return
    num_k = gl.cdiv(H, BLOCK_K)
    mma: gl.constexpr = _mma_layout(BLOCK_N, num_warps)

    a_row0 = b * BLOCK_M
    g_row0 = e * 2 * I + nt * BLOCK_N
    u_row0 = g_row0 + I
    a_smem, g_smem, u_smem, bars = _ring(x_desc, w_desc, a_row0, g_row0, u_row0, num_k, STAGES, True)

    zero = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=mma)
    gate = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=mma)
    up = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=mma)
    for k in range(num_k):
        slot = k % STAGES
        mbarrier.wait(bars.index(slot), phase=(k // STAGES) & 1)
        t_g = warpgroup_mma(a_smem.index(slot), g_smem.index(slot).permute((1, 0)), zero, use_acc=False,
                            is_async=True)
        t_u = warpgroup_mma(a_smem.index(slot), u_smem.index(slot).permute((1, 0)), zero, use_acc=False,
                            is_async=True)
        gate += warpgroup_mma_wait(num_outstanding=1, deps=(t_g,))  # up's wgmma runs under this add
        up_part = warpgroup_mma_wait(num_outstanding=0, deps=(t_u,))
        _load_step(x_desc, a_smem, w_desc, g_smem, u_smem, bars, k + STAGES, a_row0, g_row0, u_row0, num_k, STAGES,
                   True)
        up += up_part
    _drain(bars, STAGES)

    p = b * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, mma))
    s = gl.load(xs_ptr + p) * gl.load(ws_ptr + e)
    h = glu(gate * s[:, None], up * s[:, None], SILU)
    n = nt * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, mma))
    gl.store(act_ptr + p.to(gl.int64)[:, None] * stride_act + n[None, :], h.to(act_ptr.dtype.element_ty),
             mask=(n < I)[None, :])
