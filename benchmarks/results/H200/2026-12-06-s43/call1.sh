#!/usr/bin/env bash
# Forty-third session, call 1: two changes to the warp-specialised Gluon GEMMs (BLOCK_M 128).
#   tail_a_rows.patch: the A tile comes as two TMA boxes of 64 rows and the second only where the
#     block has routes past row 64 (an expert's short last block reads none of its empty half).
#     Floor-style estimate at Mixtral TP2 fp8_tensor M=512: gate/up moves ~1 GB from L2 to the SMs
#     (x 0.33 GB, weights 0.66 GB; it sits at 70% of L2's throughput), 3.7 of 11.7 blocks are such
#     tails, so 53 MB (5%) less: gate/up 234.6 -> ~223 us, down (105 us) ~5 us less, layer -3 to -5%.
#   down_n.py: the (128, 128) set with 128-column down tiles: at Mixtral TP2 M=512 the 256-column
#     down grid is 187 tiles, 1.42 waves of 132 SMs; 374 tiles are 2.83 waves but 33% more L2
#     traffic.  Either wave-bound (down 105 -> ~80 us) or traffic-bound (-> ~140 us).
# Steps: GPU tests of the Gluon configs (half_blocks: blocks with and without upper routes),
# compile both trees in parallel, bench.kernels --path auto in turn base, patch, patch, base,
# then down_n.py at 128 and 256 columns (patched tree), Mixtral TP2 M 512/2048, Mixtral-8x7B M=512.
R=${R:-/tmp/r1}; LIMIT=${LIMIT:-540}; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-06-s43
base_tree $S/tail_a_rows.patch
gluon_ab tail
for d in 128 256; do
  export DOWN_N=$d; mixtral_kernels $PWD grouped_gluon_ws_q down_n$d 90 $S/down_n.py; step "down_n $d rc $?"
done
finish
