"""Graph-timed route-direct forms on the GPU: the tuned (or heuristic) config of each case
against the same tiles in one launch (fused 1, 2, 4 programs per SM) and with the GEMV
prefetch (num_stages 2), so that each lever's gain or loss is measured on its own.

    python scripts/forms_probe.py [--shape peers] [--formats fp8_tensor,bf16] [--tokens 1,8] [--out DIR]

bf16's tuned gate/up is the tensor-core form, which has no one-launch variant: its rows also
time the GEMV form (Tile(8, 512, 8 warps)) in two launches and in one.  A variant the kernels
or the GPU reject prints its error instead of a time.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import torch

from fusedmoe import policy
from fusedmoe._runtime import device_name, num_sms
from fusedmoe.shapes import PEER_SHAPES, get_shape
from fusedmoe.tune import _case_timer


def variants(base: policy.RouteDirectConfig) -> dict[str, policy.RouteDirectConfig]:
    """Named configs around ``base``: its one-launch forms and its prefetching tiles."""
    out = {"base": base}
    if base.gate_up.swap_ab:
        base = dataclasses.replace(base, gate_up=policy.Tile(8, 512, 8, 1))
        out["gemv gate/up"] = base
    if base.down.swap_ab:
        base = dataclasses.replace(base, down=policy.Tile(8, 256, 4, 1))
        out["gemv down"] = base
    for n in (1, 2, 4):
        out[f"fused {n}"] = dataclasses.replace(base, fused=n)
    pre = dataclasses.replace(base, gate_up=dataclasses.replace(base.gate_up, num_stages=2),
                              down=dataclasses.replace(base.down, num_stages=2))
    out["prefetch"] = pre
    out["prefetch fused 2"] = dataclasses.replace(pre, fused=2)
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="peers")
    ap.add_argument("--formats", default="fp8_tensor,bf16")
    ap.add_argument("--tokens", default="1,8")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    dev = torch.device("cuda")
    names = list(PEER_SHAPES) if args.shape == "peers" else args.shape.split(",")
    rows = []
    for name in names:
        shape = get_shape(name)
        for fmt in args.formats.split(","):
            for m in map(int, args.tokens.split(",")):
                timer = _case_timer(shape, fmt, "route_direct", m, dev)
                base = policy.select_config("route_direct", m, shape.top_k, shape.num_local_experts,
                                            shape.hidden_size, shape.intermediate_size, fmt, device_name(dev),
                                            num_sms(dev))
                for label, cfg in variants(base).items():
                    try:
                        us, err = round(timer(cfg), 2), None
                    except Exception as e:  # noqa: BLE001 - a rejected variant is a finding, not a stop
                        us, err = None, f"{type(e).__name__}: {str(e)[:160]}"
                    rows.append(dict(shape=name, format=fmt, m=m, variant=label, us=us, error=err,
                                     config=dataclasses.asdict(cfg)))
                    print(f"{name} {fmt} M={m} {label:18s} " + (f"{us:8.2f} us" if err is None else err), flush=True)
                del timer
                torch.cuda.empty_cache()
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "forms_probe.json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
