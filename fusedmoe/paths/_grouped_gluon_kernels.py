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
- A rows are gathered with cp.async, 16 bytes per thread: x rows by token for gate/up, the
  requantised intermediate's rows by route for down.
- Weight tiles come by TMA, from W13 viewed as [E*2I, H] and W2 as [E*H, I].  Tiles that run
  past an expert's rows read the next expert's rows or TMA's zero fill; the stores mask them.
- A ring of STAGES slots: each step's A copies are one commit group, its weight tiles arrive
  on the slot's mbarrier.  Every K step of 128 is its own wgmma into a fresh partial, waited
  for and added in fp32: MMA sums are promoted every 128 columns, as
  ``GroupedConfig.fp8_promote_k == 128``.
- gate/up: gate and up are two tiles of BLOCK_N columns, and up's wgmma runs under gate's add.
  x's row scale and the expert scale apply at the end, then SiLU(gate) * up is written in
  fp32 (``grouped.splits_quantisation``: requantised by ``quantize_rows``).
- down: each step's partial is scaled by the rows' activation scale for that step; y[r] is
  written in route order.

The interpreter cannot run Gluon: off sm_90 the launcher runs the Triton kernels instead
(``grouped.uses_gluon``).  Not yet measured in this grouped form
(``scripts/gluon_grouped_probe.py`` times it against the Triton kernels).
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)

K_STEP = 128                     # columns per K step: one promotion, one activation scale (down)
BLOCK_K = gl.constexpr(K_STEP)   # the same, for the kernels


def weight_tile_layout(block_n: int):
    """Shared-memory layout of a [block_n, 128] e4m3 weight tile (its TMA descriptor's)."""
    return gl.NVMMASharedLayout.get_default_for([block_n, K_STEP], gl.float8e4nv)


@gluon.constexpr_function
def _gather_layout(num_warps):
    """Registers of a [rows, 128] e4m3 A tile gathered by cp.async: 16 bytes per thread."""
    return gl.BlockedLayout([1, 16], [4, 8], [num_warps, 1], [1, 0])


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
def _ring_barriers(STAGES: gl.constexpr):
    """One initialised mbarrier per ring slot (its TMA weight tiles arrive on it)."""
    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(bars.index(i), count=1)
    return bars


@gluon.jit
def _drain(bars, STAGES: gl.constexpr):
    """After the last step: no cp.async left in flight, the slot barriers invalidated."""
    async_copy.wait_group(0)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(bars.index(i))


@gluon.jit
def _load_step(a_ptr, a_rows, a_ok, cols, K, a_smem, w_desc, w_smem, u_smem, bars, step, w_row0, u_row0, num_k,
               STAGES: gl.constexpr, TWO_W: gl.constexpr):
    """Issue step ``step``'s loads into its ring slot: A rows a_rows (row stride K) by
    cp.async, one commit group per step (empty past the last step); the weight tile at row
    w_row0 (and with TWO_W the one at u_row0) by TMA on the slot's barrier."""
    s = step % STAGES
    if step < num_k:
        k0 = step * BLOCK_K
        ptrs = a_ptr + a_rows[:, None] * K + (k0 + cols)[None, :]
        async_copy.async_copy_global_to_shared(a_smem.index(s), ptrs, mask=a_ok[:, None] & ((k0 + cols) < K)[None, :])
        if TWO_W:
            mbarrier.expect(bars.index(s), 2 * w_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(w_desc, [w_row0, k0], bars.index(s), w_smem.index(s))
            tma.async_copy_global_to_shared(w_desc, [u_row0, k0], bars.index(s), u_smem.index(s))
        else:
            mbarrier.expect(bars.index(s), w_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(w_desc, [w_row0, k0], bars.index(s), w_smem.index(s))
    async_copy.commit_group()


@gluon.jit
def _step_ready(bars, k, STAGES: gl.constexpr):
    """Wait until step k's A rows (every thread's cp.async, made visible to wgmma) and weight
    tiles (TMA) are in its slot."""
    async_copy.wait_group(STAGES - 1)
    fence_async_shared()
    gl.thread_barrier()
    mbarrier.wait(bars.index(k % STAGES), phase=(k // STAGES) & 1)


@gluon.jit
def _gather_rows(routes_ptr, b, TOPK, BLOCK_M: gl.constexpr, layout: gl.constexpr):
    """Block b's routes in ``layout``: (row index into A: the route, or its token when TOPK > 1
    is given for gate/up; valid)."""
    r = gl.load(routes_ptr + b * BLOCK_M + gl.arange(0, BLOCK_M, layout=layout))
    ok = r >= 0
    return gl.where(ok, r // TOPK, 0).to(gl.int64), ok


@gluon.jit
def gluon_grouped_down_kernel(act_ptr, acts_ptr, w_desc, ws_ptr, routes_ptr, block_expert_ptr, num_blocks_ptr, y_ptr,
                              H, I, stride_acts, stride_y,
                              BLOCK_M: gl.constexpr, GROUP_M: gl.constexpr, STAGES: gl.constexpr,
                              num_warps: gl.constexpr):
    """y[r, n] = ws[e] * sum_k acts[r, k // 128] * sum_{k' in step} act[r, k'] W2[e, n, k'] for
    the routes r of one plan block and n in one BLOCK_N tile of H (act [R, I] e4m3 in route
    order, acts [R, cdiv(I, 128)] fp32, W2 [E, H, I] e4m3 as the descriptor's [E*H, I]; y [R, H]
    in its own dtype)."""
    BLOCK_N: gl.constexpr = w_desc.block_type.shape[0]
    gl.static_assert(w_desc.block_type.shape[1] == BLOCK_K)
    gl.static_assert(BLOCK_M == 16 * num_warps)  # one 16-row MMA slice per warp, none duplicated
    b, nt, e = _program_block(gl.cdiv(H, BLOCK_N), block_expert_ptr, num_blocks_ptr, GROUP_M)
    if e < 0:
        return
    num_k = gl.cdiv(I, BLOCK_K)
    gather: gl.constexpr = _gather_layout(num_warps)
    a_rows, a_ok = _gather_rows(routes_ptr, b, 1, BLOCK_M, gl.SliceLayout(1, gather))
    cols = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(0, gather))
    mma: gl.constexpr = _mma_layout(BLOCK_N, num_warps)
    m_rows, m_ok = _gather_rows(routes_ptr, b, 1, BLOCK_M, gl.SliceLayout(1, mma))

    a_smem = gl.allocate_shared_memory(gl.float8e4nv, [STAGES, BLOCK_M, BLOCK_K],
                                       gl.NVMMASharedLayout.get_default_for([BLOCK_M, BLOCK_K], gl.float8e4nv))
    w_smem = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BLOCK_N, BLOCK_K], w_desc.layout)
    bars = _ring_barriers(STAGES)
    w_row0 = e * H + nt * BLOCK_N
    for i in gl.static_range(STAGES - 1):
        _load_step(act_ptr, a_rows, a_ok, cols, I, a_smem, w_desc, w_smem, w_smem, bars, i, w_row0, w_row0, num_k,
                   STAGES, False)

    zero = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=mma)
    acc = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=mma)
    for k in range(num_k):
        # the slot of step k-1 is free (its wgmma was waited for): it takes step k + STAGES - 1
        _load_step(act_ptr, a_rows, a_ok, cols, I, a_smem, w_desc, w_smem, w_smem, bars, k + STAGES - 1, w_row0,
                   w_row0, num_k, STAGES, False)
        _step_ready(bars, k, STAGES)
        slot = k % STAGES
        tok = warpgroup_mma(a_smem.index(slot), w_smem.index(slot).permute((1, 0)), zero, use_acc=False,
                            is_async=True)
        part = warpgroup_mma_wait(num_outstanding=0, deps=(tok,))
        acc += part * gl.load(acts_ptr + m_rows * stride_acts + k, mask=m_ok, other=0.0)[:, None]
        gl.thread_barrier()  # every warp is past step k's smem before it is refilled
    _drain(bars, STAGES)

    acc = acc * gl.load(ws_ptr + e)
    n = nt * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, mma))
    gl.store(y_ptr + m_rows[:, None] * stride_y + n[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=m_ok[:, None] & (n < H)[None, :])


@gluon.jit
def gluon_grouped_gate_up_kernel(x_ptr, xs_ptr, w_desc, ws_ptr, routes_ptr, block_expert_ptr, num_blocks_ptr, act_ptr,
                                 H, I, TOPK, stride_act,
                                 BLOCK_M: gl.constexpr, GROUP_M: gl.constexpr, STAGES: gl.constexpr,
                                 num_warps: gl.constexpr):
    """act[r, n] = SiLU(g) * u, g = s x[t] . W13[e, n], u = s x[t] . W13[e, I + n], s = xs[t] ws[e],
    t = r // TOPK, for the routes r of one plan block and n in one BLOCK_N tile of I (x [M, H]
    e4m3 with one scale per row xs [M]; W13 [E, 2I, H] e4m3 as the descriptor's [E*2I, H];
    act [R, I] fp32 in route order)."""
    BLOCK_N: gl.constexpr = w_desc.block_type.shape[0]
    gl.static_assert(w_desc.block_type.shape[1] == BLOCK_K)
    gl.static_assert(BLOCK_M == 16 * num_warps)
    b, nt, e = _program_block(gl.cdiv(I, BLOCK_N), block_expert_ptr, num_blocks_ptr, GROUP_M)
    if e < 0:
        return
    num_k = gl.cdiv(H, BLOCK_K)
    gather: gl.constexpr = _gather_layout(num_warps)
    a_rows, a_ok = _gather_rows(routes_ptr, b, TOPK, BLOCK_M, gl.SliceLayout(1, gather))
    cols = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(0, gather))
    mma: gl.constexpr = _mma_layout(BLOCK_N, num_warps)
    m_tok, m_ok = _gather_rows(routes_ptr, b, TOPK, BLOCK_M, gl.SliceLayout(1, mma))
    m_route, _ = _gather_rows(routes_ptr, b, 1, BLOCK_M, gl.SliceLayout(1, mma))

    a_smem = gl.allocate_shared_memory(gl.float8e4nv, [STAGES, BLOCK_M, BLOCK_K],
                                       gl.NVMMASharedLayout.get_default_for([BLOCK_M, BLOCK_K], gl.float8e4nv))
    g_smem = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BLOCK_N, BLOCK_K], w_desc.layout)
    u_smem = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BLOCK_N, BLOCK_K], w_desc.layout)
    bars = _ring_barriers(STAGES)
    g_row0 = e * 2 * I + nt * BLOCK_N
    u_row0 = g_row0 + I
    for i in gl.static_range(STAGES - 1):
        _load_step(x_ptr, a_rows, a_ok, cols, H, a_smem, w_desc, g_smem, u_smem, bars, i, g_row0, u_row0, num_k,
                   STAGES, True)

    zero = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=mma)
    gate = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=mma)
    up = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=mma)
    for k in range(num_k):
        _load_step(x_ptr, a_rows, a_ok, cols, H, a_smem, w_desc, g_smem, u_smem, bars, k + STAGES - 1, g_row0,
                   u_row0, num_k, STAGES, True)
        _step_ready(bars, k, STAGES)
        slot = k % STAGES
        t_g = warpgroup_mma(a_smem.index(slot), g_smem.index(slot).permute((1, 0)), zero, use_acc=False,
                            is_async=True)
        t_u = warpgroup_mma(a_smem.index(slot), u_smem.index(slot).permute((1, 0)), zero, use_acc=False,
                            is_async=True)
        gate += warpgroup_mma_wait(num_outstanding=1, deps=(t_g,))  # up's wgmma runs under this add
        up += warpgroup_mma_wait(num_outstanding=0, deps=(t_u,))
        gl.thread_barrier()
    _drain(bars, STAGES)

    s = gl.load(xs_ptr + m_tok, mask=m_ok, other=0.0) * gl.load(ws_ptr + e)
    gate = gate * s[:, None]
    up = up * s[:, None]
    h = gl.div_rn(gate, 1.0 + gl.exp(-gate)) * up
    n = nt * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, mma))
    gl.store(act_ptr + m_route[:, None] * stride_act + n[None, :], h, mask=m_ok[:, None] & (n < I)[None, :])
