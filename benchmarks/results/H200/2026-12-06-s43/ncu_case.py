"""Throw-away (sessions 41, 43): three Mixtral TP2 fp8_tensor layer calls at M tokens, by the served
config ('served') or the warp-specialised Gluon set ('ws', policy.gluon_config_like), for ncu.

    python ncu_case.py served|ws M
"""
import sys

import torch

from fusedmoe import fused_moe, policy
from fusedmoe.bench import harness
from fusedmoe.shapes import get_shape
from fusedmoe.weights import ExpertWeights

which, m = sys.argv[1], int(sys.argv[2])
dev = torch.device("cuda")
shape = get_shape("mixtral_8x7b_tp2")
w13, w2 = harness.random_weights(shape, dev)
w = ExpertWeights.from_dense(w13, w2, "fp8_tensor")
del w13, w2
facts = (m, shape.top_k, shape.num_local_experts, shape.hidden_size, shape.intermediate_size, "fp8_tensor")
served = policy.select_config("grouped", *facts, "NVIDIA H200", 132)
cfg = served if which == "served" else policy.gluon_config_like(served, 128)
gen = torch.Generator(device=dev).manual_seed(m)
tw, ids = harness.random_routing(shape, m, gen, "softmax")
x = torch.randn(m, shape.hidden_size, device=dev, generator=gen).to(torch.bfloat16)
for _ in range(3):
    fused_moe(x, w, tw, ids, path="grouped", config=cfg, check_ids=False, num_experts=shape.num_experts)
torch.cuda.synchronize()
print("done", which, m, cfg)
