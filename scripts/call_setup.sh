# Sourced by a session's device call script (benchmarks/results/<device>/<session>/callN.sh):
#   R=/tmp/rN; LIMIT=585; . scripts/call_setup.sh
# Makes the results folder R, packs it into $OUT/r.tgz after each `step "name rc $?"` and once
# more at LIMIT seconds (a watchdog, so a call cut by the device's time limit still brings back
# what it wrote), writes R/env.txt (GPU, driver, torch, Triton, commit, date), and on a device
# with no tuned tables copies the H200's under its name (T: its route-direct table).
set -u
rm -rf $R; mkdir -p $R; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
pack() { tar czf $OUT/r.tgz -C $R . 2>/dev/null; }
step() { echo "$1 +$(el)s" | tee -a $R/steps.log; pack; }
( sleep ${LIMIT:-585}; pack ) >/dev/null 2>&1 & WD=$!
disown $WD  # out of the job table: a bare `wait` in the call script must not wait for the watchdog
finish() { rm -f $R/*/*.png; kill $WD 2>/dev/null; pack; }
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; git log -1 --oneline; date -u; } > $R/env.txt 2>&1
DEV=$(python -c "import torch; from fusedmoe.policy import device_dir_name; print(device_dir_name(torch.cuda.get_device_name()))")
C=fusedmoe/configs
if [ "$DEV" != NVIDIA_H200 ]; then mkdir -p $C/$DEV; cp $C/NVIDIA_H200/*.json $C/$DEV/; fi
T=$C/$DEV/route_direct.json
# bench_in_turn "CMD" TIMEOUT V1 V2 ...: CMD --out R/dec_<n>_<V> with R/route_direct_<V>.json as the
# route-direct table, for each V in turn (an A/B in both orders: start tuned tuned start)
bench_in_turn() {
  local cmd=$1 limit=$2 n=0 v; shift 2
  for v in "$@"; do
    n=$((n+1)); cp $R/route_direct_$v.json $T
    timeout $limit $cmd --out $R/dec_${n}_$v > $R/dec_${n}_$v.log 2>&1; step "dec $n $v rc $?"
  done
}
# same_configs A.json B.json: whether two route-direct tables hold the same configs (times aside)
same_configs() {
  python -c "import json,sys; c=lambda f: sorted(json.dumps(e['config'], sort_keys=True) for e in json.load(open(f))['entries']); sys.exit(c(sys.argv[1]) != c(sys.argv[2]))" "$1" "$2"
}
# tune_and_ab MOVES TOKENS TUNE_TIMEOUT BUDGET_MIN BENCH_TOKENS BENCH_TIMEOUT [FORMATS] [SHAPES]: the tuner
# over MOVES from each entry of SHAPES (default peers: the PEERS shapes) at TOKENS in FORMATS (default
# bf16,fp8_tensor,fp8_block; log R/tune.jsonl), then, if any entry's config moved, the decode bench at
# BENCH_TOKENS in FORMATS on the start table and the tuned one in turn; the start table is restored
tune_and_ab() {
  local formats=${7:-bf16,fp8_tensor,fp8_block} shapes=${8:-peers}
  cp $T $R/route_direct_start.json
  timeout $3 python -m fusedmoe tune --shape $shapes --formats $formats --tokens $2 \
    --paths route_direct --moves $1 --force --budget-min $4 --log $R/tune.jsonl > $R/tune.log 2>&1
  step "tune rc $?"
  cp $T $R/route_direct_tuned.json
  if same_configs $R/route_direct_start.json $R/route_direct_tuned.json; then step "no entry moved"; return; fi
  bench_in_turn "python -m fusedmoe bench --routing softmax --no-check --paths auto --formats $formats --tokens $5 --shape $shapes --replays 10" \
    $6 start tuned tuned start
  cp $R/route_direct_start.json $T
}
# plan_patch_ab PATCH MARKER: the plan bench (512..2048 routes x 64..512 experts) by histogram at 8
# warps and under auto, on the committed kernels (a copy of the tree with PATCH taken off, /tmp/base)
# and on this tree (PATCH applied: MARKER is in fusedmoe/_plan_kernels.py), in turn base, patch, patch,
# base, after compiling all four in parallel; R/hist_<n>_<tree>, R/auto_<n>_<tree>
# base_tree PATCH: /tmp/base, a copy of fusedmoe/ and scripts/ with PATCH (applied here) taken off (its tests/ hunks aside)
base_tree() {
  local p=$PWD/$1
  rm -rf /tmp/base; mkdir -p /tmp/base; cp -r fusedmoe scripts /tmp/base/; (cd /tmp/base && git apply -R --exclude="tests/*" $p)
}
plan_patch_ab() {
  grep -q "$2" fusedmoe/_plan_kernels.py || { echo "$1 is not applied" > $R/error.txt; return 1; }
  local B=/tmp/base pids=() n=0 t a tag
  base_tree $1
  run_plan() {  # run_plan TREE ARGS OUT_NAME (empty: warm-up) TIMEOUT
    (cd $1 && PYTHONPATH=$1 timeout $4 python -m fusedmoe.bench.plan --routes 512,1024,2048 --experts 64,128,256,512 \
      $2 ${3:+--out $R/$3} > $R/${3:-warm_$RANDOM}.log 2>&1)
  }
  for t in $B $PWD; do for a in "--path recount --histogram --warps 8" ""; do run_plan $t "$a" "" 240 & pids+=($!); done; done
  wait "${pids[@]}"; step "compiled"
  for t in $B $PWD $PWD $B; do
    n=$((n+1)); tag=$([ $t = $B ] && echo base || echo patch)
    run_plan $t "--path recount --histogram --warps 8" hist_${n}_$tag 40; step "hist $n $tag rc $?"
    run_plan $t "" auto_${n}_$tag 40; step "auto $n $tag rc $?"
  done
}
# mixtral_kernels TREE PATH OUT_NAME (empty: warm-up) TIMEOUT [SCRIPT]: bench.kernels (or SCRIPT) on
# TREE at Mixtral TP2 / Mixtral-8x7B fp8_tensor M 512 / 2048 with --path PATH, into R/OUT_NAME
mixtral_kernels() {
  (cd $1 && PYTHONPATH=$1 timeout $4 python ${5:--m fusedmoe.bench.kernels} --shape mixtral_8x7b_tp2,mixtral_8x7b \
    --formats fp8_tensor --tokens 512,2048 --path $2 ${3:+--out $R/$3} > $R/${3:-warm_$RANDOM}.log 2>&1)
}
# gluon_ab TAG: /tmp/base (base_tree) and this tree compiled in parallel (mixtral_kernels, auto) beside
# the GPU tests of the Gluon configs, then timed in turn base, patch, patch, base (R/TAG_<n>_<tree>)
gluon_ab() {
  local pids=() n=0 t tag
  for t in /tmp/base $PWD; do mixtral_kernels $t auto "" 200 & pids+=($!); done
  timeout 200 python -m pytest -q tests/test_fused_moe.py -k "gluon" > $R/tests.log 2>&1
  step "tests rc $?"
  wait "${pids[@]}"; step "compiled"
  for t in /tmp/base $PWD $PWD /tmp/base; do
    n=$((n+1)); tag=$([ $t = /tmp/base ] && echo base || echo patch)
    mixtral_kernels $t auto $1_${n}_$tag 60; step "$1 $n $tag rc $?"
  done
}
