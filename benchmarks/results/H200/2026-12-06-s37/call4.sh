#!/usr/bin/env bash
# Thirty-seventh session, call 4: the recount plan launch forced, counting by tl.histogram or by
# atomics, at 4 and 8 warps, over routes 128..2048 x experts 64..512 (fusedmoe.bench.plan), and
# auto; each variant run once in parallel to compile, then timed one after another.
R=/tmp/r4; LIMIT=500; . scripts/call_setup.sh
G="--routes 128,256,512,1024,2048 --experts 64,128,256,512"
variant() {  # variant NAME -> the bench.plan arguments
  case $1 in
    auto) echo "" ;;
    hist_w*) echo "--path recount --histogram --warps ${1#hist_w}" ;;
    atomic_w*) echo "--path recount --warps ${1#atomic_w}" ;;
  esac
}
V="auto hist_w4 hist_w8 atomic_w4 atomic_w8"
mkdir -p $R/warm
pids=; for v in $V; do timeout 240 python -m fusedmoe.bench.plan $G $(variant $v) > $R/warm/$v.log 2>&1 & pids="$pids $!"; done
wait $pids; step "compiled"
for v in $V; do timeout 60 python -m fusedmoe.bench.plan $G $(variant $v) --out $R/$v > $R/$v.log 2>&1; step "$v rc $?"; done
finish
