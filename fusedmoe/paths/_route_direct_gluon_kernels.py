"""Gluon form of the route-direct down + combine (``RouteDirectConfig.down_gluon``), for sm_90.

Why: the Triton GEMV down (``_route_direct_kernels.route_down_kernel``) loads each K step's
activations in a layout of their own and converts them to the weight tile's through shared
memory (a store, a barrier, a load, a barrier per step), and reduces each step's products
over K across lanes (shuffles) before adding them up.  At M=1 the down runs after gate/up,
so its instructions after the PDL wait are paid in series: with no weight to read, a
Hunyuan TP8 down program took 1.3 us, a DeepSeek-V3 TP8 one 4.9 us (thirty-fourth session).

Here the layout is explicit.  The weight tile [KP, BLOCK_N, BLOCK_K / VEC, VEC] (KP routes of
the token, VEC = 16 bytes of weights in each thread) has a blocked layout whose warps run along
the routes and K, its lanes along K and the rows, and each thread holds several rows
(``_tile_layout``).  The activations
are loaded straight into that layout as a [KP, 1, BLOCK_K / VEC, VEC] tensor (each thread reads
the VEC columns its weights need: lanes on other rows read the same addresses, from L1), so no
step converts a layout.  Each step's products are summed over the thread's VEC columns (FMAs
in registers) into a [KP, BLOCK_N, BLOCK_K / VEC] accumulator; the reduction across lanes and
warps runs once, after the K loop.  Weights are upcast to fp32 and multiplied with the fp32
activations ("w8a16" as the Triton kernel; ``RouteDirectConfig.fp16_products`` applies to
gate/up only here: in packed fp16 this layout spent more instructions on each step's
activation chunk scales and on pairing weight bytes than it saved, 1.03-1.20x the Triton
down's time in the thirty-fifth session's first call).  With PDL the first step's weight tile is
loaded before the wait for gate/up.

Covers one K split of gate/up (act [R, I] fp32: ``SPLIT_K == 1``), bf16 / fp16 / fp8_tensor /
fp8_block weights (W_SCALE 0, 1, 2; block scales need BLOCK_K a multiple of 128), biases,
``shared_output``, one H tile per program.  The interpreter cannot run Gluon: off sm_90 the
launcher runs the Triton kernel with the same tiles (``route_direct.uses_gluon_down``).
The PDL wait, the timeline marks and the combine are the Triton kernels' own
(``_pdl.pdl_wait``, ``_trace``, ``_route_direct_kernels._combine_token``), called from Gluon.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from .._pdl import pdl_wait
from .._trace import trace_end, trace_mark
from ._route_direct_kernels import _combine_token


@gluon.constexpr_function
def _next_pow2(n):
    p = 1
    while p < n:
        p *= 2
    return p


@gluon.constexpr_function
def _tile_layout(routes, rows, groups, vec, num_warps):
    """Blocked layout of the [routes, rows, groups, vec] weight tile (all powers of two): vec
    elements (16 bytes) in each thread.  Warps go along the routes, then along K (groups), and
    along the rows only when both are used up, so that no two warps load the same activations;
    lanes go along K, then the rows (lanes of one warp that load the same activations make one
    request), then the routes; the rows left over stay in each thread's registers (each
    activation value a thread loads serves that many rows).  Lanes left once every dimension is
    covered go along K (those threads then hold copies)."""
    warps_r = min(num_warps, routes)
    warps_k = min(num_warps // warps_r, groups)
    warps_n = num_warps // (warps_r * warps_k)
    lanes_k = min(32, max(1, groups // warps_k))
    lanes_n = min(32 // lanes_k, max(1, rows // warps_n))
    lanes_r = min(32 // (lanes_k * lanes_n), max(1, routes // warps_r))
    lanes_k *= 32 // (lanes_k * lanes_n * lanes_r)
    rows_per_thread = max(1, rows // (lanes_n * warps_n))
    return gl.BlockedLayout([1, rows_per_thread, 1, vec], [lanes_r, lanes_n, lanes_k, 1],
                            [warps_r, warps_n, warps_k, 1], [3, 2, 1, 0])


@gluon.constexpr_function
def _axis(layout, dim, rank):
    """The layout of a 1-D index along ``dim`` of a rank-``rank`` tensor in ``layout``."""
    for d in reversed(range(rank)):
        if d != dim:
            layout = gl.SliceLayout(d, layout)
    return layout


@gluon.jit
def _step_products(w, a_rows, k0, k4, g4, held4, s_rows, s_ok, g3, I, W_SCALE: gl.constexpr):
    """One K step: the products of weight tile w [KP, BLOCK_N, GROUPS, VEC] (loaded, columns
    k0 + k4) with the routes' activations (rows a_rows [KP, 1, 1, 1], loaded here in w's
    layout), summed over each thread's VEC columns: [KP, BLOCK_N, GROUPS] fp32, block scales
    applied (W_SCALE 2)."""
    a = gl.load(a_rows + k0 + k4, mask=held4 & (k0 + g4 < I), other=0.0)  # [KP, 1, GROUPS, VEC]
    part = gl.sum(w.to(gl.float32) * a, axis=3)
    if W_SCALE == 2:
        gk = k0 + g3
        part = part * gl.load(s_rows + gk // 128, mask=s_ok & (gk < I), other=0.0)
    return part


@gluon.jit
def route_down_gluon_kernel(
        act_ptr, w_ptr, ws_ptr, b_ptr, ids_ptr, tw_ptr, shared_ptr, out_ptr,
        H, I, R, expert_offset, num_local, stride_we, stride_wn, stride_wse, stride_wsn, stride_s, stride_o,
        TOPK: gl.constexpr, W_SCALE: gl.constexpr, HAS_SHARED: gl.constexpr, HAS_BIAS: gl.constexpr,
        BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, PDL: gl.constexpr = False, trace_ptr=None,
        TRACE: gl.constexpr = False):
    """out[t, n] = sum_j w[t,j] * (W2_e act_r + b_e)[n] (+ shared[t, n]), r = t*TOPK + j, over
    held routes (e = ids[r] - expert_offset in [0, num_local)), for the BLOCK_N rows n of this
    program's H tile; act [R, I] fp32; ws as the Triton kernel's (W_SCALE 1: [E], 2: [E, H/128,
    I/128]); bias b [E, H] if HAS_BIAS.  Programs: token-fastest, (R / TOPK) * cdiv(H, BLOCK_N)."""
    trace_mark(trace_ptr, 0, TRACE)
    KP: gl.constexpr = _next_pow2(TOPK)
    VEC: gl.constexpr = 128 // w_ptr.dtype.element_ty.primitive_bitwidth  # 16 bytes
    GROUPS: gl.constexpr = BLOCK_K // VEC
    L4: gl.constexpr = _tile_layout(KP, BLOCK_N, GROUPS, VEC, gl.num_warps())
    pid = gl.program_id(0)
    tokens = R // TOPK
    t = pid % tokens
    n0 = (pid // tokens) * BLOCK_N

    j = gl.arange(0, KP, layout=_axis(L4, 0, 4))
    r = t * TOPK + j
    gid = gl.load(ids_ptr + r, mask=j < TOPK, other=-1)
    held = (gid >= expert_offset) & (gid - expert_offset < num_local)
    e = gl.where(held, gid - expert_offset, 0).to(gl.int64)
    n = n0 + gl.arange(0, BLOCK_N, layout=_axis(L4, 1, 4))
    kg = gl.arange(0, GROUPS, layout=_axis(L4, 2, 4))
    kv = gl.arange(0, VEC, layout=_axis(L4, 3, 4))
    n_ok = n < H

    held4 = held[:, None, None, None]
    g4 = (kg * VEC)[None, None, :, None]  # [1, 1, GROUPS, 1]: each group's first column
    k4 = g4 + kv[None, None, None, :]  # [1, 1, GROUPS, VEC]
    row_ok4 = held4 & n_ok[None, :, None, None]
    w_rows = w_ptr + e[:, None, None, None] * stride_we + n.to(gl.int64)[None, :, None, None] * stride_wn
    a_rows = act_ptr + r.to(gl.int64)[:, None, None, None] * I  # [KP, 1, 1, 1]
    # block scales (W_SCALE 2) of each row's 128-column groups: ws[e, n // 128, k // 128]
    s_rows = ws_ptr + e[:, None, None] * stride_wse + (n // 128).to(gl.int64)[None, :, None] * stride_wsn
    s_ok = held[:, None, None] & n_ok[None, :, None]
    g3 = (kg * VEC)[None, None, :]  # [1, 1, GROUPS]: each group's first column
    # masks are whole groups (I is a multiple of VEC): one predicate per 16-byte load
    w = gl.load(w_rows + k4, mask=row_ok4 & (g4 < I), other=0.0)
    if PDL:
        pdl_wait()
    trace_mark(trace_ptr, 1, TRACE)
    acc = _step_products(w, a_rows, 0, k4, g4, held4, s_rows, s_ok, g3, I, W_SCALE)
    for k0 in range(BLOCK_K, I, BLOCK_K):
        w = gl.load(w_rows + k0 + k4, mask=row_ok4 & (k0 + g4 < I), other=0.0)
        acc += _step_products(w, a_rows, k0, k4, g4, held4, s_rows, s_ok, g3, I, W_SCALE)

    _combine_token(gl.sum(acc, axis=2), r, held, e, t, n, n_ok, ws_ptr, b_ptr, tw_ptr, shared_ptr, out_ptr, H,
                   stride_s, stride_o, W_SCALE, HAS_BIAS, HAS_SHARED)
    trace_end(trace_ptr, TRACE)
