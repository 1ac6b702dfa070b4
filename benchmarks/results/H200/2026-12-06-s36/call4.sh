#!/usr/bin/env bash
# Thirty-sixth session, call 4: the layer on ten model shapes no table or rule was read from
# (unseen_shapes.py): auto and both paths against float64, expert windows, CUDA graphs.
R=/tmp/r4; LIMIT=570; . scripts/call_setup.sh
timeout 550 python benchmarks/results/H200/2026-12-06-s36/unseen_shapes.py $R/unseen --limit-s 430 > $R/unseen.out 2>&1
step "unseen rc $?"
finish
