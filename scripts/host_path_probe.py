"""Probe: what one eager fused_moe call costs on the host, and where that time goes.

For a few layers (Qwen3-30B-A3B's shape at M=1 on route-direct, M=64 grouped; bf16 and
fp8_tensor) it measures, on a CUDA GPU:

- ``graph``: the bench's CUDA-graph time per call (20 calls captured, median of replays);
- ``eager``: the same 20 calls launched back to back, events around them (the bench's eager
  figure; check_ids=False as the bench times it) and with the default check_ids=True;
- ``host``: wall-clock time of the Python call alone, per call, the GPU kept busy by a long
  kernel queued first (so no call waits for the device; a call that syncs shows it);
- a cProfile of 200 eager calls (check_ids=False): the functions the host time is spent in.

    python scripts/host_path_probe.py --out R/host_probe        # needs a CUDA GPU

Writes ``R/host_probe.md`` (table + profiles) and ``R/host_probe.json``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fusedmoe import api, shapes  # noqa: E402
from fusedmoe.bench import harness  # noqa: E402
from fusedmoe.weights import ExpertWeights  # noqa: E402

CASES = (("qwen3_30b_a3b", "fp8_tensor", 1), ("qwen3_30b_a3b", "bf16", 1), ("qwen3_30b_a3b", "fp8_block", 1),
         ("qwen3_30b_a3b", "fp8_tensor", 64), ("qwen3_30b_a3b", "bf16", 64))


def _busy(ms: float = 30.0) -> None:
    """Queue about ``ms`` of device work, so that host timings after it never wait on the GPU."""
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    t = time.perf_counter()
    a @ a
    torch.cuda.synchronize()
    one = max(time.perf_counter() - t, 1e-5)
    for _ in range(int(ms / 1e3 / one) + 1):
        a @ a


def _host_us(call, n: int = 200, sweeps: int = 9) -> float:
    """Median host wall time per call over ``sweeps`` sweeps of ``n`` calls, the device kept busy."""
    times = []
    for _ in range(sweeps):
        torch.cuda.synchronize()
        _busy()
        t = time.perf_counter()
        for _ in range(n):
            call()
        times.append((time.perf_counter() - t) * 1e6 / n)
    torch.cuda.synchronize()
    return statistics.median(times)


def _profile(call, n: int = 200, top: int = 28) -> str:
    torch.cuda.synchronize()
    _busy()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        call()
    prof.disable()
    torch.cuda.synchronize()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(top)
    return buf.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--cases", default=None, help="shape:format:M,... (default: the built-in five)")
    args = ap.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    cases = CASES if args.cases is None else [
        (c.split(":")[0], c.split(":")[1], int(c.split(":")[2])) for c in args.cases.split(",")]
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(0)
    rows, profiles = [], []
    for name, fmt, m in cases:
        shape = shapes.get_shape(name)
        e, h, i, k = shape.num_experts, shape.hidden_size, shape.intermediate_size, shape.top_k
        w13 = torch.randn(e, 2 * i, h, device=dev, dtype=torch.bfloat16, generator=gen) * 0.02
        w2 = torch.randn(e, h, i, device=dev, dtype=torch.bfloat16, generator=gen) * 0.02
        weights = ExpertWeights.from_dense(w13, w2, format=fmt)
        del w13, w2
        x = torch.randn(m, h, device=dev, dtype=torch.bfloat16, generator=gen)
        tw, ids = harness.random_routing(shape, m, gen, "softmax")
        out_buf = torch.empty_like(x)

        def call(check_ids=False):
            return api.fused_moe(x, weights, tw, ids, out=out_buf, check_ids=check_ids)

        call(True)
        torch.cuda.synchronize()
        calls = [call] * 20
        s = harness.Settings.for_device(dev, replays=20, eager_replays=5)
        graph_us, eager_us, _ = harness._time_cuda(calls, s, True)
        _, eager_checked_us, _ = harness._time_cuda([lambda: call(True)] * 20, s, False)
        row = dict(shape=name, format=fmt, tokens=m, path=api.choose_path(m, k, weights, dev),
                   graph_us=graph_us, eager_us=eager_us, eager_checked_us=eager_checked_us,
                   host_us=_host_us(call), host_checked_us=_host_us(lambda: call(True)))
        rows.append(row)
        print(row, flush=True)
        profiles.append((f"{name} {fmt} M={m} ({row['path']})", _profile(call)))
        del weights
        torch.cuda.empty_cache()
    env = dict(torch=torch.__version__, triton=__import__("triton").__version__, device=torch.cuda.get_device_name(),
               date=time.strftime("%Y-%m-%d"))
    (out.with_suffix(".json")).write_text(json.dumps(dict(env=env, rows=rows), indent=1))
    lines = [f"# Host path of one fused_moe call ({env['device']}, torch {env['torch']}, Triton {env['triton']}, "
             f"{env['date']})", "", "    python scripts/host_path_probe.py --out " + str(out), "",
             "| shape | format | M | path | graph us | eager us | eager, check_ids us | host us | host, check_ids us |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['shape']} | {r['format']} | {r['tokens']} | {r['path']} | {r['graph_us']:.1f} | "
                     f"{r['eager_us']:.1f} | {r['eager_checked_us']:.1f} | {r['host_us']:.1f} | "
                     f"{r['host_checked_us']:.1f} |")
    for title, text in profiles:
        lines += ["", f"## cProfile, 200 calls: {title}", "", "```", text.strip(), "```"]
    (out.with_suffix(".md")).write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:6 + len(rows)]))


if __name__ == "__main__":
    main()
