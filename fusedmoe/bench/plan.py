"""Route-plan time against the issue-4 target (<= 3 us for R <= 2048, E <= 512).

    python -m fusedmoe.bench.plan [--routes 8,64,512,2048] [--experts 8,64,256,512] [--top-k 8]
                                  [--block-m 16] [--path auto|single|recount|tiled|parallel] [--chunk N]
                                  [--e-tile N] [--warps N] [--histogram | --atomics] [--out DIR]

For each (routes R, experts E): top-k ids of R / k tokens drawn uniformly (distinct per
token), the plan checked equal to ``plan.reference_plan``, then timed in a CUDA graph (50
calls captured, median of 20 replays; the ids stay in L2, as after routing).  Writes
plan.md / plan.json with --out.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from ..plan import _auto_blocked, _auto_chunk, _build, _recount_chunk, reference_plan
from .harness import graph_us

TARGET_US = 3.0


def _ids(routes: int, experts: int, top_k: int) -> torch.Tensor:
    k = min(top_k, experts)
    m = max(1, routes // k)
    return torch.rand(m, experts, device="cuda").argsort(dim=1)[:, :k].to(torch.int32).contiguous()


def run(routes: list[int], experts: list[int], top_k: int, block_m: int, path: str = "auto",
        chunk: int | None = None, warps: int | None = None, e_tile: int | None = None,
        count_in_memory: bool | None = None) -> list[dict]:
    rows = []
    for e in experts:
        for r in routes:
            ids = _ids(r, e, top_k)
            build = lambda: _build(ids, e, block_m, path=path, chunk=chunk, warps=warps, e_tile=e_tile,  # noqa: E731
                                   count_in_memory=count_in_memory)
            got, ref = build(), reference_plan(ids, e, block_m)
            n = int(ref.num_blocks.item()) * block_m
            equal = (torch.equal(got.num_blocks, ref.num_blocks) and torch.equal(got.expert_counts, ref.expert_counts)
                     and torch.equal(got.sorted_routes[:n], ref.sorted_routes[:n])
                     and torch.equal(got.block_expert[: n // block_m], ref.block_expert[: n // block_m]))
            us = graph_us(build)
            kernel = _auto_blocked(ids.numel(), e)[0] if path == "auto" else path
            launches = {"parallel": 3, "tiled": 2}.get(kernel, 1)  # as plan_launches counts them
            rows.append(dict(routes=ids.numel(), experts=e, block_m=block_m, path=path, kernel=kernel,
                             chunk=chunk or (_recount_chunk() if kernel == "recount" else _auto_chunk(ids.numel())),
                             e_tile=e_tile, warps=warps, count_in_memory=count_in_memory, launches=launches, us=us,
                             equal=equal))
            print(f"R={ids.numel():6d} E={e:5d}: {us:6.2f} us, {kernel}, {rows[-1]['launches']} launch(es), "
                  f"equal to the reference: {equal}", flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--routes", default="8,64,512,2048")
    ap.add_argument("--experts", default="8,64,256,512")
    ap.add_argument("--top-k", type=int, default=8)
    ap.add_argument("--block-m", type=int, default=16)
    ap.add_argument("--path", default="auto", choices=("auto", "single", "recount", "tiled", "parallel"))
    ap.add_argument("--chunk", type=int, help="routes per program of the recount and parallel paths "
                    "(default: plan._recount_chunk, plan._auto_chunk)")
    ap.add_argument("--e-tile", type=int, help="experts per program of the tiled and parallel paths (default: their rules in plan)")
    ap.add_argument("--warps", type=int, help="warps per program of the single, recount and tiled paths (default: their rules in plan)")
    count = ap.add_mutually_exclusive_group()
    count.add_argument("--histogram", action="store_true", help="the recount path counts with tl.histogram, "
                       "not atomics in scratch memory")
    count.add_argument("--atomics", action="store_true", help="the recount path counts by atomics in scratch "
                       "memory, not tl.histogram")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("plan bench: needs a CUDA GPU")
        return 2
    rows = run([int(v) for v in args.routes.split(",")], [int(v) for v in args.experts.split(",")],
               args.top_k, args.block_m, args.path, args.chunk, args.warps, args.e_tile,
               False if args.histogram else True if args.atomics else None)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        meta = dict(device=torch.cuda.get_device_name(), torch=torch.__version__,
                    triton=__import__("triton").__version__, target_us=TARGET_US)
        (args.out / "plan.json").write_text(json.dumps(dict(meta, rows=rows), indent=1))
        md = [f"Route plan, graph-timed ({meta['device']}, torch {meta['torch']}, Triton {meta['triton']}); "
              f"target <= {TARGET_US} us for R <= 2048, E <= 512", "",
              f"Path {args.path}, chunk {rows[0]['chunk'] if rows else '-'}, e_tile {args.e_tile or 'default'}, "
              f"warps {args.warps or 'default'}, recount counts by "
              f"{'tl.histogram' if args.histogram else 'atomics' if args.atomics else 'its rule (plan._recount_in_memory)'}", "",
              "| routes | experts | kernel | launches | us | equal to reference |", "|---|---|---|---|---|---|"]
        md += [f"| {r['routes']} | {r['experts']} | {r['kernel']} | {r['launches']} | {r['us']:.2f} | {r['equal']} |"
               for r in rows]
        (args.out / "plan.md").write_text("\n".join(md) + "\n")
    return 0 if all(r["equal"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
