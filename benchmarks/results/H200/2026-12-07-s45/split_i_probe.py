"""The thirty-eighth session's split-I probe (``2026-12-06-s38/split_i_probe.py``) with the Mixtral
shapes, where I is large and the routes few, and seven wider tiles (forty-fifth session, throw-away).

    python benchmarks/results/H200/2026-12-07-s45/split_i_probe.py --shapes mixtral_8x7b_tp2,mixtral_8x7b \
        --tokens 1,2,4 --out DIR [--compile-only]

(Call 1 ran a copy of that file with these two shapes and tiles added; this runs the same code.)
"""

import importlib.util
import sys
from pathlib import Path

_path = Path(__file__).resolve().parent.parent / "2026-12-06-s38" / "split_i_probe.py"
_spec = importlib.util.spec_from_file_location("split_i_probe_s38", _path)
probe = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = probe  # the Triton kernels' source is looked up through their module
_spec.loader.exec_module(probe)

probe.SHAPES.update({"mixtral_8x7b_tp2": (8, 2, 4096, 7168), "mixtral_8x7b": (8, 2, 4096, 14336)})
probe.TILES += [(16, 1024, 256, 8), (32, 1024, 128, 8), (64, 256, 128, 8), (128, 128, 64, 8),
                (32, 512, 512, 8), (16, 512, 1024, 8), (64, 256, 256, 8)]

if __name__ == "__main__":
    probe.main()
