"""What a verify kernel is: how its inputs are drawn and its float64 reference computed.

The probe (``envforge/packs/theano/probe.py``) draws its inputs from the same legacy
``numpy.random.RandomState(seed)`` in the same order, casts them to floatX, and runs
them through Theano. The reference uses those floatX-rounded inputs promoted to
float64, so the only difference left to tolerate is the arithmetic of the target,
and a tolerance can be tight enough that a wrong result (a missing filter flip, a
transposed operand, a different seed) fails. Legacy RandomState streams are frozen
across NumPy versions, which is what lets a lock written with NumPy 2 describe a
NumPy 1.19 environment. NumPy is the ``resolve`` extra, so it is imported inside the
functions that need it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from envforge.lockfile import ConvParams

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Array = NDArray[np.float64]

FloatX = Literal["float16", "float32", "float64"]
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


class DeclaresKernels(Protocol):
    """A pack as far as kernels go (``FrameworkPack.kernels``), and its name, by which a
    child process finds it among the installed packs."""

    @property
    def name(self) -> str: ...

    @property
    def kernels(self) -> Mapping[str, Kernel]: ...
