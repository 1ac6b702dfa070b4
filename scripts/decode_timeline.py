"""Probe: where a route-direct decode call's time goes, from per-program timelines.

For each case (PEERS shape, format, M) it captures, as the bench does, ``--calls`` calls in one
CUDA graph (weight copies and routings rotated), each writing its programs' timelines
(``fusedmoe._trace``: %globaltimer at start, after the PDL wait and at the end, and the SM),
replays the graph and reports the median over the calls after the first two, in us from the
call's first gate/up start:

- ``graph``: the bench's graph time per call without tracing, ``traced``: with it;
- ``gap``: from the previous call's last down end to this call's first gate/up start;
- gate/up: ``gu_all_in`` (the last program's start), ``gu_end`` (the last end), ``gu_prog``
  (a program's median time from its wait to its end);
- down: ``dn_first`` / ``dn_all_in`` (first / last start), ``dn_early`` (how many started before
  gate/up's last end, of ``dn_n``), ``dn_release`` (median time its PDL wait returned),
  ``dn_end`` (the last end), ``dn_after`` (median from the wait's return to the end);
- ``span``: first gate/up start to the last down end.

    python scripts/decode_timeline.py --cases hunyuan_tp8:fp8_tensor:1,gpt_oss_120b_tp4:fp8_block:1 --out R/timeline

``--fixed`` times each case instead as benched, with every id -1 and with every route on one
expert (``fixed_cost_case``): what the call costs with no weight read; ``--dropped`` adds each
case's timelines with every id -1.  ``--variants`` also runs
each case with its config changed (``VARIANTS``: PDL off, down with 4
warps, ...), to see what a change moves.  Writes ``timeline.json`` (the summaries, and one
call's raw rows per case) and ``timeline.md``; ``--plot DIR`` draws each case's raw call from a
``timeline.json`` (here or on any machine) as a chart of the SMs over time.
Needs a CUDA GPU with %globaltimer (sm_90 here).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fusedmoe import policy, shapes  # noqa: E402
from fusedmoe._runtime import device_name, num_sms  # noqa: E402
from fusedmoe._trace import TRACE_FIELDS  # noqa: E402
from fusedmoe.bench import harness  # noqa: E402
from fusedmoe.paths.route_direct import launch_programs, route_direct_moe  # noqa: E402

def _tile(cfg: policy.RouteDirectConfig, which: str, **change) -> policy.RouteDirectConfig:
    return dataclasses.replace(cfg, **{which: dataclasses.replace(getattr(cfg, which), **change)})


# name -> the config change it makes (applied to the case's own config)
VARIANTS = {
    "pdl_off": lambda c: dataclasses.replace(c, pdl=False),
    "pdl_on": lambda c: dataclasses.replace(c, pdl=True),
    "down_w4": lambda c: _tile(c, "down", num_warps=4),
    "down_w8": lambda c: _tile(c, "down", num_warps=8),
    "gu_w4": lambda c: _tile(c, "gate_up", num_warps=4),
    "gu_n2x": lambda c: _tile(c, "gate_up", block_n=2 * c.gate_up.block_n),
    "gu_cap64_dn_cap96": lambda c: _tile(_tile(c, "gate_up", max_registers=64), "down", max_registers=96),
    "fp16_on": lambda c: dataclasses.replace(c, fp16_products=True),
    "fp16_off": lambda c: dataclasses.replace(c, fp16_products=False),
    # the tensor-core down (FP8 weights; it loads no weights before its wait)
    "down_mma": lambda c: dataclasses.replace(c, down=policy.Tile(16, 128, 4, 3, swap_ab=True), down_tiles=1),
    "down_gluon": lambda c: dataclasses.replace(c, down_gluon=True),
}

FIELDS = ("graph", "traced", "gap", "gu_all_in", "gu_end", "gu_prog", "dn_first", "dn_all_in", "dn_early",
          "dn_release", "dn_end", "dn_after", "span")


def _median(t: torch.Tensor) -> float:
    """The median of a float64 tensor, the middle two averaged (as ``statistics.median``)."""
    return torch.quantile(t, 0.5).item()


def call_summary(gu: torch.Tensor, dn: torch.Tensor, prev_dn_end: float | None) -> dict:
    """One call's figures (us from its first gate/up start) from its gate/up and down trace rows
    [programs, TRACE_FIELDS] (int64, ns)."""
    gu, dn = gu.double(), dn.double()
    t0 = gu[:, 0].min().item()
    done = gu[:, 2] > 0  # a program whose route is dropped exits before it writes its end
    if not done.any():  # every route dropped (--dropped): gate/up ends with its last wait
        done = torch.ones_like(done)
        gu[:, 2] = gu[:, 1]
    gu_end = gu[done, 2].max().item()
    us = lambda v: (v - t0) / 1e3  # noqa: E731
    return dict(
        gap=None if prev_dn_end is None else (t0 - prev_dn_end) / 1e3,
        gu_all_in=us(gu[:, 0].max().item()), gu_end=us(gu_end),
        gu_prog=_median(gu[done, 2] - gu[done, 1]) / 1e3,
        dn_first=us(dn[:, 0].min().item()), dn_all_in=us(dn[:, 0].max().item()),
        dn_early=int((dn[:, 0] < gu_end).sum().item()), dn_n=dn.shape[0],
        dn_release=us(_median(dn[:, 1])), dn_end=us(dn[:, 2].max().item()),
        dn_after=_median(dn[:, 2] - dn[:, 1]) / 1e3, span=us(dn[:, 2].max().item()),
        sms_gu=int(gu[:, 3].unique().numel()), sms_dn=int(dn[:, 3].unique().numel()))


def timeline_case(shape, fmt: str, m: int, dev: torch.device, s: harness.Settings, bw: float, target: float,
                  config: policy.RouteDirectConfig | None = None, fill: int | None = None) -> dict:
    """The case's summary (medians over calls 2..) and one call's raw rows; ``fill``: every id
    set to it (-1: both grids launched, no weight read)."""
    inp = harness.case_inputs(shape, fmt, m, s, dev, bw, target)
    w0 = inp.copies[0]
    k = shape.top_k
    cfg = config or policy.select_config("route_direct", m, k, w0.num_experts, w0.hidden_size,
                                         w0.intermediate_size, fmt, device_name(dev), num_sms(dev))
    activation = harness.layer_activation(shape)
    n_gu, n_dn = launch_programs(m, k, w0.intermediate_size, w0.hidden_size, cfg)
    n = len(inp.routings)
    traces = torch.zeros(n, n_gu + n_dn, TRACE_FIELDS, dtype=torch.int64, device=dev)
    outs = torch.empty(n, m, w0.hidden_size, dtype=inp.x.dtype, device=dev)

    def call(i: int, traced: bool):
        tw, ids = inp.routings[i]
        ids = ids if fill is None else torch.full_like(ids, fill)
        route_direct_moe(inp.x, inp.copies[i % len(inp.copies)], tw, ids, outs[i], None, 0, cfg, activation,
                         trace=traces[i] if traced else None)

    plain = harness._time_cuda([lambda i=i: call(i, False) for i in range(n)], s, True)[0]
    traced_us = harness._time_cuda([lambda i=i: call(i, True) for i in range(n)], s, True)[0]
    torch.cuda.synchronize()
    rows = traces.cpu()  # the last replay's timelines
    calls = []
    for i in range(n):
        prev = rows[i - 1, n_gu:, 2].max().item() if i > 0 else None
        calls.append(call_summary(rows[i, :n_gu], rows[i, n_gu:], prev))
    steady = calls[2:] if n > 4 else calls[1:]
    summary = {f: statistics.median(c[f] for c in steady) for f in calls[0] if calls[0][f] is not None}
    summary["gap"] = statistics.median(c["gap"] for c in steady if c["gap"] is not None)
    mid = n // 2
    raw = (rows[mid] - rows[mid, :n_gu, 0].min()).tolist()
    return dict(shape=shape.name, format=fmt, M=m, config=repr(cfg), gu_programs=n_gu, dn_programs=n_dn,
                graph=plain, traced=traced_us, **summary, raw_call=mid, raw=raw)


def fixed_cost_case(shape, fmt: str, m: int, dev: torch.device, s: harness.Settings, bw: float,
                    target: float) -> dict:
    """Graph us per call of the case's route-direct calls as the bench times them (``graph``),
    the same calls with every id -1 (``dropped``: both grids launched in full, no weight read, so
    the launches', waits' and programs' fixed cost) and with every route on expert 0
    (``one_expert``: one expert's weights, from L2 after the first call)."""
    inp = harness.case_inputs(shape, fmt, m, s, dev, bw, target)
    w0 = inp.copies[0]
    cfg = policy.select_config("route_direct", m, shape.top_k, w0.num_experts, w0.hidden_size,
                               w0.intermediate_size, fmt, device_name(dev), num_sms(dev))
    activation = harness.layer_activation(shape)
    out = torch.empty(m, w0.hidden_size, dtype=inp.x.dtype, device=dev)

    def timed(fill: int | None) -> float:
        routings = [(tw, ids if fill is None else torch.full_like(ids, fill)) for tw, ids in inp.routings]
        calls = [lambda i=i: route_direct_moe(inp.x, inp.copies[i % len(inp.copies)], *routings[i], out, None, 0,
                                              cfg, activation) for i in range(len(routings))]
        return harness._time_cuda(calls, s, True)[0]

    return dict(shape=shape.name, format=fmt, M=m, config=repr(cfg), graph=timed(None), dropped=timed(-1),
                one_expert=timed(0), floor=inp.floor["floor_us"])


def fixed_table(rows: list[dict]) -> str:
    head = "| case | graph us | every id -1 us | every route on expert 0 us | HBM floor us |\n|---|---|---|---|---|\n"
    return head + "".join(f"| {r['shape']} {r['format']} M={r['M']} | {r['graph']:.2f} | {r['dropped']:.2f} | "
                          f"{r['one_expert']:.2f} | {r['floor']:.2f} |\n" for r in rows)


def table(rows: list[dict]) -> str:
    head = "| case | " + " | ".join(FIELDS) + " | dn_n |\n|---|" + "---|" * (len(FIELDS) + 1) + "\n"
    body = ""
    for r in rows:
        vals = [f"{r[f]:.0f}" if f == "dn_early" else f"{r[f]:.2f}" for f in FIELDS]
        body += f"| {r['shape']} {r['format']} M={r['M']}{r.get('variant', '')} | " + " | ".join(vals) + \
            f" | {r['dn_n']} |\n"
    return head + body


def plot(timeline: Path, out_dir: Path) -> list[Path]:
    """One PNG per case of ``timeline.json``: each program of its raw call as a line on its SM
    from start to end (gate/up blue, down orange, the down's wait dotted until it returns)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for r in json.loads(timeline.read_text())["rows"]:
        sms = 1 + max(int(row[3]) for row in r["raw"])
        fig, ax = plt.subplots(figsize=(12, 3 + 0.06 * sms))
        for i, (start, release, end, sm, *_) in enumerate(r["raw"]):
            down = i >= r["gu_programs"]
            color = "tab:orange" if down else "tab:blue"
            if end <= 0:  # a program that exited early
                continue
            y = sm + (0.3 if down else -0.3) * ((i % 3) / 2)
            if down:
                ax.plot([start / 1e3, release / 1e3], [y, y], ":", color=color, lw=0.8)
                ax.plot([release / 1e3, end / 1e3], [y, y], "-", color=color, lw=1.2)
            else:
                ax.plot([start / 1e3, end / 1e3], [y, y], "-", color=color, lw=1.2)
        name = f"{r['shape']} {r['format']} M={r['M']}{r.get('variant', '')}"
        ax.set(xlabel="us from the call's first gate/up start", ylabel="SM",
               title=f"{name}: graph {r['graph']:.2f} us/call (gate/up blue, down orange; dotted: waiting)")
        path = out_dir / (name.replace(" ", "_").replace("=", "") + ".png")
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="hunyuan_tp8:fp8_tensor:1,gpt_oss_120b_tp4:fp8_tensor:1",
                    help="shape:format:M, comma-separated")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--variants", default="", help="comma-separated names of VARIANTS")
    ap.add_argument("--dropped", action="store_true", help="also each case and variant with every id -1 (' ids -1': "
                    "the programs' timelines with no weight read)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--plot", type=Path, default=None, help="draw --out's timeline.json into this folder, no GPU")
    ap.add_argument("--fixed", action="store_true", help="no timelines: each case's graph time as benched, with "
                    "every id -1 and with every route on one expert (fixed_cost_case), into fixed.md / fixed.json")
    a = ap.parse_args(argv)
    if a.plot:
        for path in plot(a.out / "timeline.json", a.plot):
            print(f"wrote {path}")
        return 0
    dev = torch.device("cuda")
    s = harness.Settings.for_device(dev, calls=a.calls, replays=10, routing="softmax")  # as the decode bench
    bw = harness.measure_copy_bandwidth(dev)
    target = max(harness.STREAM_BYTES, 3 * torch.cuda.get_device_properties(dev).L2_cache_size)
    rows = []
    if a.fixed:
        for spec in a.cases.split(","):
            name, fmt, m = spec.split(":")
            rows.append(fixed_cost_case(shapes.get_shape(name), fmt, int(m), dev, s, bw, target))
            torch.cuda.empty_cache()
            print(fixed_table(rows[-1:]).splitlines()[-1], flush=True)
        print(fixed_table(rows))
        if a.out:
            a.out.mkdir(parents=True, exist_ok=True)
            (a.out / "fixed.md").write_text(fixed_table(rows))
            (a.out / "fixed.json").write_text(json.dumps(dict(bandwidth=bw, rows=rows), indent=1))
        return 0
    for spec in a.cases.split(","):
        name, fmt, m = spec.split(":")
        shape = shapes.get_shape(name)
        base = policy.select_config("route_direct", int(m), shape.top_k, shape.num_experts, shape.hidden_size,
                                    shape.intermediate_size, fmt, device_name(dev), num_sms(dev))
        runs = [("", base)] + [(f" {v}", VARIANTS[v](base)) for v in filter(None, a.variants.split(","))]
        for label, cfg in runs:
            if label and (cfg == base or not policy.legal("route_direct", cfg, fmt)):
                continue
            for fill in (None, -1) if a.dropped else (None,):
                r = timeline_case(shape, fmt, int(m), dev, s, bw, target, cfg, fill=fill)
                torch.cuda.empty_cache()  # the case's weight copies
                rows.append(dict(r, variant=label + (" ids -1" if fill is not None else "")) if label or fill else r)
                print(table(rows[-1:]).splitlines()[-1], flush=True)
    text = table(rows)
    print(text)
    if a.out:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "timeline.md").write_text(text)
        (a.out / "timeline.json").write_text(json.dumps(dict(bandwidth=bw, rows=rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
