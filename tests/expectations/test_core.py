"""The core's kernels: their names, Theano's conv semantics, the probe's draws."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from envforge.expectations import CORE_KERNELS, conv2d, kernel_inputs
from envforge.lockfile import ConvParams
from envforge.spec import CORE_KERNEL_NAMES
from tests.testing.packs import REGISTRY


def test_the_spec_names_the_core_s_kernels() -> None:
    """The spec checks ``[verify] kernels`` by name without importing the kernels' NumPy
    code: its names are the core's kernels, in their order."""
    assert tuple(CORE_KERNELS) == CORE_KERNEL_NAMES


def _conv_by_definition(x: np.ndarray, w: np.ndarray, *, border_mode: str,
                        filter_flip: bool) -> np.ndarray:
    """Theano's conv2d written as its definition, one output value at a time."""
    kh, kw = w.shape[2:]
    if border_mode == "half":
        x = np.pad(x, ((0, 0), (0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2)))
    out = np.zeros((x.shape[0], w.shape[0], x.shape[2] - kh + 1, x.shape[3] - kw + 1))
    for b, o, i, j in itertools.product(*(range(n) for n in out.shape)):
        total = 0.0
        for c, u, v in itertools.product(range(x.shape[1]), range(kh), range(kw)):
            # A true convolution pairs x[i+u] with the filter's tap counted from the end.
            tap = w[o, c, kh - 1 - u, kw - 1 - v] if filter_flip else w[o, c, u, v]
            total += x[b, c, i + u, j + v] * tap
        out[b, o, i, j] = total
    return out


@pytest.mark.parametrize("border_mode", ["half", "valid"])
@pytest.mark.parametrize("filter_flip", [True, False])
def test_conv2d_matches_the_definition(border_mode: str, filter_flip: bool) -> None:
    rng = np.random.RandomState(3)
    x, w = rng.randn(2, 3, 6, 5), rng.randn(4, 3, 3, 3)
    got = conv2d(x, w, border_mode=border_mode, filter_flip=filter_flip)
    want = _conv_by_definition(x, w, border_mode=border_mode, filter_flip=filter_flip)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_filter_flip_changes_the_result_beyond_tolerance() -> None:
    rng = np.random.RandomState(5)
    x, w = rng.rand(1, 3, 8, 8), rng.rand(2, 3, 3, 3) - 0.5
    flipped, plain = conv2d(x, w), conv2d(x, w, filter_flip=False)
    assert np.max(np.abs(flipped - plain)) > 1e-2 * np.max(np.abs(flipped))


def test_conv_weights_are_he_uniform_from_the_same_stream() -> None:
    conv = ConvParams(channels=(3, 4, 2))
    x, w1, w2 = kernel_inputs("conv", packs=REGISTRY,
                              seed=7, shape=(1, 3, 8, 8), float_x="float64", conv=conv)
    rng = np.random.RandomState(7)
    np.testing.assert_array_equal(x, rng.rand(1, 3, 8, 8))
    np.testing.assert_array_equal(w1, (rng.rand(4, 3, 3, 3) * 2 - 1) * np.sqrt(6 / 27))
    assert np.abs(w2).max() <= np.sqrt(6 / 36)
