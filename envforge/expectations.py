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
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from envforge.lockfile import ConvParams, KernelExpectation
from envforge.spec import VerifySection

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

# The sizes of the core's kernels the spec does not size: small, since what they check is
# that the machinery works (T.grad or autograd, updates of shared variables), not speed.
#   grad: (batch, inputs, hidden, outputs); train: (examples, features, SGD steps).
KERNEL_SHAPES: dict[str, tuple[int, ...]] = {"grad": (8, 6, 10, 3), "train": (32, 4, 20)}
KERNEL_PARAMS: dict[str, dict[str, float]] = {"train": {"learning_rate": 0.5}}
# Central differences of the float64 loss: truncation ~eps**2, rounding ~1e-16/eps.
GRAD_EPS = 1e-6
FLOAT_TYPES = ("float16", "float32", "float64")
# Smallest relative tolerance each precision can honestly meet, for a kernel of a few
# hundred operations per value (a pack's kernel may state its own).
DEFAULT_RTOL_FLOOR: Mapping[str, float] = {"float64": 1e-10, "float32": 1e-4, "float16": 2e-2}


@dataclass(frozen=True, slots=True)
class KernelCall:
    """One run of a kernel: what its inputs and its reference are decided by."""

    seed: int
    shape: tuple[int, ...]
    conv: ConvParams | None = None
    params: Mapping[str, float] | None = None


class Draw:
    """The probe's inputs as it draws them: from ``RandomState(seed)`` in order, cast to
    floatX, held in float64."""

    def __init__(self, seed: int, float_x: str) -> None:
        import numpy as np

        self.rng = np.random.RandomState(seed)
        self.float_x = float_x

    def uniform(self, *dims: int) -> Array:
        import numpy as np

        values: Array = self.rng.rand(*dims)
        return values.astype(self.float_x).astype(np.float64)

    def signed(self, *dims: int, scale: float = 1.0) -> Array:
        import numpy as np

        values: Array = (self.rng.rand(*dims) * 2.0 - 1.0) * scale
        return values.astype(self.float_x).astype(np.float64)

    def labels(self, classes: int, size: int) -> Array:
        """Integer labels in [0, classes), exact in every floatX."""
        import numpy as np

        values: Array = self.rng.randint(0, classes, size=size).astype(np.float64)
        return values


@dataclass(frozen=True, slots=True)
class Kernel:
    """A verify kernel: how its inputs are drawn and its float64 reference computed. The
    core's run on every framework; a pack declares its own (``FrameworkPack.kernels``:
    Theano's scan, random and softmax_xent), which a spec may name where it mounts that pack.

    ``shape``: its input's sizes where the spec does not size it; ``rtol_floor``: the
    smallest relative tolerance each precision can meet (values: GEMM and conv sum up to
    thousands of products in an order the target picks, a 4096 GEMM was off by ~1e-6 in
    float32 (GPU.md), so 1e-4 leaves 20x); ``scaled_atol``: its outputs hold values at and
    near zero (ReLU, gradients, weights), so its atol scales with the output's mean size."""

    inputs: Callable[[Draw, KernelCall], list[Array]]
    reference: Callable[[list[Array], KernelCall], Array]
    shape: tuple[int, ...] = ()
    rtol_floor: Mapping[str, float] = field(default_factory=lambda: DEFAULT_RTOL_FLOOR)
    scaled_atol: bool = True
    params: Mapping[str, float] | None = None


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


class DeclaresKernels(Protocol):
    """A pack as far as kernels go (``FrameworkPack.kernels``), and its name, by which a
    child process finds it among the installed packs."""

    @property
    def name(self) -> str: ...

    @property
    def kernels(self) -> Mapping[str, Kernel]: ...


def kernel_named(name: str, packs: Iterable[DeclaresKernels] = ()) -> Kernel:
    """The core's kernel of that name, else the first of ``packs`` (the registry, or a spec's
    mounted packs) that declares it."""
    if name in CORE_KERNELS:
        return CORE_KERNELS[name]
    for pack in packs:
        if name in pack.kernels:
            return pack.kernels[name]
    raise ValueError(f"no kernel {name!r}: neither the core nor a registered pack declares one")


_ONCE: dict[tuple[str, str, bool, tuple[int, ...]], tuple[KernelExpectation, ...]] = {}
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


def kernel_inputs_of(kernel: KernelExpectation,
                     packs: Iterable[DeclaresKernels] = ()) -> KernelExpectation:
    """The kernel with what NumPy computed blanked (checksum, samples, their indices, the
    output's shape and an atol scaled by the output): what its spec alone decides."""
    atol = 0.0 if _scaled_atol(kernel.name, packs) else kernel.atol
    return kernel.model_copy(update={"checksum": 0.0, "samples": (), "sample_indices": (),
                                     "atol": atol, "output_shape": None})


def _scaled_atol(name: str, packs: Iterable[DeclaresKernels]) -> bool:
    try:
        return kernel_named(name, packs).scaled_atol
    except ValueError:  # a lock's name no pack declares: it differs from the spec's anyway
        return False


def kernel_expectations(verify: VerifySection, float_x: str,
                        packs: Iterable[DeclaresKernels] = ()) -> tuple[KernelExpectation, ...]:
    """The expectation of each kernel the spec asks verify to run, in the spec's order; a
    kernel not the core's is the first of ``packs``' that declares it.

    Computed once per process for the same section, floatX and kernels: a spec's platforms
    lock in parallel threads with identical inputs, and the second waits for the first's."""
    packs = tuple(packs)
    owners = tuple(id(kernel_named(name, packs)) for name in verify.kernels)
    key = (verify.model_dump_json(), float_x, _INPUTS_ONLY.get(), owners)
    with _ONCE_LOCK:
        if key not in _ONCE:
            _ONCE[key] = _kernel_expectations(verify, float_x, packs)
        return _ONCE[key]


def _kernel_expectations(verify: VerifySection, float_x: str,
                         packs: tuple[DeclaresKernels, ...]) -> tuple[KernelExpectation, ...]:
    out = []
    for name in verify.kernels:
        conv = None
        if name == "elementwise":
            shape: tuple[int, ...] = (verify.elementwise_size,)
        elif name == "gemm":
            shape = (verify.gemm_size, verify.gemm_size)
        elif name != "conv":
            shape = kernel_named(name, packs).shape
        else:
            channels = verify.conv.channels
            shape = (verify.conv.batch, channels[0], verify.conv.size, verify.conv.size)
            conv = ConvParams(channels=channels, filter_size=CONV_FILTER_SIZE,
                              border_mode=CONV_BORDER_MODE, filter_flip=CONV_FILTER_FLIP)
        out.append(expect_kernel(name, seed=verify.seed, shape=shape, float_x=float_x,
                                 rtol=verify.rtol, atol=verify.atol, conv=conv, packs=packs))
    return tuple(out)


def expect_kernel(name: str, *, seed: int, shape: tuple[int, ...], float_x: str,
                  rtol: float, atol: float, conv: ConvParams | None = None,
                  packs: Iterable[DeclaresKernels] = ()) -> KernelExpectation:
    """One kernel's reference output summarised: checksum, samples and tolerances."""
    packs = tuple(packs)
    if float_x not in FLOAT_TYPES:
        raise ValueError(f"unknown floatX {float_x!r}")
    if (name == "conv") != (conv is not None):
        raise ValueError("conv parameters go with the conv kernel, and only with it")
    kernel = kernel_named(name, packs)
    params = dict(kernel.params) if kernel.params is not None else None
    eff_rtol = max(rtol, kernel.rtol_floor[float_x])
    if _INPUTS_ONLY.get():
        return kernel_inputs_of(KernelExpectation(
            name=name, seed=seed, shape=shape, checksum=0.0, samples=(), sample_indices=(),
            rtol=_round(eff_rtol), atol=_round(atol), conv=conv, params=params), packs)
    output = reference_output(name, seed=seed, shape=shape, float_x=float_x, conv=conv,
                              params=params, packs=packs)
    flat = output.ravel()
    indices = sample_indices(flat.size)
    if name == "conv":
        indices = _nonzero_near(indices, flat)
    eff_atol = atol
    if kernel.scaled_atol:
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


def kernel_inputs(name: str, *, seed: int, shape: tuple[int, ...], float_x: str,
                  conv: ConvParams | None = None,
                  packs: Iterable[DeclaresKernels] = ()) -> list[Array]:
    """The probe's inputs, rounded to floatX as the probe casts them, held in float64."""
    return kernel_named(name, packs).inputs(Draw(seed, float_x),
                                     KernelCall(seed=seed, shape=shape, conv=conv))


def reference_output(name: str, *, seed: int, shape: tuple[int, ...], float_x: str,
                     conv: ConvParams | None = None,
                     params: Mapping[str, float] | None = None,
                     packs: Iterable[DeclaresKernels] = ()) -> Array:
    """What the kernel must compute, in float64."""
    kernel = kernel_named(name, packs)
    call = KernelCall(seed=seed, shape=shape, conv=conv, params=params or kernel.params)
    return kernel.reference(kernel.inputs(Draw(seed, float_x), call), call)


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


def _round(value: float) -> float:
    """12 significant digits: far below any tolerance, above BLAS-to-BLAS noise."""
    if not math.isfinite(value):
        raise ValueError(f"reference value {value} is not finite")
    return float(f"{value:.{SIGNIFICANT_DIGITS}g}")
