"""The MRG streams' setup: the streams made by matrix powers are the ones Theano's jump-by-jump
``get_substream_rstates`` makes (what it printed is checked in tests/test_kernel_references.py)."""

from __future__ import annotations

import numpy as np
import pytest

from envforge.packs.theano.mrg import _A1P72, _A2P72, M2, MAX_STREAMS, _jump, _streams


@pytest.mark.parametrize("seed", [1, 22, M2 - 1])
def test_streams_are_the_jumps_one_after_another(seed: int) -> None:
    first = np.full(6, seed, dtype=np.int32)
    chain = [first]
    for _ in range(MAX_STREAMS - 1):
        chain.append(_jump(chain[-1], _A1P72, _A2P72))
    expected = np.stack(chain)
    for count in (1, 2, 3, 7, 64, 1000, MAX_STREAMS):  # powers of two and not
        made = _streams(first, count)
        assert made.dtype == np.int32
        assert np.array_equal(made, expected[:count])
