"""Throw-away (twenty-fourth session): the w4a8 grouped cases of scripts/compile_check.py compiled for sm_90 with maxnreg 0/128/168: registers, shared bytes, spill instructions.  From the repository root, without TRITON_INTERPRET."""
import sys; sys.path.insert(0, "scripts")
from concurrent.futures import ProcessPoolExecutor
def one(arg):
    idx, cap = arg
    import triton, compile_check as cc
    orig = triton.compile
    cc.triton.compile = lambda src, target=None, options=None: orig(src, target=target, options=dict(options, **({"maxnreg": cap} if cap else {})))
    name, kernel, ptrs, constexprs, warps, _ = [c for c in cc.CASES if "w4a8" in c[0] and c[0].startswith("grouped")][idx]
    k = cc.compile_case(kernel, ptrs, constexprs, warps)
    f = cc.sass_facts(k.asm["cubin"])
    return name, warps, cap, f["registers"], k.metadata.shared, f["spill_ops"]
if __name__ == "__main__":
    with ProcessPoolExecutor(2, max_tasks_per_child=1) as ex:
        for r in ex.map(one, [(i, c) for i in range(4) for c in (0, 128, 168)]):
            print(*r, flush=True)
