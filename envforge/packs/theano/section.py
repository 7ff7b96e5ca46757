"""The ``[theano]`` section of a spec: Theano's settings as the user means them.

Moved whole from ``envforge.spec`` into the Theano pack; the core mounts it through the
pack registry and never reads it.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, ConfigDict, Field

from envforge.spec import Bool, FiniteFloat, Frozen, PlatformSpec

# Theano flag names: dotted words; [global] and [DEFAULT] would shadow other flags.
_FLAG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*((\.|__)[A-Za-z0-9_]+)*")


def _flag_name(value: str) -> str:
    if len(value) > 128 or not _FLAG_NAME.fullmatch(value):
        raise ValueError(f"{value!r} is not a Theano flag name (dotted words)")
    if re.match(r"(global|DEFAULT)(\.|__)", value):
        raise ValueError(f"{value!r}: [global] and [DEFAULT] would override other flags; "
                         "name the flag itself")
    return value


FlagName = Annotated[str, AfterValidator(_flag_name)]


def _one_line(value: str) -> str:
    if "\n" in value or "\r" in value or "\0" in value:
        raise ValueError("a flag value must be one line (no newline, carriage return or NUL)")
    return value


FlagValue = Annotated[str, AfterValidator(_one_line)]



class TheanoSection(Frozen):
    """Theano's settings as the user means them; rendering picks the version's spelling."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    # Theano takes cpu, cuda* and opencl* (theano.toml's device row): envforge's GPU path is
    # CUDA's, so cpu, cuda or cudaN with N below 100
    device: str = Field(default="cpu", pattern=r"^(cpu|cuda(0|[1-9]\d?)?)$")
    float_x: Literal["float16", "float32", "float64"] = Field(default="float64", alias="floatX")
    mode: Literal["Mode", "FAST_RUN", "FAST_COMPILE", "DebugMode", "DEBUG_MODE",
                  "NanGuardMode"] = "FAST_RUN"
    allow_gc: Bool = True
    # Theano: -1 disables the allocation cache, (0, 1] a fraction of GPU memory, > 1 MiB.
    preallocate: FiniteFloat | None = Field(default=None, ge=-1, le=1 << 24)
    dnn: Literal["auto", "enabled", "disabled", "no_check"] = "auto"
    blas_ldflags: FlagValue | None = None
    cxxflags: FlagValue | None = None
    cxx: FlagValue | None = None
    compiledir: FlagValue | None = None
    theanorc: Literal["home", "env"] = "env"
    flags: dict[FlagName, FlagValue] = Field(default={})
    # verify: Theano's resident GEMM against raw cuBLAS SGEMM on the same library (GPU only)
    min_cublas_ratio: FiniteFloat = Field(default=0.9, gt=0, le=1)


def theano_section(pspec: PlatformSpec) -> TheanoSection:
    """The spec's [theano] table for one platform; its defaults where the pack is not mounted."""
    section = pspec.packs.get("theano")
    return section if isinstance(section, TheanoSection) else TheanoSection()


# "theano.key" -> (what it means, an example value as TOML): the spec reference's rows
# (envforge.specdoc, FrameworkPack.spec_keys)
SPEC_KEYS: dict[str, tuple[str, str]] = {
    "theano.device": ("cpu, cuda or cudaN (N < 100); not opencl: envforge's GPU path is "
                      "CUDA's", '"cuda"'),
    "theano.floatX": ("Theano's default float type", '"float32"'),
    "theano.mode": ("Theano's compilation mode", '"FAST_RUN"'),
    "theano.allow_gc": ("free intermediate results between calls", "true"),
    "theano.preallocate": ("GPU memory to preallocate (fraction, or MiB when > 1)", "0.8"),
    "theano.dnn": ("use cuDNN: auto, enabled, disabled or no_check", '"auto"'),
    "theano.blas_ldflags": ("BLAS link flags; `{prefix}` is the environment's folder",
                            '"-lopenblas"'),
    "theano.cxxflags": ("extra C++ flags", '"-O3"'),
    "theano.cxx": ("the C++ compiler's path or name", '"g++"'),
    "theano.compiledir": ("where Theano keeps compiled modules (default: in the environment)",
                          '"{prefix}/theano-cache"'),
    "theano.theanorc": ("where `.theanorc` goes: the environment (THEANORC) or the home folder",
                        '"env"'),
    "theano.flags": ("any other Theano flag, by its dotted name", '{ "nvcc.fastmath" = "True" }'),
    "theano.min_cublas_ratio": ("GPU only: the least ratio of Theano's resident GEMM to raw "
                                "cuBLAS SGEMM on the same library that verify passes", "0.9"),
}
