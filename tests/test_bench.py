"""Benchmark pieces: floor arithmetic, the torch peers, reports, settings, and a CPU smoke run
of ``fusedmoe bench`` / ``info`` / ``demo``-style calls on a tiny shape."""

import io
import json
import math

import pytest
import torch

from fusedmoe.bench import floor as fl
from fusedmoe.bench import harness, peers, report
from fusedmoe.bench.report import CaseResult
from fusedmoe.reference import cosine, moe_reference, rel_l2
from fusedmoe.weights import ExpertWeights

# ---- floor ----------------------------------------------------------------------------------


def test_count_routes_distinct_and_window():
    ids = torch.tensor([[0, 3], [3, -1], [5, 7], [2, 3]], dtype=torch.int32)
    assert fl.count_routes(ids) == fl.RouteCounts(active_experts=5, held_routes=7)  # all ids >= 0
    # EP window [2, 6): experts 2, 3, 5 held; routes 3, 3, 5, 2, 3 -> 5 held routes
    assert fl.count_routes(ids, expert_offset=2, num_local_experts=4) == fl.RouteCounts(3, 5)
    assert fl.count_routes(torch.full((2, 2), -1, dtype=torch.int32)) == fl.RouteCounts(0, 0)
    with pytest.raises(ValueError, match="topk_ids"):
        fl.count_routes(torch.zeros(4, dtype=torch.int32))


def test_floor_of_peer_figures():
    # PEERS-H200.md: qwen3_30b_a3b at M=1 (8 distinct experts), 4254 GB/s -> 17.8 us bf16, 8.9 us fp8_tensor.
    h, i = 2048, 768
    bf16_expert = 3 * h * i * 2
    b = fl.moved_bytes(8, bf16_expert, tokens=1, hidden=h)
    assert b == 8 * 9437184 + 2 * 2048 * 2
    assert fl.floor_us(b, 4254e9) == pytest.approx(17.8, abs=0.06)
    fp8_expert = 3 * h * i + 2 * 4  # e4m3 weights + one fp32 scale per matrix
    assert round(fl.floor_us(fl.moved_bytes(8, fp8_expert, 1, h), 4254e9), 1) == 8.9


def test_floor_arithmetic_by_hand():
    assert fl.moved_bytes(3, 100, tokens=4, hidden=10) == 300 + 80 + 80
    assert fl.moved_bytes(3, 100, tokens=4, hidden=10, shared=True) == 300 + 80 + 80 + 80
    assert fl.layer_flops(16, 64, 32) == 2 * 16 * 3 * 64 * 32
    assert fl.floor_us(4e6, 4e12) == pytest.approx(1.0)
    assert fl.percent_of_floor(20.0, 5.0) == pytest.approx(25.0)
    assert fl.tflops(2e12, 1e6) == pytest.approx(2.0)
    assert fl.gbps(1e9, 1e6) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="bandwidth"):
        fl.floor_us(1.0, 0.0)
    with pytest.raises(ValueError, match="active_experts"):
        fl.moved_bytes(-1, 1, 1, 1)


def test_weight_copy_rotation():
    # 19 MB per call (hunyuan fp8, M=1) needs 1 + ceil(200/19) copies; big calls still alternate 2.
    assert harness.copies_needed(19e6, 200e6) == 12
    assert harness.copies_needed(500e6, 200e6) == 2
    assert harness.copies_needed(0.0, 200e6) > 1000  # no active bytes: the cap decides
    from fusedmoe.shapes import PRESETS

    q = PRESETS["qwen3_30b_a3b"]
    assert harness.expected_active_experts(q, 1) == pytest.approx(8.0)
    assert harness.expected_active_experts(q.with_ep(4), 1) == pytest.approx(2.0)
    assert 127 < harness.expected_active_experts(q, 4096) <= 128


# ---- peers ----------------------------------------------------------------------------------


@pytest.mark.parametrize("peer", peers.PEERS)
@pytest.mark.parametrize("offset, e_local", [(0, 6), (2, 3)])  # all experts here; an EP window of 3
def test_peers_match_reference(peer, offset, e_local):
    m, k, h, i, e_global = 7, 2, 64, 32, 6
    w13 = torch.randn(e_local, 2 * i, h) * 0.1
    w2 = torch.randn(e_local, h, i) * 0.1
    w = ExpertWeights.from_dense(w13, w2, "bf16")
    x = torch.randn(m, h).bfloat16()
    ids = torch.rand(m, e_global).argsort(dim=1)[:, :k].to(torch.int32)
    ids[0, 1] = -1  # a dropped route
    tw = torch.rand(m, k)
    for num_experts in (None, e_global):  # the window unknown, or known
        out = peers.get_peer(peer)(x, w, tw, ids, offset, num_experts)
        ref = moe_reference(x, w, tw, ids, expert_offset=offset)
        assert out.shape == (m, h) and out.dtype == torch.bfloat16
        assert rel_l2(out, ref) < 2e-2 and cosine(out, ref) > 0.999


@pytest.mark.parametrize("peer", peers.PEERS)
def test_peers_give_zero_rows_for_dropped_routes_whatever_x_holds(peer):
    m, k, h, i, e = 4, 2, 32, 16, 4
    w = ExpertWeights.from_dense(torch.randn(e, 2 * i, h) * 0.1, torch.randn(e, h, i) * 0.1, "bf16")
    x = torch.randn(m, h).bfloat16()
    x[1] = float("nan")
    x[2] = float("inf")
    ids = torch.tensor([[0, 1], [-1, -1], [-1, -1], [2, 3]], dtype=torch.int32)
    tw = torch.rand(m, k)
    out = peers.get_peer(peer)(x, w, tw, ids, 0, e)
    assert torch.equal(out[1:3], torch.zeros(2, h, dtype=out.dtype))
    assert torch.isfinite(out).all()
    empty = peers.get_peer(peer)(x[:0], w, tw[:0], ids[:0], 0, e)
    assert empty.shape == (0, h)


def test_peer_support():
    cpu = torch.device("cpu")
    assert peers.unsupported_reason("torch_naive", "bf16", cpu) is None
    assert "bf16" in peers.unsupported_reason("torch_naive", "fp8_block", cpu)
    assert "CUDA" in peers.unsupported_reason("torch_grouped_mm", "fp8_tensor", cpu)
    with pytest.raises(ValueError, match="peer"):
        peers.unsupported_reason("vllm", "bf16", cpu)


# ---- report ---------------------------------------------------------------------------------


def _fake_results():
    rs = []
    for m, (rd, gr) in {1: (10.0, 20.0), 64: (80.0, 40.0)}.items():
        common = dict(floor_us=8.0, bytes=8e6, flops=1e9, active_experts=8.0, rel_l2=1e-3, cosine=0.99999)
        rs.append(CaseResult("s", "bf16", "auto", m, us=min(rd, gr) * 1.1, eager_us=50.0, pct_floor=50.0,
                             tflops=1.0, chosen_path="route_direct", **common))
        rs.append(CaseResult("s", "bf16", "route_direct", m, us=rd, eager_us=45.0, pct_floor=80.0, **common))
        rs.append(CaseResult("s", "bf16", "grouped", m, us=gr, eager_us=60.0, pct_floor=40.0, **common))
        rs.append(CaseResult("s", "bf16", "torch_grouped_mm", m, us=5.0, pct_floor=100.0, **common))
        rs.append(CaseResult("s", "fp8_block", "torch_naive", m, status="skipped", note="torch_naive runs only bf16"))
    rs.append(CaseResult("s", "bf16", "torch_naive", 64, us=float("nan"), note="graph capture failed; eager time"))
    return rs


def _meta(cpu):
    return dict(environment={"device": "NVIDIA H200", "torch": "2.11", "command": "fusedmoe bench"}, cpu_figures=cpu,
                copy_bandwidth_gbs=4254.0, settings={"calls": 20}, method="graph", shapes=["s: E=8"], notes=[])


def test_chosen_vs_best():
    choice = report.chosen_vs_best(_fake_results())
    assert choice[("s", "bf16", 1)] == "route_direct"  # auto chose the fastest of our paths
    # at M=64 grouped was 2x faster; peers (torch_grouped_mm) are not candidates
    assert choice[("s", "bf16", 64)] == "route_direct (best grouped, 2.00x)"


@pytest.mark.parametrize("cpu", [False, True])
def test_markdown_and_json(tmp_path, cpu):
    files = report.write_report(str(tmp_path), _fake_results(), _meta(cpu), log=io.StringIO())
    md = (tmp_path / "results.md").read_text()
    assert str(tmp_path / "results.md") in files and str(tmp_path / "results.json") in files
    assert "| s / bf16 / route_direct | 10.0 | 80.0 |" in md  # us table: rows impl, columns M
    assert "| s / bf16 / grouped | 40 | 40 |" in md  # % floor table
    assert "| s / bf16 | route_direct | route_direct (best grouped, 2.00x) |" in md
    assert "| shape / format / impl | M=1 | M=64 |" in md
    assert "s / fp8_block / torch_naive M=1,64: skipped: torch_naive runs only bf16" in md
    assert "graph capture failed" in md
    assert ("CPU figures" in md) == cpu
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["environment"]["device"] == "NVIDIA H200" and doc["copy_bandwidth_gbs"] == 4254.0
    assert len(doc["results"]) == len(_fake_results())
    assert doc["results"][-1]["us"] is None  # NaN is written as null, keeping the JSON valid
    assert ("CPU figures" in doc.get("note", "")) == cpu


def test_plot_without_matplotlib(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_mpl(name, *a, **kw):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", no_mpl)
    log = io.StringIO()
    assert report.plot(str(tmp_path), _fake_results(), False, log) == []
    assert "matplotlib" in log.getvalue()


def test_progress_on_a_pipe():
    out = io.StringIO()
    p = report.Progress(20, out)
    for i in range(20):
        p.step(f"case {i}")
    lines = out.getvalue().splitlines()
    assert lines[-1].startswith("progress 20/20") and len(lines) <= 11  # about one line per 10%


def test_settings_validation():
    with pytest.raises(ValueError, match="calls"):
        harness.Settings(calls=0).validate()
    with pytest.raises(ValueError, match="routing"):
        harness.Settings(routing="uniform").validate()
    s = harness.Settings.for_device(torch.device("cpu"), replays=4)
    assert (s.calls, s.replays) == (1, 4)


# ---- CPU smoke runs -------------------------------------------------------------------------

@pytest.fixture
def api():
    """The op's module; the smoke runs skip (and only they) while it is not importable."""
    return pytest.importorskip("fusedmoe.api", reason="fusedmoe.api (the op) is not importable yet")


TINY = {"model_type": "tiny_moe", "hidden_size": 128, "moe_intermediate_size": 64, "num_experts": 8,
        "num_experts_per_tok": 2, "norm_topk_prob": True}


def test_bench_cli_smoke(tmp_path, capsys, api):
    # The whole command on a tiny config: every path of ours and the peers, plain format only
    # (fp16: bf16 math is not exact in the interpreter), EP over 2 ranks to cover the window.
    from fusedmoe.cli import main

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(TINY))
    out = tmp_path / "out"
    rc = main(["bench", "--config", str(cfg), "--ep", "2", "--formats", "fp16", "--tokens", "1,3",
               "--calls", "1", "--replays", "1", "--out", str(out)])
    assert rc == 0
    doc = json.loads((out / "results.json").read_text())
    rs = doc["results"]
    assert {r["impl"] for r in rs} == set(("auto",) + tuple(api.PATHS) + peers.PEERS)
    assert all(r["status"] == "ok" for r in rs), [r["note"] for r in rs if r["status"] != "ok"]
    for r in rs:
        assert r["us"] > 0 and r["floor_us"] > 0 and math.isfinite(r["pct_floor"])
        assert r["rel_l2"] < 1e-2 and r["cosine"] > 0.9999
    assert all(r["chosen_path"] in api.PATHS for r in rs if r["impl"] == "auto")
    if doc["cpu_figures"]:
        assert "CPU figures" in (out / "results.md").read_text()
        assert "CPU figures" in capsys.readouterr().out


def test_bench_cli_argument_errors(api):
    from fusedmoe.cli import main

    with pytest.raises(SystemExit, match="--formats"):
        main(["bench", "--shape", "qwen3_30b_a3b", "--formats", "int4"])
    with pytest.raises(SystemExit, match="--tokens"):
        main(["bench", "--shape", "qwen3_30b_a3b", "--tokens", "1,0"])
    with pytest.raises(SystemExit, match="--paths"):
        main(["bench", "--shape", "qwen3_30b_a3b", "--paths", "vllm"])
    with pytest.raises(SystemExit, match="--tp"):
        main(["bench", "--shape", "gpt_oss_120b", "--tp", "7"])
    with pytest.raises(SystemExit, match="preset"):
        main(["bench", "--shape", "nope"])


def test_info_lists_the_chosen_paths(capsys, api):
    from fusedmoe.cli import main

    assert main(["info", "--shape", "deepseek_v3_tp8", "--tokens", "1,4096", "--formats", "bf16"]) == 0
    text = capsys.readouterr().out
    assert "torch" in text and "E=256" in text
    rows = [line.split() for line in text.splitlines() if line.strip().split(" ")[0] in ("1", "4096")]
    # Each row: M, then "path:" with its tiles, their source and the launch count.
    assert [r[1].rstrip(":") for r in rows] == [api.choose_path(m, 8, _meta_weights(), torch.device("cpu"))
                                                for m in (1, 4096)]
    assert all("launches" in " ".join(r) and "json=" not in " ".join(r) for r in rows)  # the config's fields only


def test_info_describes_what_fused_moe_serves(monkeypatch, api):
    # The dispatch line takes the layer's activation and expert-parallel share as fused_moe does:
    # where the Gluon kernels could run (sm_90 faked here), an untabled DBRX-TP4-like fp8_tensor
    # layer at M=512 (128 routes an expert) gets the Gluon set under SiLU only, and not on a rank
    # holding 16 of 128 experts (16 routes an expert).
    from fusedmoe.cli import _meta_weights as mw
    from fusedmoe.paths import grouped
    from fusedmoe.shapes import MoEShape

    monkeypatch.setattr(grouped, "is_sm90", lambda device: True)
    shape = MoEShape(name="dbrx_like", num_experts=16, top_k=4, hidden_size=6144, intermediate_size=2688)
    w, dev = mw(shape, "fp8_tensor"), torch.device("cpu")
    assert api.choose_path(512, 4, w, dev) == "grouped"
    assert "gluon=True" in api.describe_dispatch(512, 4, w, dev)
    assert "gluon=False" in api.describe_dispatch(512, 4, w, dev, activation="swiglu_oai")
    assert "gluon=False" in api.describe_dispatch(512, 4, w, dev, num_experts=128)


def _meta_weights():
    from fusedmoe.cli import _meta_weights as mw
    from fusedmoe.shapes import PRESETS

    return mw(PRESETS["deepseek_v3_tp8"], "bf16")


def test_tune_gets_its_arguments_untouched(monkeypatch):
    # `fusedmoe tune` is a pass-through: fusedmoe.tune parses its own options (even --help).
    import sys
    import types

    import fusedmoe
    from fusedmoe.cli import main

    got = []
    fake = types.ModuleType("fusedmoe.tune")
    fake.main = lambda argv: got.append(argv) or 3
    monkeypatch.setitem(sys.modules, "fusedmoe.tune", fake)
    monkeypatch.setattr(fusedmoe, "tune", fake, raising=False)
    assert main(["tune", "--shape", "qwen3_30b_a3b", "--help"]) == 3
    assert got == [["--shape", "qwen3_30b_a3b", "--help"]]


@pytest.mark.parametrize("module", ["plan", "swiglu_quant", "kernels"])
def test_kernel_benches_need_a_gpu(module, capsys):
    # The plan and SwiGLU+quant benches time CUDA graphs, bench.kernels reads the CUDA
    # profiler: without a GPU they say so and stop.
    import importlib

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert importlib.import_module(f"fusedmoe.bench.{module}").main([]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().out



def test_compare_against_peer_figures_with_a_line_per_format():
    from fusedmoe.bench import compare

    peers_md = ("## Time per call (us)\n\n| shape / format / peer | M=1 | M=8 |\n|---|---|---|\n"
                "| s / bf16 / vllm_triton | 20.0 | 80.0 |\n| s / fp8_tensor / vllm_triton | 30.0 | |\n"
                "| s / bf16 / torch_grouped_mm | 90.0 | 99.0 |\n\n## Percent of the bandwidth floor (100 = at the floor)"
                "\n\n| shape / format / peer | M=1 | M=8 |\n|---|---|---|\n| s / bf16 / vllm_triton | 40 | 95 |\n"
                "| s / bf16 / torch_grouped_mm | 9 | 9 |\n\n## Throughput\n")
    times = compare.parse_peer_times(peers_md)
    assert times == {("s", "bf16", 1): 20.0, ("s", "bf16", 8): 80.0, ("s", "fp8_tensor", 1): 30.0}
    peer_pct = compare.parse_peer_pct_floor(peers_md)
    assert peer_pct == {("s", "bf16", 1): 40.0, ("s", "bf16", 8): 95.0}
    results = [dict(shape="s", format=f, tokens=m, impl="auto", status="ok", us=us, pct_floor=pct)
               for f, m, us, pct in (("bf16", 1, 10.0, 50.0), ("bf16", 8, 100.0, 90.0), ("fp8_tensor", 1, 15.0, 40.0))]
    rows, summary = compare.compare(results + [dict(results[0], impl="grouped")], times, {})
    assert len(rows) == 3 and summary["cases"] == 3 and summary["slower_than_peer"] == 1
    assert summary["median_pct_floor"] == 50.0 and summary["min_pct_floor"] == 40.0
    assert abs(summary["geomean_speedup"] - (2.0 * 0.8 * 2.0) ** (1 / 3)) < 1e-12
    text = compare.to_markdown(rows, summary, "vllm_triton")
    assert "- bf16: 2 cases: median 70% of floor, min 50%" in text
    assert "- fp8_tensor: 1 cases" in text
    # the decode prototype: its time and its % of its own floor (its routing draw's)
    proto_md = ("| shape | format | M | floor us | one-launch stream us | prototype us | % floor | vLLM us |\n"
                "|---|---|---|---|---|---|---|---|\n| s | bf16 | 1 | 8.0 | 9.0 | 10.0 | 80 | 20.0 |\n"
                "| s | bf16 | 8 | 72.0 | 75.0 | 80.0 | 90 | 80.0 |\n")
    proto = compare.parse_prototype_times(proto_md)
    assert proto == {("s", "bf16", 1): (10.0, 80.0), ("s", "bf16", 8): (80.0, 90.0)}
    rows, summary = compare.compare(results, times, proto, peer_pct=peer_pct)
    # M=1: as fast (10 us) at 50% of our floor; M=8: slower (100 us) at 90%, as the prototype
    assert (summary["slower_than_prototype"], summary["below_prototype_pct_floor"]) == (1, 1)
    # the peer: faster at M=1 at a higher % of its floor (40 < 50), slower at M=8 and below its 95%
    assert (summary["slower_than_peer"], summary["below_peer_pct_floor"]) == (1, 1)
    text = compare.to_markdown(rows, summary, "vllm_triton")
    assert "| s | bf16 | 8 | 100.0 | 90 | 80.0 | 95 | 0.80 | 80.0 | 90 |" in text
    assert "1 slower than it (1 below its % of the floor)" in text


# ---- the timeline probe (scripts/decode_timeline.py), its CPU side ----------------------------

def _timeline_module():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    import decode_timeline

    return decode_timeline


def test_timeline_call_summary_by_hand():
    # two gate/up programs (one exits early: end 0) and two down programs, times in ns
    gu = torch.tensor([[1000, 1100, 4000, 0, 0, 0, 0, 0], [1500, 1600, 0, 1, 0, 0, 0, 0]])
    dn = torch.tensor([[3000, 4500, 5500, 2, 0, 0, 0, 0], [4200, 4600, 6000, 0, 0, 0, 0, 0]])
    s = _timeline_module().call_summary(gu, dn, prev_dn_end=400.0)
    assert s["gap"] == pytest.approx(0.6) and s["gu_all_in"] == pytest.approx(0.5)
    assert s["gu_end"] == pytest.approx(3.0) and s["gu_prog"] == pytest.approx(2.9)
    assert (s["dn_first"], s["dn_all_in"], s["dn_early"], s["dn_n"]) == (pytest.approx(2.0), pytest.approx(3.2), 1, 2)
    assert s["dn_release"] == pytest.approx(3.55) and s["span"] == pytest.approx(5.0)
    assert s["dn_after"] == pytest.approx(1.2) and (s["sms_gu"], s["sms_dn"]) == (2, 2)


def test_timeline_call_summary_every_route_dropped():
    # --dropped: every gate/up program exits before its end mark; gate/up ends with its last wait
    gu = torch.tensor([[1000, 1100, 0, 0, 0, 0, 0, 0], [1500, 1700, 0, 1, 0, 0, 0, 0]])
    dn = torch.tensor([[1200, 2500, 3500, 2, 0, 0, 0, 0], [1300, 2600, 3900, 0, 0, 0, 0, 0]])
    s = _timeline_module().call_summary(gu, dn, prev_dn_end=None)
    assert s["gu_end"] == pytest.approx(0.7) and s["gu_prog"] == 0.0
    assert s["dn_early"] == 2 and s["dn_after"] == pytest.approx(1.15)


def test_timeline_plot_draws_each_case(tmp_path):
    pytest.importorskip("matplotlib")
    raw = [[0, 50, 3000, 0, 0, 0, 0, 0], [100, 150, 0, 1, 0, 0, 0, 0], [2500, 4000, 5000, 1, 0, 0, 0, 0]]
    row = dict(shape="s", format="fp8_tensor", M=1, graph=9.0, gu_programs=2, raw=raw)
    (tmp_path / "timeline.json").write_text(json.dumps(dict(rows=[row, dict(row, variant=" pdl_off")])))
    written = _timeline_module().plot(tmp_path / "timeline.json", tmp_path / "png")
    assert [p.name for p in written] == ["s_fp8_tensor_M1.png", "s_fp8_tensor_M1_pdl_off.png"]
    assert all(p.stat().st_size > 1000 for p in written)


def test_timeline_fixed_cost_times_the_case_three_ways(monkeypatch, device):
    # --fixed: the same route-direct calls as benched, with every id -1, with every route on
    # expert 0; the calls run (the interpreter on CPU), the timer is stubbed: what each timing saw is kept
    from fusedmoe import shapes
    from fusedmoe.bench import harness

    dt = _timeline_module()
    seen = []

    def fake_time(calls, settings, capturable):
        calls[0]()
        seen.append(calls)
        return float(len(seen)), 0.0, "graph"

    monkeypatch.setattr(harness, "_time_cuda", fake_time)
    monkeypatch.setattr(dt, "device_name", lambda dev: "cpu")
    monkeypatch.setattr(dt, "num_sms", lambda dev: 132)
    shape = shapes.MoEShape(name="tiny", num_experts=8, top_k=2, hidden_size=64, intermediate_size=32)
    s = harness.Settings.for_device(device, calls=3, replays=1, routing="softmax")
    r = dt.fixed_cost_case(shape, "fp8_tensor", 1, device, s, 1e12, 1e6)
    assert (r["graph"], r["dropped"], r["one_expert"]) == (1.0, 2.0, 3.0) and r["floor"] > 0
    assert "| tiny fp8_tensor M=1 | 1.00 | 2.00 | 3.00 |" in dt.fixed_table([r])
