"""Throw-away (twenty-fourth session): the register-bound grouped kernels of ../2026-12-03-s23/register_scan compiled for sm_90 with maxnreg 0/80/128/168: registers and spill instructions.  From the repository root, without TRITON_INTERPRET."""
import sys, json, math
sys.path.insert(0, "scripts"); sys.path.insert(0, "benchmarks/results/H200/2026-12-03-s23/register_scan")
from concurrent.futures import ProcessPoolExecutor
def one(arg):
    item, cap = arg
    import triton, compile_check as cc
    orig = triton.compile
    def comp(src, target=None, options=None):
        o = dict(options or {}); 
        if cap: o["maxnreg"] = cap
        return orig(src, target=target, options=o)
    cc.triton.compile = comp
    import register_scan as rs
    it, regs, smem, spills, err = rs.one(item)
    return item, cap, regs, smem, spills, err
if __name__ == "__main__":
    rows = json.load(open("benchmarks/results/H200/2026-12-03-s23/register_scan/register_scan.json"))
    items = [tuple(r["kernel"]) for r in rows if r["register_bound"]]
    args = [(it, c) for it in items for c in (0, 80, 128, 168)]
    with ProcessPoolExecutor(2, max_tasks_per_child=1) as ex:
        for item, cap, regs, smem, spills, err in ex.map(one, args):
            print(item[:8], "cap", cap, "regs", regs, "spills", spills, err or "", flush=True)
