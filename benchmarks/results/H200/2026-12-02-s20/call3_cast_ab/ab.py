"""The e4m3 cast A/B of the twentieth session (call 3): per-kernel time of the separate
requantisation (``_quantize_rows_kernel``) and whole-call bench times, for the trees old (HEAD
c878201: e4m3 rounding by arithmetic), cast (the compiled kernels cast directly) and new (cast
plus 32-group programs, not kept).  Prints markdown; JSON with --json.

    python benchmarks/results/H200/2026-12-02-s20/call3_cast_ab/ab.py [--json OUT]
"""
import argparse
import json
import math
from pathlib import Path

HERE = Path(__file__).parent
TREES = ("old", "cast", "new")


def kernel_rows():
    data = {t: json.loads((HERE / f"kernels_{t}" / "kernels.json").read_text())["rows"] for t in TREES}
    rows = []
    for i, case in enumerate(data["old"]):
        q = [data[t][i]["kernels"].get("_quantize_rows_kernel") for t in TREES]
        if q[0]:
            rows.append(dict(shape=case["shape"], format=case["format"], M=case["tokens"],
                             **{f"quantize_rows_{t}": v for t, v in zip(TREES, q)},
                             **{f"graph_{t}": data[t][i]["graph_us"] for t in TREES}))
    return rows


def bench_rows():
    res = {t: json.loads((HERE / f"bench_{t}.json").read_text()) for t in TREES}
    def times(doc):
        return {(r["shape"], r["format"], r["tokens"]): r["us"] for r in doc["results"] if r["impl"] == "auto"}
    t = {k: times(v) for k, v in res.items()}
    return [dict(shape=s, format=f, M=m, **{k: t[k][(s, f, m)] for k in TREES}) for (s, f, m) in sorted(t["old"])]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    ks, bs = kernel_rows(), bench_rows()
    print("| shape | format | M | requantisation us old / cast / new | graph us old / cast / new |")
    print("|---|---|---|---|---|")
    for r in ks:
        print(f"| {r['shape']} | {r['format']} | {r['M']} | " + " / ".join(f"{r['quantize_rows_' + t]:.1f}" for t in TREES)
              + " | " + " / ".join(f"{r['graph_' + t]:.1f}" for t in TREES) + " |")
    for t in ("cast", "new"):
        g = math.exp(sum(math.log(r[t] / r["old"]) for r in bs) / len(bs))
        worst = max(r[t] / r["old"] for r in bs)
        print(f"\nbench, {len(bs)} cases (M 128 / 512 / 2048, fp8_tensor and fp8_block): {t} / old = {g:.3f} "
              f"(geomean), at most {worst:.3f}")
    if args.json:
        args.json.write_text(json.dumps(dict(kernels=ks, bench=bs), indent=1) + "\n")


if __name__ == "__main__":
    main()
