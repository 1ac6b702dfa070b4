"""Throw-away (twenty-third session): compile each grouped table entry's two GEMMs for sm_90 on the CPU and find those
are bound by registers alone (a register cap would add a CTA)."""
import sys, json, inspect, math
from concurrent.futures import ProcessPoolExecutor
sys.path.insert(0, "scripts")

def one(item):
    import compile_check as cc, triton
    from triton.compiler import ASTSource
    from fusedmoe.paths._grouped_kernels import grouped_gate_up_kernel, grouped_down_kernel
    gemm, fmt, bm, bn, bk, warps, stages, swap, promote, tail, group_m = item
    fp8 = fmt != "bf16"
    w_scale = {"bf16": 0, "fp8_tensor": 1, "fp8_block": 2}[fmt]
    a_scaled = {"bf16": 0, "fp8_tensor": 2, "fp8_block": 1}[fmt]
    extra = dict(PROMOTE_K=promote, TAIL_M=tail, GROUP_M=group_m)
    if gemm == "gate_up":
        split = fp8 and bn < 128
        kernel = grouped_gate_up_kernel
        ptrs = dict(cc.GATE_UP_FP8 if fp8 else cc.GATE_UP_BF16, **({"act_ptr": "*fp32"} if split else {}))
        constexprs = cc.grouped(bm, bn, bk, swap, a_scaled, w_scale, QUANT_OUT=fp8 and not split, ACTIVATION=0, **extra)
    else:
        kernel = grouped_down_kernel
        ptrs = cc.DOWN_FP8 if fp8 else cc.DOWN_BF16
        constexprs = cc.grouped(bm, bn, bk, swap, a_scaled, w_scale, **extra)
    try:
        c = cc.compile_case(kernel, ptrs, constexprs, warps, stages)
        f = cc.sass_facts(c.asm["cubin"])
        return item, f["registers"], c.metadata.shared, f["spill_ops"], None
    except Exception as e:
        return item, None, None, None, str(e).splitlines()[0][:120]

def ctas(regs, smem, warps):
    per_warp = math.ceil(regs * 32 / 256) * 256
    by_regs = 65536 // (per_warp * warps)
    by_smem = 233472 // (smem + 1024) if smem else 32
    by_warps = 64 // warps
    return by_regs, by_smem, by_warps

if __name__ == "__main__":
    d = json.load(open("fusedmoe/configs/NVIDIA_H200/grouped.json"))["entries"]
    items, owners = [], {}
    for e in d:
        c = e["config"]
        if c.get("gluon"):
            continue
        for gemm in ("gate_up", "down"):
            t = c[gemm]
            it = (gemm, e["format"], c["block_m"], t["block_n"], t["block_k"], t["num_warps"], t["num_stages"], t["swap_ab"],
                  c.get("fp8_promote_k", 0) if e["format"] != "bf16" else 0, c.get("tail_m", 0), c.get("group_m", 1))
            owners.setdefault(it, []).append((e["num_experts"], e["top_k"], e["hidden"], e["inter"], e["format"], e["tokens"], t.get("max_registers", 0)))
            if it not in items:
                items.append(it)
    rows = []
    with ProcessPoolExecutor(2) as ex:
        for it, regs, smem, spills, err in ex.map(one, items):
            if err:
                print("ERR", it, err, flush=True); continue
            r, s, w = ctas(regs, smem, it[5])
            bound = r < min(s, w)
            rows.append((it, regs, smem, spills, r, s, w, bound))
            print(("REG-BOUND " if bound else "") + f"{it} regs {regs} smem {smem} spills {spills} ctas regs/smem/warps {r}/{s}/{w}", flush=True)
    json.dump([dict(kernel=list(it), registers=regs, shared=smem, spills=sp, ctas_by_registers=r, ctas_by_shared=s,
                    ctas_by_warps=w, register_bound=b, entries=owners[it]) for it, regs, smem, sp, r, s, w, b in rows],
              open("/tmp/regscan.json", "w"), indent=1)
