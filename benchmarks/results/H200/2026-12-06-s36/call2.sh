#!/usr/bin/env bash
# Thirty-sixth session, call 2: barrier_probe.py's variants (counter polling, a generation flag
# raised by the last arrival, a two-level tree; with and without a sleep between polls)
R=/tmp/r2; LIMIT=280; . scripts/call_setup.sh
timeout 260 python benchmarks/results/H200/2026-12-06-s36/barrier_probe.py > $R/barrier_probe.jsonl 2> $R/barrier_probe.err
step "probe rc $?"
finish
