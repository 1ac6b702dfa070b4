#!/usr/bin/env bash
# Thirty-first session, call 2 (not run: no device in this session; for the next one): the
# route-direct 'down_preload' tuner move (the down's first 1-4 K steps' weight tiles loaded
# before its PDL wait) from each PEERS entry at M 1, 2, 4 (45 cases), then the decode bench at
# M 1..8 with the start table and the tuned one in turn (start, tuned, tuned, start), and the
# timeline of the moved entries (scripts/decode_timeline.py) on the tuned table.
# Expected (floor: bytes / 4.25 TB/s): where a down program has 2-3 K steps (Qwen3-30B I 768,
# GPT-OSS TP4 I 720, DeepSeek-V3 TP8 I 256 at their tuned tiles), one HBM round trip (0.5-1 us)
# less after the gate/up grid ends: 4-8% of their 11-17 us at M=1; nothing where one step holds
# all of I (Hunyuan TP8, I 192).  On a device other than the H200 the H200 tables are copied
# under its name first.  Packed into $OUT/r.tgz.
R=/tmp/r2; LIMIT=585; . scripts/call_setup.sh
cp $T $R/route_direct_start.json
timeout 330 python -m fusedmoe tune --shape peers --formats bf16,fp8_tensor,fp8_block --tokens 1,2,4 \
  --paths route_direct --moves down_preload --force --budget-min 5.2 --log $R/tune_down_preload.jsonl > $R/tune.log 2>&1
step "tune rc $?"
cp $T $R/route_direct_tuned.json
B="python -m fusedmoe bench --routing softmax --no-check --paths auto --formats bf16,fp8_tensor,fp8_block --tokens 1,2,4,8 --shape peers --replays 10"
bench_in_turn "$B" 45 start tuned tuned start
cp $R/route_direct_tuned.json $T
timeout 60 python scripts/decode_timeline.py --cases qwen3_30b_a3b:fp8_tensor:1,gpt_oss_120b_tp4:fp8_block:1,deepseek_v3_tp8:fp8_tensor:1,qwen3_30b_a3b:bf16:1 \
  --out $R/timeline_tuned > $R/timeline_tuned.log 2>&1; step "timeline rc $?"
finish
