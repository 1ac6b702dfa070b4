#!/usr/bin/env bash
# Thirty-fifth session, call 5 (review): the Gluon down now calls _pdl.pdl_wait and _trace's marks
# instead of copies of them; its GPU tests and a traced timeline (down_gluon variant) of one case.
R=/tmp/r5; LIMIT=280; . scripts/call_setup.sh
timeout 100 python -m pytest -q -x tests/test_fused_moe.py -k "gluon_down" > $R/tests.log 2>&1
step "tests rc $?"
timeout 100 python scripts/decode_timeline.py --variants down_gluon --cases hunyuan_tp8:fp8_tensor:1 \
  --out $R/timeline > $R/timeline.log 2>&1
step "timeline rc $?"
rm -f $R/timeline/timeline.json
finish
