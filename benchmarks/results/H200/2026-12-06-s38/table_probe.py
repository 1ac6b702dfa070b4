"""Where the table plan path's time goes (thirty-eighth session probe, throw-away).

    python benchmarks/results/H200/2026-12-06-s38/table_probe.py

For a few (routes, experts): graph-timed (as fusedmoe.bench.plan) launch 1 alone
(_plan_chunk_table_kernel), launch 2 alone (the recount kernel summing a filled table), both with
plain launches and both as the library launches them (PDL), beside auto.
"""

import torch

from fusedmoe import _plan_kernels as K
from fusedmoe._launch import launch
from fusedmoe._pdl import plain_launches, pdl_launch
from fusedmoe.bench.harness import graph_us
from fusedmoe.bench.plan import _ids
from fusedmoe.plan import _build, _width, max_padded_routes, next_pow2

for routes, experts in ((256, 64), (256, 1024), (2048, 64), (2048, 512)):
    ids = _ids(routes, experts, 8)
    r = ids.numel()
    flat = ids.view(-1, 1)
    common = (flat, flat.stride(0), flat.stride(1), 1, r, 0, experts)
    grid = -(-r // 32)
    e_bins = _width(experts)
    table = torch.empty(grid * e_bins, dtype=torch.int8, device="cuda")
    padded = max_padded_routes(r, experts, 16)
    sorted_routes = torch.empty(padded, dtype=torch.int32, device="cuda")
    block_expert = torch.empty(padded // 16, dtype=torch.int32, device="cuda")
    nb = torch.empty(1, dtype=torch.int32, device="cuda")
    counts = torch.empty(experts, dtype=torch.int32, device="cuda")

    def one(pdl=None):
        launch(K._plan_chunk_table_kernel, (grid,), *common, table, CHUNK=32, E_BINS=e_bins, num_warps=1,
               **(pdl or {}))

    def two(pdl=None, warps=8):
        launch(K._plan_recount_kernel, (grid,), *common, sorted_routes, padded, block_expert, padded // 16, nb,
               counts, table, BLOCK_M=16, R_PAD=_width(r), CHUNK=32, E_BINS=e_bins, PAD_TILE=16, FILL=1024,
               COUNT_FROM_TABLE=True, CHUNKS=next_pow2(grid), num_warps=warps, **(pdl or {}))

    pdl = pdl_launch(ids.device)
    res = dict(launch1=graph_us(one), launch2=graph_us(two), launch2_4warps=graph_us(lambda: two(warps=4)),
               both_plain=graph_us(lambda: (one(), two())), both_pdl=graph_us(lambda: (one(pdl), two(pdl))),
               table_path=graph_us(lambda: _build(ids, experts, 16, path="table")),
               auto=graph_us(lambda: _build(ids, experts, 16)))
    with plain_launches():
        res["table_path_plain"] = graph_us(lambda: _build(ids, experts, 16, path="table"))
    print(f"R={r} E={experts}: " + ", ".join(f"{k} {v:.2f}" for k, v in res.items()), flush=True)
