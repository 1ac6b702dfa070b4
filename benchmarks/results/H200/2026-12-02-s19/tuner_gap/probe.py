"""Why the tuner's timer read Hunyuan TP8 fp8_block M=2 at 19.4-20.4 us where the bench reads
13.7-14.2 (eighteenth session): the tuner's timer (tune._case_timer) on each case's table
entry, three times each, in a fresh process, and Hunyuan again after a heavy (Mixtral) case.
Prints each case's times, then all of them as JSON.
    python probe.py"""
import json

import torch

from fusedmoe import policy, tune
from fusedmoe._runtime import device_name, num_sms
from fusedmoe.shapes import get_shape

dev = torch.device("cuda")


def timed(name, fmt, m):
    s = get_shape(name)
    timer = tune._case_timer(s, fmt, "route_direct", m, dev)
    cfg = policy.select_config("route_direct", m, s.top_k, s.num_local_experts, s.hidden_size, s.intermediate_size,
                               fmt, device_name(dev), num_sms(dev))
    us = [round(timer(cfg), 2) for _ in range(3)]
    del timer
    torch.cuda.empty_cache()
    return us


out = {}
for label, case in [("hunyuan fp8_block M2 (first)", ("hunyuan_tp8", "fp8_block", 2)),
                    ("hunyuan fp8_tensor M2", ("hunyuan_tp8", "fp8_tensor", 2)),
                    ("hunyuan fp8_block M1", ("hunyuan_tp8", "fp8_block", 1)),
                    ("deepseek_v3_tp8 fp8_block M2", ("deepseek_v3_tp8", "fp8_block", 2)),
                    ("gpt_oss_120b_tp4 fp8_block M2", ("gpt_oss_120b_tp4", "fp8_block", 2)),
                    ("mixtral fp8_block M8 (heavy)", ("mixtral_8x7b_tp2", "fp8_block", 8)),
                    ("hunyuan fp8_block M2 (after)", ("hunyuan_tp8", "fp8_block", 2))]:
    out[label] = timed(*case)
    print(label, out[label], flush=True)
print(json.dumps(out))
