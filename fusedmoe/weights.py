"""ExpertWeights: the experts' weights of one MoE layer, in one of the supported formats.

Layout (HF transformers ``gate_up_proj`` / vLLM ``w13``):
    w13: [E, 2I, H]  rows 0..I-1 gate projection, rows I..2I-1 up projection
    w2:  [E, H, I]

Formats:
    "bf16", "fp16"  plain; no scales.
    "fp8_tensor"    e4m3 weights, fp32 scale per expert per matrix: w13_scale [E], w2_scale [E].
    "fp8_block"     e4m3 weights, fp32 scale per 128x128 block:
                    w13_scale [E, 2*ceil(I/128), ceil(H/128)] (gate and up blocked separately, as two
                    checkpoint tensors concatenated; equal to [E, 2I/128, H/128] when 128 divides I),
                    w2_scale [E, ceil(H/128), ceil(I/128)].  Ragged last blocks are allowed.
    "w4a8"          FP4 E2M1 weights packed two per byte along K (``quant.quantize_fp4_groups``:
                    element 2j in the low nibble of byte j), w13 [E, 2I, H/2] uint8, w2 [E, H,
                    16 ceil(I/32)] uint8 (rows of I/2 bytes zero-padded to whole 32-column groups:
                    16-byte rows, which the kernels load 16 bytes at a time; GPT-OSS TP4's I/2 is
                    360), with one E8M0 exponent (uint8, scale 2^(s - 127)) per 32 weights along
                    K: w13_scale [E, 2I, ceil(H/32)], w2_scale [E, H, ceil(I/32)] (the MXFP4 layout
                    of GPT-OSS checkpoints).  H and I must be even; the last group may be ragged.
                    ``from_quantized`` pads a checkpoint's [E, H, I/2] w2 itself (one copy).
                    The grouped path multiplies them with e4m3 activations on FP8 tensor cores,
                    route-direct with the activations as they are (see each path).

Optional biases (GPT-OSS), in every format, kept in fp32: w13_bias [E, 2I] (gate then up,
like w13), w2_bias [E, H].
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import quant
from ._validate import check_choice, check_int, check_tensor, values_readable

FORMATS = ("bf16", "fp16", "fp8_tensor", "fp8_block", "w4a8")
FP8_FORMATS = ("fp8_tensor", "fp8_block")  # e4m3 weights
# formats whose weights meet e4m3 activations on the grouped path's FP8 tensor cores
A8_FORMATS = ("fp8_tensor", "fp8_block", "w4a8")
_PLAIN_DTYPE = {"bf16": torch.bfloat16, "fp16": torch.float16}


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _beyond_range(w: torch.Tensor, dtype: torch.dtype) -> bool:
    """Whether a finite value of ``w`` would overflow to inf in ``dtype``."""
    big = w.abs() > torch.finfo(dtype).max
    return bool((big & w.isfinite()).any())


def _bias(name: str, b: torch.Tensor | None) -> torch.Tensor | None:
    """Biases are kept in fp32, contiguous (checked for shape in __post_init__)."""
    if b is None:
        return None
    check_tensor(name, b, dtypes=(torch.float32, torch.float64, torch.bfloat16, torch.float16), ndim=2)
    return b.to(torch.float32).contiguous()


def _gate_then_up(t: torch.Tensor) -> torch.Tensor:
    """Rows (dim 1) alternating gate, up, gate, up, ... -> gate rows then up rows."""
    return torch.cat([t[:, 0::2], t[:, 1::2]], dim=1).contiguous()


def _fp4_group_rows(packed: torch.Tensor) -> torch.Tensor:
    """FP4 rows [E, N, K/2] zero-padded to whole 32-column groups: [E, N, 16 ceil(K/32)]."""
    pad = -packed.shape[2] % (quant.FP4_GROUP // 2)
    return torch.nn.functional.pad(packed, (0, pad)).contiguous() if pad else packed


@dataclass(frozen=True)
class ExpertWeights:
    """Expert weights + format tag; build with :meth:`from_dense` or :meth:`from_quantized`."""

    format: str
    w13: torch.Tensor
    w2: torch.Tensor
    w13_scale: torch.Tensor | None = None
    w2_scale: torch.Tensor | None = None
    w13_bias: torch.Tensor | None = None
    w2_bias: torch.Tensor | None = None

    def __post_init__(self):
        """Every instance is checked once, however it was built (the constructor too): shapes,
        dtypes, devices, contiguity and scales of the format (metadata only, 1-3 us)."""
        check_choice("format", self.format, FORMATS)
        self._check()

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def from_dense(cls, w13: torch.Tensor, w2: torch.Tensor, format: str = "bf16", *,
                   w13_bias: torch.Tensor | None = None, w2_bias: torch.Tensor | None = None,
                   gate_up_interleaved: bool = False) -> "ExpertWeights":
        """Quantise float weights w13 [E, 2I, H] and w2 [E, H, I] into ``format``.

        ``gate_up_interleaved``: w13 (and w13_bias) rows alternate gate, up, gate, up, ... (the
        GPT-OSS checkpoint layout); they are reordered to gate rows then up rows."""
        check_choice("format", format, FORMATS)
        floats = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
        check_tensor("w13", w13, dtypes=floats, ndim=3)
        check_tensor("w2", w2, dtypes=floats, ndim=3)
        if gate_up_interleaved:
            w13 = _gate_then_up(w13)
            if w13_bias is not None:
                check_tensor("w13_bias", w13_bias, ndim=2)
                w13_bias = _gate_then_up(w13_bias)
        for name, w in (("w13", w13), ("w2", w2)):
            if not w.numel():  # before quantising: an empty expert has no amax
                raise ValueError(f"{name}: expected no zero-sized dimension, got shape {tuple(w.shape)}")
        biases = dict(w13_bias=_bias("w13_bias", w13_bias), w2_bias=_bias("w2_bias", w2_bias))
        if format in _PLAIN_DTYPE:
            dt = _PLAIN_DTYPE[format]
            for name, w in (("w13", w13), ("w2", w2)):
                if values_readable(w) and w.dtype != dt and _beyond_range(w, dt):
                    raise ValueError(f"{name}: magnitudes up to {w.abs().amax().item():.4g} exceed {format}'s "
                                     f"largest ({torch.finfo(dt).max:.4g}); use bf16 or an FP8 format (scaled)")
            return cls(format, w13.to(dt).contiguous(), w2.to(dt).contiguous(), **biases)
        for name, w in (("w13", w13), ("w2", w2)):  # a NaN or inf amax: a scale that ruins every code it scales
            if values_readable(w) and not bool(w.isfinite().all()):
                raise ValueError(f"{name}: expected finite weights to quantise into {format!r}, got NaN or inf")
        if format == "w4a8":
            for name, w in (("w13", w13), ("w2", w2)):
                if w.shape[2] % 2:
                    raise ValueError(f"{name}: format 'w4a8' packs two weights per byte along K and needs an even "
                                     f"last dimension, got shape {list(w.shape)}")
            q13, s13 = quant.quantize_fp4_groups(w13)
            q2, s2 = quant.quantize_fp4_groups(w2)
            return cls(format, q13, _fp4_group_rows(q2), s13, s2, **biases)
        if format == "fp8_tensor":
            q13, s13 = quant.quantize_fp8_per_expert(w13)
            q2, s2 = quant.quantize_fp8_per_expert(w2)
            return cls(format, q13, q2, s13, s2, **biases)
        inter = w13.shape[1] // 2
        g, s_g = quant.quantize_fp8_blocks(w13[:, :inter])
        u, s_u = quant.quantize_fp8_blocks(w13[:, inter:])
        q2, s2 = quant.quantize_fp8_blocks(w2)
        return cls(format, torch.cat([g, u], dim=1).contiguous(), q2, torch.cat([s_g, s_u], dim=1).contiguous(),
                   s2, **biases)

    @classmethod
    def from_quantized(cls, format: str, w13: torch.Tensor, w2: torch.Tensor,
                       w13_scale: torch.Tensor | None = None, w2_scale: torch.Tensor | None = None, *,
                       w13_bias: torch.Tensor | None = None, w2_bias: torch.Tensor | None = None,
                       gate_up_interleaved: bool = False) -> "ExpertWeights":
        """Wrap already-quantised tensors (what a checkpoint holds), checking every shape and dtype.

        ``gate_up_interleaved``: w13's rows alternate gate, up, gate, up, ... (GPT-OSS checkpoints,
        their MXFP4 ones included); they are reordered to gate rows then up rows, with w13_bias and,
        where it has one scale per row (w4a8), w13_scale (one copy each).  fp8_block's 128-row
        scale blocks would mix gate and up rows: refused."""
        check_choice("format", format, FORMATS)
        if gate_up_interleaved:
            if format == "fp8_block":
                raise ValueError("gate_up_interleaved: fp8_block's 128-row scale blocks of an interleaved w13 mix gate "
                                 "and up rows and cannot be reordered; quantise the reordered dense weights "
                                 "(from_dense(..., gate_up_interleaved=True)) instead")
            check_tensor("w13", w13, ndim=3)
            w13 = _gate_then_up(w13)
            if format == "w4a8" and w13_scale is not None:
                check_tensor("w13_scale", w13_scale, ndim=3)
                w13_scale = _gate_then_up(w13_scale)
            if w13_bias is not None:
                check_tensor("w13_bias", w13_bias, ndim=2)
                w13_bias = _gate_then_up(w13_bias)
        if format == "w4a8" and isinstance(w13, torch.Tensor) and isinstance(w2, torch.Tensor) and w2.dim() == 3 \
                and w13.dim() == 3 and w2.shape[2] * 2 == w13.shape[1] // 2:  # a checkpoint's [E, H, I/2]
            w2 = _fp4_group_rows(w2)
        weights = cls(format, w13, w2, w13_scale, w2_scale, _bias("w13_bias", w13_bias), _bias("w2_bias", w2_bias))
        for name, scale in (("w13_scale", weights.w13_scale), ("w2_scale", weights.w2_scale)):
            if scale is not None and scale.is_floating_point() and values_readable(scale) \
                    and not bool(scale.isfinite().all()):
                raise ValueError(f"{name}: expected finite scales, got NaN or inf")
        return weights

    def _check(self) -> None:
        """Raise, naming the field, unless the tensors are what the format stores (see the class)."""
        fmt = self.format
        fp4 = fmt == "w4a8"
        wdt = (quant.FP8_DTYPE,) if fmt in FP8_FORMATS else (torch.uint8,) if fp4 else (_PLAIN_DTYPE[fmt],)
        check_tensor("w13", self.w13, dtypes=wdt, ndim=3, contiguous=True)
        e, two_i, h = self.w13.shape
        layout = "[E, 2I, H/2] (two FP4 weights per byte)" if fp4 else "[E, 2I, H]"
        if two_i % 2 or two_i == 0:
            raise ValueError(f"w13: expected shape {layout} with an even, non-zero second dim, "
                             f"got {list(self.w13.shape)}")
        if e == 0 or h == 0:
            raise ValueError(f"w13: expected at least one expert and H >= 1, got shape {list(self.w13.shape)}")
        i = two_i // 2
        if fp4:
            h *= 2
            if i % 2:
                raise ValueError(f"w13: format 'w4a8' packs w2's I columns two per byte and needs an even I, "
                                 f"got I={i} from shape {list(self.w13.shape)}")
        check_tensor("w2", self.w2, dtypes=wdt, shape=(e, h, 16 * _cdiv(i, quant.FP4_GROUP) if fp4 else i),
                     device=self.w13.device, contiguous=True)
        if fmt in FP8_FORMATS or fp4:
            if fmt == "fp8_tensor":
                s13_shape, s2_shape = (e,), (e,)
            elif fp4:
                s13_shape = (e, 2 * i, _cdiv(h, quant.FP4_GROUP))
                s2_shape = (e, h, _cdiv(i, quant.FP4_GROUP))
            else:
                s13_shape = (e, 2 * _cdiv(i, quant.GROUP), _cdiv(h, quant.GROUP))
                s2_shape = (e, _cdiv(h, quant.GROUP), _cdiv(i, quant.GROUP))
            sdt = torch.uint8 if fp4 else torch.float32
            for name, s, shape in (("w13_scale", self.w13_scale, s13_shape), ("w2_scale", self.w2_scale, s2_shape)):
                if s is None:
                    raise ValueError(f"{name}: format {fmt!r} needs a {str(sdt).replace('torch.', '')} scale "
                                     f"tensor of shape {list(shape)}")
                check_tensor(name, s, dtypes=(sdt,), shape=shape, device=self.w13.device, contiguous=True)
        elif self.w13_scale is not None or self.w2_scale is not None:
            raise ValueError(f"w13_scale/w2_scale: format {fmt!r} takes no scales")
        for name, b, shape in (("w13_bias", self.w13_bias, (e, 2 * i)), ("w2_bias", self.w2_bias, (e, h))):
            if b is not None:
                check_tensor(name, b, dtypes=(torch.float32,), shape=shape, device=self.w13.device, contiguous=True)

    # ---- facts ----------------------------------------------------------------------------
    @property
    def num_experts(self) -> int:
        return self.w13.shape[0]

    @property
    def hidden_size(self) -> int:
        return self.w13.shape[2] * (2 if self.format == "w4a8" else 1)

    @property
    def intermediate_size(self) -> int:
        return self.w13.shape[1] // 2

    @property
    def device(self) -> torch.device:
        return self.w13.device

    @property
    def is_fp8(self) -> bool:
        """e4m3 weights."""
        return self.format in FP8_FORMATS

    @property
    def is_a8(self) -> bool:
        """Weights the grouped path multiplies with e4m3 activations (``A8_FORMATS``)."""
        return self.format in A8_FORMATS

    @property
    def has_bias(self) -> bool:
        return self.w13_bias is not None or self.w2_bias is not None

    @property
    def expert_nbytes(self) -> int:
        """Bytes of one expert's weights, scales and biases, both matrices."""
        total = self.w13[0].numel() * self.w13.element_size() + self.w2[0].numel() * self.w2.element_size()
        for s in (self.w13_scale, self.w2_scale, self.w13_bias, self.w2_bias):
            if s is not None:
                total += s[0].numel() * s.element_size()
        return total

    def local_window(self, expert_offset: int, num_local_experts: int | None) -> "ExpertWeights":
        """The experts that global ids [expert_offset, expert_offset + num_local_experts) use.

        ``num_local_experts`` None or equal to E: these weights are the local experts already.
        Smaller than E: these weights hold every expert and the window is a view of them
        (expert parallelism emulated on one device)."""
        e = self.num_experts
        check_int("expert_offset", expert_offset, lo=0)
        if num_local_experts is None or num_local_experts == e:
            return self
        check_int("num_local_experts", num_local_experts)
        if num_local_experts < 1 or num_local_experts > e or expert_offset + num_local_experts > e:
            raise ValueError(f"num_local_experts: expected {e} (weights of the local experts) or a window "
                             f"[expert_offset, expert_offset + num_local_experts) inside the {e} experts held, got "
                             f"expert_offset={expert_offset}, num_local_experts={num_local_experts}")
        sel = slice(expert_offset, expert_offset + num_local_experts)
        pick = lambda t: None if t is None else t[sel]  # noqa: E731
        return ExpertWeights(self.format, self.w13[sel], self.w2[sel], pick(self.w13_scale), pick(self.w2_scale),
                             pick(self.w13_bias), pick(self.w2_bias))

    def clone(self) -> "ExpertWeights":
        """A copy in new memory (benchmarks rotate copies past the L2 cache)."""
        cp = lambda t: None if t is None else t.clone()  # noqa: E731
        return ExpertWeights(self.format, cp(self.w13), cp(self.w2), cp(self.w13_scale), cp(self.w2_scale),
                             cp(self.w13_bias), cp(self.w2_bias))

    def to(self, device: torch.device | str) -> "ExpertWeights":
        """A copy on ``device``."""
        mv = lambda t: None if t is None else t.to(device)  # noqa: E731
        return ExpertWeights(self.format, mv(self.w13), mv(self.w2), mv(self.w13_scale), mv(self.w2_scale),
                             mv(self.w13_bias), mv(self.w2_bias))

    # ---- dequantisation (reference side) -----------------------------------------------------
    def dequantize(self, experts: torch.Tensor | slice | None = None,
                   dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
        """Dequantised (w13 [e, 2I, H], w2 [e, H, I]) in ``dtype`` for the selected experts."""
        sel = slice(None) if experts is None else experts
        if self.format == "w4a8":
            return (quant.dequantize_fp4_groups(self.w13[sel], self.w13_scale[sel], dtype),
                    quant.dequantize_fp4_groups(self.w2[sel], self.w2_scale[sel], dtype)[..., :self.intermediate_size])
        w13, w2 = self.w13[sel].to(dtype), self.w2[sel].to(dtype)
        if self.format == "fp8_tensor":
            w13 = w13 * self.w13_scale[sel].to(dtype)[:, None, None]
            w2 = w2 * self.w2_scale[sel].to(dtype)[:, None, None]
        elif self.format == "fp8_block":
            i, h = self.intermediate_size, self.hidden_size
            nb = _cdiv(i, quant.GROUP)
            s13 = self.w13_scale[sel].to(dtype)
            gate = quant.expand_block_scales(s13[:, :nb], i, h)
            up = quant.expand_block_scales(s13[:, nb:], i, h)
            w13 = w13 * torch.cat([gate, up], dim=1)
            w2 = w2 * quant.expand_block_scales(self.w2_scale[sel].to(dtype), h, i)
        return w13, w2
