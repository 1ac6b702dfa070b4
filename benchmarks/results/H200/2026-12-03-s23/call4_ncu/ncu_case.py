"""Throw-away (session 23): one Mixtral TP2 layer call at (format, M), three times, for ncu."""
import sys, torch
from fusedmoe import fused_moe
from fusedmoe.bench import harness
from fusedmoe.shapes import get_shape
from fusedmoe.weights import ExpertWeights
fmt, m = sys.argv[1], int(sys.argv[2])
dev = torch.device("cuda")
shape = get_shape("mixtral_8x7b_tp2")
w13, w2 = harness.random_weights(shape, dev)
w = ExpertWeights.from_dense(w13, w2, fmt)
del w13, w2
gen = torch.Generator(device=dev).manual_seed(m)
tw, ids = harness.random_routing(shape, m, gen, "softmax")
x = torch.randn(m, shape.hidden_size, device=dev, generator=gen).to(torch.bfloat16)
for _ in range(3):
    fused_moe(x, w, tw, ids, check_ids=False, num_experts=shape.num_experts)
torch.cuda.synchronize()
print("done", fmt, m)
