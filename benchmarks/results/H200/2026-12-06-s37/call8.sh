#!/usr/bin/env bash
# Thirty-seventh session, call 8: call 7's change A/B in one call: auto's plan over the issue's grid with
# the chunk's ids loaded first (the tree) and as before (chunk_ids_first.patch reversed), in turn
# new old new old, each compiled by an untimed run first.
R=/tmp/r8; LIMIT=300; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-06-s37
G="--routes 8,64,256,512,1024,2048 --experts 8,64,128,256,512"
timeout 60 python -m fusedmoe.bench.plan $G > $R/warm_new.log 2>&1
patch -R -p1 < $S/chunk_ids_first.patch > /dev/null && timeout 60 python -m fusedmoe.bench.plan $G > $R/warm_old.log 2>&1
patch -p1 < $S/chunk_ids_first.patch > /dev/null; step "compiled"
n=0
for v in new old new old; do
  n=$((n+1)); [ $v = old ] && patch -R -p1 < $S/chunk_ids_first.patch > /dev/null
  timeout 40 python -m fusedmoe.bench.plan $G --out $R/${n}_$v > $R/${n}_$v.log 2>&1; step "$n $v rc $?"
  [ $v = old ] && patch -p1 < $S/chunk_ids_first.patch > /dev/null
done
finish
