"""``fusedmoe.bench.kernels`` with the warp-specialised Gluon sets' down tiles at DOWN_N columns
(128 here; the library's sets have 256 at BLOCK_M 128), to time a down grid of twice the tiles
where the 256-column one is under 1.5 waves (Mixtral TP2 M=512: 187 tiles on 132 SMs).
Forty-third session probe:  DOWN_N=128 python down_n.py --shape ... --path grouped_gluon_ws_q ..."""
import dataclasses
import os
import sys

from fusedmoe import policy
from fusedmoe.bench import kernels

_set = policy.gluon_grouped_config
DOWN_N = int(os.environ.get("DOWN_N", "128"))


def _with_down_n(group_m: int = 1, block_m: int = 64, gate_n: int = 64) -> policy.GroupedConfig:
    cfg = _set(group_m, block_m, gate_n)
    if block_m == 128:
        cfg = dataclasses.replace(cfg, down=dataclasses.replace(cfg.down, block_n=DOWN_N))
    return cfg


policy.gluon_grouped_config = _with_down_n  # policy.legal and gluon_config_like read it from the module
sys.exit(kernels.main())
