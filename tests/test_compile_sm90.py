"""The kernels compile for sm_90 (H100/H200) on this machine, use wgmma where they should
and do not spill: what the interpreter cannot check (scripts/compile_check.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import triton

ROOT = Path(__file__).resolve().parents[1]
PTXAS = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"


@pytest.mark.skipif(not PTXAS.exists(), reason="this Triton build carries no ptxas")
def test_kernels_compile_for_sm90_with_wgmma_and_no_spills():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "compile_check.py")], env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr


def test_ctas_per_sm_follows_the_sm90_limits():
    sys.path.insert(0, str(ROOT / "scripts"))
    from route_direct_occupancy import ctas_per_sm

    assert ctas_per_sm(8, 70, 0) == 3  # 72 registers a thread: 8 warps take 18432 of 65536
    assert ctas_per_sm(4, 32, 0) == 16  # by warps: 64 / 4
    assert ctas_per_sm(1, 16, 0) == 32  # by CTAs
    assert ctas_per_sm(4, 32, 100 * 1024) == 2  # by shared memory, 1 KB a CTA reserved
    assert ctas_per_sm(8, 255, 0) == 1 and ctas_per_sm(8, 101, 0, free_regs=10240) == 0


@pytest.mark.skipif(not PTXAS.exists(), reason="this Triton build carries no ptxas")
def test_route_direct_occupancy_reads_every_m1_entry():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "route_direct_occupancy.py"), "--max-tokens", "1"],
                         env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    rows = [line for line in res.stdout.splitlines() if line.startswith("| E")]
    assert len(rows) >= 15 and all(" M=1 " in r for r in rows)
