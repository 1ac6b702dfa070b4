"""Throw-away: cases of a tune log whose table entry now differs from the start it was tuned from, as 'shape format tokens' lines (tokens comma-joined)."""
import json, sys
from fusedmoe import policy
from fusedmoe.shapes import PRESETS
log, table = sys.argv[1:3]
starts = {}
for l in open(log):
    r = json.loads(l); starts.setdefault((r["shape"], r["format"], r["tokens"]), r["config"])
key = lambda e: (e["num_experts"], e["top_k"], e["hidden"], e["inter"], e["format"], e["tokens"])
entries = {key(e): e for e in json.load(open(table))["entries"]}
groups = {}
for (shape, fmt, tok), start in starts.items():
    s = PRESETS[shape]
    e = entries.get((s.num_experts, s.top_k, s.hidden_size, s.intermediate_size, fmt, tok))
    if e and policy._from_dict("grouped", e["config"]) != policy._from_dict("grouped", start):
        groups.setdefault((shape, fmt), []).append(str(tok))
for (n, f), t in groups.items():
    print(n, f, ",".join(t))
