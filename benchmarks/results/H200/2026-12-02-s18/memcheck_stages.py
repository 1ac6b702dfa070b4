"""The pipelined route-direct GEMV loops under compute-sanitizer memcheck (eighteenth session):
ragged shapes (H, I off 16-byte units, partial K steps), -1 ids, an expert window, split K and
several down tiles, each format, with and without PDL.  Run:
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck --error-exitcode 9 python THIS"""
import torch

from fusedmoe import policy
from fusedmoe.api import fused_moe
from fusedmoe.reference import moe_reference, rel_l2
from fusedmoe.weights import ExpertWeights

dev = torch.device("cuda")
torch.manual_seed(0)
for e, k, h, i, m in ((5, 3, 200, 136, 7), (33, 4, 72, 40, 3), (6, 2, 300, 100, 2)):
    for fmt in ("bf16", "fp8_tensor", "fp8_block", "w4a8"):
        w = ExpertWeights.from_dense(torch.randn(e, 2 * i, h, device=dev) * 0.05, torch.randn(e, h, i, device=dev) * 0.05,
                                     fmt)
        x = torch.randn(m, h, device=dev).bfloat16()
        ids = torch.randint(-1, e + 2, (m, k), device=dev, dtype=torch.int32)
        tw = torch.rand(m, k, device=dev)
        ref = moe_reference(x, w, tw, ids, expert_offset=2, quantize_activations=False)
        for stages in (2, 3, 4):
            for pdl in (False, True):
                cfg = policy.RouteDirectConfig(policy.Tile(8, 128, 4, stages, split_k=2), policy.Tile(16, 128, 4, stages),
                                               pdl=pdl, down_tiles=2)
                got = fused_moe(x, w, tw, ids, path="route_direct", config=cfg, expert_offset=2, check_ids=False,
                                num_experts=e + 2)
                err = rel_l2(got, ref)
                assert err < 1e-2, (e, k, h, i, m, fmt, stages, pdl, err)
        print(f"E{e} k{k} H{h} I{i} M{m} {fmt}: ok", flush=True)
print("memcheck stages cases done")
