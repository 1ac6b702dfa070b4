#!/usr/bin/env bash
# The whole GPU check in one call (issue 2, item 9): the test suite on CUDA, accuracy at real
# shapes, CUDA-graph replay with changed inputs, compute-sanitizer memcheck, wgmma and spills in SASS
# (the last also runs without a GPU: scripts/compile_check.py).
# Usage: scripts/gpu_check.sh OUT_DIR [steps...]   steps: tests accuracy graphs memcheck sass (default all)
set -u
out=${1:?usage: scripts/gpu_check.sh OUT_DIR [steps...]}; shift
steps=${*:-tests accuracy graphs memcheck sass}
mkdir -p "$out"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/fusedmoe-triton-cache}
status=0
run() { echo "=== $1"; shift; "$@" || { echo "=== FAILED: $*"; status=1; }; }
for step in $steps; do
  case $step in
    tests) run tests env FUSEDMOE_FUZZ=${FUSEDMOE_FUZZ:-40} timeout 400 python -m pytest tests -q -x -p no:warnings \
             2>&1 | tee "$out/pytest.log" | tail -5 ;;
    accuracy) run accuracy timeout 400 python scripts/gpu_check.py accuracy --out "$out" > "$out/accuracy.log" 2>&1
              tail -3 "$out/accuracy.log"; grep -c FAIL "$out/accuracy.log" ;;
    graphs) run graphs timeout 200 python scripts/gpu_check.py graphs --out "$out" 2>&1 | tail -4 ;;
    memcheck) run memcheck env PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 300 compute-sanitizer --tool memcheck \
                --error-exitcode 9 python scripts/gpu_check.py sanitize > "$out/memcheck.log" 2>&1
              tail -3 "$out/memcheck.log" ;;
    sass) run sass env -u TRITON_INTERPRET python scripts/compile_check.py --json "$out/sass.json" ;;
  esac
done
exit $status
