"""Lock-time expectations: the tutorial's numbers, tolerances, samples, stable bytes."""

from __future__ import annotations

import sys
import tomllib

import numpy as np
import pytest
import tomli_w

from envforge.expectations import (
    conv2d,
    expect_kernel,
    inputs_only,
    kernel_expectations,
    kernel_inputs,
    kernel_inputs_of,
    reference_output,
    sample_indices,
)
from envforge.lockfile import ConvParams, Expectations, KernelExpectation
from envforge.spec import ConvShape, VerifySection
from tests.testing.packs import REGISTRY

# doc/tutorial/using_gpu.txt: exp of RandomState(22).rand(10 * 30 * 768).
TUTORIAL_SIZE = 10 * 30 * 768
TUTORIAL_START = (1.23178032, 1.61879341, 1.52278065)


def test_elementwise_seed_22_starts_like_theanos_tutorial() -> None:
    verify = VerifySection(kernels=("elementwise",), seed=22, elementwise_size=TUTORIAL_SIZE)
    (kernel,) = kernel_expectations(verify, "float64", REGISTRY)
    assert kernel.sample_indices[:3] == (0, 1, 2)
    assert tuple(round(v, 8) for v in kernel.samples[:3]) == TUTORIAL_START


def test_float32_reference_uses_float32_rounded_inputs() -> None:
    verify = VerifySection(kernels=("elementwise",), seed=22, elementwise_size=TUTORIAL_SIZE)
    (f32,) = kernel_expectations(verify, "float32", REGISTRY)
    (f64,) = kernel_expectations(verify, "float64", REGISTRY)
    # Same draws, so close; but the inputs were rounded to float32 first, so not equal.
    assert f32.samples[:3] == pytest.approx(TUTORIAL_START, rel=1e-7)
    assert f32.samples != f64.samples
    x = np.random.RandomState(22).rand(TUTORIAL_SIZE).astype(np.float32).astype(np.float64)
    assert f32.samples[1] == float(f"{np.exp(x[1]):.12g}")


def test_conv_shapes_and_relu() -> None:
    verify = VerifySection(kernels=("conv",), conv=ConvShape(batch=2, size=8,
                                                             channels=(3, 5, 6)))
    (kernel,) = kernel_expectations(verify, "float64", REGISTRY)
    assert kernel.shape == (2, 3, 8, 8)
    assert kernel.output_shape == (2, 6, 8, 8)
    assert kernel.conv == ConvParams(channels=(3, 5, 6), filter_size=3, border_mode="half",
                                     filter_flip=True)
    out = reference_output("conv", packs=REGISTRY, seed=22, shape=kernel.shape, float_x="float64",
                           conv=kernel.conv)
    assert out.min() == 0.0 < out.max()
    # Samples avoid values the ReLU clipped to zero.
    assert all(v > 0 for v in kernel.samples)
    assert kernel.checksum == pytest.approx(out.sum(), rel=1e-11)


def test_gemm_reference_and_shapes() -> None:
    kernel = expect_kernel("gemm", packs=REGISTRY,
                           seed=1, shape=(16, 16), float_x="float64", rtol=1e-6,
                           atol=1e-9)
    rng = np.random.RandomState(1)
    a, b = rng.rand(16, 16), rng.rand(16, 16)
    product = (a @ b).ravel()
    assert kernel.checksum == pytest.approx(product.sum(), rel=1e-11)
    assert kernel.samples == pytest.approx([product[i] for i in kernel.sample_indices],
                                           rel=1e-11)
    assert kernel.output_shape == (16, 16)


def test_tolerances_have_a_floor_per_precision_and_keep_a_looser_spec() -> None:
    tight = VerifySection(kernels=("elementwise", "gemm", "conv"), rtol=1e-9, atol=0.0,
                          gemm_size=8, elementwise_size=8, conv=ConvShape(batch=1, size=8,
                                                                            channels=(3, 4)))
    f32 = {k.name: k for k in kernel_expectations(tight, "float32", REGISTRY)}
    assert f32["elementwise"].rtol == 1e-5
    assert f32["gemm"].rtol == 1e-4
    assert f32["conv"].rtol == 1e-4
    assert f32["gemm"].atol == 0.0
    assert f32["conv"].atol > 0.0  # near-zero ReLU outputs need an absolute bound
    f64 = {k.name: k for k in kernel_expectations(tight, "float64", REGISTRY)}
    assert f64["gemm"].rtol == 1e-9
    loose = tight.model_copy(update={"rtol": 1e-3})
    assert {k.rtol for k in kernel_expectations(loose, "float32", REGISTRY)} == {1e-3}


def test_float32_tolerance_still_rejects_a_transposed_operand() -> None:
    kernel = expect_kernel("gemm", packs=REGISTRY,
                           seed=22, shape=(64, 64), float_x="float32", rtol=1e-4,
                           atol=1e-6)
    a, b = kernel_inputs("gemm", packs=REGISTRY, seed=22, shape=(64, 64), float_x="float32")
    wrong = (a @ b.T).ravel()
    off = [abs(wrong[i] - s) > kernel.atol + kernel.rtol * abs(s)
           for i, s in zip(kernel.sample_indices, kernel.samples, strict=True)]
    assert sum(off) >= len(off) - 1


def test_sample_indices() -> None:
    assert sample_indices(1) == (0,)
    assert sample_indices(4) == (0, 1, 2, 3)
    big = sample_indices(1_000_003)
    assert big[:3] == (0, 1, 2) and big[-1] == 1_000_002
    assert len(big) == 8 == len(set(big))
    assert list(big) == sorted(big)
    assert sample_indices(100) == sample_indices(100)
    with pytest.raises(ValueError):
        sample_indices(0)


def _small_verify() -> VerifySection:
    return VerifySection(elementwise_size=1000, gemm_size=32,
                         conv=ConvShape(batch=1, size=8, channels=(3, 4, 4)))


def test_stored_floats_have_twelve_significant_digits() -> None:
    for kernel in kernel_expectations(_small_verify(), "float32", REGISTRY):
        for value in (kernel.checksum, *kernel.samples, kernel.rtol, kernel.atol):
            assert value == float(f"{value:.12g}")


def test_expectations_are_byte_stable_through_toml() -> None:
    def dump() -> str:
        expect = Expectations(versions={"theano": "1.0.5"}, device="cpu", float_x="float32",
                              kernels=kernel_expectations(_small_verify(), "float32", REGISTRY))
        return tomli_w.dumps(expect.model_dump(mode="json", exclude_none=True))

    first = dump()
    assert first == dump()
    back = Expectations.model_validate(tomllib.loads(first))
    assert back.kernels == kernel_expectations(_small_verify(), "float32", REGISTRY)


def test_kernel_expectation_stays_frozen_and_strict() -> None:
    (kernel,) = kernel_expectations(VerifySection(kernels=("gemm",), gemm_size=4), "float64")
    with pytest.raises(ValueError):
        kernel.checksum = 0.0  # type: ignore[misc]
    with pytest.raises(ValueError):
        KernelExpectation.model_validate({**kernel.model_dump(), "extra": 1})


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="floatX"):
        expect_kernel("gemm", packs=REGISTRY,
                      seed=1, shape=(2, 2), float_x="float8", rtol=1e-4, atol=0)
    with pytest.raises(ValueError, match="conv"):
        expect_kernel("conv", packs=REGISTRY,
                      seed=1, shape=(1, 3, 8, 8), float_x="float32", rtol=1e-4, atol=0)
    with pytest.raises(ValueError, match="border_mode"):
        conv2d(np.zeros((1, 1, 4, 4)), np.zeros((1, 1, 3, 3)), border_mode="full")


def test_references_are_computed_once_for_equal_sections() -> None:
    """A spec's platforms ask with equal sections (separate objects) from two threads."""
    from concurrent.futures import ThreadPoolExecutor

    from envforge.expectations import kernel_expectations
    from envforge.spec import VerifySection

    def section() -> VerifySection:
        return VerifySection.model_validate({"kernels": ["elementwise", "gemm"], "seed": 5,
                                             "gemm_size": 16, "elementwise_size": 64})

    with ThreadPoolExecutor(2) as pool:
        first, second = pool.map(lambda s: kernel_expectations(s, "float64", REGISTRY),
                                 [section(), section()])
    assert first is second
    assert kernel_expectations(section(), "float32", REGISTRY) is not first


def test_inputs_only_describes_each_kernel_by_what_the_spec_decides_without_numpy(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """plan and apply check a lock's kernels so: the same as the full reference with its
    computed parts blanked, and no NumPy; the per-process cache keeps the two apart."""
    verify = VerifySection(kernels=("elementwise", "gemm", "scan", "grad", "random",
                                    "softmax_xent", "train", "conv"),
                           conv=ConvShape(batch=1, size=8, channels=(2, 3)), gemm_size=8,
                           elementwise_size=64)
    for float_x in ("float32", "float64"):
        full = kernel_expectations(verify, float_x, REGISTRY)
        with monkeypatch.context() as blocked:
            blocked.setitem(sys.modules, "numpy", None)
            with inputs_only():
                described = kernel_expectations(verify, float_x, REGISTRY)
        assert described == tuple(kernel_inputs_of(k, REGISTRY) for k in full)
        assert kernel_expectations(verify, float_x, REGISTRY) == full
