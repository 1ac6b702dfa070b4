"""Kernel launches with less host time: ``launch(kernel, grid, *args, **kwargs)`` does what
``kernel[grid](*args, **kwargs)`` does.

Triton's ``JITFunction.run`` binds every argument, works out their specialisation (dtype and
16-byte alignment of each pointer, size and divisibility of each int), hashes it with the
launch options, reads its knobs and builds launch metadata on every launch.  On the H100 host
that is about 45 us a launch, so an eager route-direct call (two launches) spent 90 us on the
host for 14 us of GPU time, a grouped one 430-510 us (``scripts/host_path_probe.py``).

Here the first launch of a specialisation goes through Triton as usual, which compiles the
kernel if need be and returns it; the compiled kernel is kept under a key that holds every
argument that decides the specialisation: each tensor's dtype and its address modulo 16, every
other argument as it is (ints by value, so the key is finer than Triton's specialisation), the
keyword arguments (constexprs and options) in order, and the device.  A later launch with the
same key goes to the compiled kernel's launcher directly, with the same arguments Triton
would pass it.  Not cached, and launched through Triton every time: the interpreter's
functions, arguments that cannot be hashed, and any launch while a Triton launch hook is
installed (profilers), whose launch metadata only Triton builds.  Arguments are tensors, ints,
floats, bools and None: other objects would be kept alive by the cache's keys (the Gluon
kernels, which take TMA descriptors made per call, are launched the plain way).

Triton also checks, on every launch, that the module globals a kernel read at compile time
still hold the same values; the kernels here read only constants, so a cached launch skips it.
"""

from __future__ import annotations

import inspect

import torch
from triton import knobs
from triton.runtime.jit import JITFunction

# per kernel (the JITFunction object): {key: (launcher, function handle, packed metadata, the
# values of the parameters after the positional ones)}; at most MAX_KEYS keys a kernel (ints are
# keyed by value, so a server that sees every batch size adds keys; past the bound the launches
# go through Triton)
MAX_KEYS = 4096
_cache: dict[JITFunction, dict] = {}
_NO_DEFAULT = inspect.Parameter.empty
_Tensor = torch.Tensor
_raw_stream = None


def _hooks_installed() -> bool:
    return bool(knobs.runtime.launch_enter_hook.calls or knobs.runtime.launch_exit_hook.calls)


def _key(args: tuple, kwargs: dict) -> tuple:
    """What decides the compiled kernel of a launch with these arguments (see the module doc)."""
    return (torch.cuda.current_device(),
            tuple([(a.dtype, a.data_ptr() & 15) if isinstance(a, _Tensor) else a for a in args]),
            tuple(kwargs.items()))


def _entry(kernel: JITFunction, compiled, num_positional: int, kwargs: dict) -> tuple | None:
    """The cache entry of a launch that Triton has just made (None: not cacheable)."""
    rest = []
    for p in list(kernel.signature.parameters.values())[num_positional:]:
        value = kwargs.get(p.name, p.default)
        if value is _NO_DEFAULT:
            return None
        rest.append(value)
    return compiled.run, compiled.function, compiled.packed_metadata, tuple(rest)


def launch(kernel, grid: tuple, *args, **kwargs) -> None:
    """``kernel[grid](*args, **kwargs)``: through Triton the first time a specialisation is seen,
    straight to the compiled kernel's launcher after that (``grid``: a tuple of 1 to 3 ints)."""
    per_kernel = _cache.get(kernel)
    if per_kernel is None:
        if not isinstance(kernel, JITFunction) or not torch.cuda.is_available():
            kernel[grid](*args, **kwargs)
            return
        per_kernel = _cache.setdefault(kernel, {})
    try:
        key = _key(args, kwargs)
        hit = per_kernel.get(key)
    except TypeError:  # an unhashable argument
        kernel[grid](*args, **kwargs)
        return
    hooks = _hooks_installed()
    if hit is None or hooks:
        compiled = kernel[grid](*args, **kwargs)
        if compiled is not None and hit is None and not hooks and len(per_kernel) < MAX_KEYS:
            entry = _entry(kernel, compiled, len(args), kwargs)
            if entry is not None:
                per_kernel[key] = entry
        return
    global _raw_stream
    if _raw_stream is None:
        from torch._C import _cuda_getCurrentRawStream as _raw_stream
    launcher, function, metadata, rest = hit
    launcher(grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1, _raw_stream(key[0]),
             function, metadata, None, None, None, *args, *rest)
