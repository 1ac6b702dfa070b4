"""``fusedmoe`` command line (also ``python -m fusedmoe``).

    fusedmoe bench (--shape NAME[,NAME..]|peers | --config config.json) [--tp N] [--ep N]
                   [--formats bf16,fp8_tensor] [--tokens 1,2,4,...] [--paths auto,grouped,...]
                   [--out DIR] [--calls N] [--replays N] [--routing model|softmax] [--no-check]
    fusedmoe info [--shape NAME | --config config.json] [--tp N] [--ep N] [--tokens ...] [--formats ...]
    fusedmoe demo [--tokens ...] [--formats ...]
    fusedmoe tune ...   (every argument after "tune" goes to fusedmoe.tune.main(list_of_str))
    fusedmoe check accuracy|graphs|sanitize [--out DIR]   (fusedmoe.check, on a GPU)
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from datetime import datetime
from typing import Sequence

from .weights import FORMATS

GPU_TOKENS = (1, 2, 4, 8, 16, 32, 64, 128, 512, 2048, 8192)  # the columns of PEERS-H200.md
CPU_TOKENS = (1, 2, 4)


def _split(arg: str, text: str | None) -> list[str]:
    items = [t.strip() for t in (text or "").split(",") if t.strip()]
    if not items:
        raise SystemExit(f"{arg}: expected a comma-separated list, got {text!r}")
    return items


def _ints(arg: str, text: str | None) -> list[int]:
    out = []
    for t in _split(arg, text):
        try:
            v = int(t)
        except ValueError:
            raise SystemExit(f"{arg}: {t!r} is not an integer") from None
        if v < 1:
            raise SystemExit(f"{arg}: expected integers >= 1, got {v}")
        out.append(v)
    return out


def _choices(arg: str, text: str | None, allowed: Sequence[str]) -> list[str]:
    items = _split(arg, text)
    for t in items:
        if t not in allowed:
            raise SystemExit(f"{arg}: {t!r} is not one of {', '.join(allowed)}")
    return items


def _shapes(args: argparse.Namespace) -> list:
    from .shapes import PEER_SHAPES, get_shape, shape_from_hf_config

    if args.config and args.shape:
        raise SystemExit("--shape/--config: give one of them, not both")
    try:
        if args.config:
            shapes = [shape_from_hf_config(args.config)]
        elif args.shape:
            names = [n for s in _split("--shape", args.shape) for n in (PEER_SHAPES if s == "peers" else [s])]
            shapes = [get_shape(n) for n in names]
        else:
            return []
        if args.tp != 1:
            shapes = [s.with_tp(args.tp) for s in shapes]
        if args.ep != 1:
            shapes = [s.with_ep(args.ep) for s in shapes]
    except (ValueError, TypeError, FileNotFoundError) as e:
        raise SystemExit(f"--shape/--config/--tp/--ep: {e}") from None
    return shapes


def _add_shape_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("shape")
    g.add_argument("--shape", help="preset name(s), comma-separated, or 'peers' for the five shapes of PEERS-H200.md")
    g.add_argument("--config", help="a Hugging Face config.json (or its directory)")
    g.add_argument("--tp", type=int, default=1, help="tensor-parallel ranks: divides the expert intermediate size")
    g.add_argument("--ep", type=int, default=1, help="expert-parallel ranks: this rank holds E/ep experts")


def _tokens(args: argparse.Namespace, default: list[int]) -> list[int]:
    """--tokens as given (an empty list is refused), else ``default``."""
    return _ints("--tokens", args.tokens) if args.tokens is not None else default


def _device_tokens(args: argparse.Namespace, device) -> list[int]:
    return _tokens(args, list(GPU_TOKENS if device.type == "cuda" else CPU_TOKENS))


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench.harness import Settings, default_device, our_paths, run_bench
    from .bench.peers import PEERS
    from .bench.report import markdown, write_report

    shapes = _shapes(args)
    if not shapes:
        raise SystemExit("bench: give --shape NAME (or 'peers') or --config config.json")
    device = default_device()
    impls_known = our_paths() + PEERS
    impls = _choices("--paths", args.paths, impls_known) if args.paths else list(impls_known)
    formats = _choices("--formats", args.formats, FORMATS)
    tokens = _device_tokens(args, device)
    try:
        settings = Settings.for_device(device, calls=args.calls, replays=args.replays, routing=args.routing,
                                       check=not args.no_check, seed=args.seed)
    except ValueError as e:
        raise SystemExit(f"bench: {e}") from None
    out_dir = args.out or os.path.join("out", datetime.now().strftime("bench-%Y%m%d-%H%M%S"))
    # A report after every shape: a run cut short (a time limit) still leaves its figures.
    results, meta = run_bench(shapes, formats, tokens, impls, settings, device,
                              checkpoint=lambda rs, m: write_report(out_dir, rs, m, log=io.StringIO()))
    files = write_report(out_dir, results, meta)
    print(markdown(results, meta, keys=("us", "pct_floor", "auto", "remarks"), header=False))
    print("written: " + ", ".join(files))
    failed = [r for r in results if r.status == "error" and r.impl not in PEERS]
    if failed:
        print(f"{len(failed)} case(s) of ours failed; see the remarks above", file=sys.stderr)
    return 1 if failed else 0


def _meta_weights(shape, fmt: str):
    """ExpertWeights on the meta device: the facts choose_path needs, no memory."""
    import torch

    from .weights import ExpertWeights

    e, h, i = shape.num_local_experts, shape.hidden_size, shape.intermediate_size
    return ExpertWeights.from_dense(torch.empty(e, 2 * i, h, device="meta", dtype=torch.bfloat16),
                                    torch.empty(e, h, i, device="meta", dtype=torch.bfloat16), fmt)


def cmd_info(args: argparse.Namespace) -> int:
    from .bench.harness import default_device, environment

    device = default_device()
    env = environment(device)
    for k, v in env.items():
        if k != "command" and v is not None:
            print(f"{k:>16}: {v}")
    if device.type != "cuda":
        print("no CUDA device: fused_moe runs its torch fallback on CPU tensors (or the Triton interpreter "
              "with TRITON_INTERPRET=1)")
    shapes = _shapes(args)
    if not shapes:
        return 0
    from . import api

    formats = _choices("--formats", args.formats, FORMATS)
    tokens = _tokens(args, list(GPU_TOKENS))
    for shape in shapes:
        print(f"\n{shape.describe()}")
        weights = {f: _meta_weights(shape, f) for f in formats}
        for f in formats:
            print(f"  {f}: what fused_moe(path='auto') runs")
            for m in tokens:
                line = api.describe_dispatch(m, shape.top_k, weights[f], device, shape.activation, shape.num_experts)
                print(f"  {m:>6}  {line}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .bench.harness import Settings, default_device, run_bench
    from ._runtime import interpreting
    from .bench.report import CPU_NOTE
    from .shapes import PRESETS

    device = default_device()
    cpu = device.type != "cuda"
    shape = PRESETS["qwen3_30b_a3b"]
    formats = _choices("--formats", args.formats, FORMATS)
    tokens = _tokens(args, [1, 2] if cpu else [1, 8, 64, 512, 4096])
    print(f"fused_moe on {shape.describe()}, {'CPU' if cpu else 'GPU'}: {device}")
    if cpu:
        print(CPU_NOTE)
    if cpu and interpreting():
        print("TRITON_INTERPRET=1: the kernels run in the interpreter; at this shape that takes very long")
    # On CPU one timed call per case: the torch fallback of a 1.2 GB layer is slow.
    settings = Settings.for_device(device, replays=1 if cpu else None)
    results, meta = run_bench([shape], formats, tokens, ["auto"], settings, device)
    print(f"copy bandwidth {meta['copy_bandwidth_gbs']:.0f} GB/s; time per call: "
          + ("wall-clock (CPU figures)" if cpu else "CUDA graph of rotated calls, median"))
    print(f"{'format':>11} {'M':>6} {'path':>13} {'us':>10} {'eager us':>10} {'% floor':>8} {'rel-L2 %':>9} "
          f"{'cosine':>9}")
    bad = 0
    for r in results:
        if r.status != "ok":
            bad += 1
            print(f"{r.format:>11} {r.tokens:>6}  {r.status}: {r.note}")
            continue
        print(f"{r.format:>11} {r.tokens:>6} {r.chosen_path or '?':>13} {r.us:>10.1f} {r.eager_us:>10.1f} "
              f"{r.pct_floor:>8.0f} {100 * r.rel_l2:>9.3f} {r.cosine:>9.6f}")
    return 1 if bad else 0


def cmd_tune(tune_args: Sequence[str]) -> int:
    """Hand the arguments after ``tune`` to ``fusedmoe.tune.main`` (it parses its own)."""
    try:
        from . import tune
    except ImportError as e:
        raise SystemExit(f"tune: fusedmoe.tune is not available ({e})") from None
    return int(tune.main(list(tune_args)) or 0)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fusedmoe", description="Fused MoE kernels for NVIDIA Hopper: "
                                "benchmarks, device info, a demo, tuning.")
    sub = p.add_subparsers(dest="command", required=True)

    b = sub.add_parser("bench", help="time fused_moe's paths and the torch peers against the bandwidth floor")
    _add_shape_args(b)
    b.add_argument("--formats", default="bf16,fp8_tensor", help=f"comma-separated, of {', '.join(FORMATS)}")
    b.add_argument("--tokens", help=f"comma-separated token counts (default GPU {','.join(map(str, GPU_TOKENS))}; "
                   f"CPU {','.join(map(str, CPU_TOKENS))})")
    b.add_argument("--paths", help="comma-separated: auto, fused_moe's paths, torch_grouped_mm, torch_naive "
                   "(default: all)")
    b.add_argument("--out", help="output directory (default out/bench-<date>)")
    b.add_argument("--calls", type=int, help="calls per CUDA graph (default 20; CPU 1)")
    b.add_argument("--replays", type=int, help="timed graph replays, median taken (default 20; CPU 2)")
    b.add_argument("--routing", choices=("model", "softmax"), default="model",
                   help="router: each shape's own scoring, or softmax+renormalise for all (PEERS-H200.md)")
    b.add_argument("--no-check", action="store_true", help="skip the accuracy check against the reference")
    b.add_argument("--seed", type=int, default=0)
    b.set_defaults(func=cmd_bench)

    i = sub.add_parser("info", help="device, versions, and the path fused_moe chooses for a shape")
    _add_shape_args(i)
    i.add_argument("--formats", default="bf16,fp8_tensor,fp8_block")
    i.add_argument("--tokens", help="token counts to show the chosen path for")
    i.set_defaults(func=cmd_info)

    d = sub.add_parser("demo", help="run fused_moe on the Qwen3-30B-A3B layer: accuracy and time")
    d.add_argument("--formats", default="bf16,fp8_tensor,fp8_block")
    d.add_argument("--tokens", help="token counts (default GPU 1,8,64,512,4096; CPU 1,2)")
    d.set_defaults(func=cmd_demo)

    # Listed for --help only: main() passes everything after "tune"/"check" to their modules untouched.
    sub.add_parser("tune", help="tune tile configs on this GPU (fusedmoe.tune; its own arguments)", add_help=False)
    sub.add_parser("check", help="GPU check: accuracy at real shapes, graph replay, sanitizer cases (fusedmoe.check)",
                   add_help=False)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["tune"]:
        return cmd_tune(argv[1:])
    if argv[:1] == ["check"]:
        from . import check

        return int(check.main(argv[1:]) or 0)
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
