"""Route-direct's time over grouped's against routes per active expert, from dispatch.json (both paths
forced, calls 1-3 and 6), one marker per weight class; the dispatch limits drawn in.  Writes crossover.png.

    python benchmarks/results/H200/2026-12-07-s49/plot_crossover.py
"""
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

import fusedmoe.policy as policy  # noqa: E402

HERE = Path(__file__).parent


def weight_class(row: dict) -> str:
    if row["format"] == "bf16":
        return "bf16"
    if row["expert_mb"] * 1e6 <= policy.FP8_SMALL_EXPERT_BYTES:
        return f"FP8, experts <= {policy.FP8_SMALL_EXPERT_BYTES / 1e6:.0f} MB"
    return "FP8, larger experts"


def main() -> None:
    rows = [r for r in json.loads((HERE / "dispatch.json").read_text()) if r["M"] > 1]
    fig, ax = plt.subplots(figsize=(8, 5))
    for cls, marker in (("bf16", "s"), (f"FP8, experts <= {policy.FP8_SMALL_EXPERT_BYTES / 1e6:.0f} MB", "o"),
                        ("FP8, larger experts", "^")):
        sel = [r for r in rows if weight_class(r) == cls]
        ax.scatter([r["routes_per_active_expert"] for r in sel], [r["route_direct_us"] / r["grouped_us"] for r in sel],
                   marker=marker, s=22, alpha=0.7, label=f"{cls} ({len(sel)})")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.axvline(policy.FP8_SMALL_EXPERT_MAX_SHARING, color="C1", ls="--", lw=1,
               label=f"FP8 small-expert limit {policy.FP8_SMALL_EXPERT_MAX_SHARING} (M <= 32)")
    ax.axvline(policy.FP8_SMALL_EXPERT_FEW_MAX_SHARING, color="C1", ls="-.", lw=1,
               label=f"the same, <= {policy.FP8_SMALL_EXPERT_FEW_ROUTES} routes: "
                     f"{policy.FP8_SMALL_EXPERT_FEW_MAX_SHARING}")
    fp8_small_m, fp8_large_m = policy.ROUTE_DIRECT_MAX_SHARING["fp8"]
    ax.axvline(fp8_large_m, color="C2", ls=":", lw=1, label=f"FP8 limit past M=8: {fp8_large_m} (M <= 16)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        axis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xticks([1, 1.4, 1.8, 2.2, 3, 4, 8, 16])
    ax.set_yticks([0.5, 0.75, 1, 1.5, 2, 4, 8])
    ax.set_xlim(0.95, 20)
    ax.set_ylim(0.5, 8)
    ax.set_xlabel("routes per active expert (expected, uniform routing)")
    ax.set_ylabel("route_direct time / grouped time")
    ax.set_title("fusedmoe: where route-direct stops paying (H100, H200 tables, M 2..512)")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(HERE / "crossover.png", dpi=110)
    print(f"wrote {HERE / 'crossover.png'} ({len(rows)} cases)")


if __name__ == "__main__":
    main()
