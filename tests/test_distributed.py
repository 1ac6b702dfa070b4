"""Expert parallelism over torch.distributed: two ranks (gloo) equal one rank holding all experts.

Without a GPU the ranks run the kernels in Triton's interpreter on CPU tensors; with one, both
ranks share it (gloo all-reduces CUDA tensors too)."""

import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

ROOT = Path(__file__).resolve().parents[1]


def _rank_main(rank: int, world: int, init_file: str, result_file: str) -> None:
    gpu = torch.cuda.is_available()
    if not gpu:
        os.environ.setdefault("TRITON_INTERPRET", "1")
    sys.path.insert(0, str(ROOT))
    from fusedmoe.distributed import expert_parallel_moe
    from fusedmoe.weights import ExpertWeights

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    torch.manual_seed(0)  # the same full layer and routing on every rank
    e, k, h, i, m = 6, 3, 64, 40, 5
    full = ExpertWeights.from_dense(torch.randn(e, 2 * i, h) * 0.05, torch.randn(e, h, i) * 0.05, "fp8_block")
    x = torch.randn(m, h).half()
    ids = torch.randint(-1, e, (m, k), dtype=torch.int32)
    tw = torch.rand(m, k)
    shared = torch.randn(m, h).half()
    dev = "cuda" if gpu else "cpu"
    full, x, ids, tw, shared = full.to(dev), x.to(dev), ids.to(dev), tw.to(dev), shared.to(dev)
    local = full.local_window(rank * e // world, e // world)
    out = expert_parallel_moe(x, local, tw, ids, num_experts=e, shared_output=shared, path="route_direct")
    # a row-padded out view: the result lands in the view, the padding columns keep their value
    padded = torch.full((m, h + 8), 7.0, dtype=x.dtype, device=dev)
    into = expert_parallel_moe(x, local, tw, ids, num_experts=e, shared_output=shared, path="route_direct",
                               out=padded[:, :h])
    assert into.data_ptr() == padded.data_ptr() and torch.equal(into, out)
    assert bool((padded[:, h:] == 7.0).all())
    try:  # the expert window is the rank's: refused on every rank alike, before any collective
        expert_parallel_moe(x, local, tw, ids, num_experts=e, expert_offset=0)
        raise AssertionError("expert_offset was accepted")
    except ValueError as err:
        assert str(err).startswith("expert_offset: set by expert_parallel_moe")
    if rank == 0:
        from fusedmoe.api import fused_moe

        single = fused_moe(x, full, tw, ids, shared_output=shared, path="route_direct")
        torch.save((out.cpu(), single.cpu()), result_file)
    dist.destroy_process_group()


def test_two_ranks_equal_one(tmp_path):
    # Each rank computes its 3 experts; the all-reduced sum equals the single-rank layer (also
    # into a non-contiguous out, whose padding the all-reduce must not touch).
    result = tmp_path / "result.pt"
    mp.spawn(_rank_main, args=(2, str(tmp_path / "init"), str(result)), nprocs=2, join=True)
    out, single = torch.load(result)
    torch.testing.assert_close(out.float(), single.float(), rtol=2e-3, atol=2e-3)
