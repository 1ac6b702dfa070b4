#!/usr/bin/env bash
# Thirty-sixth session, call 11 (run inline, committed after): call 10 with the grouped path's
# launches plain (the PDL launch arguments patched out, as _pdl.plain_launches now does).
R=/tmp/r11; LIMIT=150; . scripts/call_setup.sh
timeout 120 python -c "
import sys
import fusedmoe.paths.grouped as g, fusedmoe.epilogue as ep, fusedmoe.plan as pl
off = lambda device: {}
g.pdl_launch = ep.pdl_launch = pl.pdl_launch = off
from fusedmoe.bench import kernels
sys.exit(kernels.main(['--shape', 'mixtral_8x7b_tp2', '--tokens', '512', '--formats', 'fp8_tensor,bf16', '--path', 'auto', '--out', '$R/kernels_nopdl']))
" > $R/kernels_nopdl.log 2>&1
step "kernels nopdl rc $?"
finish
