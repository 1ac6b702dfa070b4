#!/usr/bin/env bash
# Forty-fourth session, call 3: the warp-specialised Gluon GEMMs persistent with a tile counter
# (persistent_tickets.patch).  Call 1's persistent form handed each program the tiles pid, pid + P,
# ... and lost 16-19% (Mixtral TP2 fp8_tensor M=512 gate/up 254 -> 304 us, H100).  Call 2 (probes,
# stall sampling) has the per-tile kernel's consumers waiting on their wgmmas (33% of a consumer
# warpgroup's samples), on data (21%), in the quantising epilogue (9%) and at the partitions' join
# at the tile's end (9.5%), the TMA ring alone taking 67% of the kernel's time.  A static split
# cannot follow tiles of unequal cost (an expert's first block reads its weights from HBM, the
# next from L2); a hardware grid can.  Here the producer takes tiles in order from a counter that
# the x gather zeroes (the next ticket fetched while this tile loads) and announces each to the
# consumers in its first ring slot, so the grid's order and balance come back while the ring's
# fill and the join stay hidden.  Expected: gate/up 254 -> ~225 us at M=512 (the join and fill),
# the layer -5..-8%; if it only matches the per-tile kernel, the loss in call 1 was the split.
# Steps as call 1 (its script, on this patch).
R=${R:-/tmp/r3} LIMIT=${LIMIT:-500} PATCH=persistent_tickets.patch TESTS="gluon or gather_plan_rows" SANITIZE_S=110 \
  exec bash benchmarks/results/H200/2026-12-06-s44/call1.sh
