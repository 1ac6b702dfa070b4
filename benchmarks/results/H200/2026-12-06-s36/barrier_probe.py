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
def barrier_kernel(count_ptr, data_ptr, err_ptr, P, ROUNDS: tl.constexpr, BARRIER: tl.constexpr,
                   POLL: tl.constexpr):
    pid = tl.program_id(0)
    errs = 0
    for i in range(ROUNDS):
        tl.store(data_ptr + i * P + pid, i + 1)
        if BARRIER:
            tl.debug_barrier()
            add = tl.where(pid == 0, TICKS - P + 1, 1).to(tl.int64)
            old = tl.atomic_add(count_ptr, add, sem="release", scope="gpu")
            target = (old // TICKS + 1) * TICKS
            seen = _poll(count_ptr, POLL)
            while seen < target:
                seen = _poll(count_ptr, POLL)
            tl.debug_barrier()
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
        count = torch.zeros(1, dtype=torch.int64, device="cuda")
        p = 132 * 40
        data = torch.zeros(p, dtype=torch.int32, device="cuda"); err = torch.zeros(p, dtype=torch.int32, device="cuda")
        try:
            barrier_kernel[(p,)](count, data, err, p, ROUNDS=1, BARRIER=True, POLL=0, num_warps=4,
                                 launch_cooperative_grid=True)
            torch.cuda.synchronize()
            print(json.dumps({"too_big": "launched", "errors": int(err.sum())}))
        except Exception as ex:  # expected: the launch is refused
            print(json.dumps({"too_big": "refused", "error": str(ex)[:200]}))
        return
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    count = torch.zeros(1, dtype=torch.int64, device="cuda")
    for warps in (4, 8):
        for per_sm in (1, 2, 3):
            p = sms * per_sm
            for rounds in (1, 10):
                data = torch.zeros(rounds * p, dtype=torch.int32, device="cuda")
                err = torch.full((p,), -1, dtype=torch.int32, device="cuda")
                row = dict(warps=warps, programs=p, rounds=rounds)
                for variant, kw in (("none", dict(BARRIER=False, POLL=0)), ("atomic", dict(BARRIER=True, POLL=0)),
                                    ("ld_acquire", dict(BARRIER=True, POLL=1))):
                    fn = lambda: barrier_kernel[(p,)](count, data, err, p, ROUNDS=rounds, num_warps=warps,
                                                      launch_cooperative_grid=True, **kw)
                    us, g = graph_time(fn)
                    data.zero_(); err.fill_(-1)
                    g.replay(); torch.cuda.synchronize()
                    row[variant + "_us"] = round(us, 2)
                    row[variant + "_errors"] = int(err.sum())
                row["count_mod_ticks"] = int(count.item()) % (1 << 20)
                print(json.dumps(row), flush=True)
    r = subprocess.run([sys.executable, __file__, "too_big"], capture_output=True, text=True, timeout=60)
    print(r.stdout.strip() or r.stderr[-500:])


if __name__ == "__main__":
    main()
