"""Throw-away (25th session): the recount plan counting by atomics, under compute-sanitizer memcheck:
wide shapes, -1 and out-of-window ids, expert windows, strided ids, each checked against the reference."""
import torch

from fusedmoe.plan import _build, reference_plan

gen = torch.Generator(device="cuda").manual_seed(5)
bad = 0
for r_tokens, k, e, off, local in ((256, 8, 2048, 0, 2048), (125, 8, 300, 7, 250), (37, 1, 513, 0, 513),
                                   (256, 8, 129, 0, 129), (300, 5, 2048, 1000, 1048)):
    ids = torch.randint(-3, e + 3, (r_tokens, k), device="cuda", generator=gen, dtype=torch.int32)
    for block_m in (1, 16, 128):
        for t in (ids, ids.t()):
            got = _build(t, e + 3, block_m, path="recount", count_in_memory=True, expert_offset=off,
                         num_local_experts=local)
            want = reference_plan(t, e + 3, block_m, expert_offset=off, num_local_experts=local)
            ok = all(torch.equal(getattr(got, f), getattr(want, f))
                     for f in ("sorted_routes", "block_expert", "num_blocks", "expert_counts"))
            bad += not ok
            print(f"R={t.numel()} E={e} off={off} block_m={block_m} strided={t is not ids}: equal {ok}", flush=True)
torch.cuda.synchronize()
print("mismatches", bad)
raise SystemExit(1 if bad else 0)
