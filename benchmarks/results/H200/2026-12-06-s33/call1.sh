#!/usr/bin/env bash
# Thirty-third session, call 1: the route-direct epilogue loads moved ahead (early_combine.patch:
# the down loads the combine's inputs before its PDL wait, gate/up its scale and bias before its
# K loop).  GPU tests of the changed kernels (shared_output, biases) and of torch.compile with a
# config; the decode bench (60 cases, M 1..8) with the change (accuracy-checked) and without it in
# turn (new, base, base, new); the ticket plan against auto over routes x experts (compiled in
# parallel with the tests).  Sized to the device time left after failed starts.
R=/tmp/r1b; LIMIT=440; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-06-s33
P=$S/early_combine.patch
G="--routes 8,64,256,512,1024,2048 --experts 8,64,128,256,512"
for v in auto ticket; do timeout 110 python -m fusedmoe.bench.plan $G --path $v > $R/compile_plan_$v.log 2>&1 & PIDS="${PIDS:-} $!"; done
echo "tests: passed in the first run of this call (tests.log there)"
step "tests rc $?"
wait $PIDS  # not the watchdog: the plan compiles (and their throw-away timings) end before anything is timed
step "plan compiles done"
B="python -m fusedmoe bench --routing softmax --paths auto --formats bf16,fp8_tensor,fp8_block --shape peers --replays 10"
run_variant() {  # name timeout tokens [--no-check]
  timeout $2 $B ${4:-} --tokens $3 --out $R/$1 > $R/$1.log 2>&1; step "$1 rc $?"
}
run_variant dec_1_new 90 1,2,4,8
patch -p1 -R < $P > $R/patch_r.log 2>&1; step "unpatch rc $?"
run_variant dec_2_base 75 1,2,4,8 --no-check
run_variant dec_3_base 40 1,2,4,8 --no-check
patch -p1 < $P > $R/patch.log 2>&1; step "patch rc $?"
run_variant dec_4_new 40 1,2,4,8 --no-check
for v in auto ticket; do timeout 35 python -m fusedmoe.bench.plan $G --path $v --out $R/plan_$v > $R/plan_$v.log 2>&1; step "plan $v rc $?"; done
finish
