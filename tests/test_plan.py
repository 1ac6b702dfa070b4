"""Route preparation (stage 2): every kernel path against ``reference_plan``, exactly.

On CPU the kernels run under TRITON_INTERPRET=1 (set by conftest.py); on a CUDA machine the
same tests run on the GPU, plus CUDA-graph capture/replay.  Cases over ~10 s of interpreter
time are marked ``slow`` and run only with FUSEDMOE_SLOW=1.
"""

from __future__ import annotations

import os

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from fusedmoe import plan as plan_mod
from fusedmoe._runtime import runs_triton
from fusedmoe.plan import (
    RoutePlan,
    build_plan,
    max_blocks,
    max_padded_routes,
    plan_launches,
    reference_plan,
)

FIELDS = ("sorted_routes", "block_expert", "num_blocks", "expert_counts")
slow = pytest.mark.skipif(os.environ.get("FUSEDMOE_SLOW", "0") in ("", "0"), reason="slow: set FUSEDMOE_SLOW=1")

pytestmark = [
    pytest.mark.skipif(
        not runs_triton(torch.empty(0, device="cuda" if torch.cuda.is_available() else "cpu")),
        reason="kernels cannot run here (no CUDA and TRITON_INTERPRET unset): the comparisons would be vacuous",
    ),
    # the interpreter's run-time loop bounds (numpy < 2.4) warn once per loop: noise
    pytest.mark.filterwarnings("ignore:Conversion of an array with ndim:DeprecationWarning"),
]


def _dev() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _ids(m, k, num_experts, *, dtype=torch.int32, drop=0.1, lo=None, hi=None):
    """Random ids [m, k] in [lo, hi) (default [0, E)), a fraction ``drop`` set to -1."""
    lo = 0 if lo is None else lo
    hi = num_experts if hi is None else hi
    ids = torch.randint(lo, hi, (m, k), dtype=torch.int64)
    ids[torch.rand(m, k) < drop] = -1
    return ids.to(dtype).to(_dev())


def _assert_equal(got: RoutePlan, want: RoutePlan) -> None:
    assert (got.block_m, got.num_local_experts, got.no_permute) == (want.block_m, want.num_local_experts, want.no_permute)
    for f in FIELDS:
        a, b = getattr(got, f), getattr(want, f)
        assert a.dtype == torch.int32, f
        assert a.device == b.device, f
        assert torch.equal(a, b), f"{f}: got {a.tolist()[:64]} want {b.tolist()[:64]}"


def _check(ids, num_experts, block_m, *, path="auto", chunk=None, e_tile=None, count_in_memory=None,
           **kw) -> RoutePlan:
    """Kernel plan == reference plan on every field; returns the kernel plan."""
    extra = {"count_in_memory": count_in_memory}
    if chunk is not None:
        extra["chunk"] = chunk
    if e_tile is not None:
        extra["e_tile"] = e_tile
    got = plan_mod._build(ids, num_experts, block_m, path=path, **extra, **kw)
    want = reference_plan(ids, num_experts, block_m, **kw)
    _assert_equal(got, want)
    return got


def _check_invariants(p: RoutePlan, ids, expert_offset, num_local):
    """Properties of a plan derived from the contract alone (validates the reference too)."""
    flat = ids.reshape(-1).to(torch.int64).cpu()
    held = (flat >= expert_offset) & (flat < expert_offset + num_local)
    local = flat - expert_offset
    routes, be = p.sorted_routes.cpu(), p.block_expert.cpu()
    nb = int(p.num_blocks.item())
    bm = p.block_m
    counts = torch.bincount(local[held], minlength=num_local)
    assert torch.equal(p.expert_counts.cpu().long(), counts)
    if p.no_permute:
        assert nb == flat.numel() and routes.numel() == flat.numel() * bm
        for b in range(nb):
            assert routes[b * bm] == b and (routes[b * bm + 1 : (b + 1) * bm] == -1).all()
            assert be[b] == (local[b] if held[b] else -1)
        return
    assert routes.numel() == max_padded_routes(flat.numel(), num_local, bm)
    assert be.numel() == max_blocks(flat.numel(), num_local, bm)
    assert (routes[nb * bm :] == -1).all() and (be[nb:] == -1).all()
    live = routes[: nb * bm]
    got_routes = live[live >= 0]
    # each held route exactly once, grouped by expert in ascending expert order, stable
    want = torch.nonzero(held).flatten()
    want = want[torch.argsort(local[want] * (flat.numel() + 1) + want)]
    assert torch.equal(got_routes.long(), want)
    for b in range(nb):
        rows = routes[b * bm : (b + 1) * bm]
        assert rows[0] >= 0, "every live block starts with a real route"
        assert (local[rows[rows >= 0].long()] == be[b]).all()
        assert (be[b] >= 0) and (be[b] < num_local)


# ---------------------------------------------------------------------------------------------
# sizes


@pytest.mark.parametrize(
    "r, e, bm, want",
    [
        (0, 4, 16, 0),  # no routes: empty buffers
        (1, 4, 16, 16),  # one route: one block
        (5, 2, 16, 48),  # 5 + 2*15 = 35, rounded up to 48
        (100, 1, 1, 100),  # block_m 1: no padding at all
        (8, 256, 64, 512),  # R <= E: one block per route at most
    ],
)
def test_max_padded_routes(r, e, bm, want):
    # the documented formula R + min(R, E)*(bm-1), rounded up to a multiple of bm
    assert max_padded_routes(r, e, bm) == want
    assert max_blocks(r, e, bm) == want // bm


def test_sizes_are_reached():
    # the worst case (every expert holds one route) fills the bound exactly
    ids = torch.arange(8, dtype=torch.int32).reshape(4, 2).to(_dev())
    p = _check(ids, 8, 16)
    assert int(p.num_blocks.item()) == max_blocks(8, 8, 16) == 8


def test_plan_launches():
    # documented launch counts per path
    assert plan_launches(0, 4) == 0
    assert plan_launches(64, 256) == 1  # one program to 64 routes and 256 experts
    assert plan_launches(64, 2048) == 1  # the recount launch to 2048 routes and experts
    assert plan_launches(2048, 128) == 1
    assert plan_launches(1024, 256) == 1
    assert plan_launches(2048, 256) == 2  # the tiled launches beat the recount there (H200)
    assert plan_launches(2048, 512) == 1
    assert plan_launches(2049, 4) == 3  # beyond the one- and two-launch kernels
    assert plan_launches(16, 2049) == 3
    assert plan_launches(100_000, 4, no_permute=True) == 1


@pytest.mark.parametrize(
    "r, e, path, warps",
    [
        (64, 256, "single", 2),  # small R: one program of 2 warps, up to 256 experts
        (64, 257, "recount", None),  # above 256 experts the recount launch from the first route
        (65, 256, "recount", None),  # and past 64 routes
        (1024, 200, "recount", None),  # 200 experts count as 256 bins: the recount to 1024 routes
        (1025, 200, "tiled", None),  # then the tiled launches, at 256 bins only
        (1025, 257, "recount", None),
        (2048, 8, "recount", None),
        (2048, 2048, "recount", None),
        (2049, 8, "parallel", None),  # beyond 2048 routes or experts, three launches
        (8, 2049, "parallel", None),
    ],
)
def test_auto_blocked_rule(r, e, path, warps):
    assert plan_mod._auto_blocked(r, e) == (path, warps)


def test_recount_counts_by_atomics_above_128_bins():
    # tl.histogram to 128 bins, atomics in scratch memory beyond (the bins are a power of two >= 16)
    assert [plan_mod._recount_in_memory(512, e) for e in (1, 16, 100, 128, 129, 256, 2048)] == [
        False, False, False, False, True, True, True]
    # but the histogram at 256 bins from 1024 routes (513 routes: 1024 wide)
    assert [plan_mod._recount_in_memory(r, 256) for r in (512, 513, 1024, 2048)] == [True, False, False, False]
    assert [plan_mod._recount_in_memory(r, 257) for r in (512, 1024, 2048)] == [True, True, True]


def test_recount_warps_rule():
    # 8 warps counting by atomics, or by tl.histogram over >= 2^17 routes x bins; else 4
    assert plan_mod._recount_warps(100, 300, True) == 8
    assert [plan_mod._recount_warps(r, e, False) for r, e in ((2048, 64), (1025, 100), (1024, 128), (1024, 64),
                                                              (2048, 8), (512, 256))] == [8, 8, 8, 4, 4, 8]


def test_tile_experts_rule():
    # E_bins / 256 experts per program, at least one, at most 8192 hit tests per program
    got = [plan_mod._tile_experts(r, e) for r, e in ((8, 8), (2048, 512), (8, 513), (8, 2048), (2048, 2048))]
    assert got == [1, 2, 4, 8, 4]


def test_parallel_chunk_rule():
    # chunks of 256 routes up to 256 chunks, wider beyond, never wider than 2048
    assert [plan_mod._auto_chunk(r) for r in (1, 256, 65536, 65537, 262144, 10**7)] == [256, 256, 256, 512, 1024, 2048]


@pytest.mark.parametrize("path", ["single", "recount", "tiled", "parallel"])
def test_forced_paths_equal_the_reference(path):
    # the same ids (512, 520 and 768 routes over 300 experts) through each forced kernel (the
    # tiled one in 8-expert tiles: its auto tile, 2, runs 150 programs, slow in the interpreter)
    for m in (64, 65, 96):
        ids = _ids(m, 8, 300, drop=0.05)
        _check(ids, 300, 16, path=path, e_tile=8 if path == "tiled" else None)


def test_forced_chunks_cannot_overflow_int32():
    # the [chunks, experts] tables are int32-indexed: a forced narrow chunk is checked too
    import types
    fake = types.SimpleNamespace()  # no kernel is reached
    with pytest.raises(ValueError, match="chunk"):
        plan_mod._launch_parallel(fake, (), 1 << 24, 65536, 16, 0, 0, torch.empty(0, dtype=torch.int32),
                                  None, None, None, 256, 2048, {})


def test_forced_path_errors():
    ids = torch.zeros(2049, 1, dtype=torch.int32, device=_dev())
    with pytest.raises(ValueError, match="path: 'single' needs"):
        plan_mod._build(ids, 4, 16, path="single")
    with pytest.raises(ValueError, match="path: expected"):
        plan_mod._build(ids[:4], 4, 16, path="small")
    with pytest.raises(ValueError, match="path: 'recount' needs"):
        plan_mod._build(ids, 4, 16, path="recount")  # 2049 routes
    with pytest.raises(ValueError, match="path: 'recount' needs"):
        plan_mod._build(ids[:4], 2049, 16, path="recount")  # 2049 experts
    with pytest.raises(ValueError, match="path: 'tiled' needs"):
        plan_mod._build(ids, 4, 16, path="tiled")  # 2049 routes
    with pytest.raises(ValueError, match="path: 'tiled' needs"):
        plan_mod._build(ids[:4], 2049, 16, path="tiled")  # 2049 experts


# ---------------------------------------------------------------------------------------------
# the grid of shapes (one-program path and no-permute path, auto-chosen)


@pytest.mark.parametrize("m", [0, 1, 3, 17, 64])  # empty, decode, odd, > one block, prefill-ish
@pytest.mark.parametrize("e", [1, 4, 33, 256])  # single expert, few, odd (not a power of two), DeepSeek-size
@pytest.mark.parametrize("top_k", [1, 2, 4, 8])
def test_grid(m, e, top_k):
    # block_m and id dtype rotate over the grid so that each value meets every m/e/k somewhere
    i = m + 3 * e + top_k
    block_m = (1, 16, 64)[i % 3]
    dtype = (torch.int32, torch.int64)[(i // 3) % 2]
    ids = _ids(m, top_k, e, dtype=dtype)
    _check(ids, e, block_m)
    _check(ids, e, block_m, no_permute=True)


@pytest.mark.parametrize("block_m", [1, 2, 16, 64, 128, 1024])  # every legal kind: 1, small, GEMM tiles, the max
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_block_m_and_dtype(block_m, dtype):
    ids = _ids(37, 4, 33, dtype=dtype)
    _check(ids, 33, block_m)
    _check(ids, 33, block_m, path="recount", chunk=16)
    _check(ids, 33, block_m, path="tiled", e_tile=4)
    _check(ids, 33, block_m, path="parallel", chunk=32, e_tile=16)
    _check(ids, 33, block_m, no_permute=True)


@pytest.mark.parametrize("routes, experts", [(5, 3), (31, 4), (32, 2), (33, 5), (200, 6), (512, 3)])
def test_tiled_one_expert_tiles(routes, experts):
    """Tiles of one expert rank their routes by bit masks of 32 routes (from 32 routes), not a cumsum:
    rows whole and cut, a skewed expert (its routes across many rows), -1 and out-of-window ids."""
    ids = _ids(routes, 1, experts)
    ids[::3] = 0  # one expert takes a third of the routes
    ids[1::7] = -1
    for block_m in (1, 16):
        _check(ids, experts, block_m, path="tiled", e_tile=1)
    _check(ids, experts + 4, 16, path="tiled", e_tile=1, expert_offset=2, num_local_experts=experts - 1)


# ---------------------------------------------------------------------------------------------
# the parallel path at small shapes: small chunks / expert tiles exercise every loop and carry


@pytest.mark.parametrize(
    "m, k, e, bm, chunk, e_tile",
    [
        (1, 1, 1, 16, 16, 16),  # one route, one chunk, one expert
        (17, 4, 33, 16, 16, 16),  # 5 chunks (last partial), 3 expert tiles (last partial)
        (64, 8, 256, 64, 64, 32),  # 8 chunks x 8 expert tiles
        (40, 8, 7, 1, 32, 16),  # block_m 1, more chunks than experts
        (300, 8, 256, 16, 2048, 2048),  # default tiles, 2 chunks
        (129, 2, 4, 16, 16, 16),  # > 16 chunks: several chunk tiles in the scan kernel
    ],
)
def test_parallel_small(m, k, e, bm, chunk, e_tile):
    ids = _ids(m, k, e, drop=0.2)
    _check(ids, e, bm, path="parallel", chunk=chunk, e_tile=e_tile)


@pytest.mark.parametrize(
    "m, k, e, bm, chunk",
    [
        (1, 1, 1, 16, 16),  # one route, one program, one expert
        (17, 4, 33, 16, 16),  # 5 programs (last partial)
        (40, 8, 7, 1, 16),  # block_m 1 (no padding), 20 programs over 7 experts
        (30, 8, 5, 1024, 32),  # the widest block: each segment's padding spans many pad tiles
        (256, 8, 512, 16, 64),  # 2048 routes: the largest plan, 32 programs of the default chunk
        (256, 8, 300, 64, 128),  # 2048 routes x 300 experts (512 bins), chunks of 128
        (64, 8, 1500, 16, 128),  # 512 routes x 1500 experts (2048 bins, the most it takes)
    ],
)
@pytest.mark.parametrize("in_memory", [True, False], ids=["atomics", "histogram"])
def test_recount_small(m, k, e, bm, chunk, in_memory):
    # every route's slot comes from counts its program made itself: chunks split experts'
    # routes across programs, and each expert's padding is written by the program of its last route
    ids = _ids(m, k, e, drop=0.2)
    _check(ids, e, bm, path="recount", chunk=chunk, count_in_memory=in_memory)


def test_parallel_scan_many_chunks(monkeypatch):
    # more chunks than the scan kernel's tile holds (256 on GPU, 2 here): it loops over chunk
    # tiles with a carry
    monkeypatch.setattr(plan_mod, "SCAN_MAX_CHUNKS", 2)
    _check(_ids(77, 2, 19), 19, 4, path="parallel", chunk=16, e_tile=16)


# ---------------------------------------------------------------------------------------------
# routing patterns


@pytest.mark.parametrize("path", ["single", "recount", "tiled", "parallel"])
@pytest.mark.parametrize("expert", [0, 32])
def test_skewed_all_on_one_expert(path, expert):
    # every route on one expert (first or last): one long segment, every other count 0
    ids = torch.full((50, 8), expert, dtype=torch.int32, device=_dev())
    p = _check(ids, 33, 64, path=path, chunk=64, e_tile=16)
    assert int(p.num_blocks.item()) == 7


@pytest.mark.parametrize("path", ["single", "recount", "tiled", "parallel"])
def test_all_dropped(path):
    # every id is -1: no held route, num_blocks 0, buffers all -1
    ids = torch.full((9, 4), -1, dtype=torch.int64, device=_dev())
    p = _check(ids, 8, 16, path=path, chunk=16, e_tile=16)
    assert int(p.num_blocks.item()) == 0 and (p.sorted_routes == -1).all()
    _check(ids, 8, 16, no_permute=True)


@pytest.mark.parametrize("path", ["single", "recount", "tiled", "parallel", "no_permute"])
@pytest.mark.parametrize(
    "e, offset, local",
    [
        (256, 64, 64),  # a middle slice (EP rank 1 of 4)
        (256, 0, 32),  # the first slice: ids above the window are not held
        (256, 255, 1),  # the last expert alone
        (33, 5, None),  # num_local defaults to E - offset
    ],
)
def test_expert_parallel_window(path, e, offset, local):
    ids = _ids(23, 8, e, drop=0.1)
    kw = dict(expert_offset=offset, num_local_experts=local)
    if path == "no_permute":
        p = _check(ids, e, 16, no_permute=True, **kw)
    else:
        p = _check(ids, e, 16, path=path, chunk=32, e_tile=16, **kw)
    assert p.expert_counts.numel() == (e - offset if local is None else local)


@pytest.mark.parametrize("path", ["single", "recount", "tiled", "parallel", "no_permute"])
@pytest.mark.parametrize("dtype,offset", [
    (torch.int32, 2**31 - 5),  # the window [offset, offset + 8) straddles 2^31
    (torch.int64, 2**31 - 5),
    (torch.int64, 2**31 + 5),  # wholly above 2^31
    (torch.int64, 2**40),
])
def test_window_past_int32(path, dtype, offset):
    # the kernels compare id - offset < E_local, never id < offset + E_local (which wraps in int32)
    hi = 2**31 if dtype == torch.int32 else offset + 12
    ids = _ids(20, 4, 0, dtype=dtype, lo=offset - 3, hi=hi)
    kw = dict(expert_offset=offset, num_local_experts=8)
    if path == "no_permute":
        p = _check(ids, offset + 12, 16, no_permute=True, **kw)
    else:
        p = _check(ids, offset + 12, 16, path=path, chunk=16, e_tile=16, **kw)
    flat = ids.to(torch.int64)
    assert int(p.expert_counts.sum()) == int(((flat >= offset) & (flat < offset + 8)).sum()) > 0


@pytest.mark.parametrize("path", ["single", "recount", "tiled", "parallel", "no_permute"])
def test_out_of_range_ids_are_masked(path):
    # ids outside [-1, E) break the contract but must only be "not held", never an illegal access
    ids = _ids(20, 4, 16, dtype=torch.int64)
    ids[0, 0], ids[1, 1], ids[2, 2], ids[3, 3] = 2**40, -(2**40), 16, -5
    ids[4, 0] = 2**32 + 3  # wraps to 3 if truncated to int32 before the range check
    kw = dict(no_permute=True) if path == "no_permute" else dict(path=path, chunk=16, e_tile=16)
    p = _check(ids, 16, 16, **kw)
    assert int(p.expert_counts.sum()) == int(((ids >= 0) & (ids < 16)).sum())


@pytest.mark.parametrize("path", ["single", "recount", "tiled", "parallel", "no_permute"])
def test_non_contiguous_ids(path):
    # ids read through their strides: a transposed view and a column-strided slice
    base = _ids(8, 12, 40)
    kw = dict(no_permute=True) if path == "no_permute" else dict(path=path, chunk=16, e_tile=16)
    _check(base.t(), 40, 16, **kw)
    _check(base[:, ::3], 40, 16, **kw)


# ---------------------------------------------------------------------------------------------
# the single/parallel boundary (auto-chosen path, counted launches)


class _LaunchCounter:
    def __init__(self, monkeypatch):
        from fusedmoe import _plan_kernels as K

        self.names = []
        for name in dir(K):
            if name.startswith("_plan_") and name.endswith("_kernel"):
                monkeypatch.setattr(K, name, self._wrap(name, getattr(K, name)))

    def _wrap(self, name, kernel):
        counter = self

        class Wrapped:
            def __getitem__(self, grid):
                counter.names.append(name)
                return kernel[grid]

        return Wrapped()


@pytest.mark.parametrize(
    "m, k, e, path, launches",
    [
        (8, 8, 256, "auto", 1),  # R = 64: one program
        (8, 8, 512, "auto", 1),  # R = 64 x 512 experts: the recount launch, counting by atomics
        (64, 8, 256, "auto", 1),  # R = 512 x 256 experts: the recount launch
        (129, 8, 256, "auto", 2),  # R = 1032 x 256 experts: tiled
        (256, 8, 64, "single", 1),  # R = 2048: the one program's largest plan (forced)
        (256, 8, 64, "recount", 1),  # and the recount launch's (forced)
        (2049, 1, 64, "auto", 3),  # R = 2049: parallel
        (2, 8, 2048, "auto", 1),  # E = 2048: the recount launch
        (2, 8, 2048, "tiled", 2),  # (forced: tiled, 8 experts per program)
        (2, 8, 2049, "auto", 3),  # E = 2049: parallel
    ],
)
def test_single_parallel_boundary(monkeypatch, m, k, e, path, launches):
    ids = _ids(m, k, e)
    ids[0, 0] = e - 1  # the last expert (top histogram bin) is always present
    counter = _LaunchCounter(monkeypatch)
    _check(ids, e, 16, path=path)
    assert len(counter.names) == launches
    if path == "auto":
        assert launches == plan_launches(m * k, e)


def test_no_permute_is_one_launch(monkeypatch):
    counter = _LaunchCounter(monkeypatch)
    _check(_ids(3, 8, 256), 256, 16, no_permute=True)
    assert counter.names == ["_plan_no_permute_kernel"]


def test_empty_launches_nothing(monkeypatch):
    # M = 0: no kernel, zero counts, empty buffers
    counter = _LaunchCounter(monkeypatch)
    p = _check(_ids(0, 8, 4), 4, 16)
    assert counter.names == [] and p.sorted_routes.numel() == 0 and p.expert_counts.tolist() == [0] * 4


# ---------------------------------------------------------------------------------------------
# large parallel cases


def test_parallel_large():
    # 20k routes over 1024 experts with the default tiles: 79 chunks of 256, real sizes
    _check(_ids(2500, 8, 1024), 1024, 16)


@slow
def test_parallel_256k():
    # 256k routes, 1024 experts (prefill of 32k tokens, top-8): 256 chunks of 1024 (~30 s interpreted)
    _check(_ids(32768, 8, 1024), 1024, 64)


# ---------------------------------------------------------------------------------------------
# buffers are written in full: poisoned allocations must not leak into the result


@pytest.mark.parametrize("path", ["single", "recount", "tiled", "parallel", "no_permute"])
def test_poisoned_buffers(monkeypatch, path):
    real_empty = plan_mod._empty

    def poisoned(n, device):
        return real_empty(n, device).fill_(0x5A5A5A5A)

    monkeypatch.setattr(plan_mod, "_empty", poisoned)
    ids = _ids(13, 4, 9, drop=0.3)
    kw = dict(no_permute=True) if path == "no_permute" else dict(path=path, chunk=16, e_tile=16)
    p = _check(ids, 9, 16, **kw)
    assert not (p.sorted_routes == 0x5A5A5A5A).any() and not (p.block_expert == 0x5A5A5A5A).any()
    if path != "no_permute":
        nb = int(p.num_blocks.item())
        assert (p.sorted_routes[nb * 16 :] == -1).all() and (p.block_expert[nb:] == -1).all()


# ---------------------------------------------------------------------------------------------
# plain CPU tensors without the interpreter take the torch reference


def test_cpu_fallback_without_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    calls = []
    real = plan_mod.reference_plan
    monkeypatch.setattr(plan_mod, "reference_plan", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    ids = _ids(5, 2, 8).cpu()
    _assert_equal(build_plan(ids, 8, 16), real(ids, 8, 16))
    assert calls == [1]


# ---------------------------------------------------------------------------------------------
# argument checks: the exception names the argument


def _bad_cases():
    ids = torch.zeros(4, 2, dtype=torch.int32)
    return [
        # (args, kwargs, exception, argument named)
        ((ids.float(), 8, 16), {}, TypeError, "topk_ids"),  # float ids
        ((ids.to(torch.int16), 8, 16), {}, TypeError, "topk_ids"),  # int16 ids
        ((ids.reshape(-1), 8, 16), {}, ValueError, "topk_ids"),  # 1-D ids
        ((ids.reshape(2, 2, 2), 8, 16), {}, ValueError, "topk_ids"),  # 3-D ids
        (([[0, 1]], 8, 16), {}, TypeError, "topk_ids"),  # not a tensor
        ((ids, 0, 16), {}, ValueError, "num_experts"),  # no experts
        ((ids, 8.0, 16), {}, TypeError, "num_experts"),  # float count
        ((ids, 8, 0), {}, ValueError, "block_m"),  # zero
        ((ids, 8, 24), {}, ValueError, "block_m"),  # not a power of two
        ((ids, 8, 2048), {}, ValueError, "block_m"),  # above the maximum
        ((ids, 8, True), {}, TypeError, "block_m"),  # bool is not an int here
        ((ids, 8, 16), {"expert_offset": -1}, ValueError, "expert_offset"),  # negative
        ((ids, 8, 16), {"expert_offset": 8}, ValueError, "expert_offset"),  # past the last expert
        ((ids, 8, 16), {"expert_offset": 4, "num_local_experts": 5}, ValueError, "num_local_experts"),  # window overflows
        ((ids, 8, 16), {"num_local_experts": 0}, ValueError, "num_local_experts"),  # empty window
        ((ids, 8, 16), {"no_permute": 1}, TypeError, "no_permute"),  # not a bool
    ]


@pytest.mark.parametrize("fn", [build_plan, reference_plan])
@pytest.mark.parametrize("case", range(len(_bad_cases())))
def test_bad_arguments(fn, case):
    args, kwargs, exc, name = _bad_cases()[case]
    with pytest.raises(exc, match=name):
        fn(*args, **kwargs)


def test_bad_size_arguments():
    with pytest.raises(ValueError, match="num_routes"):
        max_padded_routes(-1, 4, 16)
    with pytest.raises(ValueError, match="block_m"):
        max_blocks(4, 4, 3)
    with pytest.raises(ValueError, match="num_local_experts"):
        max_padded_routes(4, 0, 16)


# ---------------------------------------------------------------------------------------------
# property test: random shapes, windows, drop rates, paths


@settings(max_examples=50, deadline=None)
@given(
    m=st.integers(0, 40),
    k=st.integers(1, 8),
    e=st.integers(1, 300),
    log_bm=st.integers(0, 7),
    offset_frac=st.floats(0, 1, exclude_max=True),
    local_frac=st.none() | st.floats(0, 1),
    drop=st.sampled_from([0.0, 0.1, 0.5, 1.0]),
    int64=st.booleans(),
    mode=st.sampled_from(["single", "recount", "tiled", "parallel", "no_permute"]),
    log_chunk=st.integers(4, 6),
    seed=st.integers(0, 2**31 - 1),
)
def test_property(m, k, e, log_bm, offset_frac, local_frac, drop, int64, mode, log_chunk, seed):
    torch.manual_seed(seed)
    offset = int(offset_frac * e)
    local = None if local_frac is None else max(1, round(local_frac * (e - offset)))
    ids = _ids(m, k, e, dtype=torch.int64 if int64 else torch.int32, drop=drop)
    kw = dict(expert_offset=offset, num_local_experts=local)
    if mode == "no_permute":
        p = _check(ids, e, 2**log_bm, no_permute=True, **kw)
    else:
        p = _check(ids, e, 2**log_bm, path=mode, chunk=2**log_chunk, e_tile=16, **kw)
    _check_invariants(p, ids, offset, e - offset if local is None else local)


# ---------------------------------------------------------------------------------------------
# GPU only: capture in a CUDA graph, replay with new ids


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("m, k, e, no_permute", [(64, 8, 256, False), (4096, 8, 256, False), (2, 8, 256, True)])
def test_cuda_graph_replay(m, k, e, no_permute):
    # no host sync inside: capture succeeds, and replays with changed ids give fresh plans
    ids = _ids(m, k, e)
    build_plan(ids, e, 16, no_permute=no_permute)  # compile outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        p = build_plan(ids, e, 16, no_permute=no_permute)
    for trial in range(3):
        new = _ids(m, k, e, drop=0.2) if trial < 2 else torch.zeros_like(ids)  # the last one: skewed
        ids.copy_(new)
        graph.replay()
        torch.cuda.synchronize()
        _assert_equal(p, reference_plan(ids, e, 16, no_permute=no_permute))
