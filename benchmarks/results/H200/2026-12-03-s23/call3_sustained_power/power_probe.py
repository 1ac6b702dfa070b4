"""Throw-away (session 23): Mixtral TP2 M=512 layer replayed back to back for ~4 s per format;
us per call per second of the loop, to set beside nvidia-smi's clock/power log."""
import sys, time, torch
from fusedmoe import fused_moe
from fusedmoe.bench import harness
from fusedmoe.shapes import get_shape
from fusedmoe.weights import ExpertWeights
dev = torch.device("cuda")
shape = get_shape("mixtral_8x7b_tp2")
m = 512
w13, w2 = harness.random_weights(shape, dev)
for fmt in sys.argv[1].split(","):
    w0 = ExpertWeights.from_dense(w13, w2, fmt)
    copies = [w0, w0.clone()]
    gen = torch.Generator(device=dev).manual_seed(1)
    routings = [harness.random_routing(shape, m, gen, "softmax") for _ in copies]
    x = torch.randn(m, shape.hidden_size, device=dev, generator=gen).to(torch.bfloat16)
    out = torch.empty_like(x)
    calls = [lambda w=w, r=r: fused_moe(x, w, r[0], r[1], out=out, check_ids=False, num_experts=shape.num_experts) for w, r in zip(copies, routings)]
    for c in calls: c()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(10):
            for c in calls: c()
    g.replay(); torch.cuda.synchronize()
    time.sleep(1.0)  # idle: clocks and power settle
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    print(f"{fmt} start {time.strftime('%H:%M:%S')}", flush=True)
    for sec in range(4):
        t_end = time.time() + 1.0; n = 0
        s.record()
        while time.time() < t_end:
            g.replay(); n += 20
            if n % 400 == 0: torch.cuda.synchronize()
        e.record(); torch.cuda.synchronize()
        print(f"{fmt} second {sec}: {s.elapsed_time(e) * 1000 / n:.1f} us per call over {n} calls", flush=True)
    del copies, w0, g
    torch.cuda.empty_cache()
    time.sleep(1.0)
