#!/usr/bin/env bash
# Throw-away (29th session), call 2: the test suite on CUDA with fusedmoe._launch (every kernel,
# format and path; test_launch's GPU test runs each path and format three times on new data, the
# later calls through the cached launchers), then the host path old/new/old/new (ab_old/: HEAD
# ec48521's package), then compute-sanitizer memcheck of the cached-launch GPU test.
# ab_old/ was made here before the call: mkdir -p ab_old/scripts; git archive ec48521 fusedmoe | tar -x -C ab_old;
# cp scripts/host_path_probe.py ab_old/scripts/
set -u
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONUNBUFFERED=1
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
pack() { tar czf $OUT/r.tgz -C $R . 2>/dev/null; }
step() { echo "$1 +$(el)s" | tee -a $R/steps.log; pack; }
export PYTHONPATH=$PWD
(timeout 380 python3 -m pytest tests -q -rf -n 8 --durations=10 > $R/tests.log 2>&1; echo "rc $?" >> $R/tests.log); step "tests $(tail -1 $R/tests.log)"
for t in old new old new; do
  n=$(ls $R | grep -c "^host_$t") ; n=$((n / 3 + 1))
  if [ $t = old ]; then s=ab_old/scripts/host_path_probe.py; else s=scripts/host_path_probe.py; fi
  timeout 60 python3 $s --out $R/host_${t}$n > $R/host_${t}$n.log 2>&1; step "host $t$n rc $?"
done
timeout $((575 - $(el))) compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q tests/test_launch.py \
  -k cached_launches > $R/memcheck.log 2>&1; step "memcheck rc $?"
pack
