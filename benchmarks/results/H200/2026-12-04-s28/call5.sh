#!/usr/bin/env bash
# Throw-away (28th session), call 5: the final tree (both w4a8 rules).  GPU tests of w4a8 and the
# policy, then auto w4a8 with the accuracy check at M 1..1024 over the call-4 shapes.  Results
# packed into $OUT/r.tgz after every step.
set -u
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
pack() { tar czf $OUT/r.tgz -C $R . 2>/dev/null; }
step() { echo "$1 +$(el)s" | tee -a $R/steps.log; pack; }
{ python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; git log -1 --oneline; git status --short; } > $R/env.txt 2>&1
(timeout 240 python -m pytest -q -n 4 tests/test_w4a8.py tests/test_policy.py tests/test_fused_moe.py -k "w4a8 or policy or dispatch or auto" > $R/tests.log 2>&1; echo "rc $?" >> $R/tests.log); step "tests $(tail -1 $R/tests.log)"
S="qwen3_30b_a3b,deepseek_v3_tp8,mixtral_8x7b_tp2,hunyuan_tp8,gpt_oss_120b_tp4"
S="$S,benchmarks/heldout/deepseek_v2_lite.json,benchmarks/heldout/llama4_scout_tp8.json,benchmarks/heldout/olmoe_1b_7b.json"
S="$S,benchmarks/top1/top1_e8_h4096_i14336.json,benchmarks/top1/top1_e16_h4096_i2048.json,benchmarks/top1/top1_e16_h2048_i768.json"
(timeout $((570 - $(el))) python -m fusedmoe bench --routing softmax --formats w4a8 --paths auto --tokens 1,8,16,32,64,128,256,384,512,1024 \
   --shape $S --replays 10 --out $R/auto > $R/auto.log 2>&1); step "auto rc $?"
rm -f $R/*/*.png; pack
