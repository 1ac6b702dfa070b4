"""Test setup: without a GPU, kernels run in Triton's interpreter on CPU tensors.

TRITON_INTERPRET must be set before any @triton.jit function is defined, so it is set here,
before the package is imported.  On a CUDA machine the same tests run on the GPU at larger
shapes (FUSEDMOE_GPU_SCALE) and in bf16.
"""

import os
import random
import zlib

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
ON_GPU = DEVICE.type == "cuda"
# bf16 arithmetic is garbage in the interpreter: fp16 stands in for it on CPU.
ACT_DTYPE = torch.bfloat16 if ON_GPU else torch.float16
PLAIN_FORMAT = "bf16" if ON_GPU else "fp16"


def poison(t: torch.Tensor) -> torch.Tensor:
    """Fill a float tensor with NaN (integers with -7) so that an unwritten element fails a test."""
    return t.fill_(float("nan") if t.dtype.is_floating_point else -7)


@pytest.fixture
def device() -> torch.device:
    return DEVICE


# Fresh random data on every run; FUSEDMOE_SEED=<n> replays a run (the header prints it).
SESSION_SEED = int(os.environ.get("FUSEDMOE_SEED", random.randrange(2**31)))
# pytest-xdist workers are started after this module is imported and inherit the environment,
# so every worker draws from the seed the controller prints.
os.environ["FUSEDMOE_SEED"] = str(SESSION_SEED)


def pytest_report_header(config):
    return f"fusedmoe: device={DEVICE} interpreter={os.environ.get('TRITON_INTERPRET', '0')} seed={SESSION_SEED}"


def pytest_terminal_summary(terminalreporter):
    # The header is hidden under -q (the project default): the seed is repeated at the end.
    terminalreporter.write_line(f"fusedmoe: replay this run's random data with FUSEDMOE_SEED={SESSION_SEED}")


@pytest.fixture(autouse=True)
def _fresh_seed(request):
    """Seed each test from the session seed and its own name."""
    torch.manual_seed((SESSION_SEED ^ zlib.crc32(request.node.nodeid.encode())) % (2**31))
