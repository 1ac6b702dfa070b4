"""fusedmoe._launch: which launches go through Triton, which straight to the compiled kernel, and
with what arguments.  A stand-in JITFunction records the launches, so this runs on the CPU; the
GPU tests run every kernel through the real thing."""

from __future__ import annotations

import pytest
import torch
import triton.language as tl
from triton.runtime.jit import JITFunction

from fusedmoe import _launch


def _kernel_source(x_ptr, n, y_ptr, STRIDE, BLOCK: tl.constexpr = 16, FLAG: tl.constexpr = False):
    pass


class _Compiled:
    """What Triton's run() returns: ``run`` is the launcher, ``function`` / ``packed_metadata`` its handles."""

    function = "fn-handle"
    packed_metadata = "meta"

    def __init__(self, log):
        self.log = log

    def run(self, *args):
        self.log.append(("direct", args))


class _FakeJIT(JITFunction):
    """A JITFunction whose launch through Triton is recorded instead of compiled."""

    def __init__(self):
        super().__init__(_kernel_source)
        self.log = []

    def __getitem__(self, grid):
        def run(*args, **kwargs):
            self.log.append(("triton", grid, args, kwargs))
            return _Compiled(self.log)
        return run


@pytest.fixture
def fake_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(_launch, "_raw_stream", lambda device: 1234)
    monkeypatch.setattr(_launch, "_cache", {})


def _tensor(dtype=torch.float32, offset=0):
    return torch.zeros(64, dtype=dtype)[offset:]


def test_first_launch_through_triton_then_direct_with_every_parameter(fake_cuda):
    k = _FakeJIT()
    x, y = _tensor(), _tensor()
    _launch.launch(k, (3,), x, 7, y, 5, FLAG=True, num_warps=4)
    _launch.launch(k, (3, 2), x, 7, y, 5, FLAG=True, num_warps=4)
    assert [e[0] for e in k.log] == ["triton", "direct"]
    assert k.log[0][1:] == ((3,), (x, 7, y, 5), dict(FLAG=True, num_warps=4))
    # grid (3, 2, 1), the stream, the handles, no launch metadata or hooks, then every
    # parameter in signature order with the defaults filled in (num_warps is an option)
    assert k.log[1][1] == (3, 2, 1, 1234, "fn-handle", "meta", None, None, None, x, 7, y, 5, 16, True)


@pytest.mark.parametrize("change", ["dtype", "alignment", "int", "constexpr", "option", "kwarg_order"])
def test_a_different_specialisation_goes_through_triton(fake_cuda, change):
    k = _FakeJIT()
    x, y = _tensor(), _tensor()
    args, kwargs = [x, 7, y, 5], dict(BLOCK=32, num_warps=4)
    _launch.launch(k, (1,), *args, **kwargs)
    if change == "dtype":
        args[0] = _tensor(torch.float16)
    elif change == "alignment":
        args[0] = _tensor(offset=1)  # 4 bytes past a 16-byte boundary
    elif change == "int":
        args[1] = 16
    elif change == "constexpr":
        kwargs["BLOCK"] = 64
    elif change == "option":
        kwargs["num_warps"] = 8
    else:  # the same keyword arguments in another order: a key of its own, never a wrong hit
        kwargs = dict(num_warps=4, BLOCK=32)
    _launch.launch(k, (1,), *args, **kwargs)
    assert [e[0] for e in k.log] == ["triton", "triton"]


def test_new_tensors_of_the_same_layout_launch_directly(fake_cuda):
    k = _FakeJIT()
    _launch.launch(k, (1,), _tensor(), 7, _tensor(), 5)
    x2, y2 = _tensor(), _tensor()
    _launch.launch(k, (1,), x2, 7, y2, 5)
    assert k.log[-1][0] == "direct" and k.log[-1][1][9] is x2 and k.log[-1][1][11] is y2


def test_unhashable_arguments_and_hooks_go_through_triton(fake_cuda, monkeypatch):
    k = _FakeJIT()
    x = _tensor()
    for _ in range(2):
        _launch.launch(k, (1,), x, [1], x, 5)  # a list cannot key the cache
    assert [e[0] for e in k.log] == ["triton", "triton"]
    from triton import knobs

    hook = lambda metadata: None  # noqa: E731
    knobs.runtime.launch_enter_hook.add(hook)
    try:
        for _ in range(2):
            _launch.launch(k, (1,), x, 7, x, 5)
    finally:
        knobs.runtime.launch_enter_hook.remove(hook)
    assert [e[0] for e in k.log] == ["triton"] * 4
    _launch.launch(k, (1,), x, 7, x, 5)  # cached only once no hook is installed
    _launch.launch(k, (1,), x, 7, x, 5)
    assert [e[0] for e in k.log] == ["triton"] * 5 + ["direct"]


def test_the_cache_is_bounded(fake_cuda, monkeypatch):
    monkeypatch.setattr(_launch, "MAX_KEYS", 2)
    k = _FakeJIT()
    x = _tensor()
    for n in (1, 2, 3, 3):
        _launch.launch(k, (1,), x, n, x, 5)
    assert [e[0] for e in k.log] == ["triton"] * 4


def test_without_cuda_or_a_jit_function_it_is_the_plain_launch(monkeypatch):
    monkeypatch.setattr(_launch, "_cache", {})
    k = _FakeJIT()
    x = _tensor()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    _launch.launch(k, (1,), x, 7, x, 5)
    _launch.launch(k, (1,), x, 7, x, 5)
    assert [e[0] for e in k.log] == ["triton", "triton"]
    calls = []

    class Interpreted:
        def __getitem__(self, grid):
            return lambda *a, **kw: calls.append((grid, a, kw))

    _launch.launch(Interpreted(), (2,), 1, B=3)
    assert calls == [((2,), (1,), dict(B=3))]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("fmt", ["bf16", "fp8_tensor", "fp8_block", "w4a8"])
@pytest.mark.parametrize("path", ["route_direct", "grouped"])
def test_cached_launches_compute_the_layer(fmt, path):
    # The same layer shape on new data three times: the first call may compile and launch
    # through Triton, the later ones go straight to the launchers (with shared output and a
    # window: every optional pointer), each checked against the reference.
    from test_fused_moe import make_layer, run_and_check

    weights = None
    for _ in range(3):
        weights, x, tw, ids = make_layer(7, 12, 3, 256, 128, fmt, torch.device("cuda"))
        run_and_check(weights, x, tw, ids, path, shared=torch.randn_like(x), offset=2, n_global=16)
    assert _launch._cache and all(len(v) for v in _launch._cache.values())


def test_plain_launches_switch_pdl_off_and_back():
    # Within plain_launches() no launch gets the PDL code or attribute (per-kernel timing, plain
    # comparisons); it nests, and the launch arguments come back after it, even on an error.
    from fusedmoe._pdl import pdl_launch, plain_launches

    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    served = pdl_launch(dev)
    with plain_launches():
        assert pdl_launch(dev) == {}
        with plain_launches():
            assert pdl_launch(dev) == {}
        assert pdl_launch(dev) == {}
    assert pdl_launch(dev) == served
    with pytest.raises(RuntimeError), plain_launches():
        raise RuntimeError("inside")
    assert pdl_launch(dev) == served
