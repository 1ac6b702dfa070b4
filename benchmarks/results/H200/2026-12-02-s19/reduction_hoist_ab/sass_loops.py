"""SASS of the route-direct GEMV kernels of the tree at TREE, compiled for sm_90 on the CPU
(scripts/compile_check.py's compile and facts): per tile, the instructions in each loop body
(from a backward branch to its target), registers, spills and the kernel's total.
    env -u TRITON_INTERPRET python sass_loops.py TREE"""
import sys, re, json
root = sys.argv[1]
sys.path.insert(0, root); sys.path.insert(0, root + "/scripts")
import compile_check as cc
import subprocess, tempfile
from fusedmoe.paths._route_direct_kernels import route_gate_up_kernel, route_down_kernel
def sass(k, ptrs, ce, w):
    cub = cc.compile_case(k, ptrs, ce, w).asm["cubin"]
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cub); f.flush()
        return subprocess.run([str(cc.CUOBJDUMP), "-sass", f.name], capture_output=True, text=True).stdout, cc.sass_facts(cub)
def loop(s):
    ins=[(int(m.group(1),16), m.group(2).strip()) for l in s.splitlines() for m in [re.match(r"\s+/\*([0-9a-f]{4})\*/\s+(.*?);",l)] if m]
    loops=[]
    for a,t in ins:
        m=re.search(r"BRA (0x[0-9a-f]+)",t)
        if m and int(m.group(1),16)<a: loops.append(len([1 for b,_ in ins if int(m.group(1),16)<=b<=a]))
    return loops
cases = []
for ws, fmt in ((1,"tensor"),(2,"block"),(0,"bf16")):
    ptr = cc.ROUTE_GATE_UP_BF16 if ws == 0 else cc.ROUTE_GATE_UP_FP8
    for bn,bk,w,fp16 in ((8,1024,8,True),(8,512,4,True),(8,1024,8,False),(4,2048,8,False),(16,512,8,True)):
        if ws == 0 and fp16: continue
        cases.append(("gate_up", fmt, bn, bk, w, fp16, route_gate_up_kernel, ptr, cc.route_gate_up(ws, 1, 0, False, bn, bk, FP16_PRODUCTS=fp16, PDL=True)))
    ptr = cc.ROUTE_DOWN_BF16 if ws == 0 else cc.ROUTE_DOWN_FP8
    for bn,bk,w,fp16 in ((16,256,4,True),(8,512,8,True),(8,512,8,False),(16,128,4,False)):
        if ws == 0 and fp16: continue
        cases.append(("down", fmt, bn, bk, w, fp16, route_down_kernel, ptr, cc.route_down(8, ws, 1, False, 0, False, bn, bk, FP16_PRODUCTS=fp16, PDL=True)))
for c in cases:
    s, f = sass(c[6], c[7], c[8], c[4])
    print(*c[:6], "loops", loop(s), "regs", f["registers"], "spills", f["spill_ops"], "total", f["instructions"], flush=True)
