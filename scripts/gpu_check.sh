#!/usr/bin/env bash
# The GPU check and benchmarks, step by step, each under its own time limit, in one call.
#   scripts/gpu_check.sh OUT_DIR [steps...]
# steps (default: all, in this order, most important first):
#   sass      kernels compile for sm_90, wgmma where expected, no spills (also runs without a GPU)
#   accuracy  PEERS shapes (ACCURACY_SHAPES) x M {1,8,64,512,4096} x formats (CHECK_FORMATS, default all five,
#             also of graphs and memcheck) x paths against the float64 reference
#   graphs    CUDA-graph capture, replay with changed inputs, bitwise equal to eager
#   unseen    model shapes no table or rule was read from, and odd ones (fusedmoe check unseen): auto and
#             both paths against the float64 reference, expert windows, CUDA graphs
#   fp8probe  stage-by-stage differences of the grouped FP8 path against its reference
#   tests     the test suite on CUDA
#   memcheck  compute-sanitizer memcheck on small ragged cases, every path and format (compiled by plain runs
#             first, then one memcheck process per format, in parallel)
#   swiglu    fused SwiGLU + FP8 quantisation against the separate kernels
#   kernels   per-kernel device time of one call (KERNEL_TOKENS 1,8; KERNEL_FORMATS; KERNEL_SHAPES peers; KERNEL_PATH
#             auto, or grouped / grouped_gluon / ...) against the floor and the graph time, into OUT_DIR/kernels_PATH
#   promote   grouped FP8 with MMA sums promoted every 32 / 64 / 128 columns or never (PROMOTE_VARIANTS, _SHAPES,
#             _FORMATS, _TOKENS): time and rel-L2
#   plan      route-plan time over routes x experts (target <= 3 us up to 2048 x 512)
#   planpar   each blocked plan kernel forced: one program, three launches (512..65536 routes), the tiled
#             launches at expert tiles TILED_TILES (default 1 2 4 8), and the recount launch at chunk x warps
#             RECOUNT_VARIANTS (default 32x4 64x4 64x8 128x8 128x16)
#   decode    fusedmoe bench, M 1..16, auto and both paths forced
#   grouped   fusedmoe bench, M 32..8192 (GROUPED_TOKENS, GROUPED_FORMATS), auto, grouped and torch_grouped_mm
#   heldout   fusedmoe bench of benchmarks/heldout/*.json (no tables: the heuristics and the dispatch on shapes
#             no rule was read from), M 1..512 (HELDOUT_TOKENS), auto and both paths forced
#   presets   fusedmoe bench of the presets beyond PEERS (auto only, M 1..8192; issue 3's full table;
#             PRESET_SHAPES to run some of them)
#   tune      fusedmoe tune (TUNE_PATHS route_direct, TUNE_FORMATS bf16,fp8_tensor, TUNE_TOKENS 1,2,4,8,
#             TUNE_SHAPES peers, TUNE_MIN 4 minutes, TUNE_MOVES all fields, TUNE_SWEEPS 1) into OUT_DIR/configs, re-tuning the cases it
#             reaches; then installed in this tree so that later steps use them
# Limits per step: STEP_S (default 240).  Exit status 1 if any step failed.
set -u
out=${1:?usage: scripts/gpu_check.sh OUT_DIR [steps...]}; shift
steps=${*:-sass accuracy graphs unseen fp8probe tests memcheck swiglu plan decode grouped}
mkdir -p "$out"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
limit=${STEP_S:-240}
t0=$(date +%s)
status=0
run() {
  local name=$1; shift
  echo "=== $name (+$(( $(date +%s) - t0 ))s)"
  timeout "$limit" "$@" > "$out/$name.log" 2>&1 || { echo "=== FAILED: $name (rc $?)"; status=1; }
  tail -n 4 "$out/$name.log"
}
bench=(python -m fusedmoe bench --shape peers --routing softmax --replays 10)  # decode: checked too (small M)
for step in $steps; do
  case $step in
    sass)     run sass env -u TRITON_INTERPRET python scripts/compile_check.py --json "$out/sass.json" ;;
    accuracy) run accuracy python -m fusedmoe check accuracy --out "$out" ${ACCURACY_SHAPES:+--shapes "$ACCURACY_SHAPES"} \
                ${CHECK_FORMATS:+--formats "$CHECK_FORMATS"} ;;
    graphs)   run graphs python -m fusedmoe check graphs --out "$out" ${CHECK_FORMATS:+--formats "$CHECK_FORMATS"} ;;
    unseen)   run unseen python -m fusedmoe check unseen --out "$out" ${CHECK_FORMATS:+--formats "$CHECK_FORMATS"} ;;
    fp8probe) run fp8probe python scripts/fp8_probe.py ;;
    tests)    # compiling each test's kernel variants dominates on a fresh machine: 8 workers compile in parallel
              xdist=$(python -c "import xdist" 2>/dev/null && echo "-n 8")
              run tests env FUSEDMOE_FUZZ=${FUSEDMOE_FUZZ:-30} FUSEDMOE_SEED=${FUSEDMOE_SEED:-$RANDOM} \
                python -m pytest tests -rf --durations=15 --junitxml "$out/tests.xml" $xdist ;;
    memcheck) # compiling dominates under the sanitizer: plain runs fill the Triton cache, then one
              # memcheck process per format runs from it, all formats in parallel
              fmts=${CHECK_FORMATS:-bf16,fp8_tensor,fp8_block,w4a8}
              for f in ${fmts//,/ }; do run "memcheck_compile_$f" python -m fusedmoe check sanitize --formats "$f" & done
              wait
              for f in ${fmts//,/ }; do
                run "memcheck_$f" env PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck \
                  --error-exitcode 9 python -m fusedmoe check sanitize --formats "$f" &
              done
              wait  # the background runs cannot set status: their logs say how they ended
              for f in ${fmts//,/ }; do
                grep -q "ERROR SUMMARY: 0 errors" "$out/memcheck_$f.log" && grep -q "sanitize cases done" \
                  "$out/memcheck_$f.log" || { echo "=== FAILED: memcheck_$f"; status=1; }
              done ;;
    swiglu)   run swiglu python -m fusedmoe.bench.swiglu_quant --out "$out" ;;
    kernels)  run kernels python -m fusedmoe.bench.kernels --tokens "${KERNEL_TOKENS:-1,8}" \
                --formats "${KERNEL_FORMATS:-bf16,fp8_tensor,fp8_block}" --path "${KERNEL_PATH:-auto}" \
                ${KERNEL_SHAPES:+--shape "$KERNEL_SHAPES"} --out "$out/kernels_${KERNEL_PATH:-auto}" ;;
    promote)  run promote python scripts/promote_probe.py --out "$out" ${PROMOTE_SHAPES:+--shape "$PROMOTE_SHAPES"} \
                ${PROMOTE_FORMATS:+--formats "$PROMOTE_FORMATS"} ${PROMOTE_TOKENS:+--tokens "$PROMOTE_TOKENS"} \
                ${PROMOTE_VARIANTS:+--variants "$PROMOTE_VARIANTS"} ;;
    plan)     run plan python -m fusedmoe.bench.plan --out "$out" ;;
    planpar)  run plan_single python -m fusedmoe.bench.plan --routes 8,64,512,768,1024,2048 --experts 64,512 --path single
              run plan_parallel python -m fusedmoe.bench.plan --routes 512,768,1024,2048,16384,65536 --experts 64,512 \
                --path parallel
              for et in ${TILED_TILES:-1 2 4 8}; do
                run "plan_tiled_t$et" python -m fusedmoe.bench.plan --routes 8,64,256,512,1024,2048 \
                  --experts 64,256,512,1024,2048 --path tiled --e-tile "$et" --out "$out/plan_tiled_t$et"
              done
              for cw in ${RECOUNT_VARIANTS:-32x4 64x4 64x8 128x8 128x16}; do
                run "plan_recount_$cw" python -m fusedmoe.bench.plan --routes 8,64,512,1024,2048 \
                  --experts 64,256,512 --path recount --chunk "${cw%x*}" --warps "${cw#*x}" --out "$out/plan_recount_$cw"
              done ;;
    tune)     mkdir -p "$out/configs" && cp -r fusedmoe/configs/NVIDIA_H200 "$out/configs/"
              run tune python -m fusedmoe tune --shape "${TUNE_SHAPES:-peers}" --formats "${TUNE_FORMATS:-bf16,fp8_tensor}" \
                --tokens "${TUNE_TOKENS:-1,2,4,8}" --paths "${TUNE_PATHS:-route_direct}" --budget-min "${TUNE_MIN:-4}" \
                --force --out-dir "$out/configs" --log "$out/tune_candidates.jsonl" ${TUNE_MOVES:+--moves "$TUNE_MOVES"} \
                ${TUNE_SWEEPS:+--sweeps "$TUNE_SWEEPS"}
              cp "$out"/configs/NVIDIA_H200/*.json fusedmoe/configs/NVIDIA_H200/ ;;
    decode)   run decode "${bench[@]}" --formats bf16,fp8_tensor,fp8_block --tokens 1,2,4,8,16 \
                --paths auto,route_direct,grouped --out "$out/decode" ;;
    presets)  run presets python -m fusedmoe bench \
                --shape "${PRESET_SHAPES:-qwen3_235b_a22b,qwen3_235b_a22b_tp4,qwen3_235b_a22b_tp8,deepseek_v3,mixtral_8x7b,gpt_oss_120b}" \
                --no-check --replays 10 --formats bf16,fp8_tensor,fp8_block --tokens 1,2,4,8,16,32,64,128,512,2048,8192 \
                --paths auto --out "$out/presets" ;;
    heldout)  for f in benchmarks/heldout/*.json; do
                run "heldout_$(basename "$f" .json)" python -m fusedmoe bench --shape "$f" --no-check --replays 10 \
                  --formats bf16,fp8_tensor,fp8_block --tokens "${HELDOUT_TOKENS:-1,2,4,8,16,64,512}" \
                  --paths auto,route_direct,grouped \
                  --out "$out/heldout/$(basename "$f" .json)"
              done ;;
    grouped)  run grouped "${bench[@]}" --no-check --formats "${GROUPED_FORMATS:-bf16,fp8_tensor,fp8_block}" \
                --tokens "${GROUPED_TOKENS:-32,64,128,512,2048,8192}" \
                --paths auto,grouped,torch_grouped_mm --out "$out/grouped" ;;
    *) echo "unknown step $step"; status=1 ;;
  esac
done
echo "=== done (+$(( $(date +%s) - t0 ))s)"
exit $status
