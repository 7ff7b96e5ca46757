"""Reference results for verify's kernels, computed at lock time with NumPy in float64.

``kernel`` says what a kernel is (its draws, its reference, its tolerance floor), ``core``
holds the core's kernels, ``expect`` finds a kernel by name (the core's, else a pack's) and
summarises its reference as the lock's expectation. Import from here: these names are the
package's API.
"""

from typing import TYPE_CHECKING

from envforge.expectations.core import (
    CONV_BORDER_MODE,
    CONV_FILTER_FLIP,
    CONV_FILTER_SIZE,
    CORE_KERNELS,
    GRAD_EPS,
    KERNEL_PARAMS,
    KERNEL_SHAPES,
    conv2d,
    finite_difference_grad,
)
from envforge.expectations.expect import (
    FLOAT_TYPES,
    SAMPLE_COUNT,
    SIGNIFICANT_DIGITS,
    expect_kernel,
    inputs_only,
    kernel_expectations,
    kernel_inputs,
    kernel_inputs_of,
    kernel_named,
    reference_output,
    sample_indices,
)
from envforge.expectations.kernel import (
    DEFAULT_RTOL_FLOOR,
    DeclaresKernels,
    Draw,
    FloatX,
    Kernel,
    KernelCall,
)

if TYPE_CHECKING:
    from envforge.expectations.kernel import Array

__all__ = [
    "CONV_BORDER_MODE",
    "CONV_FILTER_FLIP",
    "CONV_FILTER_SIZE",
    "CORE_KERNELS",
    "DEFAULT_RTOL_FLOOR",
    "FLOAT_TYPES",
    "GRAD_EPS",
    "KERNEL_PARAMS",
    "KERNEL_SHAPES",
    "SAMPLE_COUNT",
    "SIGNIFICANT_DIGITS",
    "Array",
    "DeclaresKernels",
    "Draw",
    "FloatX",
    "Kernel",
    "KernelCall",
    "conv2d",
    "expect_kernel",
    "finite_difference_grad",
    "inputs_only",
    "kernel_expectations",
    "kernel_inputs",
    "kernel_inputs_of",
    "kernel_named",
    "reference_output",
    "sample_indices",
]
