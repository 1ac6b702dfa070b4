"""Every route-direct table entry of this device that caps registers, run at its own shape and M
with the table's config (auto), with shared_output, against the float64 reference (w8a16 / w16a16:
activations not quantised): rel-L2 and cosine.  Meant to run under compute-sanitizer memcheck.

    python benchmarks/results/H200/2026-12-05-s30/capped_entries_check.py
"""

import json
import sys

import torch

from fusedmoe import ExpertWeights, fused_moe, policy
from fusedmoe.reference import cosine, moe_reference, rel_l2


def main() -> int:
    dev = torch.device("cuda")
    name = policy.device_dir_name(torch.cuda.get_device_name())
    entries = json.loads((policy.CONFIG_DIR / name / "route_direct.json").read_text())["entries"]
    capped = [e for e in entries if e["config"]["gate_up"].get("max_registers") or e["config"]["down"].get("max_registers")]
    gen = torch.Generator(device=dev).manual_seed(30)
    worst = 0.0
    for e in capped:
        E, k, H, I, fmt, m = e["num_experts"], e["top_k"], e["hidden"], e["inter"], e["format"], e["tokens"]
        w13 = torch.randn(E, 2 * I, H, device=dev, generator=gen) * 0.02
        w2 = torch.randn(E, H, I, device=dev, generator=gen) * 0.02
        w = ExpertWeights.from_dense(w13, w2, fmt)
        del w13, w2
        x = torch.randn(m, H, device=dev, generator=gen).bfloat16()
        logits = torch.randn(m, E, device=dev, generator=gen)
        tw, ids = torch.topk(logits.softmax(-1), k, dim=-1)
        tw = tw / tw.sum(-1, keepdim=True)
        ids = ids.to(torch.int32)
        shared = torch.randn(m, H, device=dev, generator=gen).bfloat16()
        out = torch.full_like(x, float("nan"))
        got = fused_moe(x, w, tw, ids, shared_output=shared, out=out, path="route_direct")
        torch.cuda.synchronize()
        ref = moe_reference(x, w, tw, ids, shared_output=shared, quantize_activations=False)
        err, cos = rel_l2(got, ref), cosine(got, ref)
        worst = max(worst, err)
        caps = (e["config"]["gate_up"].get("max_registers", 0), e["config"]["down"].get("max_registers", 0))
        print(f"E={E} k={k} H={H} I={I} {fmt} M={m} caps {caps}: rel-L2 {err:.2e} cosine {cos:.6f}", flush=True)
        del w
    print(f"{len(capped)} capped entries, worst rel-L2 {worst:.2e}")
    return 0 if worst <= 5e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
