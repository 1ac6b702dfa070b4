"""Thirty-sixth session: summary.md / summary.json from the calls' files (run here, no GPU).

    python benchmarks/results/H200/2026-12-06-s36/summarize.py
"""

import collections
import json
import math
from pathlib import Path

HERE = Path(__file__).parent


def geomean(v):
    return math.exp(sum(map(math.log, v)) / len(v))


def barrier_rows():
    """us a barrier costs (graph time of the kernel with ROUNDS barriers minus without, per round)."""
    rows = []
    for call in (1, 2):
        for line in (HERE / f"call{call}" / "barrier_probe.jsonl").read_text().splitlines():
            r = json.loads(line)
            if "too_big" in r:
                rows.append(dict(call=call, too_big=r["too_big"], error=r.get("error", "")))
                continue
            per = {k[:-3]: round((v - r["none_us"]) / r["rounds"], 2) for k, v in r.items()
                   if k.endswith("_us") and k != "none_us"}
            rows.append(dict(call=call, warps=r["warps"], programs=r["programs"], rounds=r["rounds"],
                             kernel_us=r["none_us"], barrier_us=per,
                             errors=sum(v for k, v in r.items() if k.endswith("_errors"))))
    return rows


def unseen_summary():
    d = json.loads((HERE / "call5" / "unseen" / "unseen.json").read_text())
    worst = collections.defaultdict(lambda: [0.0, 1.0, 0])
    for r in d["rows"]:
        if r["rel_l2"] == "":
            continue
        w = worst[(r["format"], r["path"].split(" ")[0])]
        w[0], w[1], w[2] = max(w[0], r["rel_l2"]), min(w[1], r["cosine"]), w[2] + 1
    return dict(checks=len(d["rows"]), failed=sum(r["ok"] is False for r in d["rows"]),
                refused=sum(bool(r["refused"]) for r in d["rows"]),
                graphs=sum("graph" in r["path"] for r in d["rows"]),
                worst={f"{f} {p}": dict(cases=n, max_rel_l2=e, min_cosine=c) for (f, p), (e, c, n) in sorted(worst.items())})


def prefetch_summary():
    pairs = collections.defaultdict(dict)
    for line in (HERE / "call6" / "tune.jsonl").read_text().splitlines():
        r = json.loads(line)
        pairs[(r["shape"], r["format"], r["tokens"])][r["config"]["down_l2_prefetch"]] = r["us"]
    ratio = {k: v[True] / v[False] for k, v in pairs.items() if len(v) == 2}
    by_m = {m: [r for k, r in ratio.items() if k[2] == m] for m in sorted({k[2] for k in ratio})}
    timeline = (HERE / "call6" / "timeline" / "timeline.md").read_text()
    return dict(cases=len(ratio), geomean=geomean(ratio.values()), lo=min(ratio.values()), hi=max(ratio.values()),
                faster=sum(r < 1 for r in ratio.values()),
                by_m={m: dict(geomean=geomean(v), lo=min(v), hi=max(v)) for m, v in by_m.items()},
                timeline_md=timeline)


def promote_rows():
    """Mixtral TP2 fp8_tensor M=512 with its FP8 sums promoted every 128 / 64 columns or never."""
    rows = []
    for call in (8, 9):
        for r in json.loads((HERE / f"call{call}" / "promote" / "promote_probe.json").read_text()):
            rows.append(dict(call=call, promote_k=r["promote_k"], served=r["served"], us=r["us"], rel_l2=r["rel_l2"]))
    return rows


def kernel_rows():
    """Each kernel's device time of one Mixtral TP2 M=512 call, profiled with PDL (call 10) and plain (11, 12)."""
    rows = []
    for call, sub, how in ((10, "kernels", "PDL"), (11, "kernels_nopdl", "plain (patched)"),
                           (12, "kernels", "plain (bench.kernels default)")):
        for r in json.loads((HERE / f"call{call}" / sub / "kernels.json").read_text())["rows"]:
            rows.append(dict(call=call, profiled=how, format=r["format"], graph_us=r["graph_us"],
                             kernel_sum_us=r["kernel_sum_us"], floor_us=r["floor_us"], kernels=r["kernels"]))
    return rows


def main():
    barrier, unseen, prefetch = barrier_rows(), unseen_summary(), prefetch_summary()
    promote, kernels = promote_rows(), kernel_rows()
    (HERE / "summary.json").write_text(json.dumps(dict(barrier=barrier, unseen=unseen, down_l2_prefetch={
        k: v for k, v in prefetch.items() if k != "timeline_md"}, mixtral_m512_promote=promote,
        mixtral_m512_kernels=kernels), indent=1))
    out = ["# Thirty-sixth session: summaries (`summarize.py`)", "",
           "All on an H100 80GB HBM3 (no H200 came); us, CUDA-graph timed.", "",
           "## A grid-wide barrier in one Triton kernel (calls 1, 2; `barrier_probe.py`)", "",
           "Cooperative launch, in a CUDA graph of 20 launches; us per barrier = (kernel with ROUNDS barriers "
           "- kernel without) / ROUNDS.  Variants: `atomic` every program polls the arrival counter (atomic add "
           "of 0); `ld_acquire` the same with ld.acquire polls; `*_sleep` a nanosleep between polls; `flag` the "
           "last arrival at a self-resetting counter raises a generation flag the others poll; `tree8/16` two "
           "levels of counters, then the flag.  `errors`: neighbour writes not seen after the barrier (3 eager "
           "runs on zeroed data).", "",
           "| call | warps | programs | rounds | kernel us | us per barrier | errors |", "|---|---|---|---|---|---|---|"]
    for r in barrier:
        if "too_big" in r:
            out.append(f"| {r['call']} | 4 | 5280 | 1 | - | launch {r['too_big']}: {r['error']} | - |")
        else:
            per = ", ".join(f"{k} {v}" for k, v in r["barrier_us"].items())
            out.append(f"| {r['call']} | {r['warps']} | {r['programs']} | {r['rounds']} | {r['kernel_us']} | {per} | "
                       f"{r['errors']} |")
    out += ["", "## `fusedmoe check unseen` (call 5)", "",
            f"{unseen['checks']} rows: {unseen['failed']} failed, {unseen['refused']} refused, "
            f"{unseen['graphs']} CUDA graphs (bitwise equal to eager).", "",
            "| format, path | cases | max rel-L2 | min cosine |", "|---|---|---|---|"]
    out += [f"| {k} | {v['cases']} | {v['max_rel_l2']:.2e} | {v['min_cosine']:.7f} |" for k, v in unseen["worst"].items()]
    out += ["", "## `down_l2_prefetch` (call 6; removed)", "",
            f"Tuner, each PEERS entry against itself with the move ({prefetch['cases']} cases): "
            f"{prefetch['lo']:.3f}-{prefetch['hi']:.3f}x (geomean {prefetch['geomean']:.3f}), "
            f"{prefetch['faster']} faster.", "", "| M | geomean | range |", "|---|---|---|"]
    out += [f"| {m} | {v['geomean']:.3f} | {v['lo']:.3f}-{v['hi']:.3f} |" for m, v in prefetch["by_m"].items()]
    out += ["", "Timelines (`call6/timeline/timeline.md`, us from the graph's start):", "", prefetch["timeline_md"]]
    out += ["## Mixtral TP2 fp8_tensor M=512: FP8 promotion interval (calls 8, 9; `scripts/promote_probe.py`)", "",
            "Call 8 timed with the tuner's accuracy gate (1% rel-L2), which refused the never-promoted variant; "
            "call 9 with the gate at 2%.", "",
            "| call | promote every | served | us | rel-L2 |", "|---|---|---|---|---|"]
    out += [f"| {r['call']} | {r['promote_k'] or 'never'} | {r['served']} | {r['us'] if r['us'] is not None else '-'} | "
            f"{100 * r['rel_l2']:.3f}% |" for r in promote]
    out += ["", "## Mixtral TP2 M=512: each kernel's device time (calls 10-12; `fusedmoe.bench.kernels`)", "",
            "| call | profiled | format | graph us | kernels us | floor us | kernels |", "|---|---|---|---|---|---|---|"]
    out += [f"| {r['call']} | {r['profiled']} | {r['format']} | {r['graph_us']:.1f} | {r['kernel_sum_us']:.1f} | "
            f"{r['floor_us']:.1f} | " + ", ".join(f"{k[:28]} {v:.1f}" for k, v in r["kernels"].items()) + " |"
            for r in kernels]
    (HERE / "summary.md").write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
