"""The NumPy references of verify's scan, grad, random, softmax_xent and train kernels.

Each is checked against an independent computation (analytic backpropagation for the
finite differences, values Theano-PyMC 1.0.5 itself printed here for the MRG streams),
and each tolerance is shown to reject a plausible wrong computation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from envforge.expectations import (
    KERNEL_PARAMS,
    expect_kernel,
    finite_difference_grad,
    kernel_inputs,
    kernel_named,
    reference_output,
)
from envforge.packs.theano.mrg import M1, M2, MRGStreams, guess_n_streams
from tests.testing.packs import REGISTRY

NEW = ("scan", "grad", "random", "softmax_xent", "train")
# the core's (grad, train) and Theano's (scan, random, softmax_xent) sizes
KERNEL_SHAPES = {name: kernel_named(name, REGISTRY).shape for name in NEW}


def _reference(name: str, float_x: str = "float64") -> np.ndarray:
    return reference_output(name, packs=REGISTRY,
                            seed=22, shape=KERNEL_SHAPES[name], float_x=float_x,
                            params=KERNEL_PARAMS.get(name))


def test_mrg_streams_match_what_theano_printed() -> None:
    """MRG_RandomStreams(22): uniform((64,)) then normal((33,)), the first call of one
    theano.function, float64, printed by Theano-PyMC 1.0.5 on Python 3.7 here."""
    streams = MRGStreams(22)
    uniform, normal = streams.uniform(64), streams.normal(33)
    assert np.allclose(uniform[[0, 1, 2, 63]],
                       [0.04229867, 0.1997368, 0.78366838, 0.14734835], atol=5e-9)
    assert np.allclose(normal[[0, 1, 31, 32]],
                       [-1.91949, 0.95857619, 1.30803386, -1.24655241], atol=5e-9)
    assert ((uniform > 0) & (uniform < 1)).all()


def test_mrg_stream_counts_and_seeds() -> None:
    assert [guess_n_streams(n) for n in (1, 6, 7, 64, 10**6)] == [1, 6, 1, 10, 15360]
    with pytest.raises(ValueError):
        MRGStreams(0)
    with pytest.raises(ValueError):
        MRGStreams(M2)
    assert M1 == 2**31 - 1
    assert not np.allclose(MRGStreams(22).uniform(64), MRGStreams(23).uniform(64))


def _analytic_grad(values: list[np.ndarray]) -> np.ndarray:
    x, target, w1, b1, w2, b2 = values
    hidden = np.tanh(x @ w1 + b1)
    delta = (hidden @ w2 + b2 - target) / x.shape[0]
    back = (delta @ w2.T) * (1 - hidden**2)
    return np.concatenate([(x.T @ back).ravel(), back.sum(0), (hidden.T @ delta).ravel(),
                           delta.sum(0)])


def test_finite_differences_agree_with_backpropagation() -> None:
    values = kernel_inputs("grad", packs=REGISTRY,
                           seed=22, shape=KERNEL_SHAPES["grad"], float_x="float64")
    numeric, exact = finite_difference_grad(values), _analytic_grad(values)
    assert numeric.shape == (6 * 10 + 10 + 10 * 3 + 3,)
    assert np.allclose(numeric, exact, rtol=1e-7, atol=1e-9)


def test_train_starts_at_log_2_and_the_loss_falls() -> None:
    out = _reference("train")
    _, features, steps = KERNEL_SHAPES["train"]
    losses = out[:steps]
    assert out.shape == (steps + features + 1,)
    assert losses[0] == pytest.approx(math.log(2))  # zero weights: p = 0.5 everywhere
    assert (np.diff(losses) < 0).all()


def test_softmax_rows_sum_to_one_and_xent_is_minus_log_p_of_the_label() -> None:
    batch, _, classes = KERNEL_SHAPES["softmax_xent"]
    out = _reference("softmax_xent")
    probabilities, losses = out[:batch * classes].reshape(batch, classes), out[batch * classes:]
    labels = kernel_inputs("softmax_xent", packs=REGISTRY,
                           seed=22, shape=KERNEL_SHAPES["softmax_xent"],
                           float_x="float64")[3].astype(int)
    assert np.allclose(probabilities.sum(1), 1.0)
    assert np.allclose(losses, -np.log(probabilities[np.arange(batch), labels]))


def test_scan_is_the_recurrence_over_every_step() -> None:
    x, w, h0 = kernel_inputs("scan", packs=REGISTRY,
                             seed=22, shape=KERNEL_SHAPES["scan"], float_x="float64")
    out = _reference("scan")
    assert out.shape == KERNEL_SHAPES["scan"]
    assert np.allclose(out[0], np.tanh(w @ h0 + x[0]))
    assert np.allclose(out[5], np.tanh(w @ out[4] + x[5]))


def _wrong(name: str) -> np.ndarray:
    """A plausible mistake for each kernel."""
    values = kernel_inputs(name, packs=REGISTRY,
                           seed=22, shape=KERNEL_SHAPES[name], float_x="float32")
    if name == "scan":  # W h transposed to h W
        x, w, h0 = values
        h, out = h0, []
        for x_t in x:
            h = np.tanh(w.T @ h + x_t)
            out.append(h)
        return np.array(out)
    if name == "grad":  # the gradient without the tanh derivative
        x, target, w1, b1, w2, b2 = values
        hidden = np.tanh(x @ w1 + b1)
        delta = (hidden @ w2 + b2 - target) / x.shape[0]
        back = delta @ w2.T
        return np.concatenate([(x.T @ back).ravel(), back.sum(0),
                               (hidden.T @ delta).ravel(), delta.sum(0)])
    if name == "random":  # the same streams, another seed
        streams = MRGStreams(23)
        return np.concatenate([streams.uniform(64), streams.normal(33)])
    if name == "softmax_xent":  # softmax without the bias
        x, w, _, labels = values
        logits = x @ w
        p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
        return np.concatenate([p.ravel(), -np.log(p[np.arange(len(labels)),
                                                     labels.astype(int)])])
    # train with a learning rate of 0.25 instead of 0.5
    return reference_output("train", packs=REGISTRY,
                            seed=22, shape=KERNEL_SHAPES["train"], float_x="float32",
                            params={"learning_rate": 0.25})


@pytest.mark.parametrize("name", NEW)
def test_float32_tolerance_rejects_a_plausible_mistake(name: str) -> None:
    expect = expect_kernel(name, packs=REGISTRY,
                           seed=22, shape=KERNEL_SHAPES[name], float_x="float32",
                           rtol=1e-4, atol=1e-5)
    # What a correct float32 run gives passes...
    right = _reference(name, "float32").astype(np.float32).astype(np.float64).ravel()
    assert abs(right.sum() - expect.checksum) <= expect.atol + expect.rtol * abs(expect.checksum)
    # ...and the mistake fails some sample or the checksum.
    wrong = _wrong(name).ravel()
    off = [abs(wrong[i] - v) > expect.atol + expect.rtol * abs(v)
           for i, v in zip(expect.sample_indices, expect.samples, strict=True)]
    assert any(off) or abs(wrong.sum() - expect.checksum) > \
        expect.atol + expect.rtol * abs(expect.checksum)


def test_new_kernels_record_their_sizes_and_params() -> None:
    train = expect_kernel("train", packs=REGISTRY,
                          seed=22, shape=KERNEL_SHAPES["train"], float_x="float64",
                          rtol=1e-6, atol=1e-9)
    assert train.params == {"learning_rate": 0.5}
    assert train.output_shape == (20 + 4 + 1,)
    assert expect_kernel("scan", packs=REGISTRY,
                         seed=22, shape=KERNEL_SHAPES["scan"], float_x="float64",
                         rtol=1e-6, atol=1e-9).params is None
