"""Compare a ``fusedmoe bench`` results.json with published peer figures (PEERS-H200.md).

    python -m fusedmoe.bench.compare RESULTS.json [--peers ../shared/PEERS-H200.md] [--impl auto]

Prints a markdown table per (shape, format, M): our time, % of floor, the peer's time, % of its
floor and our speedup over it, plus the decode prototype's time and % of its floor where that
file has one, and a summary line (median / min % of floor, geometric-mean speedup, cases slower
than the peer and than the prototype).  Each one's floor comes from its own routing draws, so
where few experts make the active count vary (Mixtral: 8), a case can be slower in time at a
higher % of the floor; the summary counts both.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
from pathlib import Path


def parse_peer_times(text: str, peer: str = "vllm_triton",
                     table: str = "Time per call (us)") -> dict[tuple[str, str, int], float]:
    """(shape, format, M) -> value from a per-M table of PEERS-H200.md: its 'Time per call' (us),
    or the one whose title starts with ``table``."""
    out: dict[tuple[str, str, int], float] = {}
    section = text.split("## " + table, 1)[-1].split("\n## ", 1)[0] if "## " + table in text else ""
    cols: list[int] = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0].startswith("shape"):
            cols = [int(c[2:]) for c in cells[1:]]
        elif cols and len(cells) == len(cols) + 1 and " / " in cells[0]:
            shape, fmt, who = (s.strip() for s in cells[0].split(" / "))
            if who == peer:
                for m, v in zip(cols, cells[1:]):
                    if v:
                        out[(shape, fmt, m)] = float(v)
    return out


def parse_prototype_times(text: str) -> dict[tuple[str, str, int], tuple[float, float]]:
    """(shape, format, M) -> (us, % of its floor) of the decode prototype table (rows 'shape |
    format | M | floor us | stream us | prototype us | ...').  Its floors come from its own
    routing draws, so % of the floor is the comparison that does not depend on the draw."""
    out = {}
    for m in re.finditer(r"^\| (\w+) \| (\w+) \| (\d+) \| ([\d.]+) \| [\d.]+ \| ([\d.]+) \|", text, re.M):
        floor, us = float(m.group(4)), float(m.group(5))
        out[(m.group(1), m.group(2), int(m.group(3)))] = (us, 100.0 * floor / us)
    return out


def parse_peer_pct_floor(text: str, peer: str = "vllm_triton") -> dict[tuple[str, str, int], float]:
    """(shape, format, M) -> the peer's % of its floor, from PEERS-H200.md's 'Percent of the
    bandwidth floor' table."""
    return parse_peer_times(text, peer, "Percent of the bandwidth floor")


def compare(results: list[dict], peer_times: dict, proto_times: dict, impl: str = "auto",
            peer_pct: dict | None = None) -> tuple[list[dict], dict]:
    """Rows of the comparison and a summary dict (``peer_pct``: the peer's % of its floor)."""
    rows = []
    for r in results:
        if r.get("impl") != impl or r.get("status") != "ok" or r.get("us") is None:
            continue
        key = (r["shape"], r["format"], r["tokens"])
        peer = peer_times.get(key)
        proto_us, proto_pct = proto_times.get(key, (None, None))
        rows.append(dict(shape=key[0], format=key[1], M=key[2], us=r["us"], pct_floor=r["pct_floor"], peer_us=peer,
                         peer_pct_floor=(peer_pct or {}).get(key),
                         speedup=(peer / r["us"]) if peer else None, prototype_us=proto_us,
                         prototype_pct_floor=proto_pct))
    return rows, summarize(rows)


def summarize(rows: list[dict]) -> dict:
    """Median / min % of floor, geometric-mean speedup over the peer, and the cases slower than
    the peer and than the prototype (in time, and in % of each one's floor), over ``rows``."""
    below = lambda ref: sum(1 for x in rows if x[ref] and x["pct_floor"] < x[ref])  # noqa: E731
    speedups = [x["speedup"] for x in rows if x["speedup"]]
    pcts = [x["pct_floor"] for x in rows]
    return dict(cases=len(rows),
                median_pct_floor=statistics.median(pcts) if pcts else None,
                min_pct_floor=min(pcts) if pcts else None,
                geomean_speedup=math.exp(statistics.fmean(map(math.log, speedups))) if speedups else None,
                slower_than_peer=sum(s < 1 for s in speedups),
                below_peer_pct_floor=below("peer_pct_floor"),
                slower_than_prototype=sum(1 for x in rows if x["prototype_us"] and x["us"] > x["prototype_us"]),
                below_prototype_pct_floor=below("prototype_pct_floor"))


def to_markdown(rows: list[dict], summary: dict, peer: str) -> str:
    """The comparison table, the summary line, and one summary line per format."""
    f = lambda v, p=1: "" if v is None else f"{v:.{p}f}"  # noqa: E731
    lines = [f"| shape | format | M | ours us | % floor | {peer} us | {peer} % floor | speedup | prototype us | "
             "prototype % floor |", "|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['shape']} | {r['format']} | {r['M']} | {f(r['us'])} | {f(r['pct_floor'], 0)} | {f(r['peer_us'])} | "
              f"{f(r['peer_pct_floor'], 0)} | {f(r['speedup'], 2)} | {f(r['prototype_us'])} | "
              f"{f(r['prototype_pct_floor'], 0)} |" for r in rows]

    def line(label: str, s: dict) -> str:
        return (f"{label}{s['cases']} cases: median {f(s['median_pct_floor'], 0)}% of floor, "
                f"min {f(s['min_pct_floor'], 0)}%, geomean speedup over {peer} {f(s['geomean_speedup'], 2)}x, "
                f"{s['slower_than_peer']} slower than it ({s['below_peer_pct_floor']} below its % of the floor), "
                f"{s['slower_than_prototype']} slower than the prototype "
                f"({s['below_prototype_pct_floor']} below its % of the floor).")

    lines += ["", line("", summary)]
    formats = list(dict.fromkeys(r["format"] for r in rows))
    if len(formats) > 1:
        lines += [""] + [line(f"- {fmt}: ", summarize([r for r in rows if r["format"] == fmt])) for fmt in formats]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", type=Path)
    ap.add_argument("--peers", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "PEERS-H200.md")
    ap.add_argument("--peer", default="vllm_triton")
    ap.add_argument("--impl", default="auto", help="which of our implementations to compare (default auto)")
    ap.add_argument("--tokens", default=None, help="only these token counts, e.g. 1,2,4,8 (default all)")
    args = ap.parse_args(argv)
    text = args.peers.read_text()
    results = json.loads(args.results.read_text())["results"]
    if args.tokens:
        keep = {int(t) for t in args.tokens.split(",")}
        results = [r for r in results if r["tokens"] in keep]
    rows, summary = compare(results, parse_peer_times(text, args.peer), parse_prototype_times(text), args.impl,
                            parse_peer_pct_floor(text, args.peer))
    print(to_markdown(rows, summary, args.peer), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
