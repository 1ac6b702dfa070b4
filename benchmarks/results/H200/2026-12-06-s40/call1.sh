#!/usr/bin/env bash
# Fortieth session, call 1 (run after the thirty-ninth's next_call.sh, on an H100): one_histogram.patch
# against the committed recount kernel, by histogram at 8 warps and under auto, over 512..2048 routes
# x 64..512 experts, in turn (base, patch, patch, base).  The patch counts every route and the routes
# before the chunk in one tl.histogram of 2 * E_BINS bins (bin 2 * e + [r >= chunk start]), split
# into before and after in registers, instead of two histograms of E_BINS.  Compiled for sm_90 (8
# warps): the same population counts and votes, 17 barriers against 20, 1400 instructions against
# 1336 at 2048 x 128, no spill.  Expected: 0.05-0.15 us less where auto counts by histogram (the
# barriers and one shared-memory reduction fewer); no change by atomics or tiled.  Apply with
#   git apply benchmarks/results/H200/2026-12-06-s40/one_histogram.patch
# before the call (plan_patch_ab checks that it is applied) and take it off after.
R=${R:-/tmp/r1}; LIMIT=${LIMIT:-400}; . scripts/call_setup.sh
if [ "$DEV" = NVIDIA_H200 ]; then finish; R=${R}h LIMIT=560 SKIP_M16=1 bash benchmarks/results/H200/2026-12-06-s36/call3.sh; exit 0; fi
plan_patch_ab benchmarks/results/H200/2026-12-06-s40/one_histogram.patch "before, after = tl.split(both)"
finish
