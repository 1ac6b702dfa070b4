"""Throw-away probe (thirty-sixth session, call 1): can one Triton kernel hold a grid-wide
barrier on the device, under a cooperative launch, inside a CUDA graph, and what does a
barrier cost?  Each program writes its round number, passes the barrier, and checks its
neighbour's write.  Prints JSON lines."""

import json
import subprocess
import sys

import torch
import triton
import triton.language as tl

TICKS = tl.constexpr(1 << 20)


@triton.jit
def _poll(count_ptr, POLL: tl.constexpr):
    if POLL == 0:
        return tl.atomic_add(count_ptr, 0, sem="acquire", scope="gpu")
    return tl.inline_asm_elementwise("ld.acquire.gpu.global.b64 $0, [$1];", "=l,l", [count_ptr],
                                     dtype=tl.int64, is_pure=False, pack=1)


@triton.jit
def _sleep(NS: tl.constexpr):
    if NS > 0:
        tl.inline_asm_elementwise(f"nanosleep.u32 {NS}; mov.u32 $0, 0;", "=r", [], dtype=tl.int32,
                                  is_pure=False, pack=1)


@triton.jit
def _arrive(count_ptr, n):
    """Arrive at a counter that is 0 between calls (n arrivals a call): whether this arrival is
    the last (which sets the counter back to 0)."""
    old = tl.atomic_add(count_ptr, 1, sem="acq_rel", scope="gpu")
    last = old == n - 1
    if last:
        tl.atomic_xchg(count_ptr, 0, sem="relaxed", scope="gpu")
    return last


@triton.jit
def barrier_kernel(count_ptr, data_ptr, err_ptr, P, ROUNDS: tl.constexpr, BARRIER: tl.constexpr,
                   POLL: tl.constexpr, GROUPS: tl.constexpr = 8, NS: tl.constexpr = 0):
    """BARRIER 0: none; 1: everyone polls a monotonic arrival counter; 2: the last arrival at a
    self-resetting counter (count_ptr + 32) raises the generation flag (count_ptr + 16) that the
    others poll; 3: two levels, GROUPS counters (count_ptr + 32 + 16 g) then a top one (count_ptr
    + 32 + 16 GROUPS), then the flag.  NS: sleep between polls."""
    pid = tl.program_id(0)
    errs = 0
    for i in range(ROUNDS):
        tl.store(data_ptr + i * P + pid, i + 1)
        if BARRIER == 1:
            tl.debug_barrier()
            add = tl.where(pid == 0, TICKS - P + 1, 1).to(tl.int64)
            old = tl.atomic_add(count_ptr, add, sem="release", scope="gpu")
            target = (old // TICKS + 1) * TICKS
            seen = _poll(count_ptr, POLL)
            while seen < target:
                _sleep(NS)
                seen = _poll(count_ptr, POLL)
            tl.debug_barrier()
        elif BARRIER >= 2:
            gen = _poll(count_ptr + 16, 1)
            tl.debug_barrier()
            if BARRIER == 2:
                last = _arrive(count_ptr + 32, P)
            else:
                g = pid % GROUPS
                last = _arrive(count_ptr + 32 + 16 * g, (P - g + GROUPS - 1) // GROUPS)
                if last:
                    last = _arrive(count_ptr + 32 + 16 * GROUPS, tl.minimum(P, GROUPS))
            if last:
                tl.atomic_xchg(count_ptr + 16, gen + 1, sem="release", scope="gpu")
            seen = _poll(count_ptr + 16, 1)
            while seen <= gen:
                _sleep(NS)
                seen = _poll(count_ptr + 16, 1)
            tl.debug_barrier()
            nb = tl.load(data_ptr + i * P + (pid + 1) % P, volatile=True)
            errs += (nb != i + 1).to(tl.int32)
        if BARRIER == 1:
            nb = tl.load(data_ptr + i * P + (pid + 1) % P, volatile=True)
            errs += (nb != i + 1).to(tl.int32)
    tl.store(err_ptr + pid, errs)


def graph_time(fn, calls=20, replays=10):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(replays):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) * 1000 / calls)
    return sorted(ts)[len(ts) // 2], g


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "too_big":
        count = torch.zeros(512, dtype=torch.int64, device="cuda")
        p = 132 * 40
        data = torch.zeros(p, dtype=torch.int32, device="cuda"); err = torch.zeros(p, dtype=torch.int32, device="cuda")
        try:
            barrier_kernel[(p,)](count, data, err, p, ROUNDS=1, BARRIER=1, POLL=0, num_warps=4,
                                 launch_cooperative_grid=True)
            torch.cuda.synchronize()
            print(json.dumps({"too_big": "launched", "errors": int(err.sum())}))
        except Exception as ex:  # expected: the launch is refused
            print(json.dumps({"too_big": "refused", "error": str(ex)[:200]}))
        return
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    count = torch.zeros(512, dtype=torch.int64, device="cuda")
    for warps in (4, 8):
        for per_sm in (1, 2, 3, 4):
            p = sms * per_sm
            for rounds in (10,):
                data = torch.zeros(rounds * p, dtype=torch.int32, device="cuda")
                err = torch.full((p,), -1, dtype=torch.int32, device="cuda")
                row = dict(warps=warps, programs=p, rounds=rounds)
                for variant, kw in (("none", dict(BARRIER=0, POLL=0)), ("atomic", dict(BARRIER=1, POLL=0)),
                                    ("atomic_sleep", dict(BARRIER=1, POLL=0, NS=100)),
                                    ("flag", dict(BARRIER=2, POLL=1)), ("flag_sleep", dict(BARRIER=2, POLL=1, NS=50)),
                                    ("tree8", dict(BARRIER=3, POLL=1)), ("tree16", dict(BARRIER=3, POLL=1, GROUPS=16)),
                                    ("tree8_sleep", dict(BARRIER=3, POLL=1, NS=50))):
                    fn = lambda: barrier_kernel[(p,)](count, data, err, p, ROUNDS=rounds, num_warps=warps,
                                                      launch_cooperative_grid=True, **kw)
                    us, g = graph_time(fn)
                    errors = 0
                    for _ in range(3):  # eager calls on zeroed data: each neighbour read checks the barrier
                        data.zero_(); err.fill_(-1)
                        fn(); torch.cuda.synchronize()
                        errors += int(err.sum())
                    row[variant + "_us"] = round(us, 2)
                    row[variant + "_errors"] = errors
                row["count_mod_ticks"] = int(count[0].item()) % (1 << 20)
                print(json.dumps(row), flush=True)
    r = subprocess.run([sys.executable, __file__, "too_big"], capture_output=True, text=True, timeout=60)
    print(r.stdout.strip() or r.stderr[-500:])


if __name__ == "__main__":
    main()
