"""Theano's MRG31k3p random streams in NumPy, for the references of verify's random kernel.

A reimplementation of ``theano/sandbox/rng_mrg.py`` in Theano-PyMC 1.0.5 ([TP]): the
generator step is ``mrg_next_value`` (and the C code of ``mrg_uniform``), the
stream setup is ``MRG_RandomStreams.set_rstate``, ``get_substream_rstates`` and
``inc_rstate`` with the jump matrices ``A1p72``/``A2p72`` (2**72 steps between
streams) and ``A1p134``/``A2p134`` (2**134 between calls), the stream count is
``guess_n_streams`` and ``normal`` is its Box-Muller transform. Sample ``i`` comes from
stream ``i % n_streams``, on the CPU and in the GPU kernel alike. Arithmetic is int32
with wrap-around, as in Theano's C code (compiled with -fwrapv). NumPy is the
``resolve`` extra, so it is imported inside the functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

M1 = 2147483647  # 2**31 - 1
M2 = 2147462579  # 2**31 - 21069
NORM = 4.656612873077392578125e-10  # 2**-31, the float64 scale
Matrix = tuple[tuple[int, ...], ...]  # a jump matrix: three rows of three ints
MAX_STREAMS = 60 * 256  # guess_n_streams' cap, and its guess for a symbolic size
_A1P72 = ((1516919229, 758510237, 499121365), (1884998244, 1516919229, 335398200),
          (601897748, 1884998244, 358115744))
_A2P72 = ((1228857673, 1496414766, 954677935), (1133297478, 1407477216, 1496414766),
          (2002613992, 1639496704, 1407477216))
_A1P134 = ((1702500920, 1849582496, 1656874625), (828554832, 1702500920, 1512419905),
           (1143731069, 828554832, 102237247))
_A2P134 = ((796789021, 1464208080, 607337906), (1241679051, 1431130166, 1464208080),
           (1401213391, 1178684362, 1431130166))


def guess_n_streams(size: int) -> int:
    """``guess_n_streams`` for a known size: one stream per six samples, at most 15360."""
    return min(size // 6 if size > 6 else size, MAX_STREAMS)


class MRGStreams:
    """``MRG_RandomStreams(seed)``: each ``uniform``/``normal`` call takes fresh streams."""

    def __init__(self, seed: int) -> None:
        import numpy as np

        if not 0 < seed < M2:
            raise ValueError(f"an MRG seed lies in 1..{M2 - 1}, not {seed}")
        self._rstate = np.full(6, seed, dtype=np.int32)

    def uniform(self, size: int) -> NDArray[np.float64]:
        """``uniform((size,))`` in float64."""
        return self._draw(size, guess_n_streams(size))

    def normal(self, size: int) -> NDArray[np.float64]:
        """``normal((size,))``: Box-Muller on an even count of uniforms.

        ``normal`` hands ``uniform`` a symbolic size, so it always gets 15360 streams.
        """
        import numpy as np

        even = size + size % 2
        values = self._draw(even, MAX_STREAMS)
        u1, u2 = values[:even // 2], values[even // 2:]
        radius = np.sqrt(-2.0 * np.log(u1))
        theta = 2.0 * np.pi * u2
        samples: NDArray[np.float64] = np.concatenate([radius * np.cos(theta),
                                                       radius * np.sin(theta)])[:size]
        return samples

    def _draw(self, size: int, n_streams: int) -> NDArray[np.float64]:
        import numpy as np

        states = _streams(self._rstate, n_streams)
        self._rstate = _jump(self._rstate, _A1P134, _A2P134)
        out = np.empty(size)
        for start in range(0, size, n_streams):
            values = _step(states)
            count = min(n_streams, size - start)
            out[start:start + count] = values[:count]
        return out


def _streams(first: NDArray[np.int32], count: int) -> NDArray[np.int32]:
    """``get_substream_rstates``: ``count`` states, each ``_jump``'s (A1p72/A2p72) of the one
    before. Stream ``k + i`` is matrix power ``A**k`` times stream ``i``, so each pass fills
    as many streams as it has, from them, with the power squared after it: 14 passes of
    array arithmetic for 15360 streams, the same integers as 15359 jumps one at a time."""
    import numpy as np

    states = np.empty((count, 6), dtype=np.int64)
    states[0] = first
    power1: Matrix = _A1P72
    power2: Matrix = _A2P72
    done = 1  # power1, power2 = A1p72 ** done, A2p72 ** done
    while done < count:
        take = min(done, count - done)
        states[done:done + take, :3] = _times(power1, states[:take, :3], M1)
        states[done:done + take, 3:] = _times(power2, states[:take, 3:], M2)
        done += take
        power1, power2 = _squared(power1, M1), _squared(power2, M2)
    return states.astype(np.int32)


def _times(matrix: Matrix, halves: NDArray[np.int64],
           modulus: int) -> NDArray[np.int64]:
    """Each row of ``halves`` (three values below ``modulus``) times ``matrix``, modulo it;
    every product is reduced before the sum, so int64 never overflows (as in ``_jump``)."""
    import numpy as np

    out = np.empty_like(halves)
    for r, row in enumerate(matrix):
        out[:, r] = sum(((entry * halves[:, c]) % modulus for c, entry in enumerate(row)),
                        start=np.zeros(len(halves), dtype=np.int64)) % modulus
    return out


def _squared(matrix: Matrix, modulus: int) -> Matrix:
    """``matrix @ matrix`` modulo ``modulus``, in Python's exact integers."""
    size = len(matrix)
    return tuple(tuple(sum(matrix[r][k] * matrix[k][c] for k in range(size)) % modulus
                       for c in range(size)) for r in range(size))


def _jump(state: NDArray[np.int32], a1: tuple[tuple[int, ...], ...],
          a2: tuple[tuple[int, ...], ...]) -> NDArray[np.int32]:
    """``DotModulo.perform``: each half of the state times its matrix, modulo M1 and M2."""
    import numpy as np

    s = state.astype(np.int64)
    first = np.sum((np.array(a1, dtype=np.int64) * s[:3]) % M1, axis=1) % M1
    second = np.sum((np.array(a2, dtype=np.int64) * s[3:]) % M2, axis=1) % M2
    jumped: NDArray[np.int32] = np.concatenate([first, second]).astype(np.int32)
    return jumped


def _step(states: NDArray[np.int32]) -> NDArray[np.float64]:
    """One ``mrg_next_value`` on every stream (in place); returns each stream's sample."""
    import numpy as np

    i32 = np.int32
    x11, x12, x13, x21, x22, x23 = (states[:, k].copy() for k in range(6))

    def fold(y: NDArray[np.int32], m: int) -> NDArray[np.int32]:
        folded: NDArray[np.int32] = np.where((y < 0) | (y >= m), y - i32(m), y).astype(np.int32)
        return folded

    with np.errstate(over="ignore"):
        y1 = fold(((x12 & i32(511)) << i32(22)) + (x12 >> i32(9)) +
                  ((x13 & i32(16777215)) << i32(7)) + (x13 >> i32(24)), M1)
        y1 = fold(y1 + x13, M1)
        x11, x12, x13 = y1, x11, x12
        y1 = fold(((x21 & i32(65535)) << i32(15)) + i32(21069) * (x21 >> i32(16)), M2)
        y2 = fold(((x23 & i32(65535)) << i32(15)) + i32(21069) * (x23 >> i32(16)), M2)
        y2 = fold(y2 + x23, M2)
        y2 = fold(y2 + y1, M2)
        x21, x22, x23 = y2, x21, x22
    states[:] = np.stack([x11, x12, x13, x21, x22, x23], axis=1)
    diff = x11.astype(np.int64) - x21.astype(np.int64)
    samples: NDArray[np.float64] = np.where(x11 <= x21, diff + M1, diff) * NORM
    return samples
