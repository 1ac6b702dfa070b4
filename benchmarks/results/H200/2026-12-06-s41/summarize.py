"""Tables of the forty-first session's calls (run here, no GPU): writes summary.md and summary.json.

call1/: ``fusedmoe.bench.kernels`` runs ws_<n>_<base|patch>/kernels.json (the warp-specialised
Gluon set without / with the empty-half skip, in turn) and auto_patch/kernels.json (served).
Per case: the median over a tree's runs of the graph-timed call and of the two GEMMs' device
times, patch / base, and the served call beside them.
"""
import json
import statistics
from pathlib import Path

HERE = Path(__file__).parent


def gemm_us(row: dict, which: str) -> float:
    """Device us of the call's gate/up or down GEMM kernel (by name)."""
    return sum(v for k, v in row["kernels"].items() if which in k and "grouped" in k)


def load(call: Path) -> tuple[dict, dict]:
    runs = {"base": [], "patch": []}
    for d in sorted(call.glob("ws_*_*")):
        runs[d.name.split("_")[-1]].append(json.loads((d / "kernels.json").read_text())["rows"])
    served = call / "auto_patch" / "kernels.json"
    return runs, (json.loads(served.read_text())["rows"] if served.exists() else [])


def table(call: Path) -> tuple[list[str], list[dict]]:
    runs, served = load(call)
    key = lambda r: (r["shape"], r["tokens"])
    by = {t: {} for t in runs}
    for t, rs in runs.items():
        for rows in rs:
            for r in rows:
                by[t].setdefault(key(r), []).append(r)
    srv = {key(r): r for r in served}
    md = ["| shape | M | graph base us | graph patch us | patch/base | gate/up base -> patch us | "
          "down base -> patch us | served graph us | patch/served |", "|---|---|---|---|---|---|---|---|---|"]
    out = []
    for k in sorted(set(by["base"]) & set(by["patch"])):
        med = {t: {f: statistics.median(fn(r) for r in by[t][k]) for f, fn in
                   (("graph", lambda r: r["graph_us"]), ("gate_up", lambda r: gemm_us(r, "gate_up")),
                    ("down", lambda r: gemm_us(r, "down")))} for t in by}
        s = srv.get(k, {}).get("graph_us")
        rec = dict(shape=k[0], tokens=k[1], base=med["base"], patch=med["patch"], served_graph_us=s,
                   runs={t: [r["graph_us"] for r in by[t][k]] for t in by})
        out.append(rec)
        ratio = med["patch"]["graph"] / med["base"]["graph"]
        md.append(f"| {k[0]} | {k[1]} | {med['base']['graph']:.1f} | {med['patch']['graph']:.1f} | {ratio:.3f} | "
                  f"{med['base']['gate_up']:.1f} -> {med['patch']['gate_up']:.1f} | "
                  f"{med['base']['down']:.1f} -> {med['patch']['down']:.1f} | "
                  + (f"{s:.1f} | {med['patch']['graph'] / s:.3f} |" if s else "- | - |"))
    return md, out


def main() -> None:
    md, js = ["# Forty-first session: tables", ""], {}
    call = HERE / "call1"
    if call.exists():
        rows, data = table(call)
        md += ["## Call 1: the warp-specialised set without (base) / with (patch) the empty-half skip",
               "", "Medians over each tree's runs (base, patch, patch, base); served: --path auto on the patch tree.",
               "", *rows, ""]
        js["call1"] = data
    (HERE / "summary.md").write_text("\n".join(md) + "\n")
    (HERE / "summary.json").write_text(json.dumps(js, indent=1) + "\n")


if __name__ == "__main__":
    main()
