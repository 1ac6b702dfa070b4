"""Benchmark records and their renderings: markdown tables, JSON, PNG plots, a progress bar.

One :class:`CaseResult` per (shape, format, implementation, tokens).  The markdown follows
PEERS-H200.md: rows "shape / format / impl", one column per token count.
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable, Sequence, TextIO

from .peers import PEERS

CPU_NOTE = ("CPU figures: no CUDA device; fused_moe ran on CPU (its torch fallback, or the Triton interpreter "
            "under TRITON_INTERPRET=1) and times are wall-clock. They say nothing about the GPU kernels.")


@dataclass
class CaseResult:
    """Figures of one case.  Times are per call in microseconds; ``us`` is the CUDA-graph
    median on GPU (eager for peers that cannot be captured), wall-clock on CPU."""

    shape: str
    format: str
    impl: str
    tokens: int
    status: str = "ok"  # ok | skipped | error
    note: str = ""
    us: float | None = None
    eager_us: float | None = None
    timing: str = ""  # graph | eager | cpu
    floor_us: float | None = None
    pct_floor: float | None = None
    tflops: float | None = None
    gbps: float | None = None
    bytes: float | None = None  # mean over the rotated routings
    flops: float | None = None
    active_experts: float | None = None
    rel_l2: float | None = None
    cosine: float | None = None
    chosen_path: str | None = None  # the path "auto" ran
    weight_copies: int | None = None
    calls: int | None = None  # calls per graph (per timed sweep)
    rotation_mb: float | None = None  # weight bytes streamed between two uses of one copy (lower bound)


def _ordered(values: Iterable[Any]) -> list[Any]:
    """Distinct values in first-seen order."""
    return list(dict.fromkeys(values))


def _fmt(v: float | None, digits: int) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    return f"{v:.{digits}f}"


def _table(results: Sequence[CaseResult], value: Callable[[CaseResult], str], rows_of: Callable[[CaseResult], str],
           tokens: Sequence[int]) -> list[str]:
    cells = {(rows_of(r), r.tokens): value(r) for r in results}
    rows = _ordered(rows_of(r) for r in results)
    head = f"| {_HEADS[rows_of]} | "
    lines = [head + " | ".join(f"M={m}" for m in tokens) + " |", "|---" * (len(tokens) + 1) + "|"]
    for row in rows:
        lines.append(f"| {row} | " + " | ".join(cells.get((row, m), "") for m in tokens) + " |")
    return lines


def _row(r: CaseResult) -> str:
    return f"{r.shape} / {r.format} / {r.impl}"


def _group(r: CaseResult) -> str:
    return f"{r.shape} / {r.format}"


_HEADS = {_row: "shape / format / impl", _group: "shape / format"}


def chosen_vs_best(results: Sequence[CaseResult]) -> dict[tuple[str, str, int], str]:
    """For every (shape, format, M) with an "auto" row: the path auto chose, and when a forced
    path of ours was faster, which one and by how much (chosen time / best time)."""
    ok = [r for r in results if r.status == "ok" and r.us]
    out: dict[tuple[str, str, int], str] = {}
    for a in (r for r in ok if r.impl == "auto"):
        forced = {r.impl: r.us for r in ok if (r.shape, r.format, r.tokens) == (a.shape, a.format, a.tokens)
                  and r.impl != "auto" and r.impl not in PEERS}
        chosen = a.chosen_path or "?"
        if not forced:
            out[(a.shape, a.format, a.tokens)] = chosen
            continue
        best = min(forced, key=forced.get)
        ratio = forced.get(chosen, a.us) / forced[best]
        out[(a.shape, a.format, a.tokens)] = chosen if ratio <= 1.0 else f"{chosen} (best {best}, {ratio:.2f}x)"
    return out


def _header(meta: dict[str, Any]) -> list[str]:
    env = meta.get("environment", {})
    cpu = bool(meta.get("cpu_figures"))
    out = [f"# fusedmoe benchmark: {env.get('device', '?')}" + (" (CPU figures)" if cpu else ""), ""]
    if cpu:
        out += [f"**{CPU_NOTE}**", ""]
    for key in ("device", "driver", "torch", "cuda", "triton", "fusedmoe", "git_commit", "date", "command"):
        if env.get(key) is not None:
            out.append(f"- {key}: `{env[key]}`")
    bw = meta.get("copy_bandwidth_gbs")
    if bw:
        out.append(f"- measured copy bandwidth: {bw:.0f} GB/s (read+write)")
    s = meta.get("settings", {})
    if s:
        out.append("- settings: " + ", ".join(f"{k}={v}" for k, v in s.items()))
    out += [f"- shape {line}" for line in meta.get("shapes", [])]
    out += [f"- note: {line}" for line in meta.get("notes", [])]
    return out + ["", "Timing: " + meta.get("method", ""), ""]


def _remarks(results: Sequence[CaseResult]) -> list[str]:
    """Cases skipped, failed, or timed with a caveat: one line per (row, status, note)."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    for r in results:
        if r.status != "ok" or r.note:
            groups.setdefault((_row(r), r.status, r.note), []).append(r.tokens)
    return [f"- {row} M={','.join(map(str, ms))}: {status}: {note[:240]}"
            for (row, status, note), ms in groups.items()]


def sections(results: Sequence[CaseResult], cpu: bool = False) -> dict[str, list[str]]:
    """The report's tables as markdown lines, by key: us, eager, pct_floor, tflops, floor,
    auto, accuracy, remarks (empty tables are left out)."""
    ok = [r for r in results if r.status == "ok"]
    tokens = sorted({r.tokens for r in results})
    tag = " (CPU figures)" if cpu else ""
    choice = chosen_vs_best(results)
    specs = {
        "us": ("Time per call (us)", lambda r: _fmt(r.us, 1), _row, ok),
        "eager": ("Eager time per call (us), host path included", lambda r: _fmt(r.eager_us, 1), _row, ok),
        "pct_floor": ("Percent of the bandwidth floor (100 = at the floor)", lambda r: _fmt(r.pct_floor, 0), _row, ok),
        "tflops": ("Throughput (TFLOP/s, 2*R_held*3*H*I / time)", lambda r: _fmt(r.tflops, 0), _row, ok),
        "floor": ("Floor (us): active experts' bytes + x + out over the copy bandwidth",
                  lambda r: _fmt(r.floor_us, 1), _group, ok),
        "auto": ("auto: chosen path vs the fastest forced path",
                 lambda r: choice.get((r.shape, r.format, r.tokens), ""), _group, [r for r in ok if r.impl == "auto"]),
        "accuracy": ("Accuracy vs the float64 reference: rel-L2 % / cosine",
                     lambda r: "" if r.rel_l2 is None else f"{100 * r.rel_l2:.3f} / {r.cosine:.6f}", _row,
                     [r for r in ok if r.rel_l2 is not None]),
    }
    out = {key: [f"## {title}{tag}", ""] + _table(subset, fn, rows, tokens) + [""]
           for key, (title, fn, rows, subset) in specs.items() if subset}
    remarks = _remarks(results)
    if remarks:
        out["remarks"] = ["## Cases skipped, failed or timed with a caveat", ""] + remarks + [""]
    return out


def markdown(results: Sequence[CaseResult], meta: dict[str, Any], keys: Sequence[str] | None = None,
             header: bool = True) -> str:
    """The report as markdown: environment and method, then the tables of ``sections`` named
    by ``keys`` (all by default)."""
    parts = sections(results, bool(meta.get("cpu_figures")))
    lines = _header(meta) if header else []
    for key in (keys or parts):
        lines += parts.get(key, [])
    return "\n".join(lines)


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def write_json(path: str, results: Sequence[CaseResult], meta: dict[str, Any]) -> None:
    """Everything: meta (environment, settings, bandwidth, CPU flag) and every raw figure."""
    doc = dict(meta)
    if doc.get("cpu_figures"):
        doc["note"] = CPU_NOTE
    doc["results"] = [{k: _clean(v) for k, v in asdict(r).items()} for r in results]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def plot(out_dir: str, results: Sequence[CaseResult], cpu: bool, log: TextIO = sys.stderr) -> list[str]:
    """One PNG per (shape, format): latency vs tokens, log-log, a line per implementation,
    the floor dashed.  Returns the files written ([] without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no PNG plots (pip install 'fusedmoe[bench]')", file=log)
        return []
    files = []
    ok = [r for r in results if r.status == "ok" and r.us]
    for group in _ordered(_group(r) for r in ok):
        rs = [r for r in ok if _group(r) == group]
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for impl in _ordered(r.impl for r in rs):
            pts = sorted((r.tokens, r.us) for r in rs if r.impl == impl)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=impl)
        floor = sorted({r.tokens: r.floor_us for r in rs if r.floor_us}.items())
        if floor:
            ax.plot([p[0] for p in floor], [p[1] for p in floor], "k--", label="bandwidth floor")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("tokens (M)")
        ax.set_ylabel("time per call (us)")
        ax.set_title(group + (" (CPU figures)" if cpu else ""))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        path = os.path.join(out_dir, group.replace(" / ", "_") + ".png")
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
        files.append(path)
    return files


def write_report(out_dir: str, results: Sequence[CaseResult], meta: dict[str, Any],
                 log: TextIO = sys.stderr) -> list[str]:
    """Write results.md, results.json and the plots into ``out_dir``; returns the paths."""
    os.makedirs(out_dir, exist_ok=True)
    md = os.path.join(out_dir, "results.md")
    with open(md, "w", encoding="utf-8") as f:
        f.write(markdown(results, meta))
    js = os.path.join(out_dir, "results.json")
    write_json(js, results, meta)
    return [md, js] + plot(out_dir, results, bool(meta.get("cpu_figures")), log)


class Progress:
    """A one-line progress bar on a terminal; on a pipe, a line every 10% instead."""

    def __init__(self, total: int, stream: TextIO = sys.stderr, width: int = 30):
        self.total, self.done, self.stream, self.width = max(1, total), 0, stream, width
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self._last_tenth = -1

    def step(self, label: str = "") -> None:
        self.done += 1
        frac = min(1.0, self.done / self.total)
        if self.tty:
            bar = "#" * int(frac * self.width)
            self.stream.write(f"\r[{bar:<{self.width}}] {self.done}/{self.total} {label[:60]:<60}")
            if self.done >= self.total:
                self.stream.write("\n")
        elif int(frac * 10) > self._last_tenth:
            self._last_tenth = int(frac * 10)
            self.stream.write(f"progress {self.done}/{self.total} {label}\n")
        self.stream.flush()
