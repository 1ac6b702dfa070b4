"""Tables of the forty-first session's calls (run here, no GPU): writes summary.md and summary.json.

Each run is a ``fusedmoe.bench.kernels`` output (<run>/kernels.json): per case the graph-timed
call and each kernel's device time.  Per case and variant: the median over the variant's runs.
call1: the warp-specialised Gluon set (--path grouped_gluon_ws) in three trees, ws_<n>_<tree>
(base: before this session; skip: the empty-half skip; fused: skip + 128-column gate/up quantised
in the epilogue), and the served configs (--path auto) in the fused and skip trees.
call2: the library as committed: served (auto), and the set with 64- / 128-column gate/up
(ws_<n> / ws_q_<n>).
"""
import json
import statistics
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).parent


def gemm_us(row: dict, which: str) -> float:
    """Device us of the call's gate/up or down GEMM (kernels named *grouped*<which>*)."""
    return sum(v for k, v in row["kernels"].items() if which in k and "grouped" in k)


def requant_us(row: dict) -> float:
    """Device us of the SwiGLU output's requantisation launch (0 where gate/up quantises)."""
    return row["kernels"].get("_quantize_rows_kernel", 0.0)


def runs_by_variant(call: Path, variant_of) -> dict:
    """{variant: {(shape, M): [rows]}} over the call's run folders; variant_of(name) -> variant or None."""
    out = defaultdict(lambda: defaultdict(list))
    for d in sorted(p for p in call.iterdir() if (p / "kernels.json").exists()):
        v = variant_of(d.name)
        if v is None:
            continue
        for r in json.loads((d / "kernels.json").read_text())["rows"]:
            out[v][(r["shape"], r["tokens"])].append(r)
    return out


def medians(rows: list) -> dict:
    return dict(graph=statistics.median(r["graph_us"] for r in rows),
                gate_up=statistics.median(gemm_us(r, "gate_up") for r in rows),
                down=statistics.median(gemm_us(r, "down") for r in rows),
                requant=statistics.median(requant_us(r) for r in rows), runs=len(rows))


def table(by: dict, variants: list, ref: str) -> tuple[list, list]:
    cases = sorted(set().union(*(by[v].keys() for v in variants if v in by)))
    head = "| shape | M | " + " | ".join(f"{v} graph us (gate/up, down, requant)" for v in variants)
    head += " | " + " | ".join(f"{v}/{ref}" for v in variants if v != ref) + " |"
    md = [head, "|---|---|" + "---|" * (2 * len(variants) - 1)]
    data = []
    for c in cases:
        med = {v: medians(by[v][c]) for v in variants if c in by.get(v, {})}
        cells = [f"{med[v]['graph']:.1f} ({med[v]['gate_up']:.1f}, {med[v]['down']:.1f}, {med[v]['requant']:.1f})"
                 if v in med else "-" for v in variants]
        ratios = [f"{med[v]['graph'] / med[ref]['graph']:.3f}" if v in med and ref in med else "-"
                  for v in variants if v != ref]
        md.append(f"| {c[0]} | {c[1]} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
        data.append(dict(shape=c[0], tokens=c[1], **med))
    return md, data


def main() -> None:
    md, js = ["# Forty-first session: tables (NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, Triton 3.6.0)", ""], {}
    c1 = runs_by_variant(HERE / "call1", lambda n: ("ws_" + n.split("_")[-1]) if n.startswith("ws_")
                         else n if n.startswith("auto_") else None)
    rows, js["call1"] = table(c1, ["ws_base", "ws_skip", "ws_fused", "auto_skip", "auto_fused"], "ws_base")
    md += ["## Call 1: the warp-specialised set in three trees, and the served configs",
           "", "Medians of two runs per tree (base, skip, fused, fused, skip, base); auto: one run each.", "",
           *rows, ""]
    c2 = runs_by_variant(HERE / "call2", lambda n: "auto" if n == "auto" else "ws_q" if n.startswith("ws_q_")
                         else "ws" if n.startswith("ws_") else None)
    rows, js["call2"] = table(c2, ["ws", "ws_q", "auto"], "ws")
    md += ["## Call 2: the library as committed (served: auto) and the set's two gate/up forms", "",
           "ws: 64-column gate/up (fp32 out + requantisation), ws_q: 128-column gate/up quantised in the epilogue;"
           " medians of two runs (ws, q, q, ws); auto: one run.", "", *rows, ""]
    (HERE / "summary.md").write_text("\n".join(md) + "\n")
    (HERE / "summary.json").write_text(json.dumps(js, indent=1) + "\n")


if __name__ == "__main__":
    main()
