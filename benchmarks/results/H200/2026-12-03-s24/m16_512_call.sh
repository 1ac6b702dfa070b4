#!/usr/bin/env bash
# Throw-away (24th session): M 16..512 over the PEERS shapes with this session's tables, M 128/512 first.
set -u
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
( sleep 240; tar czf $OUT/r.tgz -C $R . ) >/dev/null 2>&1 & WD=$!
B="python -m fusedmoe bench --shape peers --routing softmax --replays 10 --no-check --paths auto --formats bf16,fp8_tensor,fp8_block"
t0=$(date +%s)
$B --tokens 128,512 --out $R/m128_512 > $R/m128_512.log 2>&1; echo "m128_512 rc $? +$(( $(date +%s)-t0 ))s" | tee -a $R/steps.log
python -m fusedmoe.bench.compare $R/m128_512/results.json --impl auto > $R/m128_512_vs_peers.md 2>&1
timeout $((235-$(date +%s)+t0)) $B --tokens 16,32,64 --out $R/m16_64 > $R/m16_64.log 2>&1; echo "m16_64 rc $? +$(( $(date +%s)-t0 ))s" | tee -a $R/steps.log
python -m fusedmoe.bench.compare $R/m16_64/results.json --impl auto > $R/m16_64_vs_peers.md 2>&1
rm -f $R/*/*.png
kill $WD 2>/dev/null; tar czf $OUT/r.tgz -C $R .
