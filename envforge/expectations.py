"""Reference results for verify's kernels, computed at lock time with NumPy in float64.

The probe (``envforge/packs/theano/probe.py``) draws its inputs from the same legacy
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
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Literal

from envforge.lockfile import ConvParams, KernelExpectation
from envforge.spec import KernelName, VerifySection

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Array = NDArray[np.float64]

FloatX = Literal["float16", "float32", "float64"]

SIGNIFICANT_DIGITS = 12
SAMPLE_COUNT = 8
# 'half' pads by filter_size // 2 so every layer keeps the image size, like the blog's
# benchmark; filter_flip=True is Theano's default, a true convolution.
CONV_BORDER_MODE: Literal["half"] = "half"
CONV_FILTER_SIZE = 3
CONV_FILTER_FLIP = True

# The sizes of the kernels the spec does not size: small, since what they check is that
# the machinery works (scan's C loop, T.grad, the MRG streams, the fused softmax and
# cross-entropy, updates of shared variables), not speed.
#   scan: (steps, units); grad: (batch, inputs, hidden, outputs); random: (uniform
#   count, normal count: odd, so the Box-Muller tail is cut); softmax_xent: (batch,
#   features, classes); train: (examples, features, SGD steps).
KERNEL_SHAPES: dict[str, tuple[int, ...]] = {
    "scan": (16, 8), "grad": (8, 6, 10, 3), "random": (64, 33), "softmax_xent": (16, 7, 5),
    "train": (32, 4, 20),
}
KERNEL_PARAMS: dict[str, dict[str, float]] = {"train": {"learning_rate": 0.5}}
# Central differences of the float64 loss: truncation ~eps**2, rounding ~1e-16/eps.
GRAD_EPS = 1e-6
# Kernels whose outputs hold values at and near zero (ReLU, gradients, normal samples,
# weights): their atol scales with the output's mean size.
_SCALED_ATOL = ("conv", "grad", "random", "softmax_xent", "train", "scan")

# Smallest relative tolerance each precision can honestly meet, by kernel. Elementwise
# exp rounds once per value (a GPU's fast exp is a few ulp). GEMM and conv sum up to
# thousands of products in an order the target picks (blocked BLAS, GPU tiles): float32
# errors of ~1e-6 were seen for a 4096 GEMM (GPU.md), so 1e-4 leaves a margin of 20x,
# while any wrong computation is off by far more than 1e-2. grad's float64 floor is the
# finite differences' own error (~1e-9 relative); train compounds 20 steps.
_RTOL_FLOOR: dict[str, dict[str, float]] = {
    "float64": {"elementwise": 1e-12, "gemm": 1e-10, "conv": 1e-10, "scan": 1e-10,
                "grad": 1e-7, "random": 1e-10, "softmax_xent": 1e-10, "train": 1e-9},
    "float32": {"elementwise": 1e-5, "gemm": 1e-4, "conv": 1e-4, "scan": 1e-4, "grad": 1e-4,
                "random": 1e-4, "softmax_xent": 1e-4, "train": 1e-4},
    "float16": {"elementwise": 2e-3, "gemm": 2e-2, "conv": 2e-2, "scan": 2e-2, "grad": 2e-2,
                "random": 2e-2, "softmax_xent": 2e-2, "train": 2e-2},
}


_ONCE: dict[tuple[str, str, bool], tuple[KernelExpectation, ...]] = {}
_ONCE_LOCK = threading.Lock()
_INPUTS_ONLY: ContextVar[bool] = ContextVar("envforge_kernel_inputs_only", default=False)


@contextmanager
def inputs_only() -> Iterator[None]:
    """Within it ``expect_kernel`` computes no reference and needs no NumPy: it describes the
    kernel by what the spec decides (``kernel_inputs_of``). plan and apply check a lock's pack
    tables so; NumPy is the ``resolve`` extra, which a bundle's envforge does not carry."""
    token = _INPUTS_ONLY.set(True)
    try:
        yield
    finally:
        _INPUTS_ONLY.reset(token)


def kernel_inputs_of(kernel: KernelExpectation) -> KernelExpectation:
    """The kernel with what NumPy computed blanked (checksum, samples, their indices, the
    output's shape and an atol scaled by the output): what its spec alone decides."""
    atol = 0.0 if kernel.name in _SCALED_ATOL else kernel.atol
    return kernel.model_copy(update={"checksum": 0.0, "samples": (), "sample_indices": (),
                                     "atol": atol, "output_shape": None})


def kernel_expectations(verify: VerifySection, float_x: str) -> tuple[KernelExpectation, ...]:
    """The expectation of each kernel the spec asks verify to run, in the spec's order.

    Computed once per process for the same section and floatX: a spec's platforms lock in
    parallel threads with identical inputs, and the second waits for the first's result."""
    key = (verify.model_dump_json(), float_x, _INPUTS_ONLY.get())
    with _ONCE_LOCK:
        if key not in _ONCE:
            _ONCE[key] = _kernel_expectations(verify, float_x)
        return _ONCE[key]


def _kernel_expectations(verify: VerifySection,
                         float_x: str) -> tuple[KernelExpectation, ...]:
    out = []
    for name in verify.kernels:
        conv = None
        if name == "elementwise":
            shape: tuple[int, ...] = (verify.elementwise_size,)
        elif name == "gemm":
            shape = (verify.gemm_size, verify.gemm_size)
        elif name != "conv":
            shape = KERNEL_SHAPES[name]
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
    params = KERNEL_PARAMS.get(name)
    eff_rtol = max(rtol, _RTOL_FLOOR[float_x][name])
    if _INPUTS_ONLY.get():
        return kernel_inputs_of(KernelExpectation(
            name=name, seed=seed, shape=shape, checksum=0.0, samples=(), sample_indices=(),
            rtol=_round(eff_rtol), atol=_round(atol), conv=conv, params=params))
    output = reference_output(name, seed=seed, shape=shape, float_x=float_x, conv=conv,
                              params=params)
    flat = output.ravel()
    indices = sample_indices(flat.size)
    if name == "conv":
        indices = _nonzero_near(indices, flat)
    eff_atol = atol
    if name in _SCALED_ATOL:
        # Values at and near zero, where a relative bound means nothing; an element's
        # rounding error scales with the size of the values that were summed into it.
        eff_atol = max(atol, eff_rtol * float(abs(flat).mean()))
    return KernelExpectation(
        name=name, seed=seed, shape=shape, checksum=_round(float(flat.sum())),
        samples=tuple(_round(float(flat[i])) for i in indices), sample_indices=indices,
        rtol=_round(eff_rtol), atol=_round(eff_atol), conv=conv, params=params,
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

    def signed(*dims: int, scale: float = 1.0) -> Array:
        values: Array = (rng.rand(*dims) * 2.0 - 1.0) * scale
        return values.astype(float_x).astype(np.float64)

    if name == "elementwise":
        return [draw(*shape)]
    if name == "gemm":
        return [draw(*shape), draw(*shape)]
    if name == "scan":  # x, W, h0
        steps, units = shape
        return [draw(steps, units), signed(units, units, scale=1.0 / math.sqrt(units)),
                draw(units)]
    if name == "grad":  # x, target, W1, b1, W2, b2
        batch, n_in, hidden, n_out = shape
        return [draw(batch, n_in), draw(batch, n_out),
                signed(n_in, hidden, scale=1.0 / math.sqrt(n_in)), signed(hidden, scale=0.1),
                signed(hidden, n_out, scale=1.0 / math.sqrt(hidden)), signed(n_out, scale=0.1)]
    if name == "softmax_xent":  # x, W, b, integer labels
        batch, features, classes = shape
        return [draw(batch, features), signed(features, classes), signed(classes, scale=0.1),
                rng.randint(0, classes, size=batch).astype(np.float64)]
    if name == "train":  # X, 0/1 labels
        examples, features, _ = shape
        return [signed(examples, features),
                rng.randint(0, 2, size=examples).astype(float_x).astype(np.float64)]
    if name == "random":
        return []
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
                     conv: ConvParams | None = None,
                     params: dict[str, float] | None = None) -> Array:
    """What the kernel must compute, in float64."""
    import numpy as np

    values = kernel_inputs(name, seed=seed, shape=shape, float_x=float_x, conv=conv)
    if name == "elementwise":
        result: Array = np.exp(values[0])
        return result
    if name == "gemm":
        result = values[0] @ values[1]
        return result
    if name == "scan":
        return _scan(*values)
    if name == "grad":
        return finite_difference_grad(values)
    if name == "random":
        from envforge.mrg import MRGStreams

        streams = MRGStreams(seed)
        uniform = streams.uniform(shape[0])
        result = np.concatenate([uniform, streams.normal(shape[1])])
        return result
    if name == "softmax_xent":
        return _softmax_xent(*values)
    if name == "train":
        rate = (params or KERNEL_PARAMS["train"])["learning_rate"]
        return _train(values[0], values[1], steps=shape[2], learning_rate=rate)
    assert conv is not None  # kernel_inputs refused it otherwise
    h = values[0]
    for weights in values[1:]:
        h = np.maximum(conv2d(h, weights, border_mode=conv.border_mode,
                              filter_flip=conv.filter_flip), 0.0)
    return h


def _scan(x: Array, w: Array, h0: Array) -> Array:
    """h_t = tanh(W h_{t-1} + x_t), every h_t: the probe's theano.scan loop."""
    import numpy as np

    h, out = h0, []
    for x_t in x:
        h = np.tanh(w @ h + x_t)
        out.append(h)
    return np.array(out)


def _mlp_loss(x: Array, target: Array, params: list[Array]) -> float:
    """Half the squared error per example of a tanh MLP: the probe's loss."""
    import numpy as np

    w1, b1, w2, b2 = params
    y = np.tanh(x @ w1 + b1) @ w2 + b2
    return float(0.5 * np.sum((y - target) ** 2) / x.shape[0])


def finite_difference_grad(values: list[Array], eps: float = GRAD_EPS) -> Array:
    """The MLP loss's gradient by central differences, parameters in order, flattened.

    Independent of any symbolic differentiation: what T.grad computes must agree.
    """
    import numpy as np

    x, target, *params = values
    out = []
    for index, param in enumerate(params):
        grad = np.empty(param.size)
        for k in range(param.size):
            moved = [p.copy() for p in params]
            moved[index].ravel()[k] += eps
            up = _mlp_loss(x, target, moved)
            moved[index].ravel()[k] -= 2 * eps
            grad[k] = (up - _mlp_loss(x, target, moved)) / (2 * eps)
        out.append(grad)
    return np.concatenate(out)


def _softmax_xent(x: Array, w: Array, b: Array, labels: Array) -> Array:
    """softmax(x W + b) and its categorical cross-entropy per example, concatenated."""
    import numpy as np

    logits = x @ w + b
    logits = logits - logits.max(axis=1, keepdims=True)
    probabilities = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    picked = probabilities[np.arange(x.shape[0]), labels.astype(np.int64)]
    return np.concatenate([probabilities.ravel(), -np.log(picked)])


def _train(x: Array, y: Array, *, steps: int, learning_rate: float) -> Array:
    """Logistic regression by full-batch SGD from zero weights: each step's loss (before
    its update), then the final weights and bias."""
    import numpy as np

    w, b, losses = np.zeros(x.shape[1]), 0.0, []
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ w + b)))
        losses.append(float(np.mean(-(y * np.log(p) + (1.0 - y) * np.log1p(-p)))))
        error = p - y
        w = w - learning_rate * (x.T @ error) / x.shape[0]
        b = b - learning_rate * float(error.mean())
    return np.concatenate([losses, w, [b]])


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
