"""Throw-away (twenty-fourth session): one row per tuned case from the calls' tune_candidates.jsonl (start, best of
each cap move, kept), and the bench's old/new figures where the entry moved; writes summary.md and summary.json."""
import glob, json, statistics
rows = []
def med(v):
    return None if not v else round(statistics.median(v), 1)
def bench_figures(f):
    d = json.load(open(f))
    out = {}
    for r in d["results"]:
        if r["impl"] == "auto" and r["status"] == "ok":
            out.setdefault((r["shape"], r["format"], r["tokens"]), []).append(r["us"])
    return out
# old/new bench figures by case, from every call (call 3 first benched call 1's two fp8_tensor M=2048 entries, 'pre_')
old, new = {}, {}
for pattern, into in (("bench_*_old", old), ("bench_*_new", new), ("pre_*_head_*", old), ("pre_*_tree_*", new)):
    for f in glob.glob(f"call[1-4]/{pattern}/results.json"):
        for k, v in bench_figures(f).items():
            into.setdefault(k, []).extend(v)
for call in sorted(glob.glob("call[1-4]")):
    cases = {}
    for l in open(f"{call}/tune_candidates.jsonl"):
        r = json.loads(l); cases.setdefault((r["shape"], r["format"], r["tokens"]), []).append(r)
    for k, rs in cases.items():
        cap = lambda c: (c["gate_up"].get("max_registers", 0), c["down"].get("max_registers", 0))
        start = rs[0]
        conf = [r for r in rs if r["phase"] != "descent"]
        kept = None
        if conf:
            a = [r["us"] for r in conf if cap(r["config"]) == cap(start["config"])]
            b = [r["us"] for r in conf if cap(r["config"]) != cap(start["config"])]
            best = [r for r in conf if cap(r["config"]) != cap(start["config"])][0]
            if statistics.median(b) < statistics.median(a) * 0.98:
                kept = (cap(best["config"]), statistics.median(a), statistics.median(b))
        desc = {f"{g}/{d}": (None if r["us"] is None else round(r["us"], 1)) for r in rs if r["phase"] == "descent"
                for g, d in [cap(r["config"])]}
        rows.append(dict(call=call, shape=k[0], format=k[1], tokens=k[2], start_caps="%d/%d" % cap(start["config"]),
                         descent=desc, kept_caps=None if not kept else "%d/%d" % kept[0],
                         confirm_start_us=None if not kept else round(kept[1], 1), confirm_kept_us=None if not kept else round(kept[2], 1),
                         bench_old_us=med(old.get(k)), bench_new_us=med(new.get(k))))
json.dump(rows, open("summary.json", "w"), indent=1)
with open("summary.md", "w") as f:
    f.write("| call | shape | format | M | start caps (gate/up / down) | kept caps | tuner us: start -> kept (confirm medians) | bench us: old -> new |\n|---|---|---|---|---|---|---|---|\n")
    for r in rows:
        tun = f"{r['confirm_start_us']} -> {r['confirm_kept_us']}" if r["kept_caps"] else "-"
        b = f"{r['bench_old_us']:.1f} -> {r['bench_new_us']:.1f}" if r["bench_old_us"] and r["bench_new_us"] and r["kept_caps"] else "-"
        f.write(f"| {r['call']} | {r['shape']} | {r['format']} | {r['tokens']} | {r['start_caps']} | {r['kept_caps'] or 'none'} | {tun} | {b} |\n")
print(open("summary.md").read())
