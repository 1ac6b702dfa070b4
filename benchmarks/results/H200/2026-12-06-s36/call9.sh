#!/usr/bin/env bash
# Thirty-sixth session, call 9: call 8 with the tuner's accuracy gate raised to 2% rel-L2 so that
# the never-promoted variant (1.13% in call 8) is timed too; the served 128 beside it.
R=/tmp/r9; LIMIT=200; . scripts/call_setup.sh
timeout 180 python -c "
import sys; import fusedmoe.tune as t; t.MAX_REL_L2 = 0.02
sys.argv = ['promote_probe.py', '--shape', 'mixtral_8x7b_tp2', '--formats', 'fp8_tensor', '--tokens', '512',
            '--variants', '128,0,128,0', '--out', '$R/promote']
sys.path.insert(0, 'scripts'); import promote_probe; sys.exit(promote_probe.main(sys.argv[1:]))
" > $R/promote.log 2>&1
step "promote rc $?"
finish
