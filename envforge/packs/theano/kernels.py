"""Theano's own verify kernels, beside the core's: ``scan`` (the probe's ``theano.scan``
loop, whose C implementation is what breaks on a new Python), ``random`` (the MRG31k3p
streams of ``MRG_RandomStreams``, mrg.py) and ``softmax_xent`` (the fused softmax and
categorical cross-entropy). A spec names them in ``[verify] kernels`` where it mounts
``[theano]``; the references are computed as the core's are (``envforge.expectations``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from envforge.expectations import Draw, Kernel, KernelCall

if TYPE_CHECKING:
    from envforge.expectations import Array

# Small sizes: what they check is that the machinery works, not speed.
#   scan: (steps, units); random: (uniform count, normal count: odd, so the Box-Muller
#   tail is cut); softmax_xent: (batch, features, classes).
SCAN_SHAPE = (16, 8)
RANDOM_SHAPE = (64, 33)
SOFTMAX_XENT_SHAPE = (16, 7, 5)


def _scan_inputs(draw: Draw, call: KernelCall) -> list[Array]:
    """x, W, h0."""
    steps, units = call.shape
    return [draw.uniform(steps, units), draw.signed(units, units, scale=1.0 / math.sqrt(units)),
            draw.uniform(units)]


def _scan(values: list[Array], call: KernelCall) -> Array:
    """h_t = tanh(W h_{t-1} + x_t), every h_t: the probe's theano.scan loop."""
    import numpy as np

    x, w, h0 = values
    h, out = h0, []
    for x_t in x:
        h = np.tanh(w @ h + x_t)
        out.append(h)
    return np.array(out)


def _random(values: list[Array], call: KernelCall) -> Array:
    """MRG_RandomStreams(seed): uniform((n,)) then normal((m,)), drawing no inputs."""
    import numpy as np

    from envforge.packs.theano.mrg import MRGStreams

    streams = MRGStreams(call.seed)
    result: Array = np.concatenate([streams.uniform(call.shape[0]),
                                    streams.normal(call.shape[1])])
    return result


def _softmax_xent_inputs(draw: Draw, call: KernelCall) -> list[Array]:
    """x, W, b, integer labels."""
    batch, features, classes = call.shape
    return [draw.uniform(batch, features), draw.signed(features, classes),
            draw.signed(classes, scale=0.1), draw.labels(classes, batch)]


def _softmax_xent(values: list[Array], call: KernelCall) -> Array:
    """softmax(x W + b) and its categorical cross-entropy per example, concatenated."""
    import numpy as np

    x, w, b, labels = values
    logits = x @ w + b
    logits = logits - logits.max(axis=1, keepdims=True)
    probabilities = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    picked = probabilities[np.arange(x.shape[0]), labels.astype(np.int64)]
    return np.concatenate([probabilities.ravel(), -np.log(picked)])


KERNELS: Mapping[str, Kernel] = {
    "scan": Kernel(_scan_inputs, _scan, shape=SCAN_SHAPE),
    "random": Kernel(lambda draw, call: [], _random, shape=RANDOM_SHAPE),
    "softmax_xent": Kernel(_softmax_xent_inputs, _softmax_xent, shape=SOFTMAX_XENT_SHAPE),
}
