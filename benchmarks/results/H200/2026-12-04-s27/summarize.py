"""Summary of the 27th session's runs: summary.md / summary.json.

- call1: decode M 1..8 (new, old, old, new) and M 16..512 (old, new), new = the route-direct
  down and the combine letting the next grid launch after their wait (late_trigger.patch,
  reverted); old = HEAD a29c017.
- call2: GPT-OSS-120B TP4 bf16 M=16 with the tuned entry and the shipped table; the routing
  kernel with and without PDL (routing_pdl/).

    python benchmarks/results/H200/2026-12-04-s27/summarize.py
"""
import json
import math
from pathlib import Path

HERE = Path(__file__).parent


def bench(path):
    rows = json.loads((HERE / path / "results.json").read_text())["results"]
    return {(r["shape"], r["format"], r["tokens"]): (r["us"], r["chosen_path"]) for r in rows if r["us"]}


def geomean(v):
    return math.exp(sum(map(math.log, v)) / len(v))


dec = {t: bench(f"call1/dec_{t}") for t in ("new1", "new2", "old1", "old2")}
decode = [dict(shape=k[0], format=k[1], tokens=k[2], path=p, old_us=[dec["old1"][k][0], dec["old2"][k][0]],
               new_us=[dec["new1"][k][0], dec["new2"][k][0]],
               ratio=math.sqrt(dec["new1"][k][0] * dec["new2"][k][0] / (dec["old1"][k][0] * dec["old2"][k][0])))
          for k, (_, p) in sorted(dec["new1"].items())]
m_old, m_new = bench("call1/m16_old"), bench("call1/m16_new")
m16 = [dict(shape=k[0], format=k[1], tokens=k[2], path=p, old_us=m_old[k][0], new_us=m_new[k][0],
            ratio=m_new[k][0] / m_old[k][0]) for k, (_, p) in sorted(m_new.items())]
routing = json.loads((HERE / "call2/routing_pdl/routing_pdl_ab.json").read_text())
gpt = {t: bench(f"call2/bench_{t}") for t in ("tuned", "shipped", "tuned2")}

lines = ["## The route-direct down and the combine letting the next grid launch (call 1; reverted)", "",
         "| shape | format | M | path | old us | new us | new / old |", "|---|---|---|---|---|---|---|"]
lines += [f"| {c['shape']} | {c['format']} | {c['tokens']} | {c['path']} | {c['old_us'][0]:.1f}, {c['old_us'][1]:.1f} | "
          f"{c['new_us'][0]:.1f}, {c['new_us'][1]:.1f} | {c['ratio']:.3f} |" for c in decode]
lines.append("")
for m in (1, 2, 4, 8):
    v = [c["ratio"] for c in decode if c["tokens"] == m]
    lines.append(f"- decode M={m}: {len(v)} cases, geomean new/old {geomean(v):.4f}, {sum(r < 1 for r in v)} faster")
v = [c["ratio"] for c in decode]
lines.append(f"- decode all: {len(v)} cases, geomean {geomean(v):.4f}, {sum(r < 1 for r in v)} faster")
lines.append(f"- old run 2 / old run 1: {geomean([dec['old2'][k][0] / dec['old1'][k][0] for k in dec['old1']]):.4f}; "
             f"new 2 / new 1: {geomean([dec['new2'][k][0] / dec['new1'][k][0] for k in dec['new1']]):.4f}")
for p in ("grouped", "route_direct"):
    v = [c["ratio"] for c in m16 if c["path"] == p]
    lines.append(f"- M 16..512, {p}: {len(v)} cases, geomean new/old {geomean(v):.4f}, {sum(r < 1 for r in v)} faster")
lines += ["", "## Routing with PDL, routing + layer graph-timed (call 2b; kept)", "",
          "| shape | format | M | plain us | PDL us | PDL / plain |", "|---|---|---|---|---|---|"]
lines += [f"| {r['shape']} | {r['format']} | {r['tokens']} | {r['plain_us'][0]:.2f}, {r['plain_us'][1]:.2f} | "
          f"{r['pdl_us'][0]:.2f}, {r['pdl_us'][1]:.2f} | {r['ratio']:.3f} |" for r in routing]
lines += ["", f"{len(routing)} cases: geomean PDL / plain {geomean([r['ratio'] for r in routing]):.4f}, "
          f"{sum(r['ratio'] < 1 for r in routing)} faster", "",
          "## GPT-OSS-120B TP4 bf16, the new M=16 entry (call 2; kept)", "",
          "| M | tuned us | shipped us | tuned again us | path |", "|---|---|---|---|---|"]
lines += [f"| {k[2]} | {gpt['tuned'][k][0]:.1f} | {gpt['shipped'][k][0]:.1f} | {gpt['tuned2'][k][0]:.1f} | {gpt['tuned'][k][1]} |"
          for k in sorted(gpt["tuned"], key=lambda k: k[2])]
(HERE / "summary.md").write_text("\n".join(lines) + "\n")
(HERE / "summary.json").write_text(json.dumps(dict(late_trigger_decode=decode, late_trigger_m16_512=m16,
                                                   routing_pdl=routing), indent=1) + "\n")
print("\n".join(l for l in lines if l.startswith("-") or "cases:" in l))
