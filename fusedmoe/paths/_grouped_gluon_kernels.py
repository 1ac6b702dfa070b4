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
  in ``_grouped_kernels``.  Programs past ``num_blocks`` exit (the warp-specialised ones run
  no K step and store nothing).
- Their activations are in plan order (row p = b * BLOCK_M + i holds route sorted_routes[p],
  zeros on padding rows), so every operand tile comes by TMA: x's rows are gathered into plan
  order first (``gather_plan_rows_kernel``), gate/up writes its output in plan order, and down
  writes y in route order.  (The first form gathered A rows with cp.async inside the GEMM and
  ran gate/up at 636-682 TFLOP/s against the dense probe's 1032: tenth session.)
- Weight tiles come from W13 viewed as [E*2I, H] and W2 as [E*H, I].  Tiles that run past an
  expert's rows read the next expert's rows or TMA's zero fill; the stores mask them.
- Two forms.  At BLOCK_M 64, one warpgroup (4 warps; two CTAs per SM) and a ring of STAGES
  slots, each step's tiles arriving on the slot's mbarrier; a slot is refilled as soon as its
  step's wgmma is waited for, with no barrier of its own (the dense probe's loop).  At 128,
  warp-specialised (the second half of this file).  Every K step of
  128 is its own wgmma into a fresh partial, waited for and added in fp32: MMA sums are
  promoted every 128 columns, as ``GroupedConfig.fp8_promote_k == 128``.
- gate/up: gate and up are two tiles of BLOCK_N columns, and up's wgmma runs under gate's add.
  x's row scale and the expert scale apply at the end, then SiLU(gate) * up is written in
  fp32 and requantised per 128 columns by ``quantize_rows``, as the fused epilogue would
  quantise it.  (In bf16 the round trip took 172 us less at Mixtral M=8192, but rounding
  before the requantisation moved the layer past the tuner's 1% rel-L2 gate against the
  reference in all 6 cases tried: tenth session.)  The warp-specialised kernel also has tiles
  of 128 columns, one quantisation group, which quantise SiLU(gate) * up in the epilogue from
  the same fp32 values (no fp32 round trip, no requantisation launch; the set
  ``policy.gluon_grouped_config(g, 128, 128)``).
- down: each step's partial is scaled by the rows' activation scale for that step, loaded
  while the step's wgmma runs.
- PDL: as the other grouped launches (``_pdl.pdl_enter``), each first waits for the previous
  grid, then lets the next launch.

The interpreter cannot run Gluon: off sm_90 the launcher runs the Triton kernels instead
(``grouped.uses_gluon``).
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from .._epilogue_kernels import SILU, glu, quantize_group

K_STEP = 128                     # columns per K step: one promotion, one activation scale (down)
BLOCK_K = gl.constexpr(K_STEP)   # the same, for the kernels


def tile_layout(rows: int):
    """Shared-memory layout of a [rows, 128] e4m3 tile (its TMA descriptor's): A and weight tiles."""
    return gl.NVMMASharedLayout.get_default_for([rows, K_STEP], gl.float8e4nv)


def tile_desc(t, block_rows: int) -> TensorDescriptor:
    """TMA descriptor of a 2-D e4m3 tensor (unit column stride) read in [block_rows, 128] tiles."""
    return TensorDescriptor(t, list(t.shape), list(t.stride()), [block_rows, K_STEP], tile_layout(block_rows))


@gluon.jit
def _pdl_enter(PDL: gl.constexpr):
    """``_pdl.pdl_enter`` for Gluon kernels (every thread, before the kernel reads anything):
    griddepcontrol.wait, then griddepcontrol.launch_dependents; nothing without PDL."""
    if PDL:
        gl.inline_asm_elementwise("griddepcontrol.wait; // dummy $0", "=r", [], dtype=gl.int32, is_pure=False, pack=1)
        gl.inline_asm_elementwise("griddepcontrol.launch_dependents; // dummy $0", "=r", [], dtype=gl.int32,
                                  is_pure=False, pack=1)


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
def _store_y(y_ptr, stride_y, route, acc, ws_scale, col0, H):
    """Down's output: y[route, col0..] = ws_scale * acc in y's dtype, for held routes (route >= 0)
    and columns below H (route [rows], acc [rows, N] fp32 in an MMA layout)."""
    n = col0 + gl.arange(0, acc.shape[1], layout=gl.SliceLayout(0, acc.type.layout))
    gl.store(y_ptr + route.to(gl.int64)[:, None] * stride_y + n[None, :],
             (acc * ws_scale).to(y_ptr.dtype.element_ty), mask=(route >= 0)[:, None] & (n < H)[None, :])


@gluon.jit
def _swiglu_rows(xs_ptr, p, gate, up, ws_scale, col0):
    """SiLU(g) * u [rows, N] fp32 for plan rows p, where g and u are the gate and up sums (fp32,
    an MMA layout) scaled by xs[p] * ws_scale, and the columns col0.. it holds (in the same layout)."""
    rs = gl.load(xs_ptr + p) * ws_scale
    h = glu(gate * rs[:, None], up * rs[:, None], SILU)
    return h, col0 + gl.arange(0, gate.shape[1], layout=gl.SliceLayout(0, gate.type.layout))


@gluon.jit
def _store_act(act_ptr, stride_act, xs_ptr, p, gate, up, ws_scale, col0, I):
    """Gate/up's output: act[p, col0..] = SiLU(g) * u (``_swiglu_rows``) for plan rows p, columns below I."""
    h, n = _swiglu_rows(xs_ptr, p, gate, up, ws_scale, col0)
    gl.store(act_ptr + p.to(gl.int64)[:, None] * stride_act + n[None, :], h.to(act_ptr.dtype.element_ty),
             mask=(n < I)[None, :])


@gluon.jit
def _store_act_q(act_ptr, acts_ptr, stride_act, stride_acts, xs_ptr, p, gate, up, ws_scale, nt, I):
    """Gate/up's output quantised in the epilogue: h = SiLU(g) * u (``_swiglu_rows``), then
    act[p, nt*128..] in e4m3 and acts[p, nt] its scale for the row's 128-column group
    (``quantize_group``: bitwise what ``quantize_rows`` makes of the fp32 h); gate, up [rows, 128].
    The codes are stored from a row-major layout, 16 bytes a thread (from the MMA layout the
    consumer spilled 10 LDL/STL, sm_90)."""
    gl.static_assert(gate.shape[1] == BLOCK_K)  # one tile is one quantisation group
    h, n = _swiglu_rows(xs_ptr, p, gate, up, ws_scale, nt * BLOCK_K)
    ok = (n < I)[None, :]
    q, scale = quantize_group(h, ok)
    gl.store(acts_ptr + p.to(gl.int64) * stride_acts + nt, scale)
    store: gl.constexpr = gl.BlockedLayout([1, 16], [4, 8], [4, 1], [1, 0])  # 16 bytes a thread, a row per 8 lanes
    q = gl.convert_layout(q, store)
    pr = gl.convert_layout(p, gl.SliceLayout(1, store))
    ns = nt * BLOCK_K + gl.arange(0, BLOCK_K, layout=gl.SliceLayout(0, store))
    gl.store(act_ptr + pr.to(gl.int64)[:, None] * stride_act + ns[None, :], q, mask=(ns < I)[None, :])


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
                              PDL: gl.constexpr = False):
    """y[r, n] = ws[e] * sum_k as[p, k // 128] * sum_{k' in step} a[p, k'] W2[e, n, k'] for the
    plan rows p of one block (route r = sorted_routes[p]) and n in one BLOCK_N tile of H
    (a [P, I] e4m3 in plan order as the descriptor's, as [P, cdiv(I, 128)] fp32, W2 [E, H, I]
    e4m3 as the descriptor's [E*H, I]; y [R, H] in its own dtype, in route order).  (Loading
    each step's activation scales two steps ahead, not one, changed its time by -0.7..+0.9%
    in six probe cases: twelfth session.)"""
    BLOCK_M: gl.constexpr = a_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = w_desc.block_type.shape[0]
    gl.static_assert(w_desc.block_type.shape[1] == BLOCK_K)
    gl.static_assert(a_desc.block_type.shape[1] == BLOCK_K)
    gl.static_assert((num_warps == 4) & (BLOCK_M == 64))  # one warpgroup: see _load_step's refill
    _pdl_enter(PDL)
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
    for k in range(num_k):
        slot = k % STAGES
        mbarrier.wait(bars.index(slot), phase=(k // STAGES) & 1)
        tok = warpgroup_mma(a_smem.index(slot), w_smem.index(slot).permute((1, 0)), zero, use_acc=False,
                            is_async=True)
        next_scale = gl.load(scale_row + k + 1, mask=k + 1 < num_k, other=0.0)  # lands under the wgmma
        part = warpgroup_mma_wait(num_outstanding=0, deps=(tok,))
        _load_step(a_desc, a_smem, w_desc, w_smem, w_smem, bars, k + STAGES, a_row0, w_row0, w_row0, num_k, STAGES,
                   False)
        acc += part * step_scale[:, None]
        step_scale = next_scale
    _drain(bars, STAGES)

    _store_y(y_ptr, stride_y, route, acc, gl.load(ws_ptr + e), nt * BLOCK_N, H)


@gluon.jit
def gluon_grouped_gate_up_kernel(x_desc, xs_ptr, w_desc, ws_ptr, block_expert_ptr, num_blocks_ptr, act_ptr,
                                 H, I, stride_act,
                                 GROUP_M: gl.constexpr, STAGES: gl.constexpr, num_warps: gl.constexpr,
                                 PDL: gl.constexpr = False):
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
    _pdl_enter(PDL)
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
    _store_act(act_ptr, stride_act, xs_ptr, p, gate, up, gl.load(ws_ptr + e), nt * BLOCK_N, I)


# ---- Warp-specialised forms on 128-row plan blocks (GroupedConfig.block_m == 128) ----
# One producer warp issues every TMA load (the one-warpgroup kernels above pay a CTA-wide
# barrier before each issue: 33-44% of their stall cycles under Nsight Compute, eleventh
# session), and two consumer warpgroups of 64 rows share each weight tile and release each
# ring slot with an arrive of their own, so one's promotion runs under the other's wgmma.
# 3 warpgroups x 128 threads x WS_MAXNREG registers fit one CTA per SM; ``setmaxnreg`` then
# gives the consumers WS_CONSUMER_REGS and the producer WS_LOADER_REGS.  The dense form
# (scripts/fp8_pingpong_probe.py, mode ws) ran Mixtral's per-expert GEMMs at 1168-1241 TFLOP/s
# with 128 x 128 tiles and 1248-1299 with 128 x 256, against 1042-1060 for the one-warpgroup
# 64 x 128 form (twelfth session).
# Values reach the partitions as run-time scalars (constexprs come from the shared buffers'
# shapes); a block past num_blocks runs no K step and stores nothing (warp_specialize sits at
# the kernel's top level, after no early return).
# A block whose routes end within its first 64 rows (an expert's last block, a no-permute block)
# runs the second warpgroup's wgmmas for nothing: that warpgroup only releases each slot
# (``ws_release``) and stores nothing, its rows of act left unwritten (the down skips them the
# same way).  The weight tiles still come once per block; only MMA work is saved.
WS_MAXNREG = 168
WS_CONSUMER_REGS = gl.constexpr(232)
WS_LOADER_REGS = gl.constexpr(24)


@gluon.jit
def ws_ring(a_desc, b_desc, STAGES: gl.constexpr, B_TILES: gl.constexpr = 1):
    """A warp-specialised kernel's ring: STAGES slots of an A tile and B_TILES B tiles (slot s's
    tile j at b_smem.index(s * B_TILES + j)), a ``ready`` barrier per slot (the producer's TMA
    bytes) and an ``empty`` one (one arrive per consumer warpgroup, two of them)."""
    a_smem = gl.allocate_shared_memory(a_desc.dtype, [STAGES, a_desc.block_type.shape[0], BLOCK_K], a_desc.layout)
    b_smem = gl.allocate_shared_memory(b_desc.dtype, [STAGES * B_TILES, b_desc.block_type.shape[0], BLOCK_K],
                                       b_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=2)
    return a_smem, b_smem, ready, empty


@gluon.jit
def ws_fill_ring(a_desc, b_desc, a_smem, b_smem, ready, empty, a_row0, b_row0, num_k, b_row_step=0,
                 B_TILES: gl.constexpr = 1):
    """A producer warp's loop: each K step's A tile (rows a_row0..) and B tiles (tile j at rows
    b_row0 + j * b_row_step..) by TMA into the ring, into a slot once its consumers have
    released it (``empty``), arriving on ``ready``."""
    STAGES: gl.constexpr = a_smem.type.shape[0]
    for k in range(num_k):
        s = k % STAGES
        mbarrier.wait(empty.index(s), ((k // STAGES) & 1) ^ 1)  # a fresh barrier passes phase 1 at once
        mbarrier.expect(ready.index(s), a_desc.block_type.nbytes + B_TILES * b_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(a_desc, [a_row0, k * BLOCK_K], ready.index(s), a_smem.index(s))
        for j in gl.static_range(B_TILES):
            tma.async_copy_global_to_shared(b_desc, [b_row0 + j * b_row_step, k * BLOCK_K], ready.index(s),
                                            b_smem.index(s * B_TILES + j))


@gluon.jit
def _ws_program(a_desc, w_desc, N, K, ws_ptr, routes_ptr, block_expert_ptr, num_blocks_ptr, GROUP_M: gl.constexpr,
                STAGES: gl.constexpr, B_TILES: gl.constexpr):
    """A warp-specialised program's (block, N tile, local expert, K steps: 0 for a block past
    num_blocks, expert scale, whether the block holds a route in rows 64..127) and its ring
    (``ws_ring``), for a 128-row A tile and B_TILES weight tiles per slot; N columns of output,
    K the reduced length.  A block's routes fill its first rows (``plan.build_plan``)."""
    gl.static_assert(a_desc.block_type.shape[0] == 128)
    gl.static_assert((w_desc.block_type.shape[1] == BLOCK_K) & (a_desc.block_type.shape[1] == BLOCK_K))
    b, nt, e = _program_block(gl.cdiv(N, w_desc.block_type.shape[0]), block_expert_ptr, num_blocks_ptr, GROUP_M)
    num_k = gl.where(e >= 0, gl.cdiv(K, BLOCK_K), 0)
    ws_scale = gl.load(ws_ptr + gl.maximum(e, 0))
    upper = (gl.load(routes_ptr + b * 128 + 64, mask=e >= 0, other=-1) >= 0).to(gl.int32)
    a_smem, w_smem, ready, empty = ws_ring(a_desc, w_desc, STAGES, B_TILES)
    return b, nt, e, num_k, ws_scale, upper, a_smem, w_smem, ready, empty


@gluon.jit
def ws_release(a_smem, ready, empty, num_k):
    """A consumer warpgroup with no routes in its rows: each K step's slot released once it is
    filled (waiting for ``ready`` keeps its arrives one per phase of ``empty``), no wgmma."""
    STAGES: gl.constexpr = a_smem.type.shape[0]
    for k in range(num_k):
        s = k % STAGES
        mbarrier.wait(ready.index(s), (k // STAGES) & 1)
        mbarrier.arrive(empty.index(s), count=1)


@gluon.jit
def _ws_down_loader(a_desc, w_desc, a_smem, w_smem, ready, empty, as_ptr, stride_as, routes_ptr, y_ptr, stride_y,
                    ws_scale, a_row0, w_row0, col0, H, num_k, upper):
    """Producer warp: step k's A and W2 tiles into its ring slot once both consumers released it."""
    ws_fill_ring(a_desc, w_desc, a_smem, w_smem, ready, empty, a_row0, w_row0, num_k)


@gluon.jit
def ws_partial(a, w_slot, j: gl.constexpr, SUB_N: gl.constexpr, layout: gl.constexpr):
    """A consumer warpgroup's K-step partial [64, SUB_N] (fp32, ``layout``): its A rows ``a``
    against rows j*SUB_N.. of the slot's weight tile, a fresh wgmma waited for."""
    zero = gl.zeros((64, SUB_N), dtype=gl.float32, layout=layout)
    tok = warpgroup_mma(a, w_slot.slice(j * SUB_N, SUB_N).permute((1, 0)), zero, use_acc=False, is_async=True)
    return warpgroup_mma_wait(num_outstanding=0, deps=(tok,))


@gluon.jit
def ws_down_consume(a_smem, w_smem, ready, empty, as_ptr, stride_as, routes_ptr, y_ptr, stride_y, ws_scale,
                    a_row0, col0, H, num_k, WG: gl.constexpr):
    """Consumer warpgroup WG: plan rows a_row0 + WG*64 .. +64, each K step's partial promoted
    with the rows' activation scale for the step (loaded two steps ahead), then y in route order.
    A W2 tile of 256 rows runs as two sub-tiles of 128, one partial alive at a time."""
    STAGES: gl.constexpr = a_smem.type.shape[0]
    BLOCK_N: gl.constexpr = w_smem.type.shape[1]
    SUB_N: gl.constexpr = min(BLOCK_N, 128)
    gl.static_assert((BLOCK_N == SUB_N) | (BLOCK_N == 2 * SUB_N))
    mma: gl.constexpr = _mma_layout(SUB_N, 4)
    p = a_row0 + WG * 64 + gl.arange(0, 64, layout=gl.SliceLayout(1, mma))
    scale_row = as_ptr + p.to(gl.int64) * stride_as
    acc0 = gl.zeros((64, SUB_N), dtype=gl.float32, layout=mma)
    acc1 = gl.zeros((64, SUB_N), dtype=gl.float32, layout=mma)
    step_scale = gl.load(scale_row)
    following_scale = gl.load(scale_row + 1, mask=1 < num_k, other=0.0)
    for k in range(num_k):
        s = k % STAGES
        mbarrier.wait(ready.index(s), (k // STAGES) & 1)
        a = a_smem.index(s).slice(WG * 64, 64)
        ahead_scale = gl.load(scale_row + k + 2, mask=k + 2 < num_k, other=0.0)
        part = ws_partial(a, w_smem.index(s), 0, SUB_N, mma)
        if BLOCK_N > SUB_N:
            acc0 += part * step_scale[:, None]
            part = ws_partial(a, w_smem.index(s), 1, SUB_N, mma)
        mbarrier.arrive(empty.index(s), count=1)  # this warpgroup's wgmmas are done with the slot
        if BLOCK_N > SUB_N:
            acc1 += part * step_scale[:, None]
        else:
            acc0 += part * step_scale[:, None]
        step_scale = following_scale
        following_scale = ahead_scale
    route = gl.load(routes_ptr + p)
    _store_y(y_ptr, stride_y, route, acc0, ws_scale, col0, H)
    if BLOCK_N > SUB_N:
        _store_y(y_ptr, stride_y, route, acc1, ws_scale, col0 + SUB_N, H)


@gluon.jit
def _ws_down_consumer0(a_desc, w_desc, a_smem, w_smem, ready, empty, as_ptr, stride_as, routes_ptr, y_ptr, stride_y,
                       ws_scale, a_row0, w_row0, col0, H, num_k, upper):
    if num_k > 0:  # a block past num_blocks: nothing
        ws_down_consume(a_smem, w_smem, ready, empty, as_ptr, stride_as, routes_ptr, y_ptr, stride_y, ws_scale,
                        a_row0, col0, H, num_k, 0)


@gluon.jit
def _ws_down_consumer1(a_desc, w_desc, a_smem, w_smem, ready, empty, as_ptr, stride_as, routes_ptr, y_ptr, stride_y,
                       ws_scale, a_row0, w_row0, col0, H, num_k, upper):
    if num_k > 0:
        if upper != 0:
            ws_down_consume(a_smem, w_smem, ready, empty, as_ptr, stride_as, routes_ptr, y_ptr, stride_y, ws_scale,
                            a_row0, col0, H, num_k, 1)
        else:  # no routes in rows 64..127
            ws_release(a_smem, ready, empty, num_k)


@gluon.jit
def gluon_grouped_down_ws_kernel(a_desc, as_ptr, w_desc, ws_ptr, routes_ptr, block_expert_ptr, num_blocks_ptr, y_ptr,
                                 H, I, stride_as, stride_y,
                                 GROUP_M: gl.constexpr, STAGES: gl.constexpr, num_warps: gl.constexpr,
                                 PDL: gl.constexpr = False):
    """``gluon_grouped_down_kernel``'s y on 128-row plan blocks, warp-specialised (above)."""
    gl.static_assert(num_warps == 4)
    _pdl_enter(PDL)
    BLOCK_N: gl.constexpr = w_desc.block_type.shape[0]
    b, nt, e, num_k, ws_scale, upper, a_smem, w_smem, ready, empty = _ws_program(
        a_desc, w_desc, H, I, ws_ptr, routes_ptr, block_expert_ptr, num_blocks_ptr, GROUP_M, STAGES, 1)
    args = (a_desc, w_desc, a_smem, w_smem, ready, empty, as_ptr, stride_as, routes_ptr, y_ptr, stride_y, ws_scale,
            b * 128, e * H + nt * BLOCK_N, nt * BLOCK_N, H, num_k, upper)
    gl.warp_specialize([(_ws_down_consumer0, args), (_ws_down_consumer1, args), (_ws_down_loader, args)],
                       [4, 1], [WS_CONSUMER_REGS, WS_LOADER_REGS])


@gluon.jit
def _ws_gate_up_loader(x_desc, w_desc, a_smem, w_smem, ready, empty, xs_ptr, ws_scale, act_ptr, acts_ptr, stride_act,
                       stride_acts, a_row0, g_row0, nt, I, num_k, upper):
    """Producer warp: step k's x tile and its gate and up weight tiles (rows g_row0.. and
    g_row0 + I..) into the ring once both consumers released the slot."""
    ws_fill_ring(x_desc, w_desc, a_smem, w_smem, ready, empty, a_row0, g_row0, num_k, I, 2)


@gluon.jit
def _ws_gate_up_consume(a_smem, w_smem, ready, empty, xs_ptr, ws_scale, act_ptr, acts_ptr, stride_act, stride_acts,
                        a_row0, nt, I, num_k, WG: gl.constexpr):
    """Consumer warpgroup WG: plan rows a_row0 + WG*64 .. +64 of one BLOCK_N tile of I.
    BLOCK_N 64: gate's and up's K-step partials issued together, up's wgmma under gate's
    promotion (as ``gluon_grouped_gate_up_kernel``), then SiLU(g) * u in fp32 (``_store_act``).
    BLOCK_N 128: gate's partial, then up's (one partial alive at a time: the gate and up sums of
    64 x 128 and one partial take 192 of the consumer's registers), each promoted as it is waited
    for while the other warpgroup's wgmma runs; then SiLU(g) * u quantised (``_store_act_q``)."""
    STAGES: gl.constexpr = a_smem.type.shape[0]
    BLOCK_N: gl.constexpr = w_smem.type.shape[1]
    QUANT: gl.constexpr = BLOCK_N == BLOCK_K
    mma: gl.constexpr = _mma_layout(BLOCK_N, 4)
    zero = gl.zeros((64, BLOCK_N), dtype=gl.float32, layout=mma)
    gate = gl.zeros((64, BLOCK_N), dtype=gl.float32, layout=mma)
    up = gl.zeros((64, BLOCK_N), dtype=gl.float32, layout=mma)
    for k in range(num_k):
        s = k % STAGES
        mbarrier.wait(ready.index(s), (k // STAGES) & 1)
        a = a_smem.index(s).slice(WG * 64, 64)
        if QUANT:
            gate += ws_partial(a, w_smem.index(2 * s), 0, BLOCK_N, mma)
            up_part = ws_partial(a, w_smem.index(2 * s + 1), 0, BLOCK_N, mma)
        else:
            t_g = warpgroup_mma(a, w_smem.index(2 * s).permute((1, 0)), zero, use_acc=False, is_async=True)
            t_u = warpgroup_mma(a, w_smem.index(2 * s + 1).permute((1, 0)), zero, use_acc=False, is_async=True)
            gate += warpgroup_mma_wait(num_outstanding=1, deps=(t_g,))  # up's wgmma runs under this add
            up_part = warpgroup_mma_wait(num_outstanding=0, deps=(t_u,))
        mbarrier.arrive(empty.index(s), count=1)  # this warpgroup's wgmmas are done with the slot
        up += up_part
    p = a_row0 + WG * 64 + gl.arange(0, 64, layout=gl.SliceLayout(1, mma))
    if QUANT:
        _store_act_q(act_ptr, acts_ptr, stride_act, stride_acts, xs_ptr, p, gate, up, ws_scale, nt, I)
    else:
        _store_act(act_ptr, stride_act, xs_ptr, p, gate, up, ws_scale, nt * BLOCK_N, I)


@gluon.jit
def _ws_gate_up_consumer0(x_desc, w_desc, a_smem, w_smem, ready, empty, xs_ptr, ws_scale, act_ptr, acts_ptr,
                          stride_act, stride_acts, a_row0, g_row0, nt, I, num_k, upper):
    if num_k > 0:  # a block past num_blocks: nothing
        _ws_gate_up_consume(a_smem, w_smem, ready, empty, xs_ptr, ws_scale, act_ptr, acts_ptr, stride_act,
                            stride_acts, a_row0, nt, I, num_k, 0)


@gluon.jit
def _ws_gate_up_consumer1(x_desc, w_desc, a_smem, w_smem, ready, empty, xs_ptr, ws_scale, act_ptr, acts_ptr,
                          stride_act, stride_acts, a_row0, g_row0, nt, I, num_k, upper):
    if num_k > 0:
        if upper != 0:
            _ws_gate_up_consume(a_smem, w_smem, ready, empty, xs_ptr, ws_scale, act_ptr, acts_ptr, stride_act,
                                stride_acts, a_row0, nt, I, num_k, 1)
        else:  # no routes in rows 64..127: their act rows stay unwritten
            ws_release(a_smem, ready, empty, num_k)


@gluon.jit
def gluon_grouped_gate_up_ws_kernel(x_desc, xs_ptr, w_desc, ws_ptr, routes_ptr, block_expert_ptr, num_blocks_ptr,
                                    act_ptr, acts_ptr, H, I, stride_act, stride_acts,
                                    GROUP_M: gl.constexpr, STAGES: gl.constexpr, num_warps: gl.constexpr,
                                    PDL: gl.constexpr = False):
    """``gluon_grouped_gate_up_kernel``'s SiLU(g) * u on 128-row plan blocks, warp-specialised
    (above); a ring slot holds the x tile and a gate and an up tile of BLOCK_N rows each.
    BLOCK_N 64: act [P, I] fp32 (acts unused).  BLOCK_N 128 (one quantisation group): quantised
    in the epilogue, act [P, I] e4m3 and acts [P, cdiv(I, 128)] fp32, one scale per row per 128
    columns, as ``quantize_rows`` gives for the fp32 values.  routes_ptr: the plan's
    sorted_routes, read to skip a block's empty upper half, whose act rows stay unwritten."""
    gl.static_assert(num_warps == 4)
    BLOCK_N: gl.constexpr = w_desc.block_type.shape[0]
    gl.static_assert((BLOCK_N == 64) | (BLOCK_N == BLOCK_K))
    _pdl_enter(PDL)
    b, nt, e, num_k, ws_scale, upper, a_smem, w_smem, ready, empty = _ws_program(
        x_desc, w_desc, I, H, ws_ptr, routes_ptr, block_expert_ptr, num_blocks_ptr, GROUP_M, STAGES, 2)
    args = (x_desc, w_desc, a_smem, w_smem, ready, empty, xs_ptr, ws_scale, act_ptr, acts_ptr, stride_act,
            stride_acts, b * 128, e * 2 * I + nt * BLOCK_N, nt, I, num_k, upper)
    gl.warp_specialize([(_ws_gate_up_consumer0, args), (_ws_gate_up_consumer1, args), (_ws_gate_up_loader, args)],
                       [4, 1], [WS_CONSUMER_REGS, WS_LOADER_REGS])
