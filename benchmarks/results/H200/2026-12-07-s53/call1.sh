#!/usr/bin/env bash
# Fifty-third session, call 1.  On an H200: issue 4's figures on the head, with the plan bench, the
# test suite and the graph check as far as the call's time allows (2026-12-07-s52/call1.sh, its H200
# branch).  On any other card: the tuner's `gate_up_wide` move from each PEERS FP8 entry at the
# M given by TOKENS (default 4), then the decode bench on the start and tuned tables in turn
# (2026-12-07-s52/call2.sh).
S=benchmarks/results/H200/2026-12-07-s52
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  exec bash $S/call1.sh
else
  TOKENS=${TOKENS:-4} exec bash $S/call2.sh
fi
