"""The expectation a lock records of each kernel a spec names: its reference, computed with
NumPy in float64, summarised as a checksum, samples and tolerances.

Stored floats are rounded to 12 significant digits so that a lock does not change
with the last bits of the BLAS that computed it.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from envforge.expectations.core import (
    CONV_BORDER_MODE,
    CONV_FILTER_FLIP,
    CONV_FILTER_SIZE,
    CORE_KERNELS,
)
from envforge.expectations.kernel import DeclaresKernels, Draw, Kernel, KernelCall
from envforge.lockfile import ConvParams, KernelExpectation
from envforge.spec import VerifySection

if TYPE_CHECKING:
    from envforge.expectations.kernel import Array

SIGNIFICANT_DIGITS = 12
SAMPLE_COUNT = 8
FLOAT_TYPES = ("float16", "float32", "float64")


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



def _round(value: float) -> float:
    """12 significant digits: far below any tolerance, above BLAS-to-BLAS noise."""
    if not math.isfinite(value):
        raise ValueError(f"reference value {value} is not finite")
    return float(f"{value:.{SIGNIFICANT_DIGITS}g}")
