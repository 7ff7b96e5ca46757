"""What a lock holds for TensorFlow: ``[platforms.X.expect.tensorflow]``.

Derived at lock time from the spec and the resolved versions, and the resolved versions are
judged against the pack's pitfalls there: an unpinned protobuf that resolved to 4.x is
refused by ``envforge lock`` as a pinned one is, with the message users would see.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import Field

from envforge.errors import CompatibilityError
from envforge.lockfile import Expectations
from envforge.packs.tensorflow.section import tensorflow_section
from envforge.spec import Frozen, PlatformSpec


class TensorflowExpect(Frozen):
    """The device, the variables activation sets, the GPU libraries the release dlopens."""

    device: Literal["cpu", "cuda"]
    variables: dict[str, str] = Field(default_factory=dict)
    gpu_libraries: tuple[str, ...] = ()


def tensorflow_expect(expect: Expectations) -> TensorflowExpect:
    found = expect.packs.get("tensorflow")
    return found if isinstance(found, TensorflowExpect) else TensorflowExpect(device="cpu")


def variables(pspec: PlatformSpec) -> dict[str, str]:
    """TF_CPP_MIN_LOG_LEVEL and TF_FORCE_GPU_ALLOW_GROWTH, where the spec asks for them."""
    from envforge.packs.tensorflow.knowledge import variable

    section = tensorflow_section(pspec)
    found = {}
    if section.log_level is not None:
        found[variable("TF_CPP_MIN_LOG_LEVEL").name] = str(section.log_level)
    if section.allow_growth is not None:
        found[variable("TF_FORCE_GPU_ALLOW_GROWTH").name] = str(section.allow_growth).lower()
    return found


def expectations(pspec: PlatformSpec, versions: Mapping[str, str]) -> TensorflowExpect:
    from envforge.packs.tensorflow.knowledge import gpu_libraries

    refuse_resolved(pspec, versions)
    section = tensorflow_section(pspec)
    tensorflow = versions.get("tensorflow")
    libraries: tuple[str, ...] = ()
    if section.device == "cuda" and tensorflow is not None:
        libraries = tuple(row.files[pspec.platform]
                          for row in gpu_libraries(tensorflow, pspec.platform))
    return TensorflowExpect(device=section.device, variables=variables(pspec),
                            gpu_libraries=libraries)


def refuse_resolved(pspec: PlatformSpec, versions: Mapping[str, str]) -> None:
    """CompatibilityError for the first pitfall the resolved versions fall into."""
    from envforge.packs.pitfalls import exact_parts, fired, message
    from envforge.packs.tensorflow.knowledge import aliases, tensorflow_knowledge

    locked = dict(versions)
    if pspec.cuda is not None and pspec.cuda.exact:
        locked["cuda"] = pspec.cuda.number
    if pspec.cudnn is not None:
        locked["cudnn"] = pspec.cudnn.version
    named = {aliases().get(name, name): version for name, version in locked.items()}
    parts = exact_parts(locked, aliases())
    for row in fired(tensorflow_knowledge().pitfalls, parts):
        shown = {name: f"{name} {named.get(name)}" for name in row.when}
        raise CompatibilityError(f"{pspec.platform}: resolved {message(row, shown)}",
                                 source=row.source, fix=row.fix)
    if tensorflow_section(pspec).device == "cuda":
        _refuse_cpu_build(pspec, versions)


def _refuse_cpu_build(pspec: PlatformSpec, versions: Mapping[str, str]) -> None:
    """The resolved release of the distribution the spec names, where its wheel is CPU-only
    (``versions`` knows ``tensorflow`` only: the spec says which distribution it is)."""
    from envforge.compat import interval, spec_pins
    from envforge.packs.tensorflow.compat import cpu_message, cpu_only
    from envforge.packs.tensorflow.knowledge import gpu_build

    version = versions.get("tensorflow")
    exact = interval(f"=={version}") if version is not None else None
    for name in spec_pins(pspec):
        row = gpu_build(name)
        if row is not None and exact is not None and cpu_only(name, exact):
            raise CompatibilityError(
                f"{pspec.platform}: resolved {cpu_message(f'{name} {version}', row)}",
                source=row.source, fix=row.fix)
