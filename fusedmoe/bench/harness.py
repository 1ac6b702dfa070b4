"""Benchmark harness: inputs, accuracy check, timing, floor, for ours and the torch peers.

Method (the one PEERS-H200.md used):

- Copy bandwidth measured at start: a 1 GiB device-to-device copy, bytes read + written / time.
- Weights: randn * 0.02 times per-expert, per-row and per-column factors in [0.5, 2]; this
  rank's E/ep experts.  Routing: ``route`` on randn logits, with the shape's scoring (or the
  peers' softmax + renormalise with ``routing="softmax"``).  x: randn.
- Check: one call on a NaN-poisoned ``out``, first ``check_rows`` tokens against
  ``moe_reference`` (float64), rel-L2 and cosine.
- GPU timing: ``calls`` calls captured in one CUDA graph, call i on its own routing and on
  weight copy i % C, C chosen so that >= max(200 MB, 3 x L2) of other weights stream between
  two uses of one copy (capped by memory); median of ``replays`` replays / calls.  Eager: the
  same calls launched back to back (host path included), median of ``eager_replays`` sweeps.
- CPU (no CUDA device): fused_moe's torch fallback (or the Triton interpreter under
  TRITON_INTERPRET=1), wall-clock, one weight copy; every output says "CPU figures".
"""

from __future__ import annotations

import math
import os
import platform
import random
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from functools import partial
from importlib import metadata
from typing import Callable, Sequence, TextIO

import torch

from ..shapes import MoEShape
from . import floor as fl
from .peers import PEERS, get_peer, unsupported_reason
from .report import CaseResult, Progress

STREAM_BYTES = 200e6  # weights that must stream between two uses of one weight copy
DEFAULT_L2_BYTES = 60 * 2**20  # H200; used when the device does not report its L2 size
ROUTINGS = ("model", "softmax")


@dataclass
class Settings:
    """How much to time and check; ``for_device`` gives the defaults of a GPU or the CPU."""

    calls: int = 20
    replays: int = 20
    eager_replays: int = 5
    warmup: int = 2  # sweeps before timing (kernels are compiled by the checked call before)
    check: bool = True
    check_rows: int = 256
    routing: str = "model"
    seed: int = 0
    max_copies: int = 64
    memory_fraction: float = 0.5  # of free device memory the weight copies may take

    @classmethod
    def for_device(cls, device: torch.device, **overrides) -> "Settings":
        base = cls() if device.type == "cuda" else cls(calls=1, replays=2, eager_replays=1, warmup=0)
        for k, v in overrides.items():
            if v is not None:
                setattr(base, k, v)
        base.validate()
        return base

    def validate(self) -> None:
        for name in ("calls", "replays", "eager_replays", "check_rows", "max_copies"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name}: expected an int >= 1, got {v!r}")
        if isinstance(self.warmup, bool) or not isinstance(self.warmup, int) or self.warmup < 0:
            raise ValueError(f"warmup: expected an int >= 0, got {self.warmup!r}")
        if self.routing not in ROUTINGS:
            raise ValueError(f"routing: expected one of {list(ROUTINGS)}, got {self.routing!r}")
        if not 0 < self.memory_fraction <= 1:
            raise ValueError(f"memory_fraction: expected a value in (0, 1], got {self.memory_fraction}")


def default_device() -> torch.device:
    """The current CUDA device, else the CPU."""
    return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")


def our_paths() -> tuple[str, ...]:
    """"auto" and every path of fusedmoe.api (imported here: the API may be newer than this module)."""
    from ..api import PATHS

    return ("auto",) + tuple(PATHS)


# ---- environment --------------------------------------------------------------------------------

def _run(cmd: Sequence[str], cwd: str | None = None) -> str | None:
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def environment(device: torch.device) -> dict:
    """Device, driver, versions, git commit, date and command line, for reports."""
    import triton

    import fusedmoe

    env: dict = {}
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        env["device"] = p.name
        env["capability"] = f"sm_{p.major}{p.minor}"
        env["sms"] = p.multi_processor_count
        env["memory_gib"] = round(p.total_memory / 2**30, 1)
        env["driver"] = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader",
                              f"--id={device.index or 0}"])
    else:
        env["device"] = f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"
    env["torch"] = torch.__version__
    env["cuda"] = torch.version.cuda
    env["triton"] = triton.__version__
    try:
        env["fusedmoe"] = metadata.version("fusedmoe")
    except metadata.PackageNotFoundError:
        env["fusedmoe"] = "not installed (source tree)"
    repo = os.path.dirname(os.path.dirname(os.path.abspath(fusedmoe.__file__)))
    commit = _run(["git", "rev-parse", "HEAD"], cwd=repo)
    if commit:
        dirty = _run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo)
        env["git_commit"] = commit + (" (modified)" if dirty else "")
    env["triton_interpret"] = os.environ.get("TRITON_INTERPRET", "0")
    env["date"] = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    prog = sys.argv[0] if sys.argv else ""
    if prog.endswith(os.path.join("fusedmoe", "__main__.py")):
        prog = "python -m fusedmoe"
    env["command"] = " ".join([prog] + [shlex.quote(a) for a in sys.argv[1:]])
    return env


# ---- inputs -------------------------------------------------------------------------------------

def measure_copy_bandwidth(device: torch.device) -> float:
    """Copy bandwidth in bytes/s (read + write) of a large copy on ``device``."""
    if device.type == "cuda":
        n = min(2**30, torch.cuda.mem_get_info(device)[0] // 8)
        src = torch.empty(n, dtype=torch.uint8, device=device)
        dst = torch.empty_like(src)
        for _ in range(3):
            dst.copy_(src)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        reps = 10
        start.record()
        for _ in range(reps):
            dst.copy_(src)
        end.record()
        end.synchronize()
        return 2 * n * reps / (start.elapsed_time(end) * 1e-3)
    n = 64 * 2**20
    src = torch.ones(n, dtype=torch.uint8)
    dst = torch.empty_like(src)
    dst.copy_(src)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        dst.copy_(src)
        times.append(time.perf_counter() - t0)
    return 2 * n / statistics.median(times)


def _random_experts(e: int, n: int, k: int, gen: torch.Generator, rng: random.Random,
                    device: torch.device) -> torch.Tensor:
    """[e, n, k] bf16: randn * 0.02 * f_expert * f_row * f_col, factors in [0.5, 2].

    Each expert is a window of one shared randn pool at a random offset, scaled in place in
    bf16: drawing E*n*k normals and scaling in fp32 costs seconds per GB on a CPU, and no
    check or timing depends on experts being independent draws."""
    numel = n * k
    spread = min(numel, 1 << 20)
    pool = torch.randn(numel + spread, generator=gen, device=device).to(torch.bfloat16)
    fac = lambda *s: torch.exp2(torch.rand(*s, generator=gen, device=device) * 2 - 1)  # noqa: E731
    f_r = (fac(e, n, 1) * fac(e, 1, 1) * 0.02).to(torch.bfloat16)
    f_c = fac(e, 1, k).to(torch.bfloat16)
    out = torch.empty(e, n, k, dtype=torch.bfloat16, device=device)
    for i in range(e):
        o = rng.randrange(spread + 1)
        torch.mul(pool[o:o + numel].view(n, k), f_r[i], out=out[i])
        out[i].mul_(f_c[i])
    return out


def random_weights(shape: MoEShape, device: torch.device, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Dense bf16 weights of this rank's experts: w13 [E_local, 2I, H], w2 [E_local, H, I]."""
    gen = torch.Generator(device=device).manual_seed(seed)
    rng = random.Random(seed)
    e, h, i = shape.num_local_experts, shape.hidden_size, shape.intermediate_size
    return _random_experts(e, 2 * i, h, gen, rng, device), _random_experts(e, h, i, gen, rng, device)


def random_routing(shape: MoEShape, tokens: int, gen: torch.Generator, routing: str = "model"
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """(topk_weights [M, k] fp32, topk_ids [M, k] int32) from randn router logits over all E."""
    from ..routing import route

    logits = torch.randn(tokens, shape.num_experts, generator=gen, device=gen.device)
    if routing == "softmax":
        return route(logits, shape.top_k, scoring="softmax", renormalize=True)
    return route(logits, shape.top_k, scoring=shape.scoring, renormalize=shape.renormalize,
                 n_groups=shape.n_groups, topk_groups=shape.topk_groups, routed_scaling=shape.routed_scaling)


def expected_active_experts(shape: MoEShape, tokens: int) -> float:
    """Expected distinct local experts hit by ``tokens`` independent tokens of top_k picks."""
    return shape.num_local_experts * (1 - (1 - shape.top_k / shape.num_experts) ** tokens)


def copies_needed(active_bytes: float, target: float) -> int:
    """Weight copies rotated round-robin so that >= ``target`` bytes of the other copies stream
    between two uses of one copy, each call touching ``active_bytes``; at least 2, so that two
    consecutive calls never share an expert's weights."""
    return max(2, 1 + math.ceil(target / max(active_bytes, 1.0)))


# ---- timing -------------------------------------------------------------------------------------

def _time_cpu(calls: Sequence[Callable], s: Settings) -> float:
    for _ in range(s.warmup):
        for c in calls:
            c()
    times = []
    for _ in range(s.replays):
        t0 = time.perf_counter()
        for c in calls:
            c()
        times.append((time.perf_counter() - t0) * 1e6 / len(calls))
    return statistics.median(times)


def _time_events(run: Callable[[], None], reps: int, per: int) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / per)
    return statistics.median(times)


def _time_cuda(calls: Sequence[Callable], s: Settings, capturable: bool) -> tuple[float | None, float, str]:
    """(graph us per call or None, eager us per call, note)."""
    def sweep():
        for c in calls:
            c()

    for _ in range(s.warmup):
        sweep()
    eager = _time_events(sweep, s.eager_replays, len(calls))
    if not capturable:
        return None, eager, ""
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            sweep()
    except Exception as e:  # a path that syncs or allocates on the host fails here: report eager
        torch.cuda.synchronize()
        return None, eager, f"graph capture failed ({type(e).__name__}: {str(e).splitlines()[0][:200]}); eager time"
    for _ in range(s.warmup):
        graph.replay()
    us = _time_events(graph.replay, s.replays, len(calls))
    del graph
    return us, eager, ""


def graph_us(fn: Callable[[], object], calls: int = 50, replays: int = 20) -> float:
    """us per call of ``fn`` (a small, L2-resident kernel): ``calls`` calls captured in one CUDA
    graph, median over ``replays`` replays."""
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    return _time_events(graph.replay, replays, calls)


# ---- cases --------------------------------------------------------------------------------------

def _runner(impl: str, fmt: str, tokens: int, shape: MoEShape, weights, device: torch.device):
    """(fn(x, weights, topk_weights, topk_ids, out=None, check_ids=False) -> out, whether the
    reference quantises activations, capturable, the path auto chose or None).  Timed calls skip
    fused_moe's id range check (one host sync per call); the checked call keeps it.  Peers
    ignore ``out`` and ``check_ids``."""
    if impl in PEERS:
        peer = get_peer(impl)
        return (lambda x, w, tw, ids, out=None, check_ids=False: peer(x, w, tw, ids, 0, shape.num_experts)), False, \
            impl != "torch_naive", None
    from .. import api

    activation = layer_activation(shape)

    def fn(x, w, tw, ids, out=None, check_ids=False):
        return api.fused_moe(x, w, tw, ids, num_local_experts=w.num_experts, num_experts=shape.num_experts,
                             out=out, path=impl, check_ids=check_ids, activation=activation)

    chosen = api.choose_path(tokens, shape.top_k, weights, device) if impl == "auto" else None
    return fn, api.path_quantizes_activations(chosen or impl, fmt), True, chosen


@dataclass
class _Inputs:
    """One (shape, format, M): the rotated weight copies, x, the routings, the floor figures."""

    copies: list
    x: torch.Tensor
    routings: list
    floor: dict
    refs: dict


def _prepare(shape: MoEShape, fmt: str, tokens: int, copies: list, s: Settings, device: torch.device,
             bandwidth: float, target: float) -> _Inputs:
    gen = torch.Generator(device=device).manual_seed(s.seed * 1_000_003 + tokens)
    w0 = copies[0]
    e_bytes = w0.expert_nbytes
    if device.type == "cuda":
        est = expected_active_experts(shape, tokens) * e_bytes
        n_copies = min(len(copies), copies_needed(est, target))
        n_calls = n_copies * math.ceil(s.calls / n_copies)
    else:
        n_copies, n_calls = 1, s.calls
    routings = [random_routing(shape, tokens, gen, s.routing) for _ in range(n_calls)]
    counts = [fl.count_routes(ids, 0, w0.num_experts) for _, ids in routings]
    active = statistics.fmean(c.active_experts for c in counts)
    held = statistics.fmean(c.held_routes for c in counts)
    act_dtype = torch.float16 if fmt == "fp16" else torch.bfloat16
    nbytes = fl.moved_bytes(active, e_bytes, tokens, shape.hidden_size)
    flops = fl.layer_flops(held, shape.hidden_size, shape.intermediate_size)
    floor = dict(bytes=nbytes, flops=flops, active_experts=active, floor_us=fl.floor_us(nbytes, bandwidth),
                 weight_copies=n_copies, calls=n_calls,
                 rotation_mb=(n_copies - 1) * active * e_bytes / 1e6 if device.type == "cuda" else None)
    x = torch.randn(tokens, shape.hidden_size, generator=gen, device=device).to(act_dtype)
    return _Inputs(copies[:n_copies], x, routings, floor, {})


def layer_activation(shape: MoEShape) -> str:
    """The activation fused_moe runs for ``shape``: its own where fused_moe has it, else SiLU."""
    from ..epilogue import ACTIVATIONS

    return shape.activation if shape.activation in ACTIVATIONS else "silu"


def _reference(inp: _Inputs, rows: int, quantize: bool, activation: str = "silu") -> torch.Tensor:
    from ..reference import moe_reference

    if (quantize, activation) not in inp.refs:
        tw, ids = inp.routings[0]
        inp.refs[quantize, activation] = moe_reference(inp.x[:rows], inp.copies[0], tw[:rows], ids[:rows],
                                                       quantize_activations=quantize, activation=activation)
    return inp.refs[quantize, activation]


def run_case(shape: MoEShape, fmt: str, impl: str, inp: _Inputs, s: Settings, device: torch.device) -> CaseResult:
    """Check and time one implementation on prepared inputs; errors are recorded, not raised."""
    tokens = inp.x.shape[0]
    res = CaseResult(shape.name, fmt, impl, tokens, **inp.floor)
    if impl in PEERS:
        reason = unsupported_reason(impl, fmt, device)
        if reason:
            res.status, res.note = "skipped", reason
            return res
    try:
        fn, quantize, capturable, res.chosen_path = _runner(impl, fmt, tokens, shape, inp.copies[0], device)
        if s.check:
            from ..reference import cosine, rel_l2

            tw, ids = inp.routings[0]
            out = fn(inp.x, inp.copies[0], tw, ids, torch.full_like(inp.x, float("nan")), check_ids=True)
            rows = min(tokens, s.check_rows)
            ref = _reference(inp, rows, quantize, "silu" if impl in PEERS else layer_activation(shape))
            res.rel_l2, res.cosine = rel_l2(out[:rows], ref), cosine(out[:rows], ref)
        calls = [partial(fn, inp.x, inp.copies[i % len(inp.copies)], tw, ids)
                 for i, (tw, ids) in enumerate(inp.routings)]
        if device.type == "cuda":
            res.us, res.eager_us, res.note = _time_cuda(calls, s, capturable)
            res.timing = "graph" if res.us is not None else "eager"
            if res.us is None:
                res.us = res.eager_us
        else:
            res.us = res.eager_us = _time_cpu(calls, s)
            res.timing = "cpu"
    except Exception as e:  # one failing case must not end the sweep: record it
        res.status, res.note = "error", f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
        if device.type == "cuda":
            try:
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
            except RuntimeError:  # a broken context fails every later case too; they get recorded
                pass
        return res
    res.pct_floor = fl.percent_of_floor(res.us, res.floor_us)
    res.tflops = fl.tflops(res.flops, res.us)
    res.gbps = fl.gbps(res.bytes, res.us)
    return res


def _build_copies(base, shape: MoEShape, tokens: Sequence[int], s: Settings, device: torch.device,
                  target: float) -> list:
    """The base weights plus clones: as many as the smallest M needs, capped by memory and
    ``max_copies``; a single copy on CPU (no cache to defeat)."""
    if device.type != "cuda":
        return [base]
    total = base.num_experts * base.expert_nbytes
    want = copies_needed(expected_active_experts(shape, min(tokens)) * base.expert_nbytes, target)
    fit = 1 + int(torch.cuda.mem_get_info(device)[0] * s.memory_fraction // max(total, 1))
    copies = [base]
    while len(copies) < min(want, fit, s.max_copies):
        copies.append(base.clone())
    return copies


def case_inputs(shape: MoEShape, fmt: str, tokens: int, s: Settings, device: torch.device, bandwidth: float,
                target: float) -> _Inputs:
    """One (shape, format, M) case's inputs as ``bench_shape`` builds them (the seed's weights in
    ``fmt``, copies rotated past ``target`` bytes, routings, x, the floor), for the probes in
    scripts/ that time a case their own way."""
    from ..weights import ExpertWeights

    dense = random_weights(shape, device, s.seed)
    copies = _build_copies(ExpertWeights.from_dense(*dense, fmt), shape, [tokens], s, device, target)
    del dense
    return _prepare(shape, fmt, tokens, copies, s, device, bandwidth, target)


def bench_shape(shape: MoEShape, formats: Sequence[str], tokens: Sequence[int], impls: Sequence[str],
                s: Settings, device: torch.device, bandwidth: float,
                progress: Progress | None = None) -> list[CaseResult]:
    """Every (format, M, impl) case of one shape, in that nesting order."""
    from ..weights import ExpertWeights

    results: list[CaseResult] = []
    l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) if device.type == "cuda" else 0
    target = max(STREAM_BYTES, 3 * (l2 or DEFAULT_L2_BYTES))
    dense = random_weights(shape, device, s.seed)
    for fmt in formats:
        try:
            copies = _build_copies(ExpertWeights.from_dense(*dense, fmt), shape, tokens, s, device, target)
        except (ValueError, TypeError, RuntimeError) as e:
            for m in tokens:
                for impl in impls:
                    results.append(CaseResult(shape.name, fmt, impl, m, status="skipped", note=f"weights: {e}"))
                    if progress:
                        progress.step(f"{shape.name} {fmt} skipped")
            continue
        for m in tokens:
            inp = _prepare(shape, fmt, m, copies, s, device, bandwidth, target)
            for impl in impls:
                results.append(run_case(shape, fmt, impl, inp, s, device))
                if progress:
                    progress.step(f"{shape.name} {fmt} M={m} {impl}")
            del inp
        del copies
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return results


def method_text(s: Settings, device: torch.device) -> str:
    """One paragraph saying how the figures were taken."""
    if device.type != "cuda":
        from .._runtime import interpreting

        how = "Triton kernels in the CPU interpreter" if interpreting() else "its torch fallback"
        return (f"CPU figures: wall-clock (time.perf_counter), median of {s.replays} sweep(s) of {s.calls} call(s), "
                f"each call on its own routing; fused_moe ran {how}.")
    return (f"{s.calls} calls (rounded up to a multiple of the weight copies) captured in one CUDA graph, each "
            f"call on its own routing and on weight copy i % C, C chosen so that >= max(200 MB, 3 x L2) of other "
            f"weights stream between two uses of a copy (capped by memory); median of {s.replays} replays / calls. "
            f"Eager: the same calls launched back to back, median of {s.eager_replays} sweeps. Timed fused_moe "
            f"calls pass check_ids=False (its id check syncs with the host). torch_naive is "
            f"timed eagerly. Floor = (active experts' weights + scales + x + out) / copy bandwidth. Routing: "
            + ("softmax top-k, renormalised (as PEERS-H200.md)." if s.routing == "softmax"
               else "each shape's own scoring (route())."))


def run_bench(shapes: Sequence[MoEShape], formats: Sequence[str], tokens: Sequence[int], impls: Sequence[str],
              settings: Settings | None = None, device: torch.device | None = None,
              log: TextIO = sys.stderr,
              checkpoint: Callable[[list[CaseResult], dict], None] | None = None) -> tuple[list[CaseResult], dict]:
    """Run every case; returns (results, meta) for :func:`fusedmoe.bench.report.write_report`.
    ``checkpoint(results_so_far, meta)`` is called after each shape (to save partial reports)."""
    device = device or default_device()
    s = settings or Settings.for_device(device)
    s.validate()
    known = our_paths() + PEERS
    for impl in impls:
        if impl not in known:
            raise ValueError(f"impls: {impl!r} is not one of {list(known)}")
    for m in tokens:
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise ValueError(f"tokens: expected ints >= 1, got {m!r}")
    cpu = device.type != "cuda"
    if cpu:
        print(method_text(s, device), file=log)
    bandwidth = measure_copy_bandwidth(device)
    notes = [f"{sh.name}: timed the SiLU-gated layer (fused_moe has no {sh.activation!r} activation); "
             f"bytes and FLOPs are the same" for sh in shapes if layer_activation(sh) != sh.activation]
    notes += [f"{sh.name}: the torch peers compute the SiLU-gated layer, fused_moe {sh.activation!r}; "
              f"bytes and FLOPs are the same" for sh in shapes if layer_activation(sh) != "silu"]
    meta = dict(environment=environment(device), cpu_figures=cpu, copy_bandwidth_gbs=bandwidth / 1e9,
                settings=asdict(s), method=method_text(s, device), shapes=[sh.describe() for sh in shapes],
                notes=notes)
    for n in notes:
        print(n, file=log)
    progress = Progress(len(shapes) * len(formats) * len(tokens) * len(impls), log)
    results: list[CaseResult] = []
    for sh in shapes:
        results += bench_shape(sh, formats, tokens, impls, s, device, bandwidth, progress)
        if checkpoint:
            checkpoint(results, meta)
    return results, meta
