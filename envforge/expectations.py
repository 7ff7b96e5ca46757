"""Reference results for verify's kernels, computed at lock time with NumPy in float64.

The probe (``envforge/probe/probe.py``) draws its inputs from the same legacy
``numpy.random.RandomState(seed)`` in the same order, casts them to floatX, and runs
them through Theano. The reference uses those floatX-rounded inputs promoted to
float64, so the only difference left to tolerate is the arithmetic of the target,
and a tolerance can be tight enough that a wrong result (a missing filter flip, a
transposed operand, a different seed) fails. Legacy RandomState streams are frozen
across NumPy versions, which is what lets a lock written with NumPy 2 describe a
NumPy 1.19 environment.

Stored floats are rounded to 12 significant digits so that a lock does not change
with the last bits of the BLAS that computed it. NumPy is the ``resolve`` extra, so
it is imported inside the functions that need it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal

from envforge.lockfile import ConvParams, KernelExpectation
from envforge.spec import VerifySection

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Array = NDArray[np.float64]

KernelName = Literal["elementwise", "gemm", "conv"]
FloatX = Literal["float16", "float32", "float64"]

SIGNIFICANT_DIGITS = 12
SAMPLE_COUNT = 8
# 'half' pads by filter_size // 2 so every layer keeps the image size, like the blog's
# benchmark; filter_flip=True is Theano's default, a true convolution.
CONV_BORDER_MODE: Literal["half"] = "half"
CONV_FILTER_SIZE = 3
CONV_FILTER_FLIP = True

# Smallest relative tolerance each precision can honestly meet, by kernel. Elementwise
# exp rounds once per value (a GPU's fast exp is a few ulp). GEMM and conv sum up to
# thousands of products in an order the target picks (blocked BLAS, GPU tiles): float32
# errors of ~1e-6 were seen for a 4096 GEMM (GPU.md), so 1e-4 leaves a margin of 20x,
# while any wrong computation is off by far more than 1e-2.
_RTOL_FLOOR: dict[str, dict[str, float]] = {
    "float64": {"elementwise": 1e-12, "gemm": 1e-10, "conv": 1e-10},
    "float32": {"elementwise": 1e-5, "gemm": 1e-4, "conv": 1e-4},
    "float16": {"elementwise": 2e-3, "gemm": 2e-2, "conv": 2e-2},
}


def kernel_expectations(verify: VerifySection, float_x: str) -> tuple[KernelExpectation, ...]:
    """The expectation of each kernel the spec asks verify to run, in the spec's order."""
    out = []
    for name in verify.kernels:
        conv = None
        if name == "elementwise":
            shape: tuple[int, ...] = (verify.elementwise_size,)
        elif name == "gemm":
            shape = (verify.gemm_size, verify.gemm_size)
        else:
            channels = verify.conv.channels
            shape = (verify.conv.batch, channels[0], verify.conv.size, verify.conv.size)
            conv = ConvParams(channels=channels, filter_size=CONV_FILTER_SIZE,
                              border_mode=CONV_BORDER_MODE, filter_flip=CONV_FILTER_FLIP)
        out.append(expect_kernel(name, seed=verify.seed, shape=shape, float_x=float_x,
                                 rtol=verify.rtol, atol=verify.atol, conv=conv))
    return tuple(out)


def expect_kernel(name: KernelName, *, seed: int, shape: tuple[int, ...], float_x: str,
                  rtol: float, atol: float, conv: ConvParams | None = None) -> KernelExpectation:
    """One kernel's reference output summarised: checksum, samples and tolerances."""
    if float_x not in _RTOL_FLOOR:
        raise ValueError(f"unknown floatX {float_x!r}")
    if (name == "conv") != (conv is not None):
        raise ValueError("conv parameters go with the conv kernel, and only with it")
    output = reference_output(name, seed=seed, shape=shape, float_x=float_x, conv=conv)
    flat = output.ravel()
    indices = sample_indices(flat.size)
    if name == "conv":
        indices = _nonzero_near(indices, flat)
    eff_rtol = max(rtol, _RTOL_FLOOR[float_x][name])
    eff_atol = atol
    if name == "conv":
        # ReLU leaves values at and near zero, where a relative bound means nothing; an
        # element's rounding error scales with the size of the activations summed into it.
        eff_atol = max(atol, eff_rtol * float(abs(flat).mean()))
    return KernelExpectation(
        name=name, seed=seed, shape=shape, checksum=_round(float(flat.sum())),
        samples=tuple(_round(float(flat[i])) for i in indices), sample_indices=indices,
        rtol=_round(eff_rtol), atol=_round(eff_atol), conv=conv,
        output_shape=tuple(int(n) for n in output.shape))


def sample_indices(size: int, count: int = SAMPLE_COUNT) -> tuple[int, ...]:
    """The first three values (the tutorial's check), the last, and some spread between.

    The spread uses a golden-ratio stride so that samples do not line up with rows or
    image borders of the output.
    """
    if size < 1:
        raise ValueError("an empty output has nothing to sample")
    picked = [i for i in (0, 1, 2) if i < size]
    step = 0
    while len(picked) < min(count - 1, size - 1) and step < 4 * count:
        step += 1
        index = (step * size * 618_034) // 1_000_000 % size
        if index not in picked and index != size - 1:
            picked.append(index)
    if size - 1 not in picked:
        picked.append(size - 1)
    return tuple(sorted(picked))


def _nonzero_near(indices: tuple[int, ...], flat: Array) -> tuple[int, ...]:
    """Move each sample to the next value ReLU did not clip: a zero says little about a conv."""
    import numpy as np

    nonzero = np.flatnonzero(flat)
    if nonzero.size == 0:
        return indices
    moved: list[int] = []
    for index in indices:
        position = int(np.searchsorted(nonzero, index))
        for step in range(min(nonzero.size, len(indices) + 1)):
            candidate = int(nonzero[(position + step) % nonzero.size])
            if candidate not in moved:
                moved.append(candidate)
                break
    return tuple(sorted(moved))


def kernel_inputs(name: KernelName, *, seed: int, shape: tuple[int, ...], float_x: str,
                  conv: ConvParams | None = None) -> list[Array]:
    """The probe's inputs, rounded to floatX as the probe casts them, held in float64."""
    import numpy as np

    rng = np.random.RandomState(seed)

    def draw(*dims: int) -> Array:
        values: Array = rng.rand(*dims)
        return values.astype(float_x).astype(np.float64)

    if name == "elementwise":
        return [draw(*shape)]
    if name == "gemm":
        return [draw(*shape), draw(*shape)]
    if conv is None:
        raise ValueError("the conv kernel needs its parameters")
    values = [draw(*shape)]
    size = conv.filter_size
    for c_in, c_out in zip(conv.channels, conv.channels[1:], strict=False):
        fan_in = c_in * size * size
        # He-uniform, as the probe: activations keep their size through the ReLU layers.
        weights: Array = (rng.rand(c_out, c_in, size, size) * 2.0 - 1.0) * math.sqrt(6.0 / fan_in)
        values.append(weights.astype(float_x).astype(np.float64))
    return values


def reference_output(name: KernelName, *, seed: int, shape: tuple[int, ...], float_x: str,
                     conv: ConvParams | None = None) -> Array:
    """What the kernel must compute, in float64."""
    import numpy as np

    values = kernel_inputs(name, seed=seed, shape=shape, float_x=float_x, conv=conv)
    if name == "elementwise":
        result: Array = np.exp(values[0])
        return result
    if name == "gemm":
        result = values[0] @ values[1]
        return result
    assert conv is not None  # kernel_inputs refused it otherwise
    h = values[0]
    for weights in values[1:]:
        h = np.maximum(conv2d(h, weights, border_mode=conv.border_mode,
                              filter_flip=conv.filter_flip), 0.0)
    return h


def conv2d(x: Array, w: Array, *, border_mode: str = CONV_BORDER_MODE,
           filter_flip: bool = CONV_FILTER_FLIP) -> Array:
    """``theano.tensor.nnet.conv2d`` in NumPy: (batch, c, h, w) * (out, c, kh, kw).

    filter_flip=True (Theano's default) flips the kernel: a true convolution, not the
    cross-correlation most frameworks call convolution. One matrix product per filter
    tap and image keeps memory at one image's worth (a 16x64x224x224 batch would need
    gigabytes as an im2col matrix).
    """
    import numpy as np

    batch, channels = x.shape[:2]
    out_channels, w_channels, kh, kw = w.shape
    if w_channels != channels:
        raise ValueError(f"input has {channels} channels, filters expect {w_channels}")
    if filter_flip:
        w = w[:, :, ::-1, ::-1]
    if border_mode == "half":
        x = np.pad(x, ((0, 0), (0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2)))
    elif border_mode != "valid":
        raise ValueError(f"border_mode {border_mode!r} is not 'half' or 'valid'")
    out_h, out_w = x.shape[2] - kh + 1, x.shape[3] - kw + 1
    out = np.empty((batch, out_channels, out_h, out_w))
    for image in range(batch):
        acc = np.zeros((out_channels, out_h * out_w))
        for u in range(kh):
            for v in range(kw):
                window = x[image, :, u:u + out_h, v:v + out_w].reshape(channels, -1)
                acc += w[:, :, u, v] @ window
        out[image] = acc.reshape(out_channels, out_h, out_w)
    return out


def _round(value: float) -> float:
    """12 significant digits: far below any tolerance, above BLAS-to-BLAS noise."""
    if not math.isfinite(value):
        raise ValueError(f"reference value {value} is not finite")
    return float(f"{value:.{SIGNIFICANT_DIGITS}g}")
