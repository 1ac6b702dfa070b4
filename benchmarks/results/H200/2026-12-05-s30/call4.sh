#!/usr/bin/env bash
# Thirtieth session, call 4: the final tree (the register_caps move, the table with capped
# entries).  The capped table entries at their shapes under compute-sanitizer memcheck (with the
# reference check), the route-direct / PDL / launch / policy GPU tests, and the graph check.
set -u
R=/tmp/r4; rm -rf $R; mkdir -p $R; export PYTHONUNBUFFERED=1
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
pack() { tar czf $OUT/r.tgz -C $R . 2>/dev/null; }
step() { echo "$1 +$(el)s" | tee -a $R/steps.log; pack; }
( sleep 330; pack ) >/dev/null 2>&1 & WD=$!
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; git log -1 --oneline; date -u; } > $R/env.txt 2>&1
DEV=$(python -c "import torch; from fusedmoe.policy import device_dir_name; print(device_dir_name(torch.cuda.get_device_name()))")
C=fusedmoe/configs
if [ "$DEV" != NVIDIA_H200 ]; then mkdir -p $C/$DEV; cp $C/NVIDIA_H200/*.json $C/$DEV/; fi
S=benchmarks/results/H200/2026-12-05-s30
python $S/capped_entries_check.py > $R/capped_plain.log 2>&1; step "capped plain rc $?"
(PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 280 compute-sanitizer --tool memcheck --error-exitcode 9 \
  python $S/capped_entries_check.py > $R/capped_memcheck.log 2>&1; echo "rc $?" >> $R/capped_memcheck.log) &
MC=$!
timeout 150 python -m pytest -q -n 8 tests/test_policy.py tests/test_launch.py tests/test_fused_moe.py \
  -k "route_direct or pdl or register or cached_launches" > $R/tests.log 2>&1; step "tests rc $?"
timeout 110 python -m fusedmoe check graphs --out $R > $R/graphs.log 2>&1; step "graphs rc $?"
wait $MC; step "memcheck done"
kill $WD 2>/dev/null; pack
