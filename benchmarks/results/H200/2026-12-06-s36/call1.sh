#!/usr/bin/env bash
# Thirty-sixth session, calls 1 and 2: a grid-wide barrier in one Triton kernel under a cooperative
# launch, in a CUDA graph: correct? what does it cost?  (barrier_probe.py, a throw-away)
R=/tmp/r1; LIMIT=200; . scripts/call_setup.sh
timeout 180 python benchmarks/results/H200/2026-12-06-s36/barrier_probe.py > $R/barrier_probe.jsonl 2> $R/barrier_probe.err
step "probe rc $?"
finish
