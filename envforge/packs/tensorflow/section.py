"""The ``[tensorflow]`` section of a spec: how TensorFlow is to run in the environment."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from envforge.spec import Bool, Frozen, Int, PlatformSpec

# The core's kernels the TensorFlow probe runs (its KERNELS; a test keeps the two equal).
PROBE_KERNELS = ("elementwise", "gemm", "conv")


class TensorflowSection(Frozen):
    """What the spec asks of TensorFlow; the variables are set only where given."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    # the device verify's kernels run on: TensorFlow places ops on the first GPU by itself
    device: Literal["cpu", "cuda"] = "cpu"
    float_x: Literal["float32", "float64"] = Field(default="float32", alias="floatX")
    # TF_CPP_MIN_LOG_LEVEL: 0 all C++ log lines ... 3 none but FATAL
    log_level: Int | None = Field(default=None, ge=0, le=3)
    # TF_FORCE_GPU_ALLOW_GROWTH: the GPU allocator grows on demand
    allow_growth: Bool | None = None


def tensorflow_section(pspec: PlatformSpec) -> TensorflowSection:
    """The spec's [tensorflow] table for one platform; its defaults where it is not mounted."""
    section = pspec.packs.get("tensorflow")
    return section if isinstance(section, TensorflowSection) else TensorflowSection()


# Each key of the section, what it means and an example (the spec reference, envforge.specdoc)
SPEC_KEYS: dict[str, tuple[str, str]] = {
    "tensorflow.device": ("where verify's kernels run: cpu, or cuda (the first GPU)", '"cpu"'),
    "tensorflow.floatX": ("the float type of verify's kernels", '"float32"'),
    "tensorflow.log_level": ("TF_CPP_MIN_LOG_LEVEL set by activation: 0 all C++ log lines "
                             "... 3 none but FATAL; unset when absent", "2"),
    "tensorflow.allow_growth": ("TF_FORCE_GPU_ALLOW_GROWTH set by activation: the GPU "
                                "allocator grows on demand; unset when absent", "true"),
}
