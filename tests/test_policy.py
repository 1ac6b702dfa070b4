"""Policy: heuristics, tuned-table lookup and its fallbacks, and the tuner's search loop."""

import dataclasses
import json

import pytest
import torch

from fusedmoe import policy, tune
from fusedmoe.weights import FORMATS


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("m,k,e,h,i", [(1, 8, 128, 2048, 768), (8, 2, 8, 4096, 7168), (4096, 8, 256, 7168, 256),
                                       (3, 1, 1, 72, 40), (64, 4, 33, 2880, 720)])
def test_heuristics_are_always_legal(fmt, m, k, e, h, i):
    # Whatever the shape, the built-in heuristic gives a config the kernels accept.
    assert policy.legal("grouped", policy.grouped_config(m, k, e, h, i, fmt), fmt)
    assert policy.legal("route_direct", policy.route_direct_config(m, k, e, h, i, fmt, 132), fmt)


def test_route_direct_heuristic_follows_the_tuner_logs():
    # Qwen3-235B-A22B TP8 (E 128, top-8, H 4096, I 192): FP8 at M=1 takes the narrowest 4-warp
    # GEMV tile, 4 rows x 1024 columns, unsplit (the eighth session's logs: a split 2 took 17.0
    # us where unsplit took 10.8-13.1).  Over the fourteenth session's 40 FP8 cases this rule
    # is 1.021x the best gate/up, the 8-warp one 1.047x; on Hunyuan TP8 at M=1 (same H and I) it
    # gives up 8%: 10.1 against 9.3 us for 4 x 2048 with 8 warps.
    fp8 = policy.route_direct_config(1, 8, 128, 4096, 192, "fp8_tensor", 132)
    gate_up = fp8.gate_up
    assert (gate_up.block_n, gate_up.block_k, gate_up.num_warps, gate_up.split_k, gate_up.swap_ab) == (4, 1024, 4, 1, False)
    # FP8 tiles of 8 rows x 512 columns where I gives 3.5 programs per SM (Qwen3-30B-A3B M=1)
    wide = policy.route_direct_config(1, 8, 128, 2048, 768, "fp8_tensor", 132).gate_up
    assert (wide.block_n, wide.block_k, wide.num_warps) == (8, 512, 4)
    assert fp8.pdl
    # 16-bit weights: the GEMV up to M=2, the tensor-core form (which streams a shared expert
    # once) above M=2
    assert not policy.route_direct_config(2, 8, 128, 4096, 192, "bf16", 132).gate_up.swap_ab
    assert policy.route_direct_config(3, 8, 128, 4096, 192, "bf16", 132).gate_up.swap_ab
    # a K split only where even the narrowest GEMV tile leaves SMs idle (one route, narrow I),
    # over whole K steps that leave no split empty (H 6144 in 4 splits: 1536 columns each)
    split = policy.route_direct_config(1, 1, 16, 6144, 64, "fp8_tensor", 132).gate_up
    assert (split.split_k, 6144 % split.block_k, (6144 // split.split_k) % split.block_k) == (4, 0, 0)


@pytest.mark.parametrize("fmt", FORMATS)
def test_grouped_heuristic_takes_the_gluon_set_only_where_it_runs_and_the_rules_say(fmt):
    # Where the Gluon kernels run (fp8_tensor on sm_90, grouped.gluon_runs: the ``gluon`` flag),
    # the heuristic serves the (128, 128) Gluon set at I >= 1536 with >= 64 routes an expert and
    # at I >= 512 with >= 256 (policy.GLUON_HEURISTIC_RULES; the forty-second and forty-third
    # sessions' figures are there), walking the rows per weight tile its Triton tiles would.
    from fusedmoe.paths import grouped

    cases = [((512, 4, 16, 6144, 2688), True),       # DBRX TP4: 128 routes an expert
             ((512, 2, 16, 4096, 6400), True),       # Phi-3.5-MoE: 64
             ((256, 2, 16, 4096, 6400), False),      # 32
             ((2048, 4, 60, 2048, 1408), False),     # Qwen1.5-MoE-A2.7B: 137, I < 1536
             ((8192, 4, 60, 2048, 1408), True),      # 546
             ((8192, 8, 128, 4096, 384), False),     # I < 512
             ((8192, 8, 128, 4096, 192), False)]
    for facts, want in cases:
        heuristic = policy.grouped_config(*facts, fmt)
        assert not heuristic.gluon                   # no Gluon without the flag
        cfg = policy.grouped_config(*facts, fmt, gluon=True)
        assert policy.legal("grouped", cfg, fmt)
        if want and fmt == "fp8_tensor":
            assert cfg == policy.gluon_config_like(heuristic, 128, 128)
        else:
            assert cfg == heuristic
    # an expert-parallel rank holding 2 of DBRX TP4's 16 experts holds an eighth of the routes: at
    # M=128 32 an expert, not the 256 that all M * top_k routes on 2 experts would give
    ep = policy.grouped_config(128, 4, 2, 6144, 2688, fmt, gluon=True, held_share=2 / 16)
    assert ep == policy.grouped_config(128, 4, 2, 6144, 2688, fmt) and not ep.gluon
    at_512 = policy.grouped_config(512, 4, 2, 6144, 2688, fmt, gluon=True, held_share=2 / 16)   # 128 an expert
    assert at_512.gluon == (fmt == "fp8_tensor")
    # untabled shapes: select_config passes the flag on; off sm_90 (here) the Gluon kernels never run
    facts = (512, 4, 16, 6144, 2688, fmt)
    assert policy.select_config("grouped", *facts, "NVIDIA H200", 132, gluon=True).gluon == (fmt == "fp8_tensor")
    assert not grouped.gluon_runs_on(fmt, 6144, 2688, torch.device("cpu"))


@pytest.mark.parametrize("fmt", ["fp8_tensor", "fp8_block"])
def test_grouped_heuristic_fp8_gate_up_64_columns_from_block_m_32(fmt):
    from fusedmoe.paths import grouped
    from fusedmoe.weights import ExpertWeights

    w = ExpertWeights.from_dense(torch.randn(2, 2 * 128, 128), torch.randn(2, 128, 128), fmt)
    for m, bm, narrow in ((8192, 64, True), (512, 32, True), (64, 16, False)):   # E 128, top-8
        cfg = policy.grouped_config(m, 8, 128, 4096, 192, fmt)
        assert (cfg.block_m, cfg.gate_up.block_n == 64) == (bm, narrow)
        assert grouped.splits_quantisation(w, cfg) == narrow and policy.legal("grouped", cfg, fmt)
    # fp8_block's 64-column tile at BLOCK_M 64 promoted every 64 columns (M < 512) spills with 4
    # warps and fits one CTA per SM with 8: the heuristic keeps the fused tile there
    low = policy.grouped_config(256, 2, 8, 4096, 7168, fmt)                 # 64 rows per expert
    assert (low.block_m, low.fp8_promote_k) == (64, 64)
    assert (low.gate_up.block_n, low.gate_up.num_warps) == ((128, 8) if fmt == "fp8_block" else (64, 4))


def test_fit_registers_serves_fp8_block_narrow_tiles_with_8_warps(tmp_path, monkeypatch):
    # An fp8_tensor entry tuned at M=512 (64-column gate/up, 4 warps, promotion 128) serves
    # fp8_block at M=256, where the rule promotes every 64 columns: 8 warps (4 would spill)
    gu, dn = policy.Tile(64, 128, 4, 3), policy.Tile(128, 128, 8, 3)
    entry = dataclasses.asdict(policy.GroupedConfig(64, gu, dn, 1, 128))
    _write_table(tmp_path, monkeypatch, [dict(num_experts=8, top_k=2, hidden=4096, inter=7168,
                                              format="fp8_tensor", tokens=512, config=entry)], path="grouped")
    served = {(fmt, m): policy.tuned_config("grouped", "NVIDIA H200", m, 2, 8, 4096, 7168, fmt)
              for fmt in ("fp8_tensor", "fp8_block") for m in (256, 512)}
    assert served["fp8_block", 256].gate_up.num_warps == 8 and served["fp8_block", 256].fp8_promote_k == 64
    assert [served[k].gate_up.num_warps for k in (("fp8_block", 512), ("fp8_tensor", 256), ("fp8_tensor", 512))] == [4] * 3
    # never promoting, or a K step no longer than the interval, needs no partial: left alone
    for promote, bk in ((0, 128), (64, 64)):
        cfg = policy.GroupedConfig(64, dataclasses.replace(gu, block_k=bk), dn, 1, promote)
        assert policy.fit_registers(cfg, "fp8_block") == cfg


def test_check_variants_flip_the_gate_up_width():
    from fusedmoe import check
    from fusedmoe.shapes import PRESETS

    for m, want in ((64, "grouped_gate64"), (4096, "grouped_gate128")):
        runs = dict(check.variants("grouped", m, PRESETS["qwen3_30b_a3b"], "fp8_tensor"))
        base = policy.grouped_config(m, 8, 128, 2048, 768, "fp8_tensor")
        assert runs[want].gate_up.block_n == 192 - base.gate_up.block_n
        assert all(policy.legal("grouped", c, "fp8_tensor") for c in runs.values() if c is not None)


@pytest.fixture(autouse=True)
def _fresh_table_caches():
    """Tables written by a test must not serve the tests after it (the caches outlive the
    monkeypatched CONFIG_DIR)."""
    yield
    policy.load_table.cache_clear()
    policy.select_config.cache_clear()


def _write_table(tmp_path, monkeypatch, entries, path="route_direct"):
    d = tmp_path / "NVIDIA_H200"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{path}.json").write_text(json.dumps({"entries": entries}))
    monkeypatch.setattr(policy, "CONFIG_DIR", tmp_path)
    policy.load_table.cache_clear()
    policy.select_config.cache_clear()


def _entry(tokens, bn, fmt="bf16", bk=1024):
    return dict(num_experts=128, top_k=8, hidden=2048, inter=768, format=fmt, tokens=tokens,
                config=dict(gate_up=dict(block_n=bn, block_k=bk, num_warps=8, num_stages=1, split_k=1),
                            down=dict(block_n=16, block_k=128, num_warps=8, num_stages=1, split_k=1)))


def test_table_lookup_nearest_bucket_and_fallbacks(tmp_path, monkeypatch):
    _write_table(tmp_path, monkeypatch, [_entry(1, 4), _entry(8, 16), _entry(8, 8, "fp8_tensor", 192)])
    find = lambda m, fmt="bf16", dev="NVIDIA H200", e=128: policy.tuned_config(  # noqa: E731
        "route_direct", dev, m, 8, e, 2048, 768, fmt)
    assert find(1).gate_up.block_n == 4
    assert find(2).gate_up.block_n == 4       # log-nearest: 2 is nearer 1 than 8
    assert find(5).gate_up.block_n == 16      # and 5 nearer 8
    assert find(16).gate_up.block_n == 16     # within TABLE_MAX_TOKEN_RATIO (2x) of 8
    assert find(17) is None                   # beyond it: the heuristic (a decode tile at M=8192 ran 2.8x slower)
    assert find(1, "fp16").gate_up.block_n == 4  # fp16 uses bf16 entries (same bytes)
    # An illegal entry (block_k not a power of two) is never returned: heuristic instead.
    assert find(8, "fp8_tensor") is None
    assert find(1, dev="Some Other GPU") is None   # no table for the device
    assert find(1, e=64) is None                   # no entry for the shape
    cfg = policy.select_config("route_direct", 1, 8, 64, 2048, 768, "bf16", "NVIDIA H200", 132)
    assert cfg == policy.route_direct_config(1, 8, 64, 2048, 768, "bf16", 132)


def test_fp8_block_legality(tmp_path, monkeypatch):
    # fp8_block needs K steps that are multiples of 128 on the route-direct path.
    _write_table(tmp_path, monkeypatch, [_entry(1, 8, "fp8_tensor", 64)])
    assert policy.tuned_config("route_direct", "NVIDIA H200", 1, 8, 128, 2048, 768, "fp8_tensor") is not None
    assert policy.tuned_config("route_direct", "NVIDIA H200", 1, 8, 128, 2048, 768, "fp8_block") is None


def test_tensor_core_form_legality_and_fp8_block_reuse(tmp_path, monkeypatch):
    # The tensor-core gate/up needs >= 8 rows of I per tile and, with block scales, K steps of
    # exactly 128; an fp8_tensor entry in that form serves fp8_block with its K step set to 128.
    down = policy.Tile(8, 128, 4, 1)
    narrow = policy.RouteDirectConfig(policy.Tile(4, 128, 4, 3, swap_ab=True), down)
    assert not policy.legal("route_direct", narrow, "bf16")
    wide = policy.RouteDirectConfig(policy.Tile(32, 256, 4, 3, swap_ab=True), down)
    assert policy.legal("route_direct", wide, "fp8_tensor") and not policy.legal("route_direct", wide, "fp8_block")
    entry = _entry(1, 8, "fp8_tensor", 256)
    entry["config"]["gate_up"].update(block_n=32, swap_ab=True)
    _write_table(tmp_path, monkeypatch, [entry])
    cfg = policy.tuned_config("route_direct", "NVIDIA H200", 1, 8, 128, 2048, 768, "fp8_block")
    assert cfg.gate_up.swap_ab and cfg.gate_up.block_k == 128


def test_committed_h200_tables_are_legal():
    # Every shipped entry loads and is legal for its own format.
    for path in ("route_direct", "grouped"):
        for e in policy.load_table("NVIDIA H200", path):
            assert policy.legal(path, policy.config_from_dict(path, e["config"]), e["format"]), e


def test_descend_finds_the_minimum_and_skips_failures():
    # The tuner's coordinate descent, with a fake timer: fastest block_n 8, block_k 512; one candidate crashes.
    start = policy.RouteDirectConfig(policy.Tile(16, 1024, 8, 1), policy.Tile(16, 128, 8, 1))

    def fake_time(cfg):
        if cfg.gate_up.block_n == 4:
            raise RuntimeError("compile error")
        return abs(cfg.gate_up.block_n - 8) + abs(cfg.gate_up.block_k - 512) / 512 + cfg.down.block_n / 100 + 10

    best, t_best, t_start = tune.descend(start, list(tune.candidates("route_direct", "bf16")), "bf16",
                                         "route_direct", fake_time, deadline=float("inf"))
    assert (best.gate_up.block_n, best.gate_up.block_k, best.down.block_n) == (8, 512, 4)
    assert t_best < t_start


def test_confirm_keeps_a_best_only_if_it_stays_faster():
    # The descent's best against the start, timed again in turn: a lucky single timing (noise)
    # does not replace the start, a real gain above the margin does; medians, not minima.
    start = policy.RouteDirectConfig(policy.Tile(8, 512, 4, 1), policy.Tile(16, 128, 4, 1))
    best = dataclasses.replace(start, pdl=True)
    order = []

    def timer(times):
        runs = {start: iter(times[0]), best: iter(times[1])}
        return lambda cfg: order.append(cfg) or next(runs[cfg])

    same = timer(([10.0, 10.4, 9.9], [10.1, 8.0, 9.95]))  # best's one fast timing is noise
    assert tune.confirm(start, best, 8.0, 10.0, same) == (start, 10.0, 10.0)
    assert order == [start, best] * 3  # alternately
    faster = timer(([10.0, 10.4, 9.9], [9.5, 9.6, 12.0]))
    assert tune.confirm(start, best, 9.5, 10.0, faster) == (best, 9.6, 10.0)
    assert tune.confirm(start, best, 9.85, 10.0, timer(([10.0] * 3, [9.85] * 3)))[0] == start  # 1.5%: within the margin
    assert tune.confirm(start, start, 10.0, 10.0, timer(([], []))) == (start, 10.0, 10.0)  # nothing timed


def test_fp8_promotion_interval_is_legal_up_to_the_k_step():
    cfg = policy.grouped_config(64, 8, 128, 2048, 768, "fp8_tensor")  # BLOCK_K 128
    for k, ok in ((0, True), (32, True), (64, True), (128, True), (256, False), (48, False)):
        assert policy.legal("grouped", dataclasses.replace(cfg, fp8_promote_k=k), "fp8_tensor") == ok
    k64 = dataclasses.replace(cfg, down=dataclasses.replace(cfg.down, block_k=64), fp8_promote_k=128)
    assert not policy.legal("grouped", k64, "fp8_block")
    assert policy.config_from_dict("grouped", dataclasses.asdict(dataclasses.replace(cfg, fp8_promote_k=64))) == \
        dataclasses.replace(cfg, fp8_promote_k=64)


def test_fp8_promotion_interval_follows_m_in_heuristics_tables_and_tuner_moves(tmp_path, monkeypatch):
    for m, want in ((1, 64), (511, 64), (512, 128), (8192, 128)):
        assert policy.grouped_config(m, 8, 128, 2048, 768, "fp8_tensor").fp8_promote_k == want
    # never above a tile's K step (32, the smallest interval, under a 64-column step: FP8 tiles
    # step at least 32 columns); 16-bit weights take 32 at every M (ignored, one kernel)
    assert policy.grouped_promote_k(4096, policy.Tile(128, 64), policy.Tile(128, 128)) == 64
    assert policy.grouped_promote_k(4096, policy.Tile(128, 32), policy.Tile(128, 128)) == 32
    assert policy.grouped_config(4096, 8, 128, 2048, 768, "bf16").fp8_promote_k == 32
    # a table entry written before the field existed takes the rule at the M asked for; one
    # that has it keeps it, capped by the rule
    cfg = policy.grouped_config(600, 8, 128, 2048, 768, "fp8_tensor")
    old = {k: v for k, v in dataclasses.asdict(cfg).items() if k != "fp8_promote_k"}
    entry = dict(num_experts=128, top_k=8, hidden=2048, inter=768, format="fp8_tensor", tokens=600, config=old)
    pinned = dict(entry, tokens=160, config=dict(old, fp8_promote_k=32))
    _write_table(tmp_path, monkeypatch, [entry, pinned], path="grouped")
    find = lambda m: policy.tuned_config("grouped", "NVIDIA H200", m, 8, 128, 2048, 768, "fp8_tensor")  # noqa: E731
    assert find(700).fp8_promote_k == 128 and find(400).fp8_promote_k == 64 and find(160).fp8_promote_k == 32
    tuned_128 = dict(entry, config=dict(old, fp8_promote_k=128))
    _write_table(tmp_path, monkeypatch, [tuned_128], path="grouped")
    assert find(400).fp8_promote_k == 64 and find(1000).fp8_promote_k == 128
    # a tuner move to a 64-column K step brings the interval down with it
    moved = tune.apply(cfg, "down", policy.Tile(128, 64, 8, 3))
    assert moved.fp8_promote_k == 64 and policy.legal("grouped", moved, "fp8_tensor")


def test_fp8_block_reuse_of_a_table_entry_keeps_pdl(monkeypatch):
    # fp8_block serves from an fp8_tensor entry with its tensor-core K step set to 128: the
    # launch mode must survive that rewrite
    entry = dict(num_experts=8, top_k=2, hidden=256, inter=128, format="fp8_tensor", tokens=1,
                 config=dict(gate_up=dataclasses.asdict(policy.Tile(16, 256, 4, 3, swap_ab=True)),
                             down=dataclasses.asdict(policy.Tile(8, 256, 4, 1)), pdl=True))
    monkeypatch.setattr(policy, "load_table", lambda device, path: (entry,) if path == "route_direct" else ())
    cfg = policy.tuned_config("route_direct", "NVIDIA H200", 1, 2, 8, 256, 128, "fp8_block")
    assert cfg.pdl and cfg.gate_up.block_k == 128


def test_descend_records_every_candidate_and_tries_pdl():
    # The candidate log sees the start, every timed move and every failure; PDL is a move.
    start = policy.RouteDirectConfig(policy.Tile(16, 1024, 8, 1), policy.Tile(16, 128, 8, 1))
    seen = []

    def fake_time(cfg):
        if cfg.down.block_k == 512:
            raise RuntimeError("compile error")
        return 10 - cfg.pdl

    best, t_best, _ = tune.descend(start, list(tune.candidates("route_direct", "fp8_tensor")), "fp8_tensor",
                                   "route_direct", fake_time, deadline=float("inf"),
                                   record=lambda cfg, us, err: seen.append((cfg, us, err)))
    assert best.pdl and t_best == 9
    assert seen[0] == (start, 10, None)
    assert any(err and "compile error" in err and us is None for _, us, err in seen)
    assert all((us is None) != (err is None) for _, us, err in seen)


@pytest.mark.parametrize("fmt", ["bf16", "fp8_block"])
def test_grouped_moves_swap_exactly_below_64_rows(fmt):
    # Every grouped move the tuner makes keeps swap_ab == (BLOCK_M < 64) and stays legal.
    cfg = policy.grouped_config(4, 8, 128, 2048, 768, fmt)
    for field, value in tune.candidates("grouped", fmt):
        cfg = tune.apply(cfg, field, value)
        assert cfg.gate_up.swap_ab == cfg.down.swap_ab == (cfg.block_m < 64)
        assert policy.legal("grouped", cfg, fmt)


def test_tuner_graph_holds_20_calls_up_to_100_ms_in_whole_rotations():
    # 20 calls per graph as the bench, or whole rotations of the weight copies (16 of 16, not 20:
    # a replay must not start on the copy the last one ended with); calls too long for 20 in
    # 100 ms fewer, down to one; every copy stays in the rotation while that costs at most 500 ms
    assert tune.calls_per_graph(15.0, 1) == 20
    assert tune.calls_per_graph(15.0, 16) == 16
    assert tune.calls_per_graph(15.0, 3) == 18
    assert tune.calls_per_graph(3500.0, 2) == 20  # Mixtral TP2 fp8 M=8192: 70 ms, as the bench
    assert tune.calls_per_graph(2000.0, 3) == 18
    assert tune.calls_per_graph(20000.0, 1) == 5
    assert tune.calls_per_graph(20000.0, 3) == 3
    assert tune.calls_per_graph(40000.0, 3) == 3
    assert tune.calls_per_graph(200000.0, 3) == 1


def test_tune_refuses_without_gpu(capsys):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert tune.main(["--shape", "qwen3_30b_a3b"]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().out


def test_check_refuses_without_gpu(capsys):
    import torch

    from fusedmoe import check
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert check.main(["accuracy"]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().out


def test_check_bounds_follow_the_paths_activation_quantisation():
    # The GPU check takes the test suite's bounds: 0.5% rel-L2, or 1% where the path feeds
    # quantised activations to the FP8 MMA (requantisation flips); NaN fails.
    from fusedmoe import check
    assert check.within_bounds(4.9e-3, 0.99999, quantized=False)
    assert not check.within_bounds(6e-3, 0.99998, quantized=False)
    assert check.within_bounds(6e-3, 0.99998, quantized=True)
    assert not check.within_bounds(1.1e-2, 0.99995, quantized=True)
    assert not check.within_bounds(1e-3, 0.9999, quantized=True)
    assert not check.within_bounds(float("nan"), 1.0, quantized=True)


def test_group_m_only_when_experts_hold_several_blocks():
    # Mixtral TP2 at M=8192: 2048 rows per expert, 16 blocks of 128 -> walk 8 blocks per tile;
    # Qwen3 at M=64: 4 rows per expert, one block each -> the plain order.
    assert policy.grouped_group_m(8192 * 2, 8, 128) == 8
    assert policy.grouped_group_m(64 * 8, 128, 16) == 1
    assert policy.grouped_config(8192, 2, 8, 4096, 7168, "bf16").group_m == 8


def test_legal_rejects_what_the_kernels_cannot_run():
    # Found by review: split_k 0 launched no gate/up program (a zero output); FP8 grouped K
    # steps of 16 pass the interpreter but an e4m3 MMA needs K >= 32 on sm_90.
    down = policy.Tile(16, 128, 4, 1)
    for bad in (policy.Tile(16, 64, split_k=0), policy.Tile(16, 0), policy.Tile(16, 64, num_warps=0)):
        assert not policy.legal("route_direct", policy.RouteDirectConfig(bad, down), "bf16")
    fp8_k16 = policy.GroupedConfig(16, policy.Tile(128, 16), policy.Tile(64, 16))
    assert not policy.legal("grouped", fp8_k16, "fp8_tensor") and policy.legal("grouped", fp8_k16, "bf16")


def test_precompile_covers_each_promotion_interval():
    cases = [("q", f, m) for f in ("fp8_tensor", "bf16") for m in (16, 64, 512, 2048)]
    assert sorted(tune.compile_cases(cases, "grouped")) == sorted(
        [("q", "fp8_tensor", "grouped", 16), ("q", "fp8_tensor", "grouped", 512), ("q", "bf16", "grouped", 16)])
    assert sorted(tune.compile_cases(cases, "route_direct")) == sorted(
        [("q", "fp8_tensor", "route_direct", 16), ("q", "bf16", "route_direct", 16)])


def test_stages_moves_set_one_tiles_depth():
    # gate_up_stages / down_stages move one tile's num_stages (the GEMV forms' K-loop pipeline).
    gemv = policy.RouteDirectConfig(policy.Tile(8, 512, 4, 1), policy.Tile(16, 128, 4, 1), pdl=True)
    deep = tune.apply(tune.apply(gemv, "gate_up_stages", 3), "down_stages", 2)
    assert (deep.gate_up.num_stages, deep.down.num_stages) == (3, 2)
    assert deep == dataclasses.replace(gemv, gate_up=policy.Tile(8, 512, 4, 3), down=policy.Tile(16, 128, 4, 2))
    assert policy.legal("route_direct", deep, "fp8_tensor")
    assert [v for f, v in tune.candidates("route_direct", "bf16") if f == "down_stages"] == [1, 2, 3, 4]


def test_block_scale_rows_move_is_fp8_blocks_alone():
    # The block-scale form of the route-direct GEMVs is a tuner move for fp8_block weights only,
    # and a table entry without the field takes the scale-row form.
    assert [v for f, v in tune.candidates("route_direct", "fp8_block") if f == "block_scale_rows"] == [False, True]
    assert not any(f == "block_scale_rows" for f, _ in tune.candidates("route_direct", "fp8_tensor"))
    gemv = policy.RouteDirectConfig(policy.Tile(8, 512, 4, 1), policy.Tile(16, 128, 4, 1), pdl=True)
    per_row = tune.apply(gemv, "block_scale_rows", False)
    assert not per_row.block_scale_rows and per_row.gate_up == gemv.gate_up
    assert policy.config_from_json(per_row.json) == per_row
    fields = json.loads(gemv.json)
    del fields["block_scale_rows"]
    assert policy.config_from_json(json.dumps(fields)).block_scale_rows


def test_register_cap_moves_set_one_tiles_cap():
    # gate_up_registers / down_registers set one grouped tile's max_registers (PTX .maxnreg);
    # a tile move resets it, legality takes 0 or a multiple of 8 in 24..255.
    base = policy.grouped_config(128, 2, 8, 4096, 7168, "fp8_block")
    capped = tune.apply(tune.apply(base, "gate_up_registers", 128), "down_registers", 168)
    assert (capped.gate_up.max_registers, capped.down.max_registers) == (128, 168)
    assert capped.gate_up.register_cap() == {"maxnreg": 128} and base.gate_up.register_cap() == {}
    assert policy.legal("grouped", capped, "fp8_block")
    assert tune.apply(capped, "gate_up", policy.Tile(64, 128, 8, 4)).gate_up.max_registers == 0
    for cap in (100, 16, 256):
        bad = dataclasses.replace(capped, gate_up=dataclasses.replace(capped.gate_up, max_registers=cap))
        assert not policy.legal("grouped", bad, "fp8_block")
    assert [v for f, v in tune.candidates("grouped", "bf16") if f == "down_registers"] == [0, 80, 128, 168]
    assert "gate_up_registers" not in {f for f, _ in tune.candidates("route_direct", "bf16")}
    # a table entry without the field loads uncapped
    entry = {"block_m": 64, "gate_up": {"block_n": 64, "block_k": 128, "num_warps": 8, "num_stages": 4},
             "down": {"block_n": 128, "block_k": 128, "num_warps": 4, "num_stages": 4}}
    assert policy.config_from_dict("grouped", entry).gate_up.max_registers == 0


def test_route_direct_register_caps_move_sets_both_tiles():
    # register_caps (route-direct) caps both kernels at once: (gate/up, down); (0, 0) is the start
    # and never a move; every move is legal and survives a table round trip.
    base = policy.RouteDirectConfig(policy.Tile(4, 2048, 8, 1), policy.Tile(16, 256, 8, 1), pdl=True)
    capped = tune.apply(base, "register_caps", (56, 80))
    assert (capped.gate_up.max_registers, capped.down.max_registers) == (56, 80)
    assert capped == dataclasses.replace(base, gate_up=dataclasses.replace(base.gate_up, max_registers=56),
                                         down=dataclasses.replace(base.down, max_registers=80))
    moves = [v for f, v in tune.candidates("route_direct", "fp8_tensor") if f == "register_caps"]
    assert (0, 0) not in moves and (56, 80) in moves and len(moves) == len(set(moves)) == 24
    for caps in moves:
        cfg = tune.apply(base, "register_caps", caps)
        assert policy.legal("route_direct", cfg, "fp8_tensor")
        assert policy.config_from_dict("route_direct", tune._as_dict(cfg)) == cfg
    assert "register_caps" not in {f for f, _ in tune.candidates("grouped", "bf16")}


@pytest.mark.parametrize("m,top_k,experts,hidden,inter", [(128, 8, 128, 2048, 768), (512, 8, 192, 4096, 192),
                                                          (2048, 2, 8, 4096, 7168), (300, 1, 16, 5120, 1024),
                                                          (8192, 6, 64, 2048, 1408)])
def test_w4a8_heuristic_caps_registers_for_one_more_cta(m, top_k, experts, hidden, inter):
    # The w4a8 grouped heuristic caps 8-warp tiles at 128 registers, 4-warp ones at 168, and a
    # 4-warp down at BLOCK_M 16 at 128 (w4a8_register_caps); the other formats' heuristics do not cap.
    cfg = policy.grouped_config(m, top_k, experts, hidden, inter, "w4a8")
    for tile, four_ctas in ((cfg.gate_up, False), (cfg.down, cfg.block_m <= 16)):
        assert tile.max_registers == (128 if tile.num_warps == 8 or four_ctas else 168)
    assert policy.legal("grouped", cfg, "w4a8")
    assert policy.w4a8_register_caps(cfg) == cfg
    for fmt in ("bf16", "fp8_tensor", "fp8_block"):
        other = policy.grouped_config(m, top_k, experts, hidden, inter, fmt)
        assert other.gate_up.max_registers == other.down.max_registers == 0


def test_compiler_dumps_muted_swallows_prints_not_errors(capsys):
    # the tuner mutes Triton's PTX dump of a failing ptxas run; the exception still reaches it
    with pytest.raises(RuntimeError, match="ptxas"):
        with tune.compiler_dumps_muted():
            print("=" * 64 + "\n.version 8.7 ... please share the reproducer")
            raise RuntimeError("Internal Triton PTX codegen error (ptxas)")
    print("after")
    assert capsys.readouterr().out == "after\n"


def test_down_tiles_moves():
    # down_tiles is a move; a tensor-core down runs one tile per program.
    gemv = policy.RouteDirectConfig(policy.Tile(16, 512, 8, 1), policy.Tile(16, 128, 4, 1))
    walk = tune.apply(gemv, "down_tiles", 4)
    assert walk.down_tiles == 4 and policy.legal("route_direct", walk, "fp8_tensor")
    assert tune.apply(walk, "down", policy.Tile(16, 128, 4, 3, swap_ab=True)).down_tiles == 1
    mma = policy.RouteDirectConfig(policy.Tile(32, 128, 4, 3, swap_ab=True), policy.Tile(16, 128, 4, 3, swap_ab=True))
    assert not policy.legal("route_direct", dataclasses.replace(mma, down_tiles=2), "fp8_tensor")
    assert not policy.legal("route_direct", dataclasses.replace(gemv, down_tiles=0), "fp8_tensor")
    fields = {f for f, _ in tune.candidates("route_direct", "fp8_tensor")}
    assert {"pdl", "gate_up", "down", "down_tiles", "fp16_products", "gate_up_stages", "down_stages",
            "register_caps", "down_gluon", "gate_up_wide"} == fields
    assert "down_gluon" not in {f for f, _ in tune.candidates("route_direct", "w4a8")}
    assert "gate_up_wide" not in {f for f, _ in tune.candidates("route_direct", "bf16")}
    capped = dataclasses.replace(gemv, down=policy.Tile(16, 128, 4, 1, max_registers=96))
    for tile in tune.GATE_UP_WIDE:  # the tile with its own cap; the down's cap stays
        wide = tune.apply(capped, "gate_up_wide", tile)
        assert wide.gate_up == tile and wide.down.max_registers == 96
        assert policy.legal("route_direct", wide, "fp8_tensor") and policy.legal("route_direct", wide, "fp8_block")
    assert "fp16_products" not in {f for f, _ in tune.candidates("route_direct", "bf16")}
    half = tune.apply(gemv, "fp16_products", True)
    assert half.fp16_products and policy.legal("route_direct", half, "fp8_tensor")
    mma_gate_up = tune.apply(half, "gate_up", policy.Tile(16, 128, 4, 3, swap_ab=True))
    assert mma_gate_up.fp16_products and policy.legal("route_direct", mma_gate_up, "fp8_tensor")  # down: GEMV
    assert not tune.apply(mma_gate_up, "down", policy.Tile(16, 128, 4, 3, swap_ab=True)).fp16_products


def test_restricted_tuning_compiles_every_combination_of_its_moves():
    base = policy.RouteDirectConfig(policy.Tile(16, 512, 8, 1), policy.Tile(16, 128, 4, 1))
    cfgs = tune._configs_to_compile(base, "route_direct", "fp8_tensor", {"pdl", "down_tiles"})
    assert len(cfgs) == 8 and {(c.pdl, c.down_tiles) for c in cfgs} == {
        (p, t) for p in (False, True) for t in (1, 2, 4, 8)}
    every = tune._configs_to_compile(base, "route_direct", "fp8_tensor", None)
    assert len(every) == len(list(tune.candidates("route_direct", "fp8_tensor")))


def test_fp8_dispatch_limits():
    # Mixtral (E=8, top-2) M=4 shares 1.46 routes per active expert: route-direct wins with
    # both FP8 formats (2026-12-01-s15/dispatch_fp8_block), M=8 (2.2) goes grouped.
    assert policy.routes_per_active_expert(4, 2, 8) == pytest.approx(1.463, abs=1e-3)
    for fmt in ("fp8_tensor", "fp8_block"):
        assert policy.choose_path(4, 2, 8, 4096, 7168, fmt, 132) == "route_direct"
        assert policy.choose_path(8, 2, 8, 4096, 7168, fmt, 132) == "grouped"
    # FP8 at 8 < M <= 16: a large layer (DeepSeek-V3 untouched by TP) goes grouped, its TP8 slice does not
    assert policy.choose_path(16, 8, 256, 7168, 2048, "fp8_tensor", 132) == "grouped"
    assert policy.choose_path(8, 8, 256, 7168, 2048, "fp8_tensor", 132) == "route_direct"
    assert policy.choose_path(16, 8, 256, 7168, 256, "fp8_tensor", 132) == "route_direct"
    assert policy.choose_path(16, 8, 256, 7168, 2048, "bf16", 132) == "route_direct"


def test_past_the_plan_expert_limit_goes_route_direct():
    # the grouped path's plan holds at most plan.MAX_EXPERTS local experts; route-direct has no limit
    from fusedmoe.plan import MAX_EXPERTS

    for fmt in ("bf16", "fp8_tensor", "w4a8"):
        assert policy.choose_path(4096, 8, MAX_EXPERTS, 1024, 256, fmt, 132) == "grouped"
        assert policy.choose_path(4096, 8, MAX_EXPERTS + 1, 1024, 256, fmt, 132) == "route_direct"


def test_w4a8_dispatch_limits():
    # FP4 weights keep route-direct to 2.4 routes per active expert up to M=64 (2026-12-04-s28):
    # Mixtral TP2 M=8 (2.22) and Qwen3-30B M=16 (1.55), grouped under FP8's limits, won there
    assert policy.choose_path(8, 2, 8, 4096, 7168, "w4a8", 132) == "route_direct"
    assert policy.choose_path(8, 2, 8, 4096, 7168, "fp8_tensor", 132) == "grouped"
    assert policy.choose_path(16, 8, 128, 2048, 768, "w4a8", 132) == "route_direct"
    assert policy.choose_path(64, 8, 256, 7168, 256, "w4a8", 132) == "route_direct"  # DeepSeek-V3 TP8: 2.30
    assert policy.choose_path(32, 8, 128, 2048, 768, "w4a8", 132) == "route_direct"  # 2.29
    assert policy.choose_path(48, 8, 128, 2048, 768, "w4a8", 132) == "grouped"  # 3.14
    assert policy.choose_path(16, 2, 8, 4096, 7168, "w4a8", 132) == "grouped"  # Mixtral: 4.04
    assert policy.choose_path(65, 8, 1024, 2048, 768, "w4a8", 132) == "grouped"  # past 64 tokens
    # the active-bytes bound holds at M > 8: DeepSeek-V3 untouched by TP at M=16 holds 2.2 GB of FP4
    assert policy.choose_path(16, 8, 256, 7168, 2048, "w4a8", 132) == "grouped"
    assert policy.choose_path(8, 8, 256, 7168, 2048, "w4a8", 132) == "route_direct"


def test_w4a8_block_m_holds_one_standard_deviation_more_rows():
    # w4a8 decodes a weight tile once per block: its BLOCK_M holds mean + sqrt(mean) rows per
    # expert (2026-12-04-s28), the other formats' the mean
    assert policy.grouped_config(512, 8, 256, 7168, 256, "w4a8").block_m == 32  # 16 rows: 20 with the spread
    assert policy.grouped_config(512, 8, 256, 7168, 256, "fp8_tensor").block_m == 16
    assert policy.grouped_config(512, 4, 128, 2880, 720, "w4a8").block_m == 32
    assert policy.grouped_config(384, 8, 192, 4096, 192, "w4a8").block_m == 32  # 16 rows
    assert policy.grouped_config(128, 8, 128, 2048, 768, "w4a8").block_m == 16  # 8 rows: 10.8
    assert policy.grouped_config(4096, 2, 8, 4096, 7168, "w4a8").block_m == 64  # capped at 64
    for m, e in ((300, 8), (700, 64), (2000, 192)):
        cfg = policy.grouped_config(m, 8, e, 2048, 768, "w4a8")
        assert cfg.gate_up.swap_ab == cfg.down.swap_ab == (cfg.block_m < 64)
        assert policy.legal("grouped", cfg, "w4a8"), cfg


def test_top1_layers_keep_the_small_m_limits_up_to_16_routes():
    # 1.55 routes per active expert at M=16 (E=16, top-1): route-direct won or tied on three
    # top-1 layers (2026-12-01/top1); the same ratio with 128 routes (Qwen3, top-8) lost
    assert policy.routes_per_active_expert(16, 1, 16) == pytest.approx(1.553, abs=1e-3)
    for fmt in ("bf16", "fp8_tensor", "fp8_block"):
        assert policy.choose_path(16, 1, 16, 2048, 768, fmt, 132) == "route_direct"
        assert policy.choose_path(32, 1, 16, 2048, 768, fmt, 132) == "grouped"  # bf16: past 16 tokens; FP8: 2.29
    assert policy.choose_path(16, 8, 128, 2048, 768, "bf16", 132) == "grouped"  # Qwen3: 1.55, 128 routes
    assert policy.choose_path(16, 1, 8, 4096, 14336, "fp8_tensor", 132) == "grouped"  # 2.27 routes per expert


def test_fp8_small_experts_keep_route_direct_to_1_8_routes_per_expert():
    # FP8 experts of at most 12 MB: route-direct won at 1.55-1.79 routes per active expert up to
    # M=32 and lost from 1.88 (2026-12-07-s49)
    for fmt in ("fp8_tensor", "fp8_block"):
        assert policy.choose_path(16, 8, 128, 2048, 768, fmt, 132) == "route_direct"  # Qwen3-30B: 1.55
        assert policy.choose_path(24, 8, 128, 2048, 768, fmt, 132) == "grouped"  # 1.90
        assert policy.choose_path(32, 8, 192, 4096, 192, fmt, 132) == "route_direct"  # Hunyuan TP8: 1.79
        assert policy.choose_path(48, 8, 192, 4096, 192, fmt, 132) == "grouped"
        assert policy.choose_path(32, 8, 256, 7168, 256, fmt, 132) == "route_direct"  # DeepSeek-V3 TP8: 1.57
        assert policy.choose_path(33, 8, 1024, 7168, 256, fmt, 132) == "grouped"  # past 32 tokens
        assert policy.choose_path(12, 6, 64, 2048, 1408, fmt, 132) == "route_direct"  # DeepSeek-V2-Lite: 1.62
        assert policy.choose_path(16, 6, 64, 2048, 1408, fmt, 132) == "grouped"  # 1.89
        # experts above 12 MB keep the general limits (1.4 past M=8 with more than 16 routes)
        assert policy.choose_path(24, 1, 16, 4096, 2048, fmt, 132) == "grouped"  # 25 MB, 1.90
        assert policy.choose_path(9, 8, 64, 4096, 1536, fmt, 132) == "grouped"  # 18.9 MB, 1.58
        assert policy.choose_path(9, 8, 64, 4096, 384, fmt, 132) == "route_direct"  # 4.7 MB, 1.58
    assert policy.routes_per_active_expert(32, 8, 192) == pytest.approx(1.79, abs=5e-3)
    assert policy.choose_path(32, 8, 192, 4096, 192, "bf16", 132) == "grouped"  # 16-bit: unchanged


def test_fp8_small_experts_with_few_routes_keep_route_direct_to_2_routes_per_expert():
    # up to 64 routes route-direct won at 1.82-1.90 and lost or tied at 2.22; with 96 routes it
    # lost at 1.88 (2026-12-07-s49, call 6)
    for fmt in ("fp8_tensor", "fp8_block"):
        assert policy.choose_path(6, 8, 32, 2048, 768, fmt, 132) == "route_direct"  # 48 routes, 1.82
        assert policy.choose_path(8, 8, 32, 2048, 768, fmt, 132) == "grouped"  # 64 routes, 2.22
        assert policy.choose_path(12, 2, 16, 4096, 800, fmt, 132) == "route_direct"  # 24 routes, 1.88
        assert policy.choose_path(24, 1, 16, 2048, 768, fmt, 132) == "route_direct"  # 24 routes, 1.90
        assert policy.choose_path(12, 8, 64, 2048, 1024, fmt, 132) == "grouped"  # OLMoE: 96 routes, 1.88
    assert policy.choose_path(6, 8, 32, 2048, 768, "bf16", 132) == "route_direct"  # 16-bit M <= 8: 2.0
    assert policy.choose_path(12, 2, 16, 4096, 800, "bf16", 132) == "grouped"  # 16-bit past M=8: 1.3


def test_fp8_tensor_small_experts_with_few_routes_keep_route_direct_to_2_2():
    # out of sample, fp8_tensor's route-direct won at 2.04-2.12 with 22-34 routes and at 1.86-1.99
    # with 72-80 routes; fp8_block's GEMV is slower and keeps 2.0 up to 64 routes (2026-12-07-s50)
    for m, k, e, h, i in [(17, 2, 20, 3072, 1024), (11, 2, 12, 2048, 1536), (9, 8, 48, 1536, 640),
                          (10, 8, 48, 1536, 640)]:
        assert policy.choose_path(m, k, e, h, i, "fp8_tensor", 132) == "route_direct"
        assert policy.choose_path(m, k, e, h, i, "fp8_block", 132) == "grouped"
    assert policy.choose_path(11, 8, 48, 1536, 640, "fp8_tensor", 132) == "grouped"  # 88 routes
    assert policy.choose_path(8, 8, 32, 2048, 768, "fp8_tensor", 132) == "grouped"  # 64 routes, 2.22: a tie
    # the three layers run after (s50 call 3): won to 2.15-2.17, lost or tied from 2.22
    assert policy.choose_path(12, 6, 40, 2048, 512, "fp8_tensor", 132) == "route_direct"  # 72 routes, 2.10
    assert policy.choose_path(13, 6, 40, 2048, 512, "fp8_tensor", 132) == "grouped"  # 78 routes, 2.22
    assert policy.choose_path(15, 2, 16, 2560, 1536, "fp8_tensor", 132) == "route_direct"  # 11.8 MB, 2.17
    assert policy.choose_path(16, 2, 16, 2560, 1536, "fp8_tensor", 132) == "grouped"  # 2.27


def test_tune_rejects_unknown_move_fields(capsys):
    with pytest.raises(SystemExit):
        tune.main(["--moves", "down_tiles,gemv_stages"])
    assert "unknown field(s) ['gemv_stages']" in capsys.readouterr().err


def test_restricted_tuning_of_tile_fields_compiles_each_move_alone():
    # gate_up x down moves would be ~1,000 combinations: each move alone, as an unrestricted run
    base = policy.RouteDirectConfig(policy.Tile(16, 512, 8, 1), policy.Tile(16, 128, 4, 1))
    cfgs = tune._configs_to_compile(base, "route_direct", "fp8_tensor", {"gate_up", "down"})
    assert len(cfgs) == sum(f in ("gate_up", "down") for f, _ in tune.candidates("route_direct", "fp8_tensor"))


def test_tuner_keeps_an_entry_it_did_not_improve():
    # A restricted A/B that found nothing faster leaves the entry (and its extra fields) alone.
    cfg = policy.RouteDirectConfig(policy.Tile(16, 512, 8, 1), policy.Tile(16, 128, 4, 1), pdl=True)
    key = (128, 8, 2048, 768, "fp8_tensor", 1)
    entry = dict(num_experts=128, top_k=8, hidden=2048, inter=768, format="fp8_tensor", tokens=1,
                 config=dataclasses.asdict(cfg), us=14.75, start_us=16.0, note="kept")
    other = dict(entry, tokens=2, us=20.0)
    assert tune.updated_entries([entry, other], key, "route_direct", cfg, 15.1, 15.1) == [entry, other]
    faster = dataclasses.replace(cfg, down_tiles=2)
    new = tune.updated_entries([entry, other], key, "route_direct", faster, 14.0, 15.1)
    assert new[0] == other and new[1]["config"] == dataclasses.asdict(faster)
    assert (new[1]["us"], new[1]["start_us"]) == (14.0, 15.1) and "note" not in new[1]
    fresh = tune.updated_entries([other], key, "route_direct", cfg, 15.1, 15.1)
    assert fresh[0] == other and fresh[1]["tokens"] == 1 and fresh[1]["config"] == dataclasses.asdict(cfg)
    # a grouped entry written before fp8_promote_k existed serves the rule's interval: unchanged too
    grouped = policy.grouped_config(4096, 8, 128, 2048, 768, "fp8_tensor")
    old = dict(entry, tokens=4096, config={k: v for k, v in dataclasses.asdict(grouped).items() if k != "fp8_promote_k"})
    gkey = (128, 8, 2048, 768, "fp8_tensor", 4096)
    assert tune.updated_entries([old], gkey, "grouped", grouped, 900.0, 900.0) == [old]
    # an fp8_block route-direct entry is compared as served (tensor-core K steps of 128), as
    # the tuner started from it
    mma = policy.RouteDirectConfig(policy.Tile(32, 256, 4, 3, swap_ab=True), policy.Tile(16, 128, 4, 1))
    block = dict(entry, format="fp8_block", config=dataclasses.asdict(mma))
    served = policy.served_config("route_direct", block["config"], 1, "fp8_block")
    assert served.gate_up.block_k == 128 and policy.legal("route_direct", served, "fp8_block")
    bkey = (128, 8, 2048, 768, "fp8_block", 1)
    assert tune.updated_entries([block], bkey, "route_direct", served, 15.1, 15.1) == [block]


def test_a_second_sweep_reaches_moves_that_pay_after_another():
    # FP8 grouped: BLOCK_M 64 is slower with the 128-column gate/up and fastest with the 64-column
    # one (two CTAs per SM): one sweep moves gate/up only; a second then moves BLOCK_M.
    start = policy.GroupedConfig(128, policy.Tile(128, 128, 8, 3), policy.Tile(128, 128, 8, 3), 1, 128)

    def fake_time(cfg):
        narrow = cfg.gate_up.block_n == 64
        other_tiles = (cfg.gate_up.num_warps, cfg.gate_up.num_stages, cfg.gate_up.block_k) != (8, 3, 128)
        return {(128, False): 10.0, (128, True): 9.5, (64, False): 10.5, (64, True): 5.0}.get(
            (cfg.block_m, narrow), 20.0) + (cfg.group_m != 1) + (cfg.down != start.down) + other_tiles

    timed = []
    moves = [mv for mv in tune.candidates("grouped", "fp8_tensor") if mv[0] not in ("block_m+gate_up", "gluon")]
    one, t_one, _ = tune.descend(start, moves, "fp8_tensor", "grouped", fake_time, float("inf"))
    two, t_two, t_start = tune.descend(start, moves, "fp8_tensor", "grouped", fake_time, float("inf"),
                                       lambda cfg, us, err: timed.append(cfg), sweeps=3)
    assert (one.block_m, one.gate_up.block_n, t_one) == (128, 64, 9.5)
    assert (two.block_m, two.gate_up.block_n, t_two, t_start) == (64, 64, 5.0, 10.0)
    assert len(timed) == len(set(timed))  # each config timed once over the sweeps


def test_the_joint_move_reaches_what_each_field_alone_cannot():
    # Qwen3-30B fp8_tensor M=512 (eighth session): from BLOCK_M 16 with the fused 128-column
    # gate/up, BLOCK_M 64 alone and the 64-column gate/up alone were slower, both together faster
    start = policy.GroupedConfig(16, policy.Tile(128, 128, 8, 3, swap_ab=True), policy.Tile(128, 128, 4, 3, swap_ab=True),
                                 1, 128)                                     # the seventh session's entry

    def fake_time(cfg):
        t = {(16, 128): 245.6, (16, 64): 253.5, (64, 128): 266.7, (64, 64): 219.7}.get(
            (cfg.block_m, cfg.gate_up.block_n), 300.0)
        return t + (cfg.group_m != start.group_m) + (cfg.down.block_n != start.down.block_n)

    moves = list(tune.candidates("grouped", "fp8_tensor"))
    best, t_best, _ = tune.descend(start, moves, "fp8_tensor", "grouped", fake_time, float("inf"))
    assert (best.block_m, best.gate_up.block_n, best.gate_up.swap_ab, best.down.swap_ab, t_best) == (64, 64, False,
                                                                                                    False, 219.7)
    assert policy.legal("grouped", best, "fp8_tensor")


def test_tuner_moves_restore_the_promotion_interval():
    # A K step of 64 promotes every 64 columns; the move back to 128 restores the start's 128.
    start = policy.grouped_config(4096, 8, 128, 2048, 768, "fp8_tensor")
    assert start.fp8_promote_k == 128
    k64 = tune.apply(start, "gate_up", dataclasses.replace(start.gate_up, block_k=64), start.fp8_promote_k)
    assert k64.fp8_promote_k == 64
    assert tune.apply(k64, "gate_up", start.gate_up, start.fp8_promote_k) == start


def test_gluon_move_and_what_a_gluon_entry_serves(monkeypatch):
    # The tuner's 'gluon' move (grouped fp8_tensor only) sets one of the Gluon kernels' tile
    # sets ((BLOCK_M, gate/up columns): 64 one warpgroup, 128 warp-specialised with gate/up tiles
    # of 64 or 128 columns), or turns them off: what the Triton kernels run of them
    # (policy.gluon_fallback; at 128 a narrower down and gate/up).
    assert [v for f, v in tune.candidates("grouped", "fp8_tensor") if f == "gluon"] == [False, *policy.GLUON_SETS]
    assert policy.GLUON_SETS == ((64, 64), (128, 64), (128, 128))
    assert not any(f == "gluon" for f, _ in tune.candidates("grouped", "fp8_block"))
    start = policy.grouped_config(2048, 8, 128, 2048, 768, "fp8_tensor")
    for block_m, gate_n in policy.GLUON_SETS:
        on = tune.apply(start, "gluon", (block_m, gate_n), promote_k=start.fp8_promote_k)
        assert on == policy.gluon_grouped_config(start.group_m, block_m, gate_n) and on.block_m == block_m
        assert on.gate_up.block_n == gate_n and policy.legal("grouped", on, "fp8_tensor")
        off = tune.apply(on, "gluon", False)
        assert off == policy.gluon_fallback(on) and not off.gluon
        assert off.gate_up == dataclasses.replace(on.gate_up, block_n=64)  # 128 at BLOCK_M 128 spills on Triton
        assert off.down.block_n == 128 and policy.legal("grouped", off, "fp8_tensor")
    # exactly their tile sets: not another BLOCK_M, not one set's tiles at the other's BLOCK_M,
    # not 128 gate/up columns on the one-warpgroup kernels
    on = policy.gluon_grouped_config(start.group_m)
    for block_m in (32, 128, 256):
        assert not policy.legal("grouped", dataclasses.replace(on, block_m=block_m), "fp8_tensor")
    wide = dataclasses.replace(on, gate_up=dataclasses.replace(on.gate_up, block_n=128))
    assert not policy.legal("grouped", wide, "fp8_tensor")
    with pytest.raises(ValueError, match="gate_n"):
        policy.gluon_grouped_config(1, 64, 128)
    # they promote every 128 columns: below M=512 (the rule's 64) a move there is not legal
    small = policy.grouped_config(64, 8, 128, 2048, 768, "fp8_tensor")
    assert not policy.legal("grouped", tune.apply(small, "gluon", (64, 64), promote_k=small.fp8_promote_k),
                            "fp8_tensor")
    # an entry tuned at M=512 serves M=256 only where the rule's interval leaves it legal: not there
    entry = dict(num_experts=128, top_k=8, hidden=2048, inter=768, format="fp8_tensor", tokens=512,
                 config=dataclasses.asdict(policy.gluon_grouped_config()))
    monkeypatch.setattr(policy, "load_table", lambda device, path: (entry,) if path == "grouped" else ())
    assert policy.tuned_config("grouped", "NVIDIA H200", 512, 8, 128, 2048, 768, "fp8_tensor").gluon
    assert policy.tuned_config("grouped", "NVIDIA H200", 256, 8, 128, 2048, 768, "fp8_tensor") is None
    # fp8_block borrows the entry as its tiles on the Triton kernels (the Gluon ones are fp8_tensor's)
    borrowed = policy.tuned_config("grouped", "NVIDIA H200", 512, 8, 128, 2048, 768, "fp8_block")
    assert borrowed == dataclasses.replace(policy.gluon_grouped_config(), gluon=False)
    assert policy.legal("grouped", borrowed, "fp8_block")
    assert policy.tuned_config("grouped", "NVIDIA H200", 256, 8, 128, 2048, 768, "fp8_block") is None
    # the warp-specialised set's entry: on the Triton kernels its 256-column down and 128-column
    # gate/up would spill, so they run 128 and 64 columns (policy.gluon_fallback;
    # scripts/compile_check.py compiles those tiles)
    for gate_n in (64, 128):
        ws = policy.gluon_grouped_config(4, 128, gate_n)
        entry = dict(entry, tokens=2048, config=dataclasses.asdict(ws))
        assert policy.tuned_config("grouped", "NVIDIA H200", 2048, 8, 128, 2048, 768, "fp8_tensor") == ws
        borrowed = policy.tuned_config("grouped", "NVIDIA H200", 1024, 8, 128, 2048, 768, "fp8_block")
        assert borrowed == policy.gluon_fallback(ws) and not borrowed.gluon and borrowed.block_m == 128
        assert borrowed.down.block_n == 128 and borrowed.gate_up == dataclasses.replace(ws.gate_up, block_n=64)
        assert policy.legal("grouped", borrowed, "fp8_block")
    with pytest.raises(ValueError, match="block_m"):
        policy.gluon_grouped_config(1, 32)
    # beside a served config, the set at another BLOCK_M walks as many rows per weight tile
    served = policy.GroupedConfig(64, policy.Tile(128, 128, 8, 3), policy.Tile(128, 128, 8, 3), 8)
    assert policy.gluon_config_like(served, 128) == policy.gluon_grouped_config(4, 128)
    assert policy.gluon_config_like(served, 128, 128) == policy.gluon_grouped_config(4, 128, 128)
    assert policy.gluon_config_like(dataclasses.replace(served, block_m=16, group_m=1), 64).group_m == 1


def test_descent_reaches_gluon_from_a_start_clamped_by_its_k_step():
    # An M=2048 entry with 64-column K steps promotes every 64; moves take the rule's interval
    # at the case's M (128 from M=512: tune.promote_rule), so the Gluon kernels, which promote
    # every 128, are reachable from it; with the start's interval they would not be legal.
    start = policy.GroupedConfig(128, policy.Tile(128, 64, 8, 3), policy.Tile(256, 64, 8, 3), 8, 64)
    assert tune.promote_rule("grouped", 2048, "fp8_tensor") == 128 and tune.promote_rule("route_direct", 1, "bf16") is None
    moves = [("gluon", (64, 64))]
    fake = lambda cfg: 1.0 if cfg.gluon else 2.0  # noqa: E731
    best, _, _ = tune.descend(start, moves, "fp8_tensor", "grouped", fake, float("inf"),
                              promote_k=tune.promote_rule("grouped", 2048, "fp8_tensor"))
    assert best == policy.gluon_grouped_config(8)
    assert tune.descend(start, moves, "fp8_tensor", "grouped", fake, float("inf"))[0] == start


def test_heuristic_tail_tiles_where_last_blocks_are_short():
    # 128 rows per expert at BLOCK_M 128: about half the experts end on a block of 1..32 routes
    assert policy.grouped_config(512, 2, 8, 4096, 7168, "bf16").tail_m == policy.GROUPED_TAIL_M
    assert policy.grouped_config(512, 2, 8, 4096, 7168, "fp8_block").tail_m == policy.GROUPED_TAIL_M
    # 85 rows per expert at BLOCK_M 128 (Hunyuan TP8 M=2048): no expert ends on a short block
    assert policy.grouped_config(2048, 8, 192, 4096, 192, "bf16").tail_m == 0
    # 2048 rows per expert: the tails would save about 1% of the MMA rows
    assert policy.grouped_config(8192, 2, 8, 4096, 7168, "bf16").tail_m == 0
    # fp8_tensor takes none; BLOCK_M below 64 none
    assert policy.grouped_config(512, 2, 8, 4096, 7168, "fp8_tensor").tail_m == 0
    assert policy.grouped_config(128, 2, 8, 4096, 7168, "bf16").block_m < 64
    assert policy.grouped_config(128, 2, 8, 4096, 7168, "bf16").tail_m == 0
    assert policy.tail_saving(85, 128, 32) < 1e-6 < policy.tail_saving(128, 128, 32)
    # many rows: the count modulo BLOCK_M is uniform (a closed form, not a sum over every block)
    for rows in (40000.0, 1e20):
        assert policy.tail_saving(rows, 64, 16) == pytest.approx(16 / 64 * 48 / (rows + 32), rel=1e-3)
    assert policy.tail_saving(30000.0, 64, 16) == pytest.approx(16 / 64 * 48 / 30032, rel=1e-3)  # by the sum
    for m in (1, 7, 64, 300, 4096, 65536):
        for e in (8, 128, 256):
            for fmt in ("bf16", "fp8_block", "fp8_tensor", "w4a8"):
                assert policy.legal("grouped", policy.grouped_config(m, 8, e, 2048, 768, fmt), fmt)
