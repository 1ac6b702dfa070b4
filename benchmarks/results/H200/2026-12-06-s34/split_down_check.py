"""The route-direct down split over K (down.split_k) at real shapes on the GPU: each case's
table config with the split set, eager against the float64 reference (rel-L2), then captured
in a CUDA graph and replayed 3 times on fresh inputs (x, routing, shared_output), each replay
bitwise equal to an eager call (the arrival counts live in the call's scratch, zeroed by
gate/up, so a replay needs no reset).  Prints one line a case; exits 1 on any failure.

    PYTHONPATH=$PWD python benchmarks/results/H200/2026-12-06-s34/split_down_check.py
"""

import dataclasses
import sys

import torch

from fusedmoe import policy
from fusedmoe._runtime import device_name, num_sms
from fusedmoe.api import fused_moe
from fusedmoe.check import DEV, dense_weights, layer_inputs
from fusedmoe.reference import moe_reference, rel_l2
from fusedmoe.shapes import get_shape
from fusedmoe.weights import ExpertWeights

CASES = [("qwen3_30b_a3b", 1, "bf16", 2), ("qwen3_30b_a3b", 1, "fp8_tensor", 3), ("mixtral_8x7b_tp2", 1, "fp8_block", 4),
         ("mixtral_8x7b_tp2", 4, "fp8_tensor", 8), ("gpt_oss_120b_tp4", 3, "fp8_tensor", 2)]


def main() -> int:
    gen = torch.Generator(device=DEV).manual_seed(4)
    ok = True
    for name, m, fmt, split in CASES:
        shape = get_shape(name)
        w13, w2 = dense_weights(shape.num_local_experts, shape.hidden_size, shape.intermediate_size, gen)
        weights = ExpertWeights.from_dense(w13, w2, fmt)
        del w13, w2
        base = policy.select_config("route_direct", m, shape.top_k, shape.num_local_experts, shape.hidden_size,
                                    shape.intermediate_size, fmt, device_name(DEV), num_sms(DEV))
        cfg = dataclasses.replace(base, down_tiles=1, down=dataclasses.replace(base.down, split_k=split, swap_ab=False,
                                                                                   num_stages=1, block_n=8))
        assert policy.legal("route_direct", cfg, fmt), cfg
        x, tw, ids = layer_inputs(shape, m, gen)
        shared = torch.randn_like(x)
        out = torch.empty_like(x)

        def run():
            return fused_moe(x, weights, tw, ids, path="route_direct", out=out, shared_output=shared, config=cfg)

        run()
        err = rel_l2(out, moe_reference(x, weights, tw, ids, shared_output=shared, quantize_activations=False))
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            run()
        equal = True
        for _ in range(3):
            nx, ntw, nids = layer_inputs(shape, m, gen)
            x.copy_(nx), tw.copy_(ntw), ids.copy_(nids), shared.normal_(generator=gen)
            out.fill_(float("nan"))
            g.replay()
            torch.cuda.synchronize()
            eager = fused_moe(x, weights, tw, ids, path="route_direct", shared_output=shared, config=cfg)
            equal &= torch.equal(out, eager)
        good = equal and err < 5e-3
        ok &= good
        print(f"{name} M={m} {fmt} split {split}: rel-L2 {err:.2e}, graph replays "
              f"{'bitwise equal' if equal else 'DIFFERENT'}: {'ok' if good else 'FAIL'}", flush=True)
        del g
        torch.cuda.empty_cache()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
