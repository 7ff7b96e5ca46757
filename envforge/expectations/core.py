"""The core's kernels (elementwise, gemm, conv, grad, train) and their references in NumPy:
what every framework's probe must compute, whichever pack runs it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from envforge.expectations.kernel import DEFAULT_RTOL_FLOOR, Draw, Kernel, KernelCall

if TYPE_CHECKING:
    from envforge.expectations.kernel import Array

# 'half' pads by filter_size // 2 so every layer keeps the image size, like the blog's
# benchmark; filter_flip=True is Theano's default, a true convolution.
CONV_BORDER_MODE: Literal["half"] = "half"
CONV_FILTER_SIZE = 3
CONV_FILTER_FLIP = True

# The sizes of the core's kernels the spec does not size: small, since what they check is
# that the machinery works (T.grad or autograd, updates of shared variables), not speed.
#   grad: (batch, inputs, hidden, outputs); train: (examples, features, SGD steps).
KERNEL_SHAPES: dict[str, tuple[int, ...]] = {"grad": (8, 6, 10, 3), "train": (32, 4, 20)}
KERNEL_PARAMS: dict[str, dict[str, float]] = {"train": {"learning_rate": 0.5}}
# Central differences of the float64 loss: truncation ~eps**2, rounding ~1e-16/eps.
GRAD_EPS = 1e-6


def _elementwise_inputs(draw: Draw, call: KernelCall) -> list[Array]:
    return [draw.uniform(*call.shape)]


def _elementwise(values: list[Array], call: KernelCall) -> Array:
    import numpy as np

    result: Array = np.exp(values[0])
    return result


def _gemm_inputs(draw: Draw, call: KernelCall) -> list[Array]:
    return [draw.uniform(*call.shape), draw.uniform(*call.shape)]


def _gemm(values: list[Array], call: KernelCall) -> Array:
    result: Array = values[0] @ values[1]
    return result


def _grad_inputs(draw: Draw, call: KernelCall) -> list[Array]:
    """x, target, W1, b1, W2, b2."""
    batch, n_in, hidden, n_out = call.shape
    return [draw.uniform(batch, n_in), draw.uniform(batch, n_out),
            draw.signed(n_in, hidden, scale=1.0 / math.sqrt(n_in)),
            draw.signed(hidden, scale=0.1),
            draw.signed(hidden, n_out, scale=1.0 / math.sqrt(hidden)),
            draw.signed(n_out, scale=0.1)]


def _train_inputs(draw: Draw, call: KernelCall) -> list[Array]:
    """X, 0/1 labels."""
    examples, features, _ = call.shape
    return [draw.signed(examples, features), draw.labels(2, examples)]


def _train_reference(values: list[Array], call: KernelCall) -> Array:
    rate = (call.params or KERNEL_PARAMS["train"])["learning_rate"]
    return _train(values[0], values[1], steps=call.shape[2], learning_rate=rate)


def _conv_inputs(draw: Draw, call: KernelCall) -> list[Array]:
    import numpy as np

    conv = call.conv
    if conv is None:
        raise ValueError("the conv kernel needs its parameters")
    values = [draw.uniform(*call.shape)]
    size = conv.filter_size
    for c_in, c_out in zip(conv.channels, conv.channels[1:], strict=False):
        fan_in = c_in * size * size
        # He-uniform, as the probe: activations keep their size through the ReLU layers.
        weights: Array = (draw.rng.rand(c_out, c_in, size, size) * 2.0 - 1.0) * \
            math.sqrt(6.0 / fan_in)
        values.append(weights.astype(draw.float_x).astype(np.float64))
    return values


def _conv_reference(values: list[Array], call: KernelCall) -> Array:
    import numpy as np

    conv = call.conv
    assert conv is not None  # _conv_inputs refused it otherwise
    h = values[0]
    for weights in values[1:]:
        h = np.maximum(conv2d(h, weights, border_mode=conv.border_mode,
                              filter_flip=conv.filter_flip), 0.0)
    return h


# elementwise exp rounds once per value (a GPU's fast exp is a few ulp); grad's float64
# floor is the finite differences' own error (~1e-9 relative); train compounds 20 steps.
CORE_KERNELS: Mapping[str, Kernel] = {
    "elementwise": Kernel(_elementwise_inputs, _elementwise, scaled_atol=False, rtol_floor={
        "float64": 1e-12, "float32": 1e-5, "float16": 2e-3}),
    "gemm": Kernel(_gemm_inputs, _gemm, scaled_atol=False),
    "conv": Kernel(_conv_inputs, _conv_reference),
    "grad": Kernel(_grad_inputs, lambda values, call: finite_difference_grad(values),
                   shape=KERNEL_SHAPES["grad"],
                   rtol_floor={**DEFAULT_RTOL_FLOOR, "float64": 1e-7}),
    "train": Kernel(_train_inputs, _train_reference, shape=KERNEL_SHAPES["train"],
                    rtol_floor={**DEFAULT_RTOL_FLOOR, "float64": 1e-9},
                    params=KERNEL_PARAMS["train"]),
}
# the kernels the spec sizes: ([verify] elementwise_size, gemm_size, conv)
_SIZED = ("elementwise", "gemm", "conv")


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

